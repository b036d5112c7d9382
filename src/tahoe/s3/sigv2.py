"""AWS Signature Version 2 for S3, accepted only when the gateway allows it.

Both the aws CLI (``aws s3 presign``) and boto3 (``generate_presigned_url``)
make Signature Version 2 presigned URLs unless configured with
``signature_version = s3v4``. S3 still accepts them in its oldest regions; the
gateway accepts them only if the caller of
:func:`tahoe.s3.sigv4.parse_request_auth` passes ``allow_v2=True`` (otherwise
they get S3's "Please use AWS4-HMAC-SHA256").

The string to sign (S3 developer guide, "Signing and authenticating REST
requests") is the method, ``Content-MD5``, ``Content-Type``, the date (the
``Date`` header, empty when ``x-amz-date`` is sent, or the ``Expires`` epoch of
a presigned URL), the ``x-amz-*`` headers sorted (``name:value`` lines), and
the resource: the path as sent, prefixed with ``/BUCKET`` for a virtual-host
request, plus the sub-resources of the query (``?acl``, ``?uploadId=...``, the
``response-*`` overrides, ...) sorted by name with decoded values. The
signature is the base64 HMAC-SHA1 of it under the secret. A presigned URL may
carry ``x-amz-*``, ``Content-Type`` and ``Content-MD5`` as query parameters.

A V2 request has no payload hash (``UNSIGNED-PAYLOAD``) and no signing key.
Pure: the caller passes the clock.
"""
from __future__ import annotations

import base64
import binascii
import datetime
import email.utils
import hashlib
import hmac
import re
from collections.abc import Mapping

from .errors import S3Error
from .sigv4 import (UNSIGNED_PAYLOAD, Credential, SignedRequest, parse_query, percent_decode,
                    uri_encode)

__all__ = ["SUBRESOURCES", "parse_v2", "string_to_sign_v2", "verify_v2"]

#: Query parameters that are part of the signed resource.
SUBRESOURCES = frozenset([
    "accelerate", "acl", "analytics", "cors", "delete", "inventory", "legal-hold",
    "lifecycle", "location", "logging", "metrics", "notification", "object-lock",
    "partNumber", "policy", "replication", "requestPayment", "response-cache-control",
    "response-content-disposition", "response-content-encoding",
    "response-content-language", "response-content-type", "response-expires", "restore",
    "retention", "select", "select-type", "storageClass", "tagging", "torrent", "uploadId",
    "uploads", "versionId", "versioning", "versions", "website"])
_SIGNATURE = re.compile(r"[A-Za-z0-9+/]{27}=\Z")


def _signature(text: str) -> str:
    if not _SIGNATURE.match(text):
        raise S3Error("AccessDenied", "The Signature Version 2 signature is malformed.")
    return text


def parse_v2(authorization: str | None, params: Mapping[str, str]) -> SignedRequest:
    """A Signature Version 2 request: ``Authorization: AWS KEY:SIG`` or a presigned query.

    :raises S3Error: ``AccessDenied`` for a malformed signature or ``Expires``.
    """
    if authorization is not None:
        access_key, colon, signature = authorization.strip()[4:].strip().rpartition(":")
        if not colon or not access_key:
            raise S3Error("AccessDenied", "The Signature Version 2 authorization header is"
                          " malformed; expecting \"AWS ACCESS_KEY:SIGNATURE\".")
        return SignedRequest(Credential(access_key, "", "", "s3"), (), _signature(signature),
                             "", UNSIGNED_PAYLOAD, presigned=False, version=2)
    expires = params.get("Expires", "")
    if not re.fullmatch(r"\d{1,12}", expires):
        raise S3Error("AccessDenied", "Query-string authentication requires the Signature,"
                      " Expires and AWSAccessKeyId parameters")
    return SignedRequest(Credential(params["AWSAccessKeyId"], "", "", "s3"), (),
                         _signature(params["Signature"]), "", UNSIGNED_PAYLOAD,
                         presigned=True, expires=int(expires), version=2)


def _resource(path: str, raw_query: str) -> str:
    parts = []
    for part in raw_query.split("&"):
        name, equals, value = part.partition("=")
        if name in SUBRESOURCES:
            decoded = percent_decode(value).decode("utf-8", "surrogateescape")
            parts.append((name, f"{name}={decoded}" if equals else name))
    parts.sort(key=lambda item: item[0])
    return path + ("?" + "&".join(text for _, text in parts) if parts else "")


def string_to_sign_v2(req: SignedRequest, method: str, path: str, raw_query: str,
                      headers: Mapping[str, str]) -> str:
    """The V2 string to sign of a request whose resource path is ``path`` (as sent)."""
    query = dict(parse_query(raw_query)) if req.presigned else {}
    amz = {name: value for name, value in query.items() if name.startswith("x-amz-")}
    amz.update({name: value for name, value in headers.items() if name.startswith("x-amz-")})
    if req.presigned:
        date = str(req.expires)
    else:
        date = "" if "x-amz-date" in headers else headers.get("date", "").strip()
    lines = [method.upper(), headers.get("content-md5", query.get("content-md5", "")).strip(),
             headers.get("content-type", query.get("content-type", "")).strip(), date]
    lines += [f"{name}:{amz[name].strip()}" for name in sorted(amz)]
    return "\n".join(lines) + "\n" + _resource(path, raw_query)


def _request_time(headers: Mapping[str, str]) -> float:
    text = headers.get("x-amz-date", headers.get("date", ""))
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        when = None
    if when is None or when.tzinfo is None:
        raise S3Error("AccessDenied", "AWS authentication requires a valid Date or"
                      " x-amz-date header")
    return when.timestamp()


def _iso(epoch: float) -> str:
    when = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def verify_v2(req: SignedRequest, secret: str, method: str, raw_path: str, raw_query: str,
              headers: Mapping[str, str], now: float, max_skew: int = 900,
              virtual_host_bucket: str | None = None) -> bytes:
    """Check a V2 signature; ``b""`` (V2 has no signing key) if it is good.

    :raises S3Error: ``AccessDenied`` "Request has expired" (presigned),
        ``RequestTimeTooSkewed`` (header form), ``SignatureDoesNotMatch``.
    """
    if req.presigned:
        assert req.expires is not None
        if now > req.expires:
            raise S3Error("AccessDenied", "Request has expired",
                          Expires=_iso(req.expires), ServerTime=_iso(now))
    else:
        signed_at = _request_time(headers)
        if abs(now - signed_at) > max_skew:
            raise S3Error("RequestTimeTooSkewed", RequestTime=_iso(signed_at),
                          ServerTime=_iso(now),
                          MaxAllowedSkewMilliseconds=str(max_skew * 1000))
    try:
        given = base64.b64decode(req.signature, validate=True)
    except (binascii.Error, ValueError):
        given = b""
    prefix = "" if virtual_host_bucket is None else "/" + virtual_host_bucket
    text = ""
    for path in dict.fromkeys([raw_path, _reencoded(raw_path)]):
        text = string_to_sign_v2(req, method, prefix + path, raw_query, headers)
        expected = hmac.new(secret.encode("utf-8"), text.encode("utf-8", "surrogateescape"),
                            hashlib.sha1).digest()
        if hmac.compare_digest(expected, given):
            return b""
    raise S3Error("SignatureDoesNotMatch", AWSAccessKeyId=req.credential.access_key,
                  StringToSign=text, SignatureProvided=req.signature)


def _reencoded(raw_path: str) -> str:
    return uri_encode(percent_decode(raw_path), keep_slash=True)

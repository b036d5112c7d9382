"""AWS Signature Version 4 as S3 checks it: the header form and presigned URLs.

A request names its signer in the ``Authorization`` header
(``AWS4-HMAC-SHA256 Credential=AKID/DATE/REGION/s3/aws4_request,
SignedHeaders=a;b, Signature=HEX``) or in ``X-Amz-*`` query parameters (a
presigned URL). :func:`parse_request_auth` reads that without a secret (the
shell then looks the access key up); :func:`verify_request` recomputes the
signature with the account's secret and checks the time.

The canonical request is S3's flavour (AWS S3 API reference, "Authenticating
Requests (AWS Signature Version 4)"): the path is percent-decoded and encoded
once again (every byte but ``A-Za-z0-9-._~`` and ``/`` as upper-case ``%XX``;
no ``.``/``..`` normalisation), the query is sorted by encoded name then value
with each name and value re-encoded the same way (``/`` too), a presigned
URL's ``X-Amz-Signature`` is left out, header values are trimmed with inner
runs of spaces folded to one, and the payload hash is the
``x-amz-content-sha256`` header (``UNSIGNED-PAYLOAD`` for a presigned URL
without it). Chunk and trailer signatures of ``aws-chunked`` bodies chain from
the request's signature (:func:`chunk_signature`, :func:`trailer_signature`).

Pure: the caller passes the clock (``now``, seconds since the epoch).
"""
from __future__ import annotations

import datetime
import email.utils
import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass

from .errors import S3Error

__all__ = ["ALGORITHM", "UNSIGNED_PAYLOAD", "STREAMING_SIGNED", "STREAMING_SIGNED_TRAILER",
           "STREAMING_UNSIGNED_TRAILER", "EMPTY_SHA256", "MAX_PRESIGN_EXPIRES", "Credential",
           "SignedRequest", "parse_request_auth", "verify_request", "signing_key",
           "canonical_request", "string_to_sign", "uri_encode", "percent_decode",
           "chunk_string_to_sign", "chunk_signature", "trailer_string_to_sign",
           "trailer_signature", "parse_query"]

ALGORITHM = "AWS4-HMAC-SHA256"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
STREAMING_SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
STREAMING_SIGNED_TRAILER = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
STREAMING_UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
#: The payload hashes that are not a SHA-256 of the body.
SPECIAL_PAYLOADS = (UNSIGNED_PAYLOAD, STREAMING_SIGNED, STREAMING_SIGNED_TRAILER,
                    STREAMING_UNSIGNED_TRAILER)
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
#: The longest validity of a presigned URL S3 accepts: seven days, in seconds.
MAX_PRESIGN_EXPIRES = 7 * 24 * 3600
TERMINATOR = "aws4_request"

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_AMZ_DATE = re.compile(r"\d{8}T\d{6}Z\Z")
_SIGV2_QUERY = ("AWSAccessKeyId", "Signature")
_PRESIGN_PARAMS = ("X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature", "X-Amz-Date",
                   "X-Amz-SignedHeaders", "X-Amz-Expires")


@dataclass(frozen=True)
class Credential:
    """The ``Credential`` of a signature: an access key id and the signing scope.

    :ivar date: ``YYYYMMDD``.
    """

    access_key: str
    date: str
    region: str
    service: str

    @property
    def scope(self) -> str:
        """``DATE/REGION/SERVICE/aws4_request``, as signed."""
        return f"{self.date}/{self.region}/{self.service}/{TERMINATOR}"


@dataclass(frozen=True)
class SignedRequest:
    """What a request claims about its signature, before any secret is used.

    :ivar signed_headers: lower-case header names, in the order given.
    :ivar signature: lower-case hex.
    :ivar amz_date: ``YYYYMMDDTHHMMSSZ``.
    :ivar payload_hash: hex SHA-256 of the body or one of :data:`SPECIAL_PAYLOADS`.
    :ivar expires: seconds a presigned URL is valid (None for the header form); for
        Signature Version 2, the epoch second it expires at.
    :ivar version: 4, or 2 for Signature Version 2 (:mod:`tahoe.s3.sigv2`).
    """

    credential: Credential
    signed_headers: tuple[str, ...]
    signature: str
    amz_date: str
    payload_hash: str
    presigned: bool
    expires: int | None = None
    version: int = 4

    @property
    def streaming(self) -> bool:
        """True if the body is ``aws-chunked`` (the payload hash is a STREAMING-* value)."""
        return self.payload_hash.startswith("STREAMING-")


# ---------------------------------------------------------------- encoding

def percent_decode(text: str) -> bytes:
    """The bytes of ``text`` with every ``%XX`` decoded (``+`` stays ``+``).

    A ``%`` not followed by two hex digits is kept as it is.
    """
    raw = text.encode("utf-8", "surrogateescape")
    if b"%" not in raw:
        return raw
    out = bytearray()
    index = 0
    while index < len(raw):
        byte = raw[index]
        if byte == 0x25 and _is_hex(raw[index + 1:index + 3]):
            out.append(int(raw[index + 1:index + 3], 16))
            index += 3
        else:
            out.append(byte)
            index += 1
    return bytes(out)


def _is_hex(pair: bytes) -> bool:
    return len(pair) == 2 and all(c in b"0123456789abcdefABCDEF" for c in pair)


def uri_encode(raw: bytes, keep_slash: bool = False) -> str:
    """AWS's URI encoding: unreserved bytes as they are, all others ``%XX`` upper-case."""
    return "".join(chr(byte) if byte in _UNRESERVED or (keep_slash and byte == 0x2F)
                   else f"%{byte:02X}" for byte in raw)


def parse_query(raw_query: str) -> list[tuple[str, str]]:
    """The decoded ``(name, value)`` pairs of a raw query string, in order.

    A name without ``=`` has the value ``""``; bytes that are not UTF-8 decode
    with surrogate escapes (so nothing is lost).
    """
    pairs = []
    for part in raw_query.split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        pairs.append((percent_decode(name).decode("utf-8", "surrogateescape"),
                      percent_decode(value).decode("utf-8", "surrogateescape")))
    return pairs


def _canonical_query(raw_query: str, presigned: bool) -> str:
    pairs = []
    for part in raw_query.split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        name_encoded = uri_encode(percent_decode(name))
        if presigned and name_encoded == "X-Amz-Signature":
            continue
        pairs.append((name_encoded, uri_encode(percent_decode(value))))
    return "&".join(f"{name}={value}" for name, value in sorted(pairs))


def _trim(value: str) -> str:
    return " ".join(value.split())


def canonical_request(method: str, canonical_uri: str, raw_query: str,
                      headers: Mapping[str, str], signed_headers: tuple[str, ...],
                      payload_hash: str, presigned: bool) -> str:
    """The canonical request text of SigV4 (``canonical_uri`` already encoded).

    ``headers`` has lower-case names; a signed header the request lacks
    counts as empty (so the signature will not match).
    """
    header_lines = "".join(f"{name}:{_trim(headers.get(name, ''))}\n"
                           for name in sorted(signed_headers))
    return "\n".join([method.upper(), canonical_uri, _canonical_query(raw_query, presigned),
                      header_lines, ";".join(sorted(signed_headers)), payload_hash])


def string_to_sign(amz_date: str, scope: str, canonical: str) -> str:
    """The string to sign of a request, from its canonical request."""
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogateescape")).hexdigest()
    return f"{ALGORITHM}\n{amz_date}\n{scope}\n{digest}"


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def signing_key(secret: str, date: str, region: str, service: str = "s3") -> bytes:
    """The key derived from a secret for one day, region and service (32 bytes)."""
    key = _hmac(("AWS4" + secret).encode("utf-8"), date)
    key = _hmac(key, region)
    key = _hmac(key, service)
    return _hmac(key, TERMINATOR)


def chunk_string_to_sign(amz_date: str, scope: str, previous_signature: str,
                         chunk_sha256_hex: str) -> str:
    """The string to sign of one ``aws-chunked`` chunk (its data's SHA-256 in hex)."""
    return "\n".join([ALGORITHM + "-PAYLOAD", amz_date, scope, previous_signature,
                      EMPTY_SHA256, chunk_sha256_hex])


def chunk_signature(signing_key: bytes, amz_date: str, scope: str, previous_signature: str,
                    chunk_sha256_hex: str) -> str:
    """The hex signature of a chunk, chained from the previous chunk's (or the seed)."""
    text = chunk_string_to_sign(amz_date, scope, previous_signature, chunk_sha256_hex)
    return _hmac(signing_key, text).hex()


def trailer_string_to_sign(amz_date: str, scope: str, previous_signature: str,
                           trailer: bytes) -> str:
    """The string to sign of a trailer (``name:value\\n`` lines, as canonicalised)."""
    return "\n".join([ALGORITHM + "-TRAILER", amz_date, scope, previous_signature,
                      hashlib.sha256(trailer).hexdigest()])


def trailer_signature(signing_key: bytes, amz_date: str, scope: str, previous_signature: str,
                      trailer: bytes) -> str:
    """The hex signature of the trailing headers, chained from the final chunk's."""
    text = trailer_string_to_sign(amz_date, scope, previous_signature, trailer)
    return _hmac(signing_key, text).hex()


# ---------------------------------------------------------------- parsing

def _credential(text: str, error_code: str) -> Credential:
    parts = text.split("/")
    if len(parts) != 5 or not all(parts) or parts[4] != TERMINATOR:
        raise S3Error(error_code, f"The {_what(error_code)} is malformed; the Credential is"
                      " mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/"
                      "aws4_request\".")
    if not re.fullmatch(r"\d{8}", parts[1]):
        raise S3Error(error_code, f"The {_what(error_code)} is malformed; incorrect date"
                      f" format \"{parts[1]}\". This date in the credential must be in the"
                      " format \"yyyyMMdd\".")
    return Credential(parts[0], parts[1], parts[2], parts[3])


def _what(error_code: str) -> str:
    return ("authorization header" if error_code == "AuthorizationHeaderMalformed"
            else "query-string authentication")


def _signed_headers(text: str, error_code: str) -> tuple[str, ...]:
    names = tuple(text.split(";"))
    if not text or any(not name or name != name.strip().lower() for name in names):
        raise S3Error(error_code, f"The {_what(error_code)} is malformed; SignedHeaders"
                      f" must be lower-case header names separated by ';': {text!r}")
    if "host" not in names:
        raise S3Error(error_code, f"The {_what(error_code)} is malformed; the host header"
                      " must be signed.")
    return names


def _signature(text: str, error_code: str) -> str:
    if not _HEX64.match(text):
        raise S3Error(error_code, f"The {_what(error_code)} is malformed; the Signature"
                      " must be 64 lower-case hexadecimal digits.")
    return text


def _payload_hash(value: str) -> str:
    if value in SPECIAL_PAYLOADS or _HEX64.match(value):
        return value
    raise S3Error("InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD,"
                  " STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD,"
                  " STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.",
                  ArgumentName="x-amz-content-sha256", ArgumentValue=value[:80])


def _request_date(headers: Mapping[str, str]) -> str:
    if "x-amz-date" in headers:
        value = headers["x-amz-date"].strip()
        if _AMZ_DATE.match(value):
            return value
    elif "date" in headers:
        try:
            when = email.utils.parsedate_to_datetime(headers["date"])
        except (TypeError, ValueError):
            when = None
        if when is not None and when.tzinfo is not None:
            return when.astimezone(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    raise S3Error("AccessDenied", "AWS authentication requires a valid Date or x-amz-date"
                  " header")


def _unsupported_v2(presigned: bool = False) -> S3Error:
    hint = (" (boto3 presigns with Signature Version 2 unless its client has"
            " Config(signature_version='s3v4'))") if presigned else ""
    return S3Error("InvalidRequest", "The authorization mechanism you have provided is not"
                   f" supported. Please use AWS4-HMAC-SHA256.{hint}")


def _parse_header_form(authorization: str, headers: Mapping[str, str]) -> SignedRequest:
    code = "AuthorizationHeaderMalformed"
    scheme, _, rest = authorization.strip().partition(" ")
    if scheme == "AWS":
        raise _unsupported_v2()
    if scheme != ALGORITHM:
        raise S3Error("InvalidArgument", "Unsupported Authorization Type",
                      ArgumentName="Authorization", ArgumentValue=authorization[:40])
    fields: dict[str, str] = {}
    for component in rest.split(","):
        name, equals, value = component.strip().partition("=")
        if not equals or name in fields:
            raise S3Error(code, f"The authorization header is malformed; the authorization"
                          f" component \"{component.strip()[:80]}\" is malformed.")
        fields[name] = value
    missing = [n for n in ("Credential", "SignedHeaders", "Signature") if n not in fields]
    if missing or len(fields) != 3:
        raise S3Error(code, "The authorization header is malformed; it needs exactly"
                      " Credential, SignedHeaders and Signature.")
    if "x-amz-content-sha256" not in headers:
        raise S3Error("InvalidRequest", "Missing required header for this request:"
                      " x-amz-content-sha256")
    return SignedRequest(
        credential=_credential(fields["Credential"], code),
        signed_headers=_signed_headers(fields["SignedHeaders"], code),
        signature=_signature(fields["Signature"], code),
        amz_date=_request_date(headers),
        payload_hash=_payload_hash(headers["x-amz-content-sha256"].strip()),
        presigned=False)


def _parse_query_form(params: dict[str, str], headers: Mapping[str, str]) -> SignedRequest:
    code = "AuthorizationQueryParametersError"
    if params["X-Amz-Algorithm"] != ALGORITHM:
        raise S3Error(code, "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"")
    if any(name not in params for name in _PRESIGN_PARAMS):
        raise S3Error(code, "Query-string authentication version 4 requires the"
                      " X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date,"
                      " X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
    expires_text = params["X-Amz-Expires"]
    if not re.fullmatch(r"\d{1,7}", expires_text):
        raise S3Error(code, "X-Amz-Expires should be a number")
    expires = int(expires_text)
    if expires > MAX_PRESIGN_EXPIRES:
        raise S3Error(code, "X-Amz-Expires must be less than a week (in seconds) that is"
                      " 604800")
    amz_date = params["X-Amz-Date"]
    if not _AMZ_DATE.match(amz_date):
        raise S3Error(code, "X-Amz-Date must be in the ISO8601 Long Format"
                      " \"yyyyMMdd'T'HHmmss'Z'\"")
    payload = headers.get("x-amz-content-sha256")
    return SignedRequest(
        credential=_credential(params["X-Amz-Credential"], code),
        signed_headers=_signed_headers(params["X-Amz-SignedHeaders"], code),
        signature=_signature(params["X-Amz-Signature"], code),
        amz_date=amz_date,
        payload_hash=UNSIGNED_PAYLOAD if payload is None else _payload_hash(payload.strip()),
        presigned=True, expires=expires)


def parse_request_auth(method: str, raw_path: str, raw_query: str,
                       headers: Mapping[str, str], allow_v2: bool = False) -> SignedRequest:
    """What a request says about its signature (nothing is verified yet).

    :param raw_path: the path as sent (percent-encoded); unused, kept for symmetry
        with :func:`verify_request`.
    :param raw_query: the query string as sent, without ``?``.
    :param headers: lower-case names -> values (repeated headers joined by ``,``).
    :param allow_v2: accept Signature Version 2 (:mod:`tahoe.s3.sigv2`) instead of
        refusing it.
    :raises S3Error: ``AccessDenied`` for an anonymous request; ``InvalidRequest``
        for Signature Version 2 (unless allowed) or a header form without
        ``x-amz-content-sha256``; ``InvalidArgument`` for another scheme, both forms
        at once or a bad payload hash; ``AuthorizationHeaderMalformed`` or
        ``AuthorizationQueryParametersError`` for a malformed signature.
    """
    params: dict[str, str] = {}
    for name, value in parse_query(raw_query):
        params.setdefault(name, value)
    authorization = headers.get("authorization")
    if authorization is not None and "X-Amz-Algorithm" in params:
        raise S3Error("InvalidArgument", "Only one auth mechanism allowed; only the"
                      " X-Amz-Algorithm query parameter, Signature query string parameter"
                      " or the Authorization header should be specified",
                      ArgumentName="Authorization", ArgumentValue=authorization[:40])
    v2_query = "X-Amz-Algorithm" not in params and all(n in params for n in _SIGV2_QUERY)
    if allow_v2 and ((authorization or "").startswith("AWS ") or
                     (authorization is None and v2_query)):
        from .sigv2 import parse_v2
        return parse_v2(authorization, params)
    if authorization is not None:
        return _parse_header_form(authorization, headers)
    if "X-Amz-Algorithm" in params:
        return _parse_query_form(params, headers)
    if v2_query:
        raise _unsupported_v2(presigned=True)
    raise S3Error("AccessDenied", "Anonymous access is not allowed: sign requests with"
                  " an access key of this gateway (Signature Version 4).")


# ---------------------------------------------------------------- verifying

def _epoch(amz_date: str) -> float:
    when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
    return when.replace(tzinfo=datetime.timezone.utc).timestamp()


def _iso(epoch: float) -> str:
    when = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _check_scope(req: SignedRequest, region: str) -> None:
    code = "AuthorizationQueryParametersError" if req.presigned else \
        "AuthorizationHeaderMalformed"
    credential = req.credential
    if credential.service != "s3":
        raise S3Error(code, f"The {_what(code)} is malformed; incorrect service"
                      f" \"{credential.service[:40]}\". This endpoint belongs to \"s3\".")
    if credential.region != region:
        raise S3Error(code, f"The {_what(code)} is malformed; the region"
                      f" '{credential.region[:40]}' is wrong; expecting '{region}'",
                      Region=region)
    if credential.date != req.amz_date[:8]:
        raise S3Error(code, f"The {_what(code)} is malformed; Invalid credential date"
                      f" \"{credential.date}\". This date is not the same as X-Amz-Date:"
                      f" \"{req.amz_date[:8]}\".")


def _check_time(req: SignedRequest, now: float, max_skew: int) -> None:
    try:
        signed_at = _epoch(req.amz_date)
    except ValueError:
        raise S3Error("AccessDenied", "AWS authentication requires a valid Date or"
                      " x-amz-date header") from None
    if req.presigned:
        assert req.expires is not None
        if now > signed_at + req.expires:
            raise S3Error("AccessDenied", "Request has expired",
                          **{"X-Amz-Expires": str(req.expires),
                             "Expires": _iso(signed_at + req.expires),
                             "ServerTime": _iso(now)})
        if signed_at - now > max_skew:
            raise S3Error("AccessDenied", "Request is not valid yet",
                          **{"X-Amz-Date": req.amz_date, "ServerTime": _iso(now)})
    elif abs(now - signed_at) > max_skew:
        raise S3Error("RequestTimeTooSkewed", RequestTime=req.amz_date,
                      ServerTime=_iso(now), MaxAllowedSkewMilliseconds=str(max_skew * 1000))


def _check_all_amz_headers_signed(req: SignedRequest, headers: Mapping[str, str]) -> None:
    unsigned = sorted(name for name in headers
                      if name.startswith("x-amz-") and name not in req.signed_headers)
    if unsigned:
        raise S3Error("AccessDenied", "There were headers present in the request which"
                      " were not signed", HeadersNotSigned=", ".join(unsigned))


def _canonical_uris(raw_path: str) -> list[str]:
    reencoded = uri_encode(percent_decode(raw_path), keep_slash=True)
    return [reencoded] if reencoded == raw_path else [reencoded, raw_path]


def verify_request(req: SignedRequest, secret: str, method: str, raw_path: str,
                   raw_query: str, headers: Mapping[str, str], now: float,
                   region: str, max_skew: int = 900,
                   virtual_host_bucket: str | None = None) -> bytes:
    """Check a request's signature with the account's secret; the signing key if good.

    :param now: the gateway's time, in seconds since the epoch.
    :param region: the gateway's region (``[s3]region``).
    :param max_skew: seconds a header-form request's time may differ from ``now``
        (S3: 15 minutes); a presigned URL may be dated at most that far ahead.
    :param virtual_host_bucket: the bucket named by the Host of a virtual-host style
        request (only Signature Version 2 signs it as part of the path).
    :return: the signing key, for the chunk signatures of an ``aws-chunked`` body
        (``b""`` for Signature Version 2).
    :raises S3Error: ``AuthorizationHeaderMalformed``/``AuthorizationQueryParametersError``
        for another region or service or a credential date unlike the request's;
        ``RequestTimeTooSkewed`` (header form); ``AccessDenied`` "Request has expired"
        (presigned) or for unsigned ``x-amz-*`` headers; ``SignatureDoesNotMatch``.
    """
    if req.version == 2:
        from .sigv2 import verify_v2
        return verify_v2(req, secret, method, raw_path, raw_query, headers, now, max_skew,
                         virtual_host_bucket)
    _check_scope(req, region)
    _check_time(req, now, max_skew)
    _check_all_amz_headers_signed(req, headers)
    credential = req.credential
    key = signing_key(secret, credential.date, credential.region, credential.service)
    canonical = sign_text = ""
    for uri in _canonical_uris(raw_path):
        canonical = canonical_request(method, uri, raw_query, headers, req.signed_headers,
                                      req.payload_hash, req.presigned)
        sign_text = string_to_sign(req.amz_date, credential.scope, canonical)
        expected = hmac.new(key, sign_text.encode("utf-8", "surrogateescape"),
                            hashlib.sha256).hexdigest()
        if hmac.compare_digest(expected, req.signature):
            return key
    raise S3Error("SignatureDoesNotMatch", AWSAccessKeyId=credential.access_key,
                  StringToSign=sign_text, SignatureProvided=req.signature,
                  CanonicalRequest=canonical)

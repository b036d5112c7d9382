"""Grid Manager certificates: build, sign, parse and check them, as Tahoe-LAFS 1.20.

Format: ``docs/formats/grid-manager.md``. A certificate is the compact,
key-sorted JSON text ``{"expires":ISO-8601,"public_key":"pub-v0-…","version":1}``
encoded as UTF-8; the Grid Manager signs exactly those bytes with Ed25519.
A *signed certificate* pairs that text with the base32 signature, and is what
``grid-manager sign`` prints, what a storage server keeps in ``NAME.cert`` and
what it lists under ``grid-manager-certificates`` in its storage announcement.

A client with ``[grid_managers]`` keys puts shares only on a server with at
least one certificate that a configured manager signed, naming that server's
public key, and not yet expired (:func:`check_certificates`,
:func:`certified_until`). Pure: the caller passes the current time.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from attrs import frozen

from ..crypto.ed25519 import (SIGNATURE_SIZE, BadKeyString, SigningKey, VerifyingKey,
                              parse_public_key)
from ..util import base32
from ..util.errors import BadBase32
from .errors import BadCertificate

__all__ = ["CERTIFICATE_VERSION", "ANNOUNCEMENT_KEY", "SignedCertificate", "CertificateBody",
           "Finding", "certificate_bytes", "sign_certificate", "expiry_after",
           "parse_signed_certificate", "parse_certificate_file", "format_certificate_file",
           "parse_certificate_body", "check_certificates", "certified_until"]

CERTIFICATE_VERSION = 1
#: The storage announcement's key for the list of signed certificates.
ANNOUNCEMENT_KEY = "grid-manager-certificates"
_SIGNED_KEYS = frozenset({"certificate", "signature"})


@frozen
class SignedCertificate:
    """A certificate's exact bytes and the 64-byte Ed25519 signature over them."""

    certificate: bytes
    signature: bytes

    def to_json_value(self) -> dict[str, str]:
        """The announcement's (and file's) form: ``certificate`` text and base32 ``signature``."""
        return {"certificate": self.certificate.decode("utf-8"),
                "signature": base32.b2a(self.signature)}


@frozen
class CertificateBody:
    """What a certificate says: the server's ``pub-v0-…`` key and when it expires."""

    expires: datetime
    public_key: str
    version: int


def certificate_bytes(public_key: VerifyingKey, expires: datetime) -> bytes:
    """The certificate text 1.20 signs, for a server key and a timezone-aware expiry."""
    if expires.tzinfo is None:
        raise ValueError("a certificate's expiry needs a time zone")
    body = {"expires": expires.isoformat(), "public_key": public_key.to_string(),
            "version": CERTIFICATE_VERSION}
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode("utf-8")


def expiry_after(now: datetime, days: int) -> datetime:
    """The expiry ``grid-manager sign NAME DAYS`` gives at ``now``: ``days`` days later."""
    return now + timedelta(days=days)


def sign_certificate(manager_key: SigningKey, public_key: VerifyingKey,
                     expires: datetime) -> SignedCertificate:
    """Sign a certificate for the server with ``public_key`` (deterministic, as Ed25519 is)."""
    raw = certificate_bytes(public_key, expires)
    return SignedCertificate(raw, manager_key.sign(raw))


def parse_signed_certificate(value: object) -> SignedCertificate:
    """A signed certificate from its JSON value (a dict with exactly ``certificate``
    and ``signature``, as in a file or an announcement).

    :raises BadCertificate: on another shape, or a signature that is not 64
        bytes of base32.
    """
    if not isinstance(value, Mapping):
        raise BadCertificate("a Grid Manager certificate must be a JSON object")
    if set(value) != _SIGNED_KEYS:
        raise BadCertificate("a Grid Manager certificate must contain exactly 'certificate' and"
                             f" 'signature' (found {', '.join(map(repr, sorted(map(str, value))))})")
    text, signature = value["certificate"], value["signature"]
    if not isinstance(text, str) or not isinstance(signature, str):
        raise BadCertificate("a certificate's 'certificate' and 'signature' must be strings")
    try:
        raw_signature = base32.a2b(signature)
    except (BadBase32, ValueError):
        raise BadCertificate("a certificate's 'signature' is not base32") from None
    if len(raw_signature) != SIGNATURE_SIZE:
        raise BadCertificate(f"a certificate's signature must be {SIGNATURE_SIZE} bytes,"
                             f" not {len(raw_signature)}")
    return SignedCertificate(text.encode("utf-8"), raw_signature)


def parse_certificate_file(text: str) -> SignedCertificate:
    """A signed certificate from a file's JSON text.

    :raises BadCertificate: if it is not JSON, or as :func:`parse_signed_certificate`.
    """
    try:
        value = json.loads(text)
    except ValueError as error:
        raise BadCertificate(f"not JSON: {error}") from None
    return parse_signed_certificate(value)


def format_certificate_file(certificate: SignedCertificate) -> str:
    """The JSON text ``grid-manager sign`` prints (4-space indent, no final newline)."""
    return json.dumps(certificate.to_json_value(), indent=4)


def parse_certificate_body(raw: bytes) -> CertificateBody:
    """What a certificate's bytes say.

    :raises BadCertificate: unless it is a JSON object with a version-1
        ``expires`` (ISO 8601 with a time zone) and a ``pub-v0-…`` ``public_key``.
    """
    try:
        body = json.loads(raw.decode("utf-8"))
    except ValueError as error:
        raise BadCertificate(f"certificate is not JSON: {error}") from None
    if not isinstance(body, dict):
        raise BadCertificate("certificate is not a JSON object")
    if body.get("version") != CERTIFICATE_VERSION:
        raise BadCertificate(f"unknown certificate version {body.get('version')!r}")
    expires, public_key = body.get("expires"), body.get("public_key")
    if not isinstance(expires, str) or not isinstance(public_key, str):
        raise BadCertificate("certificate lacks 'expires' or 'public_key'")
    try:
        when = datetime.fromisoformat(expires)
    except ValueError:
        raise BadCertificate(f"certificate expiry {expires!r} is not an ISO 8601 time") from None
    if when.tzinfo is None:
        raise BadCertificate(f"certificate expiry {expires!r} has no time zone")
    try:
        parse_public_key(public_key)
    except BadKeyString as error:
        raise BadCertificate(f"certificate public_key: {error}") from None
    return CertificateBody(when, public_key, CERTIFICATE_VERSION)


@frozen
class Finding:
    """What a client made of one announced certificate.

    :ivar status: ``"signed"`` (a configured manager signed it for this server),
        ``"forged"`` (no configured manager's signature), ``"other-server"``
        (signed, but for another server's key) or ``"malformed"``.
    :ivar manager: the name of the manager whose signature verified, if any.
    :ivar expires: the certificate's expiry, when it could be read.
    :ivar detail: words for the log.
    """

    status: str
    manager: str | None = None
    expires: datetime | None = None
    detail: str = ""


def check_certificates(managers: Mapping[str, VerifyingKey], announced: object,
                       server_public_key: str) -> tuple[Finding, ...]:
    """Check a server's announced ``grid-manager-certificates`` value against the
    configured managers (name → key), for the server's ``pub-v0-…`` key.

    A value that is not a list is one malformed finding. Expiry is left to
    :func:`certified_until`, which is asked at each use.
    """
    if announced is None:
        return ()
    if not isinstance(announced, list):
        return (Finding("malformed", detail="grid-manager-certificates is not a list"),)
    findings = []
    for value in announced:
        try:
            signed = parse_signed_certificate(value)
        except BadCertificate as error:
            findings.append(Finding("malformed", detail=str(error)))
            continue
        signer = next((name for name, key in sorted(managers.items())
                       if key.is_valid_signature(signed.certificate, signed.signature)), None)
        if signer is None:
            findings.append(Finding("forged", detail="signature matches no configured Grid"
                                    " Manager"))
            continue
        try:
            body = parse_certificate_body(signed.certificate)
        except BadCertificate as error:
            findings.append(Finding("malformed", signer, detail=str(error)))
            continue
        if body.public_key != server_public_key:
            findings.append(Finding("other-server", signer, body.expires,
                                    f"certificate is for {body.public_key}"))
            continue
        findings.append(Finding("signed", signer, body.expires))
    return tuple(findings)


def certified_until(findings: Sequence[Finding], now: datetime) -> datetime | None:
    """The latest expiry among the signed certificates still valid at ``now``
    (timezone-aware), or None when none is: the server then gets no shares."""
    valid = [f.expires for f in findings
             if f.status == "signed" and f.expires is not None and f.expires > now]
    return max(valid) if valid else None

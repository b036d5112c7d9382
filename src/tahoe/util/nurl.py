"""NURLs: where and how to reach a storage server over the HTTPS storage protocol.

Follows ``docs/formats/http-storage.md`` ("NURLs"): a NURL is
``pb://<spki-hash>@<host>:<port>/<swissnum>#v=1``, where the SPKI hash is the
unpadded URL-safe base64 of SHA-256 over the DER ``SubjectPublicKeyInfo`` of
the server's certificate (43 characters). The ``v=1`` fragment is what tells
it from a FURL. A storage server makes one NURL per ``tcp:`` hint of its
``tub.location`` and reuses its storage FURL's swissnum; ``pb+tor`` is the
scheme for a ``.onion`` host.
"""
from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable

from attrs import field, frozen
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from .errors import BadNURL
from .furl import parse_hint

SCHEMES = ("pb", "pb+tor")
FRAGMENT = "v=1"
SPKI_HASH_LENGTH = 43

_SPKI_HASH = re.compile(r"\A[A-Za-z0-9_-]{43}\Z")
_SWISSNUM = re.compile(r"\A[\x21-\x7e]+\Z")
_HOST = re.compile(r"\A(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)\Z")


def _check_spki(instance: object, attribute: object, value: object) -> None:
    if not isinstance(value, str) or not _SPKI_HASH.match(value):
        raise BadNURL(f"not an SPKI hash (43 URL-safe base64 characters): {value!r:.60}")


def _check_host(instance: object, attribute: object, value: object) -> None:
    if not isinstance(value, str) or not _HOST.match(value):
        raise BadNURL(f"malformed host in NURL: {value!r:.80}")


def _check_port(instance: object, attribute: object, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= 65535:
        raise BadNURL(f"port out of range in NURL: {value!r}")


def _check_swissnum(instance: object, attribute: object, value: object) -> None:
    if not isinstance(value, str) or not _SWISSNUM.match(value) or any(c in value for c in "/#?"):
        raise BadNURL("the swissnum must be non-empty printable ASCII without '/', '#' or '?'")


def _check_scheme(instance: object, attribute: object, value: object) -> None:
    if value not in SCHEMES:
        raise BadNURL(f"unknown NURL scheme {value!r}")


@frozen
class NURL:
    """A parsed NURL.

    :ivar spki_hash: the pinned key, 43 characters of URL-safe base64.
    :ivar host: host name or address (an IPv6 address keeps its brackets).
    :ivar port: TCP port, 1..65535.
    :ivar swissnum: the storage service's secret name (its FURL's swissnum).
    :ivar scheme: ``pb`` (TCP) or ``pb+tor``.
    :raises BadNURL: if a field is malformed.
    """

    spki_hash: str = field(validator=_check_spki)
    host: str = field(validator=_check_host)
    port: int = field(validator=_check_port)
    swissnum: str = field(validator=_check_swissnum)
    scheme: str = field(default="pb", validator=_check_scheme)

    def to_string(self) -> str:
        """The NURL text."""
        return f"{self.scheme}://{self.spki_hash}@{self.host}:{self.port}/{self.swissnum}#{FRAGMENT}"

    @property
    def swissnum_bytes(self) -> bytes:
        """The swissnum as the bytes sent (base64-encoded) in ``Authorization``."""
        return self.swissnum.encode("ascii")


def is_nurl(text: object) -> bool:
    """Tell whether ``text`` looks like an HTTP-storage NURL (a ``#v=1`` fragment)."""
    return isinstance(text, str) and text.endswith("#" + FRAGMENT) and \
        text.split("://", 1)[0] in SCHEMES


def parse_nurl(text: str) -> NURL:
    """Parse NURL text.

    :raises BadNURL: unless it is ``pb[+tor]://HASH@HOST:PORT/SWISSNUM#v=1``
        with a 43-character SPKI hash, a port in 1..65535 and a non-empty swissnum.
    """
    if not isinstance(text, str) or not text.isascii():
        raise BadNURL("a NURL must be ASCII text")
    scheme, sep, rest = text.partition("://")
    if not sep or scheme not in SCHEMES:
        raise BadNURL(f"a NURL starts with pb:// or pb+tor://: {text!r:.80}")
    rest, hash_sign, fragment = rest.partition("#")
    if not hash_sign or fragment != FRAGMENT:
        raise BadNURL(f"a NURL ends with #{FRAGMENT}: {text!r:.80}")
    userinfo, at, rest = rest.partition("@")
    if not at:
        raise BadNURL(f"no '<spki-hash>@' in NURL: {text!r:.80}")
    netloc, slash, swissnum = rest.partition("/")
    if not slash:
        raise BadNURL(f"no '/<swissnum>' in NURL: {text!r:.80}")
    host, colon, port = netloc.rpartition(":")
    if not colon or not port.isdigit() or len(port) > 5:
        raise BadNURL(f"no ':<port>' in NURL: {text!r:.80}")
    return NURL(userinfo, host, int(port), swissnum, scheme)


def spki_hash(certificate_der: bytes) -> str:
    """The SPKI hash of a DER certificate: unpadded URL-safe base64 of SHA-256.

    :raises BadNURL: if the bytes are not a DER X.509 certificate.
    """
    try:
        certificate = x509.load_der_x509_certificate(certificate_der)
    except ValueError as error:
        raise BadNURL(f"not a DER certificate: {error}") from None
    return spki_hash_of(certificate)


def spki_hash_of(certificate: x509.Certificate) -> str:
    """The SPKI hash of a parsed certificate (see :func:`spki_hash`)."""
    spki = certificate.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    return base64.urlsafe_b64encode(hashlib.sha256(spki).digest()).rstrip(b"=").decode("ascii")


def nurls_for_location(hints: Iterable[str], spki: str, swissnum: str) -> list[NURL]:
    """The NURLs a storage server announces: one per ``tcp:`` (or ``.onion`` ``tor:``) hint.

    Other hint types (``i2p:``) give none, as in Tahoe 1.20; malformed hints are skipped.
    """
    nurls: list[NURL] = []
    for hint in hints:
        try:
            parsed = parse_hint(hint)
        except ValueError:
            continue
        if parsed.kind == "tcp" and parsed.host is not None and parsed.port:
            nurls.append(NURL(spki, parsed.host, parsed.port, swissnum))
        elif parsed.kind == "tor":
            host, _, port = hint[len("tor:"):].rpartition(":")
            if host.endswith(".onion") and port.isdigit() and 0 < int(port) <= 65535:
                nurls.append(NURL(spki, host, int(port), swissnum, "pb+tor"))
    return nurls

"""Foolscap FURLs and tub ids: parse, format, and derive a tub id from a certificate.

Follows ``storage-protocol.md`` §1.1–1.2 (see ``docs/formats/announcements.md``):

* a tub id is the lower-case base32 of SHA-1 over the DER certificate,
  32 characters (20 bytes); its binary form is the lease and write-enabler seed;
* a FURL is ``pb://<tubid>@<hint>[,<hint>...]/<swissnum>``. The hint list may
  be empty (``pb://tubid@/name``); a hint is ``TYPE:...`` (``tcp:HOST:PORT``,
  ``tor:ONION:PORT``, ...) or the legacy ``HOST:PORT``, which means TCP.
  Only the first 32 characters of the tub-id field are the tub id; Foolscap
  reserves the rest, and we keep it so a FURL formats back to its text.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from attrs import field, frozen

from . import base32
from .errors import BadFURL

FURL_PREFIX = "pb://"
TUBID_LENGTH = 32
TUBID_BYTES = 20

_TUBID = re.compile(r"\A[a-z2-7]{32}\Z")
# Printable ASCII without space: what may appear anywhere in a FURL we accept.
_PRINTABLE = re.compile(r"\A[\x21-\x7e]*\Z")
_LEGACY_HINT = re.compile(r"\A([^:]+):([0-9]+)\Z")
_TCP_BODY = re.compile(r"\A(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+):([0-9]+)\Z")


def is_valid_tubid(text: object) -> bool:
    """Tell whether ``text`` is a tub id: exactly 32 lower-case base32 characters."""
    return isinstance(text, str) and _TUBID.match(text) is not None


def tubid_to_bytes(tubid: str) -> bytes:
    """The 20-byte binary tub id (the lease seed of ``storage-protocol.md`` §5.3).

    :raises BadFURL: if ``tubid`` is not 32 base32 characters.
    """
    if not is_valid_tubid(tubid):
        raise BadFURL(f"not a tub id (32 base32 characters): {tubid!r:.60}")
    return base32.a2b(tubid)


def tubid_from_bytes(binary: bytes) -> str:
    """The text tub id of a 20-byte binary tub id.

    :raises BadFURL: if ``binary`` is not 20 bytes.
    """
    if not isinstance(binary, bytes) or len(binary) != TUBID_BYTES:
        raise BadFURL(f"a binary tub id is {TUBID_BYTES} bytes")
    return base32.b2a(binary)


def tubid_from_certificate_der(der: bytes) -> str:
    """The tub id of a TLS certificate: base32(SHA-1(DER)), 32 characters."""
    return base32.b2a(hashlib.sha1(der).digest())


@frozen
class ConnectionHint:
    """One connection hint, split into its type and the rest.

    ``kind`` is ``"tcp"`` for both ``tcp:HOST:PORT`` and the legacy ``HOST:PORT``;
    ``host`` and ``port`` are filled in for TCP hints only (an IPv6 host keeps
    its brackets). ``text`` is the hint exactly as written.
    """

    text: str
    kind: str
    host: str | None = None
    port: int | None = None

    @property
    def is_legacy(self) -> bool:
        """True for the old ``HOST:PORT`` form without a type."""
        return self.kind == "tcp" and not self.text.startswith("tcp:")

    def normalized(self) -> str:
        """The hint with an explicit type: ``HOST:PORT`` becomes ``tcp:HOST:PORT``."""
        return f"tcp:{self.host}:{self.port}" if self.is_legacy else self.text


def parse_hint(hint: str) -> ConnectionHint:
    """Split one connection hint into type (and host and port for TCP).

    :raises BadFURL: if the hint is empty, has no type, or is a TCP hint
        without a valid host and port (0 to 65535).
    """
    if not isinstance(hint, str) or not hint or not _PRINTABLE.match(hint) or "," in hint \
            or "/" in hint:
        raise BadFURL(f"malformed connection hint: {hint!r:.80}")
    legacy = _LEGACY_HINT.match(hint)
    if legacy:
        return ConnectionHint(hint, "tcp", legacy.group(1), _port(legacy.group(2), hint))
    kind, sep, body = hint.partition(":")
    if not sep or not kind or not body:
        raise BadFURL(f"connection hint has no type: {hint!r:.80}")
    if kind != "tcp":
        return ConnectionHint(hint, kind)
    tcp = _TCP_BODY.match(body)
    if not tcp:
        raise BadFURL(f"malformed tcp hint: {hint!r:.80}")
    return ConnectionHint(hint, "tcp", tcp.group(1), _port(tcp.group(2), hint))


def _port(digits: str, hint: str) -> int:
    port = int(digits)
    if port > 65535:
        raise BadFURL(f"port out of range in hint {hint!r:.80}")
    return port


def _check_tubid(instance: object, attribute: object, value: object) -> None:
    if not is_valid_tubid(value):
        raise BadFURL(f"not a tub id (32 base32 characters): {value!r:.60}")


def _check_hints(instance: object, attribute: object, value: object) -> None:
    if not isinstance(value, tuple) or not all(isinstance(h, str) for h in value):
        raise BadFURL("hints must be a tuple of strings")
    for hint in value:
        if not hint or "," in hint or "/" in hint or not _PRINTABLE.match(hint):
            raise BadFURL(f"malformed connection hint: {hint!r:.80}")


def _check_swissnum(instance: object, attribute: object, value: object) -> None:
    if not isinstance(value, str) or not value or not _PRINTABLE.match(value):
        raise BadFURL("the swissnum must be non-empty printable ASCII")


def _check_suffix(instance: object, attribute: object, value: object) -> None:
    if not isinstance(value, str) or any(c in value for c in "@/,") \
            or not _PRINTABLE.match(value):
        raise BadFURL("malformed tub-id extension")


@frozen
class FURL:
    """A parsed FURL: the tub id, the connection hints and the swissnum.

    :ivar tubid: 32 base32 characters.
    :ivar hints: the connection hints, in order, as written (may be empty).
    :ivar swissnum: the object's secret name.
    :ivar tubid_extension: characters after the 32nd of the tub-id field
        (reserved by Foolscap; empty in every FURL Tahoe writes).
    :raises BadFURL: if a field is malformed.
    """

    tubid: str = field(validator=_check_tubid)
    hints: tuple[str, ...] = field(converter=tuple, validator=_check_hints)
    swissnum: str = field(validator=_check_swissnum)
    tubid_extension: str = field(default="", validator=_check_suffix, kw_only=True)

    @property
    def tubid_bytes(self) -> bytes:
        """The 20-byte binary tub id: the server's lease and write-enabler seed."""
        return base32.a2b(self.tubid)

    def parsed_hints(self) -> list[ConnectionHint]:
        """Each hint split by :func:`parse_hint`.

        :raises BadFURL: if a hint is malformed.
        """
        return [parse_hint(h) for h in self.hints]

    def to_string(self) -> str:
        """The FURL text, ``pb://tubid@hint,hint/swissnum``."""
        return format_furl(self.tubid + self.tubid_extension, self.hints, self.swissnum)


def format_furl(tubid: str, hints: Iterable[str], swissnum: str) -> str:
    """Join a tub id, hints and swissnum into FURL text (no validation)."""
    return f"{FURL_PREFIX}{tubid}@{','.join(hints)}/{swissnum}"


def parse_furl(text: str | bytes) -> FURL:
    """Parse FURL text (ASCII ``str`` or ``bytes``) into a :class:`FURL`.

    Hints are checked only for shape (non-empty, printable, no ``,`` or
    ``/``); use :meth:`FURL.parsed_hints` to split them.

    :raises BadFURL: if the text is not ``pb://<tubid>@<hints>/<swissnum>``
        with a valid tub id, no empty hint and a non-empty swissnum.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("ascii")
        except UnicodeDecodeError:
            raise BadFURL("a FURL must be ASCII") from None
    if not isinstance(text, str):
        raise BadFURL(f"a FURL must be text, not {type(text).__name__}")
    if not text.startswith(FURL_PREFIX):
        raise BadFURL(f"a FURL starts with {FURL_PREFIX!r}: {text!r:.80}")
    rest = text[len(FURL_PREFIX):]
    tubid_field, at, rest = rest.partition("@")
    if not at or "/" in tubid_field:
        raise BadFURL(f"no '<tubid>@' in FURL: {text!r:.80}")
    hints_field, slash, swissnum = rest.partition("/")
    if not slash:
        raise BadFURL(f"no '/<swissnum>' in FURL: {text!r:.80}")
    hints = hints_field.split(",") if hints_field else []
    if "" in hints:
        raise BadFURL(f"empty connection hint in FURL: {text!r:.80}")
    tubid, extension = tubid_field[:TUBID_LENGTH], tubid_field[TUBID_LENGTH:]
    return FURL(tubid, tuple(hints), swissnum, tubid_extension=extension)

"""Immutable file caps: URI:CHK, URI:CHK-Verifier and URI:LIT (``reference/immutable.md`` §8).

Parsing follows Tahoe 1.20 exactly, quirks included: decimal fields accept
leading zeros, the read cap and LIT cap tolerate one trailing newline, and
the verify cap is anchored only at its start (trailing text is ignored).
"""
from __future__ import annotations

import re

from attrs import field, frozen
from attrs.validators import ge, instance_of

from ..util import base32
from ..util.hashutil import storage_index_from_key
from .errors import MalformedCap

CHK_PREFIX = "URI:CHK:"
CHK_VERIFIER_PREFIX = "URI:CHK-Verifier:"
LIT_PREFIX = "URI:LIT:"

_B128 = r"[a-z2-7]{25}[aeimquy4]"
_B256 = r"[a-z2-7]{51}[aq]"
_CHK = re.compile(rf"\AURI:CHK:({_B128}):({_B256}):([0-9]+):([0-9]+):([0-9]+)\n?\Z")
_CHK_VERIFIER = re.compile(rf"\AURI:CHK-Verifier:({_B128}):({_B256}):([0-9]+):([0-9]+):([0-9]+)")
_LIT = re.compile(r"\AURI:LIT:([a-z2-7]*)\n?\Z")


def _exact(length: int):  # type: ignore[no-untyped-def]
    def check(instance: object, attribute: object, value: bytes) -> None:
        if not isinstance(value, bytes) or len(value) != length:
            raise ValueError(f"{getattr(attribute, 'name', '?')} must be {length} bytes")
    return check


@frozen
class CHKReadCap:
    """``URI:CHK:<key>:<UEB hash>:<k>:<N>:<size>``: reads and verifies one immutable file."""

    key: bytes = field(validator=_exact(16))
    ueb_hash: bytes = field(validator=_exact(32))
    needed: int = field(validator=[instance_of(int), ge(0)])
    total: int = field(validator=[instance_of(int), ge(0)])
    size: int = field(validator=[instance_of(int), ge(0)])

    @property
    def storage_index(self) -> bytes:
        """The 16-byte storage index derived from the key."""
        return storage_index_from_key(self.key)

    def to_string(self) -> str:
        """The cap's text form."""
        return (f"{CHK_PREFIX}{base32.b2a(self.key)}:{base32.b2a(self.ueb_hash)}:"
                f"{self.needed}:{self.total}:{self.size}")

    def verify_cap(self) -> "CHKVerifyCap":
        """The verify cap of the same file."""
        return CHKVerifyCap(self.storage_index, self.ueb_hash, self.needed, self.total, self.size)

    @property
    def is_mutable(self) -> bool:
        """Immutable caps are never mutable."""
        return False


@frozen
class CHKVerifyCap:
    """``URI:CHK-Verifier:<SI>:<UEB hash>:<k>:<N>:<size>``: finds and checks shares, cannot decrypt."""

    storage_index: bytes = field(validator=_exact(16))
    ueb_hash: bytes = field(validator=_exact(32))
    needed: int = field(validator=[instance_of(int), ge(0)])
    total: int = field(validator=[instance_of(int), ge(0)])
    size: int = field(validator=[instance_of(int), ge(0)])

    def to_string(self) -> str:
        """The cap's text form."""
        return (f"{CHK_VERIFIER_PREFIX}{base32.b2a(self.storage_index)}:"
                f"{base32.b2a(self.ueb_hash)}:{self.needed}:{self.total}:{self.size}")

    def verify_cap(self) -> "CHKVerifyCap":
        """A verify cap is its own verify cap."""
        return self

    @property
    def is_mutable(self) -> bool:
        """Immutable caps are never mutable."""
        return False


@frozen
class LiteralCap:
    """``URI:LIT:<base32 data>``: a small file (at most 55 bytes) held in the cap itself."""

    data: bytes = field(validator=instance_of(bytes))

    @property
    def size(self) -> int:
        """The file's size in bytes."""
        return len(self.data)

    def to_string(self) -> str:
        """The cap's text form."""
        return LIT_PREFIX + base32.b2a(self.data)

    def verify_cap(self) -> None:
        """A LIT file has nothing to verify."""
        return None

    @property
    def is_mutable(self) -> bool:
        """Immutable caps are never mutable."""
        return False


def _why_chk_fails(kind: str, body: str, b128_name: str) -> str:
    parts = body.rstrip("\n").split(":")
    if len(parts) != 5:
        return f"expected 5 fields after {kind}:, found {len(parts)}"
    first, ueb, *numbers = parts
    if not re.fullmatch(_B128, first):
        return f"{b128_name} must be 26 base32 characters (lower case, last one of aeimquy4)"
    if not re.fullmatch(_B256, ueb):
        return "UEB hash must be 52 base32 characters (lower case, last one a or q)"
    for name, value in zip(("k", "N", "size"), numbers):
        if not re.fullmatch("[0-9]+", value):
            return f"{name} must be a decimal number, not {value[:20]!r}"
    return "unexpected characters"


def parse_chk(text: str) -> CHKReadCap:
    """Parse a ``URI:CHK:`` read cap.

    :raises MalformedCap: naming the field that is wrong.
    """
    match = _CHK.match(text)
    if not match:
        raise MalformedCap("URI:CHK", _why_chk_fails("URI:CHK", text[len(CHK_PREFIX):], "key"), text)
    key, ueb, needed, total, size = match.groups()
    return CHKReadCap(base32.a2b(key), base32.a2b(ueb), int(needed), int(total), int(size))


def parse_chk_verifier(text: str) -> CHKVerifyCap:
    """Parse a ``URI:CHK-Verifier:`` cap (anything after the size digits is ignored, as in Tahoe).

    :raises MalformedCap: naming the field that is wrong.
    """
    match = _CHK_VERIFIER.match(text)
    if not match:
        body = text[len(CHK_VERIFIER_PREFIX):]
        raise MalformedCap("URI:CHK-Verifier",
                           _why_chk_fails("URI:CHK-Verifier", body, "storage index"), text)
    si, ueb, needed, total, size = match.groups()
    return CHKVerifyCap(base32.a2b(si), base32.a2b(ueb), int(needed), int(total), int(size))


def parse_lit(text: str) -> LiteralCap:
    """Parse a ``URI:LIT:`` cap.

    :raises MalformedCap: for characters outside the alphabet, an impossible
        length, or non-zero trailing bits.
    """
    match = _LIT.match(text)
    if not match:
        raise MalformedCap("URI:LIT", "data must be lower-case base32", text)
    data = match.group(1)
    if not base32.is_canonical(data):
        raise MalformedCap("URI:LIT", "base32 data has an impossible length or non-zero trailing bits",
                           text)
    return LiteralCap(base32.a2b(data))

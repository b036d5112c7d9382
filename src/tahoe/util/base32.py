"""Tahoe's base32: RFC 4648 alphabet in lower case, no padding, strict decoding.

Follows ``reference/immutable.md`` §1.1 (see ``docs/formats/encodings.md``).
"""
from __future__ import annotations

import base64
import re

from .errors import BadBase32

ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"

# For each (length mod 8) the characters allowed in the last position: the
# unused low bits of the final character must be zero.
_LAST_CHAR = {
    0: ALPHABET,
    2: "aqiyemu4",
    4: "aq",
    5: "aqiyemu4cgkosw26",
    7: "aqiy",
}
_VALID = re.compile(r"\A[a-z2-7]*\Z")


def b2a(data: bytes) -> str:
    """Encode bytes as lower-case, unpadded base32 text."""
    return base64.b32encode(data).decode("ascii").rstrip("=").lower()


def b2a_bytes(data: bytes) -> bytes:
    """Encode bytes as lower-case, unpadded base32, returned as ASCII bytes."""
    return base64.b32encode(data).rstrip(b"=").lower()


def encoded_length(num_bytes: int) -> int:
    """Return how many base32 characters ``num_bytes`` bytes encode to."""
    return (num_bytes * 8 + 4) // 5


def is_canonical(text: str) -> bool:
    """Tell whether ``text`` is something :func:`b2a` could have produced."""
    if not _VALID.match(text):
        return False
    last = _LAST_CHAR.get(len(text) % 8)
    if last is None:
        return False
    return not text or text[-1] in last


def a2b(text: str | bytes) -> bytes:
    """Decode canonical base32 text strictly, as Tahoe does for caps.

    :raises BadBase32: on upper case, a foreign character, an impossible
        length, or non-zero trailing bits.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("ascii")
        except UnicodeDecodeError:
            raise BadBase32("base32 text must be ASCII") from None
    if not is_canonical(text):
        raise BadBase32(f"not canonical base32: {text[:60]!r}")
    padding = "=" * (-len(text) % 8)
    return base64.b32decode(text.upper() + padding)

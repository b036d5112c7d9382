"""Netstrings: ``decimal(len) ":" bytes ","`` (``reference/immutable.md`` §1.2)."""
from __future__ import annotations

from .errors import BadNetstring


def netstring(data: bytes) -> bytes:
    """Wrap ``data`` in a netstring."""
    return b"%d:%s," % (len(data), data)


def split_netstring(data: bytes, offset: int = 0) -> tuple[bytes, int]:
    """Read one netstring from ``data`` at ``offset``.

    :returns: the payload and the offset just past the closing comma.
    :raises BadNetstring: if there is no well-formed netstring at ``offset``.
    """
    colon = data.find(b":", offset, offset + 21)
    if colon < 0:
        raise BadNetstring("netstring length has no ':'")
    digits = data[offset:colon]
    if not digits.isdigit():
        raise BadNetstring(f"netstring length is not decimal: {digits[:20]!r}")
    length = int(digits)
    end = colon + 1 + length
    if end + 1 > len(data):
        raise BadNetstring("netstring is truncated")
    if data[end:end + 1] != b",":
        raise BadNetstring("netstring does not end with ','")
    return data[colon + 1:end], end + 1

"""Errors of the immutable-file format."""
from __future__ import annotations


class ImmutableFormatError(ValueError):
    """Root of every error raised on malformed or inconsistent immutable data."""


class BadEncodingParameters(ImmutableFormatError):
    """k, happy, N or the segment size are out of range or inconsistent."""


class BadUEB(ImmutableFormatError):
    """A URI extension block is malformed or disagrees with the cap."""


class UEBHashMismatch(BadUEB):
    """A URI extension block does not hash to the value in the cap."""


class LayoutInvalid(ImmutableFormatError):
    """A share's header or offset table is malformed."""


class ShareVersionUnknown(LayoutInvalid):
    """A share header carries a version other than 1 or 2."""


class HashTreeError(ImmutableFormatError):
    """Root of Merkle-tree validation failures."""


class BadHash(HashTreeError):
    """A supplied hash does not agree with the trusted tree."""


class NotEnoughHashes(HashTreeError):
    """Too few hashes were supplied to connect a node to a trusted one."""


class CorruptShare(ImmutableFormatError):
    """A share failed verification; ``shnum`` says which one and ``reason`` why."""

    def __init__(self, shnum: int, reason: str) -> None:
        super().__init__(f"share {shnum} is corrupt: {reason}")
        self.shnum = shnum
        self.reason = reason


class BadBlock(CorruptShare):
    """One block of a share does not match its block hash tree."""

    def __init__(self, shnum: int, segnum: int, reason: str) -> None:
        super().__init__(shnum, f"segment {segnum}: {reason}")
        self.segnum = segnum


class NotEnoughShares(ImmutableFormatError):
    """Fewer than k good shares remain, so the file cannot be rebuilt."""

    def __init__(self, needed: int, found: int, bad: dict[int, str] | None = None) -> None:
        bad = bad or {}
        detail = "".join(f"; share {n}: {r}" for n, r in sorted(bad.items()))
        super().__init__(f"needed {needed} good shares, found {found}{detail}")
        self.needed = needed
        self.found = found
        self.bad = bad


class BadCrypttext(ImmutableFormatError):
    """A decoded segment disagrees with the crypttext hash tree (the uploader erred)."""

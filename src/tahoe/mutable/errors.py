"""Errors of the mutable-file formats."""
from __future__ import annotations


class MutableFormatError(ValueError):
    """Root of every error raised on malformed or inconsistent mutable-file data."""


class BadEncodingParameters(MutableFormatError):
    """k, N, the segment size, the seqnum or the salts given to the encoder are unusable."""


class LayoutInvalid(MutableFormatError):
    """A share's header, offset table or regions are malformed."""


class UnknownShareVersion(LayoutInvalid):
    """A share starts with a version byte other than 0 (SDMF) or 1 (MDMF)."""


class ShareTruncated(LayoutInvalid):
    """The bytes given end before a region the caller asked about.

    :ivar needed: how many bytes from the start of the share are needed.
    """

    def __init__(self, message: str, needed: int) -> None:
        super().__init__(message)
        self.needed = needed


class BadPrivateKey(MutableFormatError):
    """An encrypted private key does not decrypt to the key the writekey was derived from."""


class CorruptShare(MutableFormatError):
    """A share failed validation; ``shnum`` says which one and ``reason`` why."""

    def __init__(self, shnum: int, reason: str) -> None:
        super().__init__(f"share {shnum} is corrupt: {reason}")
        self.shnum = shnum
        self.reason = reason


class NotEnoughShares(MutableFormatError):
    """Fewer than k good shares of the chosen version remain.

    :ivar bad: share number -> reason, for shares found corrupt.
    :ivar replaced: share numbers that now hold another version (a write since
        the servermap update; not corrupt, and not to be reported as such).
    """

    def __init__(self, needed: int, found: int, bad: dict[int, str] | None = None,
                 replaced: frozenset[int] = frozenset()) -> None:
        bad = bad or {}
        detail = "".join(f"; share {n}: {r}" for n, r in sorted(bad.items()))
        if replaced:
            detail += (f"; {len(replaced)} held another version by the time they were read "
                       f"(a concurrent write)")
        super().__init__(f"needed {needed} good shares, found {found}{detail}")
        self.needed = needed
        self.found = found
        self.bad = bad
        self.replaced = replaced


class UnrecoverableFile(MutableFormatError):
    """No version of the file has shares with k distinct share numbers."""


class UncoordinatedWriteError(MutableFormatError):
    """Another writer changed the file between our servermap update and our write."""

"""What identifies one version of a mutable file, and its segment geometry.

``reference/mutable-dirnodes.md`` §4.1, §4.4 step 4 and §5: shares whose
(seqnum, root hash, IV, segment size, data length, k, N, signed prefix,
offsets) agree belong to the same version; versions are ordered by those
fields in that order (seqnum, then root hash, decide in practice).

See ``docs/formats/mutable-files.md``.
"""
from __future__ import annotations

import struct

from attrs import frozen

from ..caps.mutable import MutableFormat
from ..util.mathutil import div_ceil
from .errors import LayoutInvalid

#: Checkstrings: the first bytes of a share, used as test-and-set specimens.
SDMF_CHECKSTRING = struct.Struct(">BQ32s16s")
MDMF_CHECKSTRING = struct.Struct(">BQ32s")


@frozen
class Geometry:
    """How a version's data is cut into segments and blocks.

    :ivar segment_size: bytes of plaintext per full segment (a multiple of k).
    :ivar data_length: plaintext length.
    :ivar needed: k.
    """

    segment_size: int
    data_length: int
    needed: int

    @property
    def num_segments(self) -> int:
        """0 for an empty file, else ceil(data_length / segment_size)."""
        return div_ceil(self.data_length, self.segment_size) if self.data_length else 0

    def segment_length(self, segnum: int) -> int:
        """Plaintext bytes in segment ``segnum`` (the last one may be short)."""
        if segnum < self.num_segments - 1:
            return self.segment_size
        return self.data_length - self.segment_size * (self.num_segments - 1)

    def block_length(self, segnum: int) -> int:
        """Bytes of each share's block of segment ``segnum``: ceil(segment length / k)."""
        return div_ceil(self.segment_length(segnum), self.needed)

    @property
    def full_block_length(self) -> int:
        """Block length of a full segment."""
        return self.segment_size // self.needed

    def check(self) -> None:
        """Check that the numbers describe a decodable file.

        :raises LayoutInvalid: for a segment size that is not a positive
            multiple of k while there is data, or k = 0.
        """
        if self.needed < 1:
            raise LayoutInvalid("k must be at least 1")
        if self.data_length and (self.segment_size < 1 or self.segment_size % self.needed):
            raise LayoutInvalid(f"segment size {self.segment_size} is not a positive multiple "
                                f"of k={self.needed}")


@frozen
class VersionInfo:
    """One version of a mutable file, as read from a share's signed header.

    :ivar iv: the SDMF IV; None for MDMF (whose salts are per segment).
    :ivar signed_prefix: the bytes the signature covers (75 SDMF, 59 MDMF).
    :ivar offsets: the share's offset table, in header order.
    """

    seqnum: int
    root_hash: bytes
    iv: bytes | None
    segment_size: int
    data_length: int
    needed: int
    total: int
    signed_prefix: bytes
    offsets: tuple[int, ...]

    @property
    def format(self) -> MutableFormat:
        """SDMF (share version 0) or MDMF (share version 1)."""
        return MutableFormat(self.signed_prefix[0])

    @property
    def checkstring(self) -> bytes:
        """The 57-byte (SDMF) or 41-byte (MDMF) test-and-set specimen of this version."""
        if self.iv is None:
            return MDMF_CHECKSTRING.pack(1, self.seqnum, self.root_hash)
        return SDMF_CHECKSTRING.pack(0, self.seqnum, self.root_hash, self.iv)

    @property
    def geometry(self) -> Geometry:
        """Segment and block sizes of this version."""
        return Geometry(self.segment_size, self.data_length, self.needed)

    def sort_key(self) -> tuple[int, bytes, bytes, int, int, int, int, bytes, tuple[int, ...]]:
        """Tahoe's order of versions: seqnum, root hash, IV, segsize, length, k, N, ..."""
        return (self.seqnum, self.root_hash, self.iv or b"", self.segment_size, self.data_length,
                self.needed, self.total, self.signed_prefix, self.offsets)

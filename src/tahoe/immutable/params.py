"""Encoding parameters and segment geometry of a CHK file (``reference/immutable.md`` §4.2).

Pure: the sizes every other part of the format is laid out from.
"""
from __future__ import annotations

from attrs import field, frozen

from ..util.mathutil import div_ceil, next_multiple
from .errors import BadEncodingParameters

#: Files of at most this many bytes become LIT caps (reference §4.1).
LIT_SIZE_THRESHOLD = 55
#: Tahoe 1.20's default maximum immutable segment size (1 MiB).
DEFAULT_MAX_SEGMENT_SIZE = 1024 * 1024


def _check_k_n(needed: int, total: int) -> None:
    if not (1 <= needed <= total <= 256):
        raise BadEncodingParameters(
            f"need 1 <= k <= N <= 256, got k={needed} N={total}")


@frozen
class EncodingParameters:
    """What a client is configured to use: k, happy, N and the maximum segment size.

    :raises BadEncodingParameters: unless 1 <= k <= happy <= N <= 256 and the
        maximum segment size is positive.
    """

    needed: int = 3
    happy: int = 7
    total: int = 10
    max_segment_size: int = DEFAULT_MAX_SEGMENT_SIZE

    def __attrs_post_init__(self) -> None:
        _check_k_n(self.needed, self.total)
        if not (self.needed <= self.happy <= self.total):
            raise BadEncodingParameters(
                f"need k <= happy <= N, got k={self.needed} happy={self.happy} N={self.total}")
        if self.max_segment_size < 1:
            raise BadEncodingParameters("max_segment_size must be positive")

    def geometry(self, size: int) -> "SegmentGeometry":
        """The segment geometry these parameters give a file of ``size`` bytes."""
        return SegmentGeometry.for_file(size, self.needed, self.total, self.max_segment_size)


@frozen
class SegmentGeometry:
    """The sizes of one CHK file: how it splits into segments and blocks.

    Built with :meth:`for_file` (from the maximum segment size) or
    :meth:`from_segment_size` (from the actual segment size, as a downloader
    learns it from the UEB). All sizes are in bytes.
    """

    size: int
    needed: int
    total: int
    segment_size: int
    num_segments: int = field(init=False)
    tail_size: int = field(init=False)
    tail_padded: int = field(init=False)
    block_size: int = field(init=False)
    tail_block_size: int = field(init=False)
    share_data_size: int = field(init=False)

    def __attrs_post_init__(self) -> None:
        _check_k_n(self.needed, self.total)
        if self.size < 0:
            raise BadEncodingParameters("size must be non-negative")
        if self.segment_size < 1 or self.segment_size % self.needed:
            raise BadEncodingParameters(
                f"segment size {self.segment_size} is not a positive multiple of k={self.needed}")
        num_segments = div_ceil(self.size, self.segment_size)
        tail = self.size % self.segment_size or self.segment_size
        if self.size == 0:
            tail = 0
        tail_padded = next_multiple(tail, self.needed)
        object.__setattr__(self, "num_segments", num_segments)
        object.__setattr__(self, "tail_size", tail)
        object.__setattr__(self, "tail_padded", tail_padded)
        object.__setattr__(self, "block_size", self.segment_size // self.needed)
        object.__setattr__(self, "tail_block_size", tail_padded // self.needed)
        object.__setattr__(self, "share_data_size", div_ceil(self.size, self.needed))

    @classmethod
    def for_file(cls, size: int, needed: int, total: int, max_segment_size: int) -> "SegmentGeometry":
        """Geometry of a file as the uploader sees it: segsize from the maximum."""
        if max_segment_size < 1:
            raise BadEncodingParameters("max_segment_size must be positive")
        _check_k_n(needed, total)
        segment_size = next_multiple(min(max_segment_size, size), needed) or needed
        return cls(size, needed, total, segment_size)

    @classmethod
    def from_segment_size(cls, size: int, needed: int, total: int,
                          segment_size: int) -> "SegmentGeometry":
        """Geometry as a downloader computes it: size and k from the cap, segsize from the UEB."""
        return cls(size, needed, total, segment_size)

    def segment_length(self, segnum: int) -> int:
        """Unpadded plaintext/ciphertext length of segment ``segnum``."""
        return self.tail_size if segnum == self.num_segments - 1 else self.segment_size

    def block_length(self, segnum: int) -> int:
        """Length of each block of segment ``segnum``."""
        return self.tail_block_size if segnum == self.num_segments - 1 else self.block_size

    def segment_offset(self, segnum: int) -> int:
        """Byte offset in the file of the first byte of segment ``segnum``."""
        return segnum * self.segment_size

    def segments_for_range(self, offset: int, length: int) -> range:
        """The segment numbers that hold bytes ``offset .. offset+length-1``."""
        if length <= 0 or offset >= self.size:
            return range(0)
        end = min(self.size, offset + length)
        return range(offset // self.segment_size, div_ceil(end, self.segment_size))

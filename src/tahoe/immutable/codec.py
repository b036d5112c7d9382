"""zfec k-of-N erasure coding of one segment (``reference/immutable.md`` §4.3-4.4).

zfec is a C extension that releases the GIL; this module holds no state
beyond the zfec coder objects for one (k, N).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import zfec

from .errors import BadEncodingParameters


class SegmentCodec:
    """Split a (padded) segment into k pieces and code them into N blocks, and back.

    :param needed: k, 1..256.
    :param total: N, k..256.
    """

    def __init__(self, needed: int, total: int) -> None:
        if not (1 <= needed <= total <= 256):
            raise BadEncodingParameters(f"need 1 <= k <= N <= 256, got k={needed} N={total}")
        self.needed = needed
        self.total = total
        self._encoder = zfec.Encoder(needed, total)
        self._decoder = zfec.Decoder(needed, total)
        self._all = tuple(range(total))

    def encode(self, padded_segment: bytes | memoryview) -> list[bytes]:
        """Return the N blocks of a segment whose length is a multiple of k.

        Block j belongs to share j; blocks 0..k-1 are the segment's pieces.
        """
        view = memoryview(padded_segment)
        length = len(view)
        if length % self.needed:
            raise BadEncodingParameters(f"segment length {length} is not a multiple of k")
        piece = length // self.needed
        pieces = tuple(bytes(view[i * piece:(i + 1) * piece]) for i in range(self.needed))
        return list(self._encoder.encode(pieces, self._all))

    def decode(self, blocks: Mapping[int, bytes]) -> bytes:
        """Rebuild the padded segment from any k blocks keyed by share number.

        :raises BadEncodingParameters: with fewer than k blocks, or blocks of
            unequal length or an out-of-range share number.
        """
        if len(blocks) < self.needed:
            raise BadEncodingParameters(f"need {self.needed} blocks, got {len(blocks)}")
        chosen: Sequence[int] = sorted(blocks)[: self.needed]
        if chosen[-1] >= self.total or chosen[0] < 0:
            raise BadEncodingParameters("share number out of range")
        data = tuple(blocks[n] for n in chosen)
        if len({len(b) for b in data}) != 1:
            raise BadEncodingParameters("blocks have unequal lengths")
        if list(chosen) == list(range(self.needed)):
            return b"".join(data)
        return b"".join(self._decoder.decode(data, tuple(chosen)))

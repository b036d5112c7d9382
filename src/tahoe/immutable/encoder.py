"""Streaming CHK encoder: plaintext segments in, share blocks and share tails out.

Follows ``reference/immutable.md`` §4-§7 and §13. The convergent key needs a
full pass over the plaintext first (:mod:`.keys`); the encoder then takes
the key, the size and the parameters up front, is fed the plaintext in
order, and hands back, per segment, the N blocks to write. :meth:`finish`
gives the hash trees, the UEB and the caps. Memory is bounded by one
segment plus 64 bytes of hashes per segment per share.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

from attrs import frozen

from ..caps.immutable import CHKReadCap, CHKVerifyCap, LiteralCap
from ..crypto.aes import AESCTRStream
from ..util.hashutil import (block_hash, crypttext_hasher, crypttext_segment_hash,
                             storage_index_from_key, uri_extension_hash)
from .codec import SegmentCodec
from .errors import BadEncodingParameters
from .hashtree import build_tree, chain_order
from .keys import ConvergentKeyHasher
from .layout import ShareLayout, layout_for, pack_chain, tree_bytes
from .params import LIT_SIZE_THRESHOLD, EncodingParameters, SegmentGeometry
from .ueb import URIExtension, serialized_length


@frozen
class EncodedSegment:
    """The N blocks of one segment; block j is written to share j at ``share_offset``."""

    segnum: int
    share_offset: int
    blocks: list[bytes]


@frozen
class EncodedTrailer:
    """What the encoder knows once every segment is in: trees, UEB, caps.

    ``tail(shnum)`` is everything share ``shnum`` holds after its blocks, to be
    written at ``tail_offset``. ``read_cap`` is None when the encoder was given
    ciphertext (an upload helper, which never sees the key).
    """

    read_cap: CHKReadCap | None
    ueb: URIExtension
    ueb_bytes: bytes
    tail_offset: int
    crypttext_tree: list[bytes]
    share_tree: list[bytes]
    block_trees: list[list[bytes]]
    layout: ShareLayout

    storage_index: bytes

    @property
    def verify_cap(self) -> CHKVerifyCap:
        """The verify cap of the file."""
        ueb = self.ueb
        return CHKVerifyCap(self.storage_index, ueb.hash(), ueb.needed_shares,
                            ueb.total_shares, ueb.size)

    def share_chain(self, shnum: int) -> list[tuple[int, bytes]]:
        """Share ``shnum``'s share-hash-chain entries, in Tahoe's written order."""
        return [(index, self.share_tree[index])
                for index in chain_order(len(self.block_trees), shnum)]

    def tail(self, shnum: int) -> bytes:
        """The bytes of share ``shnum`` from the plaintext-tree offset to the end."""
        zero_area = bytes(len(self.crypttext_tree) * 32)
        return b"".join((
            zero_area,
            b"".join(self.crypttext_tree),
            b"".join(self.block_trees[shnum]),
            pack_chain(self.share_chain(shnum)),
            self.layout.ueb_length_bytes(len(self.ueb_bytes)),
            self.ueb_bytes,
        ))


class ImmutableEncoder:
    """Encode one CHK file whose key and size are known.

    :param key: the 16-byte AES key (convergent or random).
    :param size: the plaintext size in bytes, at least 1.
    :param params: k, N and the maximum segment size (happy is not used here).
    :param force_v2: write the v2 (64-bit) header even for a small share.
    :param storage_index: with ``key=None``, the encoder is fed ciphertext and
        encrypts nothing (an upload helper: the UEB and the verify cap need no
        key, only the ciphertext and the storage index the client derived).
    :raises BadEncodingParameters: for bad parameters or size.
    """

    def __init__(self, key: bytes | None, size: int, params: EncodingParameters,
                 force_v2: bool = False, storage_index: bytes | None = None) -> None:
        if key is None:
            if storage_index is None or len(storage_index) != 16:
                raise BadEncodingParameters("ciphertext needs a 16-byte storage index")
        elif len(key) != 16:
            raise BadEncodingParameters("the AES key must be 16 bytes")
        if size < 1:
            raise BadEncodingParameters("a CHK file must hold at least one byte")
        self.key = key
        self.storage_index = (storage_index_from_key(key) if key is not None
                              else storage_index or b"")
        self.geometry = params.geometry(size)
        self.layout = layout_for(self.geometry, force_v2)
        self.ueb_length = serialized_length(self.geometry)
        #: Every share has this length: the ``allocated_size`` to ask servers for.
        self.share_length = self.layout.share_length(self.ueb_length)
        self._cipher = AESCTRStream(key) if key is not None else None
        self._codec = SegmentCodec(self.geometry.needed, self.geometry.total)
        self._flat_hasher = crypttext_hasher()
        self._segment_hashes: list[bytes] = []
        self._block_hashes: list[list[bytes]] = [[] for _ in range(self.geometry.total)]
        self._pending = bytearray()

    @property
    def header(self) -> bytes:
        """The share header, identical for every share; written at offset 0."""
        return self.layout.header_bytes()

    @property
    def segments_done(self) -> int:
        """How many segments have been encoded so far."""
        return len(self._segment_hashes)

    def encode_segment(self, plaintext: bytes | memoryview) -> EncodedSegment:
        """Encrypt (unless given ciphertext) and erasure-code the next segment, of
        exactly its expected length.

        :raises BadEncodingParameters: if the length is wrong or all segments are done.
        """
        geometry = self.geometry
        segnum = len(self._segment_hashes)
        if segnum >= geometry.num_segments:
            raise BadEncodingParameters("all segments have already been encoded")
        expected = geometry.segment_length(segnum)
        if len(plaintext) != expected:
            raise BadEncodingParameters(
                f"segment {segnum} must be {expected} bytes, got {len(plaintext)}")
        crypttext = (self._cipher.process(plaintext) if self._cipher is not None
                     else bytes(plaintext))
        self._flat_hasher.update(crypttext)
        self._segment_hashes.append(crypttext_segment_hash(crypttext))
        if segnum == geometry.num_segments - 1:
            crypttext += bytes(geometry.tail_padded - geometry.tail_size)
        blocks = self._codec.encode(crypttext)
        for shnum, block in enumerate(blocks):
            self._block_hashes[shnum].append(block_hash(block))
        return EncodedSegment(segnum, self.layout.block_offset(segnum), blocks)

    def feed(self, data: bytes | memoryview) -> list[EncodedSegment]:
        """Feed plaintext in pieces of any size; returns the segments completed by it."""
        done = []
        self._pending += data
        while self._pending and self.segments_done < self.geometry.num_segments:
            need = self.geometry.segment_length(self.segments_done)
            if len(self._pending) < need:
                break
            segment = bytes(self._pending[:need])
            del self._pending[:need]
            done.append(self.encode_segment(segment))
        if self._pending and self.segments_done >= self.geometry.num_segments:
            raise BadEncodingParameters("more plaintext than the declared size")
        return done

    def encode_all(self, segments: Iterable[bytes | memoryview]) -> tuple[EncodedTrailer,
                                                                           list[bytes]]:
        """Encode every segment, in order, then :meth:`finish`; with the trailer, every
        share's bytes whole (header, blocks, tail): for a file whose shares fit in memory.

        :raises BadEncodingParameters: as :meth:`encode_segment` and :meth:`finish`.
        """
        header = self.header
        parts: list[list[bytes]] = [[header] for _ in range(self.geometry.total)]
        for segment in segments:
            for shnum, block in enumerate(self.encode_segment(segment).blocks):
                parts[shnum].append(block)
        trailer = self.finish()
        for shnum, share in enumerate(parts):
            share.append(trailer.tail(shnum))
        return trailer, [b"".join(share) for share in parts]

    def finish(self) -> EncodedTrailer:
        """Build the trees, UEB and caps once every segment has been encoded.

        :raises BadEncodingParameters: if segments are missing.
        """
        geometry = self.geometry
        if self.segments_done != geometry.num_segments or self._pending:
            raise BadEncodingParameters(
                f"only {self.segments_done} of {geometry.num_segments} segments were encoded")
        crypttext_tree = build_tree(self._segment_hashes)
        block_trees = [build_tree(hashes) for hashes in self._block_hashes]
        share_tree = build_tree([tree[0] for tree in block_trees])
        ueb = URIExtension.for_file(geometry, self._flat_hasher.digest(), crypttext_tree[0],
                                    share_tree[0])
        ueb_bytes = ueb.to_bytes()
        assert len(ueb_bytes) == self.ueb_length
        assert len(crypttext_tree) * 32 == tree_bytes(geometry.num_segments)
        read_cap = (CHKReadCap(self.key, uri_extension_hash(ueb_bytes), geometry.needed,
                               geometry.total, geometry.size) if self.key is not None else None)
        return EncodedTrailer(read_cap, ueb, ueb_bytes, self.layout.plaintext_hash_tree,
                              crypttext_tree, share_tree, block_trees, self.layout,
                              self.storage_index)


@frozen
class EncodedFile:
    """A whole file encoded in memory: its cap and, for CHK, every share's bytes."""

    cap: CHKReadCap | LiteralCap
    shares: list[bytes]


def iter_segments(plaintext: bytes, geometry: SegmentGeometry) -> Iterator[memoryview]:
    """Cut an in-memory plaintext into its segments (views, no copies)."""
    view = memoryview(plaintext)
    for segnum in range(geometry.num_segments):
        start = geometry.segment_offset(segnum)
        yield view[start:start + geometry.segment_length(segnum)]


def encode_bytes(plaintext: bytes, convergence_secret: bytes,
                 params: EncodingParameters | None = None, force_v2: bool = False) -> EncodedFile:
    """Encode a plaintext held in memory, as Tahoe's uploader would.

    Files of at most 55 bytes become LIT caps with no shares.
    """
    params = params or EncodingParameters()
    if len(plaintext) <= LIT_SIZE_THRESHOLD:
        return EncodedFile(LiteralCap(bytes(plaintext)), [])
    geometry = params.geometry(len(plaintext))
    hasher = ConvergentKeyHasher(convergence_secret, geometry)
    hasher.update(plaintext)
    encoder = ImmutableEncoder(hasher.key(), len(plaintext), params, force_v2)
    trailer, shares = encoder.encode_all(iter_segments(plaintext, geometry))
    assert trailer.read_cap is not None
    return EncodedFile(trailer.read_cap, shares)

"""The share layout a client writes into one share: header, offsets, sections.

Follows ``reference/immutable.md`` §7 (v1 header ``>LLLLLLLLL``, v2 header
``>LQQQQQQQQ``). Not to be confused with the storage server's on-disk
container, which wraps these bytes.
"""
from __future__ import annotations

import struct

from attrs import frozen

from ..util.hashutil import HASH_SIZE
from ..util.mathutil import log2_exact, next_power_of_two
from .errors import LayoutInvalid, ShareVersionUnknown
from .params import SegmentGeometry

_V1 = struct.Struct(">LLLLLLLLL")
_V2 = struct.Struct(">LQQQQQQQQ")
_HEADER_SIZE = {1: _V1.size, 2: _V2.size}
_LENGTH_FIELD = {1: struct.Struct(">L"), 2: struct.Struct(">Q")}
#: Enough leading bytes of a share to parse a header of either version.
MAX_HEADER_SIZE = _V2.size
CHAIN_ENTRY = struct.Struct(">H32s")
_LIMIT_V1 = 2 ** 32


def chain_length(total: int) -> int:
    """Number of share-hash-chain entries each share stores (log2(next_pow2(N)) + 1)."""
    return log2_exact(next_power_of_two(total)) + 1


def tree_bytes(num_segments: int) -> int:
    """Bytes of one complete segment tree (crypttext, block, or the zero plaintext area)."""
    return (2 * next_power_of_two(num_segments) - 1) * HASH_SIZE


@frozen
class ShareLayout:
    """The offset table of one share, as written in its header.

    All offsets are from the start of the share, in bytes.
    """

    version: int
    block_size: int
    share_data_size: int
    data: int
    plaintext_hash_tree: int
    crypttext_hash_tree: int
    block_hashes: int
    share_hashes: int
    uri_extension: int

    @property
    def header_size(self) -> int:
        """Size of the header (36 bytes for v1, 68 for v2)."""
        return _HEADER_SIZE[self.version]

    @property
    def ueb_length_size(self) -> int:
        """Width of the UEB length field (4 for v1, 8 for v2)."""
        return _LENGTH_FIELD[self.version].size

    def header_bytes(self) -> bytes:
        """The header as written at offset 0 of the share."""
        packer = _V1 if self.version == 1 else _V2
        return packer.pack(self.version, self.block_size, self.share_data_size, self.data,
                           self.plaintext_hash_tree, self.crypttext_hash_tree,
                           self.block_hashes, self.share_hashes, self.uri_extension)

    def ueb_length_bytes(self, ueb_length: int) -> bytes:
        """The length field written just before the UEB."""
        return _LENGTH_FIELD[self.version].pack(ueb_length)

    def parse_ueb_length(self, data: bytes) -> int:
        """Read the UEB length field.

        :raises LayoutInvalid: if ``data`` is too short.
        """
        field = _LENGTH_FIELD[self.version]
        if len(data) < field.size:
            raise LayoutInvalid("share is truncated before the UEB length")
        return field.unpack_from(data)[0]

    def share_length(self, ueb_length: int) -> int:
        """The whole share's length (also the ``allocated_size`` asked for)."""
        return self.uri_extension + self.ueb_length_size + ueb_length

    def block_offset(self, segnum: int) -> int:
        """Offset of block ``segnum`` (block size from the geometry, not the header)."""
        return self.data + segnum * self.block_size

    @property
    def num_chain_entries(self) -> int:
        """How many share-hash-chain entries the offsets leave room for."""
        return (self.uri_extension - self.share_hashes) // CHAIN_ENTRY.size


def layout_for(geometry: SegmentGeometry, force_v2: bool = False) -> ShareLayout:
    """The layout an uploader writes for this geometry (v1 unless something overflows 32 bits)."""
    tree = tree_bytes(geometry.num_segments)
    chain = chain_length(geometry.total) * CHAIN_ENTRY.size

    def build(version: int) -> ShareLayout:
        data = _HEADER_SIZE[version]
        plaintext = data + geometry.share_data_size
        crypttext = plaintext + tree
        blocks = crypttext + tree
        shares = blocks + tree
        ueb = shares + chain
        return ShareLayout(version, geometry.block_size, geometry.share_data_size, data,
                           plaintext, crypttext, blocks, shares, ueb)

    layout = build(1)
    if (force_v2 or geometry.block_size >= _LIMIT_V1
            or geometry.share_data_size >= _LIMIT_V1 or layout.uri_extension >= _LIMIT_V1):
        layout = build(2)
    return layout


def parse_header(data: bytes) -> ShareLayout:
    """Parse and sanity-check a share header.

    :param data: at least the first 4 bytes of the share, and the whole header.
    :raises ShareVersionUnknown: for a version other than 1 or 2.
    :raises LayoutInvalid: if truncated or the offsets are inconsistent.
    """
    if len(data) < 4:
        raise LayoutInvalid("share is shorter than its version field")
    version = struct.unpack_from(">L", data)[0]
    if version not in _HEADER_SIZE:
        raise ShareVersionUnknown(f"share version {version} is not 1 or 2")
    packer = _V1 if version == 1 else _V2
    if len(data) < packer.size:
        raise LayoutInvalid(f"share is shorter than its v{version} header")
    layout = ShareLayout(*packer.unpack_from(data))
    offsets = (layout.data, layout.plaintext_hash_tree, layout.crypttext_hash_tree,
               layout.block_hashes, layout.share_hashes, layout.uri_extension)
    if layout.data < packer.size or any(a > b for a, b in zip(offsets, offsets[1:])):
        raise LayoutInvalid("share offsets are not in ascending order")
    if (layout.uri_extension - layout.share_hashes) % CHAIN_ENTRY.size:
        raise LayoutInvalid("share-hash section is not a multiple of 34 bytes")
    if (layout.share_hashes - layout.block_hashes) % HASH_SIZE:
        raise LayoutInvalid("block-hash section is not a multiple of 32 bytes")
    if (layout.block_hashes - layout.crypttext_hash_tree) % HASH_SIZE:
        raise LayoutInvalid("crypttext-hash section is not a multiple of 32 bytes")
    return layout


def pack_chain(entries: list[tuple[int, bytes]]) -> bytes:
    """Serialize share-hash-chain entries (``uint16 index || hash``), in the order given."""
    return b"".join(CHAIN_ENTRY.pack(index, value) for index, value in entries)


def parse_chain(data: bytes) -> list[tuple[int, bytes]]:
    """Parse share-hash-chain entries, in the order written.

    :raises LayoutInvalid: if the length is not a multiple of 34 or an index repeats.
    """
    if len(data) % CHAIN_ENTRY.size:
        raise LayoutInvalid("share-hash chain is not a multiple of 34 bytes")
    entries = [CHAIN_ENTRY.unpack_from(data, i) for i in range(0, len(data), CHAIN_ENTRY.size)]
    if len({index for index, _ in entries}) != len(entries):
        raise LayoutInvalid("share-hash chain names a node twice")
    return entries


def parse_hashes(data: bytes) -> list[bytes]:
    """Split a section of concatenated 32-byte hashes.

    :raises LayoutInvalid: if the length is not a multiple of 32.
    """
    if len(data) % HASH_SIZE:
        raise LayoutInvalid("hash section is not a multiple of 32 bytes")
    return [data[i:i + HASH_SIZE] for i in range(0, len(data), HASH_SIZE)]

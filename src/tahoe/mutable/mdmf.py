"""The MDMF share layout, version 1 (``reference/mutable-dirnodes.md`` §4.3).

::

    offset  size  field
    0       1     version = 1                 ┐ checkstring (41)  ┐
    1       8     seqnum                      │                   │ signed
    9       32    root hash R                 ┘                   │ header
    41      1     k                                               │ (59)
    42      1     N                                               │
    43      8     segment size (next_multiple(131072, k) by default)
    51      8     data length                                     ┘
    59      8×8   offsets: encrypted private key (123), share hash chain,
                  signature, verification key, end of verification key,
                  share data (2167), block hash tree, EOF
    123           encrypted private key | share hash chain | signature |
                  verification key | gap (zeros) up to the share data |
                  per segment: salt (16) || block | whole block hash tree

Readers take every offset from the table; writers put the share data at
2167, after room for the largest key, signature and chain.

See ``docs/formats/mutable-files.md``.
"""
from __future__ import annotations

import struct

from attrs import frozen

from .errors import LayoutInvalid, ShareTruncated, UnknownShareVersion
from .hashes import parse_chain, parse_hashes
from .version import MDMF_CHECKSTRING, Geometry, VersionInfo

VERSION = 1
HEADER = struct.Struct(">BQ32sBBQQQQQQQQQQ")
SIGNED_HEADER = struct.Struct(">BQ32sBBQQ")
OFFSETS = struct.Struct(">QQQQQQQQ")
ENCODING = struct.Struct(">BBQQ")
CHECKSTRING = MDMF_CHECKSTRING
HEADER_SIZE = HEADER.size
SALT_SIZE = 16
#: Room Tahoe reserves before the share data: key, signature, verification key, 8-entry chain.
PRIVATE_KEY_ROOM = 1220
SIGNATURE_ROOM = 260
VERIFICATION_KEY_ROOM = 292
CHAIN_ROOM = 8 * 34
SHARE_DATA_OFFSET = (HEADER_SIZE + PRIVATE_KEY_ROOM + SIGNATURE_ROOM + VERIFICATION_KEY_ROOM
                     + CHAIN_ROOM)
#: Tahoe's maximum segment size before rounding up to a multiple of k.
DEFAULT_MAX_SEGMENT_SIZE = 131072
_NAMES = ("encrypted private key", "share hash chain", "signature", "verification key",
          "end of verification key", "share data", "block hash tree", "EOF")


@frozen
class MDMFOffsets:
    """The offset table (bytes from the start of the share)."""

    enc_privkey: int
    share_hash_chain: int
    signature: int
    verification_key: int
    verification_key_end: int
    share_data: int
    block_hash_tree: int
    eof: int

    def as_tuple(self) -> tuple[int, ...]:
        """The offsets in header order."""
        return (self.enc_privkey, self.share_hash_chain, self.signature, self.verification_key,
                self.verification_key_end, self.share_data, self.block_hash_tree, self.eof)


@frozen
class MDMFHeader:
    """The 123-byte header of an MDMF share."""

    seqnum: int
    root_hash: bytes
    needed: int
    total: int
    segment_size: int
    data_length: int
    offsets: MDMFOffsets

    @property
    def signed_prefix(self) -> bytes:
        """The 59 bytes the signature covers."""
        return SIGNED_HEADER.pack(VERSION, self.seqnum, self.root_hash, self.needed, self.total,
                                  self.segment_size, self.data_length)

    @property
    def checkstring(self) -> bytes:
        """The 41-byte test-and-set specimen."""
        return CHECKSTRING.pack(VERSION, self.seqnum, self.root_hash)

    @property
    def encoding(self) -> bytes:
        """Bytes 41..58: k, N, segment size, data length."""
        return ENCODING.pack(self.needed, self.total, self.segment_size, self.data_length)

    @property
    def version_info(self) -> VersionInfo:
        """The version this share belongs to (MDMF versions have no IV)."""
        return VersionInfo(self.seqnum, self.root_hash, None, self.segment_size,
                           self.data_length, self.needed, self.total, self.signed_prefix,
                           self.offsets.as_tuple())

    def pack(self) -> bytes:
        """The header's 123 bytes."""
        return self.signed_prefix + OFFSETS.pack(*self.offsets.as_tuple())

    def _span(self, start: int, end: int) -> tuple[int, int]:
        return start, end - start

    def enc_privkey_range(self) -> tuple[int, int]:
        """Where the encrypted private key is."""
        return self._span(self.offsets.enc_privkey, self.offsets.share_hash_chain)

    def share_hash_chain_range(self) -> tuple[int, int]:
        """Where the share hash chain is."""
        return self._span(self.offsets.share_hash_chain, self.offsets.signature)

    def signature_range(self) -> tuple[int, int]:
        """Where the signature is."""
        return self._span(self.offsets.signature, self.offsets.verification_key)

    def verification_key_range(self) -> tuple[int, int]:
        """Where the verification key is."""
        return self._span(self.offsets.verification_key, self.offsets.verification_key_end)

    def share_data_range(self) -> tuple[int, int]:
        """Where the salts and blocks are."""
        return self._span(self.offsets.share_data, self.offsets.block_hash_tree)

    def block_hash_tree_range(self) -> tuple[int, int]:
        """Where the whole block hash tree is (up to EOF)."""
        return self._span(self.offsets.block_hash_tree, self.offsets.eof)

    def block_range(self, segnum: int) -> tuple[int, int]:
        """Where segment ``segnum``'s salt and block are: (offset, 16 + block length).

        :raises IndexError: for a segment the file does not have.
        """
        geometry = Geometry(self.segment_size, self.data_length, self.needed)
        if not 0 <= segnum < geometry.num_segments:
            raise IndexError(f"segment {segnum} outside 0..{geometry.num_segments - 1}")
        start = self.offsets.share_data + segnum * (SALT_SIZE + geometry.full_block_length)
        return start, SALT_SIZE + geometry.block_length(segnum)

    @property
    def has_salts(self) -> bool:
        """MDMF blocks are stored after their 16-byte salts."""
        return True


def layout_offsets(enc_privkey_length: int, chain_length: int, signature_length: int,
                   verification_key_length: int, share_data_length: int,
                   block_hash_tree_length: int) -> MDMFOffsets:
    """Tahoe's offsets: the first four regions packed from 123, share data at 2167.

    :raises LayoutInvalid: if the first four regions do not fit before 2167.
    """
    chain = HEADER_SIZE + enc_privkey_length
    signature = chain + chain_length
    key = signature + signature_length
    key_end = key + verification_key_length
    if key_end > SHARE_DATA_OFFSET:
        raise LayoutInvalid(f"key, chain and signature end at {key_end}, after the share data "
                            f"({SHARE_DATA_OFFSET})")
    tree = SHARE_DATA_OFFSET + share_data_length
    return MDMFOffsets(HEADER_SIZE, chain, signature, key, key_end, SHARE_DATA_OFFSET, tree,
                       tree + block_hash_tree_length)


def parse_header(data: bytes) -> MDMFHeader:
    """Parse the first 123 bytes of an MDMF share.

    :raises ShareTruncated: with fewer than 123 bytes.
    :raises UnknownShareVersion: if the version byte is not 1.
    :raises LayoutInvalid: when the offsets go backwards or start inside the header.
    """
    if len(data) < HEADER_SIZE:
        raise ShareTruncated(f"an MDMF header is {HEADER_SIZE} bytes, got {len(data)}",
                             HEADER_SIZE)
    version, seqnum, root, needed, total, segsize, datalen, *offsets = HEADER.unpack_from(data)
    if version != VERSION:
        raise UnknownShareVersion(f"share version {version} is not MDMF (1)")
    table = MDMFOffsets(*offsets)
    previous = HEADER_SIZE
    for name, value in zip(_NAMES, table.as_tuple()):
        if value < previous:
            raise LayoutInvalid(f"offset of {name} ({value}) is before the previous region "
                                f"({previous})")
        previous = value
    return MDMFHeader(seqnum, root, needed, total, segsize, datalen, table)


@frozen
class MDMFShare:
    """Every field of an MDMF share, split but not yet validated.

    :ivar segments: per segment, (salt, block).
    """

    header: MDMFHeader
    enc_privkey: bytes
    share_hash_chain: dict[int, bytes]
    signature: bytes
    verification_key: bytes
    segments: list[tuple[bytes, bytes]]
    block_hash_tree: list[bytes]


def _region(data: bytes, span: tuple[int, int]) -> bytes:
    start, length = span
    if start + length > len(data):
        raise ShareTruncated(f"share of {len(data)} bytes ends before offset {start + length}",
                             start + length)
    return data[start:start + length]


def parse_share(data: bytes) -> MDMFShare:
    """Split a whole MDMF share into its fields (bytes after EOF are ignored).

    :raises LayoutInvalid: on a malformed header, chain or hash list, share
        data whose length disagrees with the geometry, or a share shorter
        than its EOF offset (:class:`ShareTruncated`).
    """
    header = parse_header(data)
    geometry = Geometry(header.segment_size, header.data_length, header.needed)
    geometry.check()
    share_data = _region(data, header.share_data_range())
    segments = []
    position = 0
    for segnum in range(geometry.num_segments):
        length = SALT_SIZE + geometry.block_length(segnum)
        entry = share_data[position:position + length]
        if len(entry) != length:
            raise LayoutInvalid(f"share data too short for segment {segnum}")
        segments.append((entry[:SALT_SIZE], entry[SALT_SIZE:]))
        position += length
    if position != len(share_data):
        raise LayoutInvalid(f"share data is {len(share_data)} bytes, the segments need {position}")
    return MDMFShare(
        header,
        _region(data, header.enc_privkey_range()),
        parse_chain(_region(data, header.share_hash_chain_range())),
        _region(data, header.signature_range()),
        _region(data, header.verification_key_range()),
        segments,
        parse_hashes(_region(data, header.block_hash_tree_range())),
    )


def write_vectors(header: MDMFHeader, enc_privkey: bytes, chain: bytes, signature: bytes,
                  verification_key: bytes, segments: list[tuple[bytes, bytes]],
                  block_hash_tree: bytes) -> list[tuple[int, bytes]]:
    """The write vectors Tahoe sends for a whole MDMF share, in its order (§7.4).

    Salted blocks, encrypted private key, block hash tree, chain, checkstring,
    signature, verification key, offset table, encoding fields, checkstring.
    """
    o = header.offsets
    vectors: list[tuple[int, bytes]] = []
    position = o.share_data
    for salt, block in segments:
        vectors.append((position, salt + block))
        position += len(salt) + len(block)
    vectors += [(o.enc_privkey, enc_privkey), (o.block_hash_tree, block_hash_tree),
                (o.share_hash_chain, chain), (0, header.checkstring), (o.signature, signature),
                (o.verification_key, verification_key),
                (SIGNED_HEADER.size, OFFSETS.pack(*o.as_tuple())),
                (CHECKSTRING.size, header.encoding), (0, header.checkstring)]
    return vectors


def pack_share(header: MDMFHeader, enc_privkey: bytes, chain: bytes, signature: bytes,
               verification_key: bytes, segments: list[tuple[bytes, bytes]],
               block_hash_tree: bytes) -> bytes:
    """The whole share as a server holds it after the write vectors (gap zero-filled)."""
    share = bytearray(header.offsets.eof)
    for offset, piece in write_vectors(header, enc_privkey, chain, signature, verification_key,
                                       segments, block_hash_tree):
        share[offset:offset + len(piece)] = piece
    return bytes(share)

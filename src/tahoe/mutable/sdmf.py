"""The SDMF share layout, version 0 (``reference/mutable-dirnodes.md`` §4.2).

::

    offset  size  field
    0       1     version = 0                 ┐
    1       8     seqnum                      │ checkstring (57)   ┐
    9       32    root hash R                 │                    │ signed
    41      16    IV                          ┘                    │ prefix
    57      1     k                                                │ (75)
    58      1     N                                                │
    59      8     segment size (= next_multiple(datalen, k))       │
    67      8     data length                                      ┘
    75      4     offset of signature
    79      4     offset of share hash chain
    83      4     offset of block hash tree
    87      4     offset of share data
    91      8     offset of encrypted private key
    99      8     offset of EOF
    107           verification key | signature | share hash chain |
                  block hash tree (1 hash) | block | encrypted private key

Each region runs from its offset to the next one's.

See ``docs/formats/mutable-files.md``.
"""
from __future__ import annotations

import struct

from attrs import frozen

from .errors import LayoutInvalid, ShareTruncated, UnknownShareVersion
from .hashes import parse_chain, parse_hashes
from .version import SDMF_CHECKSTRING, VersionInfo

VERSION = 0
HEADER = struct.Struct(">BQ32s16sBBQQLLLLQQ")
SIGNED_PREFIX = struct.Struct(">BQ32s16sBBQQ")
OFFSETS = struct.Struct(">LLLLQQ")
CHECKSTRING = SDMF_CHECKSTRING
HEADER_SIZE = HEADER.size


@frozen
class SDMFOffsets:
    """The offset table (bytes from the start of the share)."""

    signature: int
    share_hash_chain: int
    block_hash_tree: int
    share_data: int
    enc_privkey: int
    eof: int

    def as_tuple(self) -> tuple[int, ...]:
        """The offsets in header order."""
        return (self.signature, self.share_hash_chain, self.block_hash_tree, self.share_data,
                self.enc_privkey, self.eof)


@frozen
class SDMFHeader:
    """The 107-byte header of an SDMF share."""

    seqnum: int
    root_hash: bytes
    iv: bytes
    needed: int
    total: int
    segment_size: int
    data_length: int
    offsets: SDMFOffsets

    @property
    def signed_prefix(self) -> bytes:
        """The 75 bytes the signature covers."""
        return SIGNED_PREFIX.pack(VERSION, self.seqnum, self.root_hash, self.iv, self.needed,
                                  self.total, self.segment_size, self.data_length)

    @property
    def checkstring(self) -> bytes:
        """The 57-byte test-and-set specimen."""
        return CHECKSTRING.pack(VERSION, self.seqnum, self.root_hash, self.iv)

    @property
    def version_info(self) -> VersionInfo:
        """The version this share belongs to."""
        return VersionInfo(self.seqnum, self.root_hash, self.iv, self.segment_size,
                           self.data_length, self.needed, self.total, self.signed_prefix,
                           self.offsets.as_tuple())

    def pack(self) -> bytes:
        """The header's 107 bytes."""
        return self.signed_prefix + OFFSETS.pack(*self.offsets.as_tuple())

    # Regions, each as (offset, length).
    def verification_key_range(self) -> tuple[int, int]:
        """Where the verification key is."""
        return HEADER_SIZE, self.offsets.signature - HEADER_SIZE

    def signature_range(self) -> tuple[int, int]:
        """Where the signature is."""
        return self.offsets.signature, self.offsets.share_hash_chain - self.offsets.signature

    def share_hash_chain_range(self) -> tuple[int, int]:
        """Where the share hash chain is."""
        o = self.offsets
        return o.share_hash_chain, o.block_hash_tree - o.share_hash_chain

    def block_hash_tree_range(self) -> tuple[int, int]:
        """Where the (one-hash) block hash tree is."""
        return self.offsets.block_hash_tree, self.offsets.share_data - self.offsets.block_hash_tree

    def share_data_range(self) -> tuple[int, int]:
        """Where the share data (the one block) is."""
        return self.offsets.share_data, self.offsets.enc_privkey - self.offsets.share_data

    def enc_privkey_range(self) -> tuple[int, int]:
        """Where the encrypted private key is (up to EOF)."""
        return self.offsets.enc_privkey, self.offsets.eof - self.offsets.enc_privkey

    def block_range(self, segnum: int) -> tuple[int, int]:
        """Where the block of segment ``segnum`` (only 0 exists) is, salt not included."""
        if segnum != 0:
            raise IndexError("an SDMF share has only segment 0")
        return self.share_data_range()

    @property
    def has_salts(self) -> bool:
        """SDMF blocks carry no salts (the IV is in the header)."""
        return False


def layout_offsets(verification_key_length: int, signature_length: int, chain_length: int,
                   block_hash_tree_length: int, block_length: int,
                   enc_privkey_length: int) -> SDMFOffsets:
    """The offsets of tightly packed regions of these lengths."""
    signature = HEADER_SIZE + verification_key_length
    chain = signature + signature_length
    tree = chain + chain_length
    data = tree + block_hash_tree_length
    privkey = data + block_length
    return SDMFOffsets(signature, chain, tree, data, privkey, privkey + enc_privkey_length)


def parse_header(data: bytes) -> SDMFHeader:
    """Parse the first 107 bytes of an SDMF share.

    :raises ShareTruncated: with fewer than 107 bytes.
    :raises UnknownShareVersion: if the version byte is not 0.
    :raises LayoutInvalid: when the offsets go backwards or start inside the header.
    """
    if len(data) < HEADER_SIZE:
        raise ShareTruncated(f"an SDMF header is {HEADER_SIZE} bytes, got {len(data)}",
                             HEADER_SIZE)
    version, seqnum, root, iv, needed, total, segsize, datalen, *offsets = \
        HEADER.unpack_from(data)
    if version != VERSION:
        raise UnknownShareVersion(f"share version {version} is not SDMF (0)")
    table = SDMFOffsets(*offsets)
    previous = HEADER_SIZE
    for name, value in zip(("signature", "share hash chain", "block hash tree", "share data",
                            "encrypted private key", "EOF"), table.as_tuple()):
        if value < previous:
            raise LayoutInvalid(f"offset of {name} ({value}) is before the previous region "
                                f"({previous})")
        previous = value
    return SDMFHeader(seqnum, root, iv, needed, total, segsize, datalen, table)


@frozen
class SDMFShare:
    """Every field of an SDMF share, split but not yet validated."""

    header: SDMFHeader
    verification_key: bytes
    signature: bytes
    share_hash_chain: dict[int, bytes]
    block_hash_tree: list[bytes]
    block: bytes
    enc_privkey: bytes


def _region(data: bytes, span: tuple[int, int]) -> bytes:
    start, length = span
    if start + length > len(data):
        raise ShareTruncated(f"share of {len(data)} bytes ends before offset {start + length}",
                             start + length)
    return data[start:start + length]


def parse_share(data: bytes) -> SDMFShare:
    """Split a whole SDMF share into its fields (bytes after EOF are ignored).

    :raises LayoutInvalid: on a malformed header, chain or hash list, or a
        share shorter than its EOF offset (:class:`ShareTruncated`).
    """
    header = parse_header(data)
    return SDMFShare(
        header,
        _region(data, header.verification_key_range()),
        _region(data, header.signature_range()),
        parse_chain(_region(data, header.share_hash_chain_range())),
        parse_hashes(_region(data, header.block_hash_tree_range())),
        _region(data, header.share_data_range()),
        _region(data, header.enc_privkey_range()),
    )


def pack_share(header: SDMFHeader, verification_key: bytes, signature: bytes,
               share_hash_chain: bytes, block_hash_tree: bytes, block: bytes,
               enc_privkey: bytes) -> bytes:
    """Concatenate a share; ``header.offsets`` must describe these lengths.

    :raises LayoutInvalid: if they do not.
    """
    expected = layout_offsets(len(verification_key), len(signature), len(share_hash_chain),
                              len(block_hash_tree), len(block), len(enc_privkey))
    if expected != header.offsets:
        raise LayoutInvalid("the header's offsets do not match the regions' lengths")
    return b"".join((header.pack(), verification_key, signature, share_hash_chain,
                     block_hash_tree, block, enc_privkey))

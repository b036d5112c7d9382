"""Publish-side encoding: plaintext to every share of one new version.

``reference/mutable-dirnodes.md`` §4.2 (SDMF: one segment, one IV) and §4.3
(MDMF: segments of ``next_multiple(131072, k)`` bytes, a salt per segment,
leaves hashing salt || block). Randomness comes from the caller: the IV or
segment salts (16 bytes each, see :func:`salts_needed`) and the 32-byte PSS
salt of the signature. With the vectors' fixed values the shares are
byte-identical to Tahoe's.

See ``docs/formats/mutable-files.md``.
"""
from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from ..caps.mutable import MutableFormat
from ..crypto.aes import aes_ctr
from ..crypto.rsa import PSS_SALT_SIZE
from ..immutable.codec import SegmentCodec
from ..util.mathutil import next_multiple
from . import mdmf, sdmf
from .errors import BadEncodingParameters
from .hashes import block_hash_tree, block_leaf, pack_chain, pack_hashes, share_hash_chain
from .keys import SALT_SIZE, MutableKeys, data_key
from .version import Geometry, VersionInfo

MAX_SEQNUM = 2 ** 64 - 1
MAX_SHARES = 255


@frozen
class EncodedShare:
    """One share of a new version.

    :ivar data: the whole share, as a server holds it once written (MDMF gap zero-filled).
    :ivar write_vectors: (offset, bytes) writes that produce it from nothing,
        in Tahoe's order: ``[(0, data)]`` for SDMF, the ten-odd pieces of §7.4 for MDMF.
    """

    shnum: int
    data: bytes
    write_vectors: tuple[tuple[int, bytes], ...]


@frozen
class EncodedVersion:
    """Every share of one new version of a mutable file.

    :ivar shares: share i at index i, for i in 0..N-1.
    """

    version: VersionInfo
    shares: tuple[EncodedShare, ...]

    @property
    def checkstring(self) -> bytes:
        """The new version's test-and-set specimen."""
        return self.version.checkstring

    @property
    def root_hash(self) -> bytes:
        """The signed share hash tree root R."""
        return self.version.root_hash


def mdmf_segment_size(needed: int, max_segment_size: int = mdmf.DEFAULT_MAX_SEGMENT_SIZE) -> int:
    """Tahoe's MDMF segment size: the maximum rounded up to a multiple of k (131073 for k=3)."""
    return next_multiple(max_segment_size, needed)


def salts_needed(file_format: MutableFormat, data_length: int, needed: int,
                 segment_size: int | None = None) -> int:
    """How many 16-byte random salts :func:`encode_version` wants.

    SDMF: one (the IV, even for an empty file). MDMF: one per segment (none
    for an empty file).
    """
    if file_format is MutableFormat.SDMF:
        return 1
    size = segment_size or mdmf_segment_size(needed)
    return Geometry(size, data_length, needed).num_segments


def _check_common(seqnum: int, needed: int, total: int, pss_salt: bytes | None) -> None:
    if not 0 <= seqnum <= MAX_SEQNUM:
        raise BadEncodingParameters(f"seqnum {seqnum} outside 0..2**64-1")
    if not 1 <= needed <= total <= MAX_SHARES:
        raise BadEncodingParameters(f"need 1 <= k <= N <= {MAX_SHARES}, got k={needed} N={total}")
    if pss_salt is not None and len(pss_salt) != PSS_SALT_SIZE:
        raise BadEncodingParameters(f"the PSS salt must be {PSS_SALT_SIZE} bytes")


def _check_salt(salt: bytes) -> None:
    if not isinstance(salt, bytes) or len(salt) != SALT_SIZE:
        raise BadEncodingParameters(f"salts and IVs must be {SALT_SIZE} bytes")


def _fec(codec: SegmentCodec, crypttext: bytes) -> list[bytes]:
    if not crypttext:
        return [b""] * codec.total
    padded_length = next_multiple(len(crypttext), codec.needed)
    return codec.encode(crypttext + bytes(padded_length - len(crypttext)))


def encode_sdmf(plaintext: bytes, keys: MutableKeys, *, seqnum: int, needed: int, total: int,
                iv: bytes, pss_salt: bytes | None) -> EncodedVersion:
    """Encode an SDMF version (§4.2).

    :param iv: 16 random bytes.
    :param pss_salt: 32 bytes for the signature (test vectors); None: a random salt.
    :raises BadEncodingParameters: for k, N, seqnum or salts out of range.
    """
    _check_common(seqnum, needed, total, pss_salt)
    _check_salt(iv)
    codec = SegmentCodec(needed, total)
    crypttext = aes_ctr(data_key(iv, keys.readkey), plaintext)
    blocks = _fec(codec, crypttext)
    leaves = [block_hash_tree([block_leaf(b)] if plaintext else [])[0] for b in blocks]
    share_tree = block_hash_tree(leaves)
    root = share_tree[0]
    verification_key = keys.verifying_key.der
    enc_privkey = keys.encrypted_private_key
    segment_size = next_multiple(len(plaintext), needed)
    prefix = sdmf.SIGNED_PREFIX.pack(sdmf.VERSION, seqnum, root, iv, needed, total,
                                     segment_size, len(plaintext))
    signature = keys.signing_key.sign(prefix, salt=pss_salt)
    chains = [pack_chain(share_hash_chain(share_tree, total, i)) for i in range(total)]
    offsets = sdmf.layout_offsets(len(verification_key), len(signature), len(chains[0]),
                                  32, len(blocks[0]), len(enc_privkey))
    header = sdmf.SDMFHeader(seqnum, root, iv, needed, total, segment_size, len(plaintext),
                             offsets)
    shares = []
    for shnum in range(total):
        data = sdmf.pack_share(header, verification_key, signature, chains[shnum],
                               leaves[shnum], blocks[shnum], enc_privkey)
        shares.append(EncodedShare(shnum, data, ((0, data),)))
    return EncodedVersion(header.version_info, tuple(shares))


def encode_mdmf(plaintext: bytes, keys: MutableKeys, *, seqnum: int, needed: int, total: int,
                salts: Sequence[bytes], pss_salt: bytes | None,
                segment_size: int | None = None) -> EncodedVersion:
    """Encode an MDMF version (§4.3).

    :param salts: one 16-byte random salt per segment (:func:`salts_needed`).
    :param pss_salt: 32 bytes for the signature (test vectors); None: a random salt.
    :param segment_size: a positive multiple of k; Tahoe's
        ``next_multiple(131072, k)`` when None. Readers take it from the header.
    :raises BadEncodingParameters: for k, N, seqnum, salts or segment size out of range.
    """
    _check_common(seqnum, needed, total, pss_salt)
    size = mdmf_segment_size(needed) if segment_size is None else segment_size
    if size < 1 or size % needed:
        raise BadEncodingParameters(f"segment size {size} is not a positive multiple of k")
    geometry = Geometry(size, len(plaintext), needed)
    if len(salts) != geometry.num_segments:
        raise BadEncodingParameters(f"{geometry.num_segments} salts needed, {len(salts)} given")
    codec = SegmentCodec(needed, total)
    per_share: list[list[tuple[bytes, bytes]]] = [[] for _ in range(total)]
    for segnum, salt in enumerate(salts):
        _check_salt(salt)
        start = segnum * size
        segment = plaintext[start:start + geometry.segment_length(segnum)]
        blocks = _fec(codec, aes_ctr(data_key(salt, keys.readkey), segment))
        for shnum, block in enumerate(blocks):
            per_share[shnum].append((salt, block))
    trees = [block_hash_tree([block_leaf(b, s) for s, b in segs]) for segs in per_share]
    share_tree = block_hash_tree([tree[0] for tree in trees])
    root = share_tree[0]
    prefix = mdmf.SIGNED_HEADER.pack(mdmf.VERSION, seqnum, root, needed, total, size,
                                     len(plaintext))
    signature = keys.signing_key.sign(prefix, salt=pss_salt)
    verification_key = keys.verifying_key.der
    enc_privkey = keys.encrypted_private_key
    chains = [pack_chain(share_hash_chain(share_tree, total, i)) for i in range(total)]
    data_length = sum(len(s) + len(b) for s, b in per_share[0])
    try:
        offsets = mdmf.layout_offsets(len(enc_privkey), len(chains[0]), len(signature),
                                      len(verification_key), data_length, 32 * len(trees[0]))
    except ValueError as error:
        raise BadEncodingParameters(str(error)) from None
    header = mdmf.MDMFHeader(seqnum, root, needed, total, size, len(plaintext), offsets)
    shares = []
    for shnum in range(total):
        pieces = (header, enc_privkey, chains[shnum], signature, verification_key,
                  per_share[shnum], pack_hashes(trees[shnum]))
        shares.append(EncodedShare(shnum, mdmf.pack_share(*pieces),
                                   tuple(mdmf.write_vectors(*pieces))))
    return EncodedVersion(header.version_info, tuple(shares))


def encode_version(file_format: MutableFormat, plaintext: bytes, keys: MutableKeys, *,
                   seqnum: int, needed: int, total: int, salts: Sequence[bytes],
                   pss_salt: bytes | None, segment_size: int | None = None) -> EncodedVersion:
    """Encode in either format; ``salts`` is ``[iv]`` for SDMF (see :func:`salts_needed`).

    :raises BadEncodingParameters: as :func:`encode_sdmf` and :func:`encode_mdmf`.
    """
    if file_format is MutableFormat.SDMF:
        if len(salts) != 1:
            raise BadEncodingParameters("SDMF takes exactly one salt (the IV)")
        return encode_sdmf(plaintext, keys, seqnum=seqnum, needed=needed, total=total,
                           iv=salts[0], pss_salt=pss_salt)
    return encode_mdmf(plaintext, keys, seqnum=seqnum, needed=needed, total=total, salts=salts,
                       pss_salt=pss_salt, segment_size=segment_size)

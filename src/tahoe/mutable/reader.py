"""Verifying reads of mutable shares (``reference/mutable-dirnodes.md`` §4.4, §7.3).

Pure: callers hand in bytes read from servers; nothing is trusted before it
is checked against the cap's fingerprint and the signed root hash.

* :func:`check_header` — steps 1-3: version byte, verification key against
  the fingerprint, signature over the signed prefix. Enough to put a share
  in a servermap.
* :class:`VersionDecoder` — steps 5-7 for one version: each share's chain
  and block hash tree, each block, zfec decode, decryption.
* :func:`decode_shares` — the whole retrieve over shares held in memory:
  best recoverable version, k lowest good shares, corrupt ones named.
* :func:`verify_share` — every checkable byte of one share (a verifier's view).

See ``docs/formats/mutable-files.md``.
"""
from __future__ import annotations

from collections.abc import Mapping

from attrs import frozen

from ..crypto.aes import aes_ctr
from ..crypto.rsa import BadRSAKey, BadSignature, VerifyingKey
from ..immutable.codec import SegmentCodec
from . import mdmf
from .errors import (BadPrivateKey, CorruptShare, LayoutInvalid, MutableFormatError,
                     NotEnoughShares, ShareTruncated, UnrecoverableFile)
from .hashes import block_leaf, check_whole_tree, parse_chain, parse_hashes, root_from_chain
from .keys import data_key, decrypt_private_key_der, fingerprint_from_public_key
from .layout import ShareHeader, parse_header, signature_needs
from .servermap import best_version
from .version import VersionInfo


@frozen
class CheckedHeader:
    """A share header whose key matches the cap and whose signature verifies."""

    shnum: int
    header: ShareHeader
    verifying_key: VerifyingKey

    @property
    def version(self) -> VersionInfo:
        """The version the share belongs to."""
        return self.header.version_info


def _slice(data: bytes, span: tuple[int, int]) -> bytes:
    return data[span[0]:span[0] + span[1]]


def check_header(shnum: int, data: bytes, fingerprint: bytes,
                 known_key: VerifyingKey | None = None) -> CheckedHeader:
    """Check the start of a share: header, verification key, signature (§4.4 steps 1-3).

    :param data: the share's first bytes (the 4000-byte probe covers both formats).
    :param known_key: a key that already matched the fingerprint; the
        share's own key bytes must still be identical to it.
    :raises ShareTruncated: when ``data`` stops before the key or signature
        (its ``needed`` says how many bytes to read); if the share itself is
        that short, treat it as corrupt.
    :raises CorruptShare: for an unknown version, a malformed header, a key
        that does not match the fingerprint, or a bad signature.
    """
    try:
        header = parse_header(data)
    except ShareTruncated:
        raise
    except LayoutInvalid as error:
        raise CorruptShare(shnum, str(error)) from None
    needed = signature_needs(header)
    if len(data) < needed:
        raise ShareTruncated(f"the key and signature end at {needed}", needed)
    key_bytes = _slice(data, header.verification_key_range())
    if known_key is not None and key_bytes == known_key.der:
        key = known_key
    else:
        if fingerprint_from_public_key(key_bytes) != fingerprint:
            raise CorruptShare(shnum, "verification key does not match the cap's fingerprint")
        try:
            key = VerifyingKey.from_der(key_bytes)
        except BadRSAKey as error:
            raise CorruptShare(shnum, f"verification key is unusable: {error}") from None
    try:
        key.verify(header.signed_prefix, _slice(data, header.signature_range()))
    except BadSignature:
        raise CorruptShare(shnum, "signature is invalid") from None
    return CheckedHeader(shnum, header, key)


@frozen
class CheckedBlock:
    """One block (and its MDMF salt) that matched its share's trusted block hash tree."""

    shnum: int
    segnum: int
    salt: bytes | None
    block: bytes


class VersionDecoder:
    """What has been checked about one version, and the segment decoder.

    :param version: the version (from a checked header).
    :param readkey: the file's readkey, or None to check without decrypting.
    :raises LayoutInvalid: when the signed k, N or segment size are unusable.
    """

    def __init__(self, version: VersionInfo, readkey: bytes | None) -> None:
        self.version = version
        self.geometry = version.geometry
        self.geometry.check()
        if not 1 <= version.needed <= version.total <= 256:
            raise LayoutInvalid(f"impossible k={version.needed} N={version.total}")
        if version.iv is not None and self.geometry.num_segments > 1:
            raise LayoutInvalid("an SDMF version must fit in one segment")
        self._readkey = readkey
        self._codec = SegmentCodec(version.needed, version.total)
        self._leaves: dict[int, list[bytes]] = {}

    @property
    def trusted_shares(self) -> frozenset[int]:
        """Shares whose chain and block hash tree have been accepted."""
        return frozenset(self._leaves)

    def accept_hashes(self, shnum: int, share_hash_chain: bytes, block_hash_tree: bytes) -> None:
        """Check share ``shnum``'s block hash tree and chain against the signed root.

        :raises CorruptShare: if either is malformed or they do not lead to the root.
        """
        segments = self.geometry.num_segments
        try:
            nodes = parse_hashes(block_hash_tree)
            share_root = check_whole_tree(nodes, segments)
            root = root_from_chain(self.version.total, shnum, share_root,
                                   parse_chain(share_hash_chain))
        except LayoutInvalid as error:
            raise CorruptShare(shnum, str(error)) from None
        if root != self.version.root_hash:
            raise CorruptShare(shnum, "share hash chain does not lead to the signed root hash")
        first_leaf = len(nodes) // 2
        self._leaves[shnum] = nodes[first_leaf:first_leaf + segments]

    def check_block(self, shnum: int, segnum: int, entry: bytes) -> CheckedBlock:
        """Check what was read at ``header.block_range(segnum)`` (MDMF: salt || block).

        :raises CorruptShare: for a wrong length or a block not matching its leaf.
        :raises RuntimeError: if the share's hashes were not accepted first.
        """
        leaves = self._leaves.get(shnum)
        if leaves is None:
            raise RuntimeError(f"share {shnum}'s hashes have not been accepted")
        if not 0 <= segnum < len(leaves):
            raise IndexError(f"segment {segnum} outside 0..{len(leaves) - 1}")
        salt_size = 0 if self.version.iv is not None else mdmf.SALT_SIZE
        expected = salt_size + self.geometry.block_length(segnum)
        if len(entry) != expected:
            raise CorruptShare(shnum, f"segment {segnum}: block is {len(entry)} bytes, expected "
                               f"{expected}")
        salt = entry[:salt_size] if salt_size else None
        block = entry[salt_size:]
        if block_leaf(block, salt) != leaves[segnum]:
            raise CorruptShare(shnum, f"segment {segnum}: block does not match its block hash")
        return CheckedBlock(shnum, segnum, salt, block)

    def decode_segment(self, segnum: int, blocks: Mapping[int, CheckedBlock]) -> bytes:
        """Rebuild and decrypt segment ``segnum`` from k checked blocks.

        :raises NotEnoughShares: with fewer than k blocks.
        :raises RuntimeError: without a readkey.
        """
        if self._readkey is None:
            raise RuntimeError("a verify cap cannot decrypt")
        needed = self.version.needed
        if len(blocks) < needed:
            raise NotEnoughShares(needed, len(blocks))
        chosen = sorted(blocks)[:needed]
        padded = self._codec.decode({n: blocks[n].block for n in chosen})
        crypttext = padded[:self.geometry.segment_length(segnum)]
        salt = blocks[chosen[0]].salt if self.version.iv is None else self.version.iv
        assert salt is not None
        return aes_ctr(data_key(salt, self._readkey), crypttext)


@frozen
class DecodedVersion:
    """The outcome of :func:`decode_shares`.

    :ivar used: the share numbers decoded from (the k lowest good ones).
    :ivar corrupt: share number -> reason, for every share found bad.
    """

    version: VersionInfo
    plaintext: bytes
    used: tuple[int, ...]
    corrupt: dict[int, str]


def _load_share(decoder: VersionDecoder, checked: CheckedHeader, data: bytes) -> list[CheckedBlock]:
    header = checked.header
    decoder.accept_hashes(checked.shnum, _slice(data, header.share_hash_chain_range()),
                          _slice(data, header.block_hash_tree_range()))
    blocks = []
    for segnum in range(decoder.geometry.num_segments):
        entry = _slice(data, header.block_range(segnum))
        blocks.append(decoder.check_block(checked.shnum, segnum, entry))
    if decoder.geometry.num_segments == 0 and header.share_data_range()[1] != 0:
        raise CorruptShare(checked.shnum, "an empty file's share holds share data")
    return blocks


def _decode_version(version: VersionInfo, readkey: bytes, checked: dict[int, CheckedHeader],
                    shares: Mapping[int, bytes], corrupt: dict[int, str],
                    replaced: frozenset[int] = frozenset()) -> DecodedVersion:
    """Decode one version from its k lowest good shares; bad ones move to ``corrupt``.

    :param replaced: shares set aside as holding another version (named in the error).
    """
    candidates = sorted(n for n, c in checked.items() if c.version == version)
    try:
        decoder = VersionDecoder(version, readkey)
    except LayoutInvalid as error:
        for shnum in candidates:
            corrupt[shnum] = f"unusable version: {error}"
            del checked[shnum]
        raise NotEnoughShares(version.needed, 0, corrupt, replaced) from None
    good: dict[int, list[CheckedBlock]] = {}
    for shnum in candidates:
        if len(good) == version.needed:
            break
        try:
            good[shnum] = _load_share(decoder, checked[shnum], shares[shnum])
        except CorruptShare as error:
            corrupt[shnum] = error.reason
            del checked[shnum]
    if len(good) < version.needed:
        raise NotEnoughShares(version.needed, len(good), corrupt, replaced)
    pieces = [decoder.decode_segment(segnum, {n: blocks[segnum] for n, blocks in good.items()})
              for segnum in range(decoder.geometry.num_segments)]
    return DecodedVersion(version, b"".join(pieces), tuple(sorted(good)), corrupt)


def decode_shares(readkey: bytes, fingerprint: bytes, shares: Mapping[int, bytes],
                  version: VersionInfo | None = None) -> DecodedVersion:
    """Read a mutable file from whole shares held in memory (§4.4, §5, §7.3).

    Without ``version``, the best recoverable version is read; shares found
    bad while reading it no longer count, so when too many fail the next
    best version left is tried (as a servermap that marks them bad would).

    With ``version``, a share whose checkstring (seqnum, root hash, SDMF IV)
    is another version's was replaced by a write since the servermap saw it:
    it is set aside, not counted corrupt, when its header checks out or is
    only cut short (read up to where the chosen version's share ended). A
    share with the version's checkstring but a header that disagrees with the
    version in its other fields is corrupt.

    :param shares: share number -> share bytes (any number, any versions).
    :param version: the version to read; the best recoverable one when None.
    :raises UnrecoverableFile: when no version has k distinct good shares.
    :raises NotEnoughShares: when too many shares of the given ``version`` fail
        or were replaced (its ``replaced`` names those).
    """
    corrupt: dict[int, str] = {}
    replaced: set[int] = set()
    checked: dict[int, CheckedHeader] = {}
    key: VerifyingKey | None = None
    for shnum in sorted(shares):
        data = shares[shnum]
        other = version is not None and not data.startswith(version.checkstring)
        try:
            result = check_header(shnum, data, fingerprint, key)
        except ShareTruncated as error:
            if other:
                replaced.add(shnum)
            else:
                corrupt[shnum] = str(error)
            continue
        except CorruptShare as error:
            corrupt[shnum] = error.reason
            continue
        except LayoutInvalid as error:
            corrupt[shnum] = str(error)
            continue
        key = result.verifying_key
        if other:
            replaced.add(shnum)
        elif version is not None and result.version != version:
            corrupt[shnum] = "header disagrees with the version its checkstring names"
        else:
            checked[shnum] = result
    if version is not None:
        return _decode_version(version, readkey, checked, shares, corrupt, frozenset(replaced))
    while True:
        best = best_version((c.version, shnum) for shnum, c in checked.items())
        if best is None:
            raise UnrecoverableFile("no recoverable version among the shares" + "".join(
                f"; share {n}: {r}" for n, r in sorted(corrupt.items())))
        try:
            return _decode_version(best, readkey, checked, shares, corrupt)
        except NotEnoughShares:
            continue  # its bad shares left ``checked``: the next round sees fewer


def verify_share(shnum: int, data: bytes, fingerprint: bytes,
                 writekey: bytes | None = None) -> VersionInfo:
    """Check every byte of one share that a correct writer determines.

    Everything up to EOF is checked except the MDMF gap before the share
    data (never written, zero-filled by servers); the encrypted private key
    only when ``writekey`` is given. Bytes after EOF are ignored (servers
    do not truncate).

    :returns: the share's version.
    :raises CorruptShare: naming what is wrong.
    """
    try:
        checked = check_header(shnum, data, fingerprint)
        decoder = VersionDecoder(checked.version, None)
        header = checked.header
        if len(data) < header.offsets.eof:
            raise CorruptShare(shnum, f"share is {len(data)} bytes, its EOF offset is "
                               f"{header.offsets.eof}")
        _load_share(decoder, checked, data)
        if header.has_salts:
            blocks_end = header.offsets.share_data + sum(
                mdmf.SALT_SIZE + decoder.geometry.block_length(s)
                for s in range(decoder.geometry.num_segments))
            if blocks_end != header.offsets.block_hash_tree:
                raise CorruptShare(shnum, "share data length disagrees with the geometry")
        if writekey is not None:
            decrypt_private_key_der(writekey, _slice(data, header.enc_privkey_range()))
    except CorruptShare:
        raise
    except BadPrivateKey as error:
        raise CorruptShare(shnum, f"encrypted private key: {error}") from None
    except MutableFormatError as error:
        raise CorruptShare(shnum, str(error)) from None
    return checked.version

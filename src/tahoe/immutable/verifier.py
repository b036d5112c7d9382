"""Per-file verification state of a CHK download (``reference/immutable.md`` §12).

Pure: the caller reads bytes (from memory, disk or the network) and hands
them here; every hash is checked before any byte is trusted. Used by the
synchronous :mod:`.decoder` and by the network downloader alike.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..caps.immutable import CHKReadCap, CHKVerifyCap
from ..crypto.aes import aes_ctr
from ..util.hashutil import block_hash, crypttext_segment_hash
from .codec import SegmentCodec
from .errors import (BadBlock, BadCrypttext, BadUEB, CorruptShare, HashTreeError,
                     LayoutInvalid)
from .hashtree import PartialHashTree
from .layout import parse_chain
from .params import SegmentGeometry
from .ueb import TrustedUEB, check_ueb


class FileVerifier:
    """Everything a downloader has learnt and checked about one file.

    :param cap: a read cap (download) or a verify cap (check only; no decrypt).
    """

    def __init__(self, cap: CHKReadCap | CHKVerifyCap) -> None:
        self.cap = cap
        self.ueb: TrustedUEB | None = None
        self.geometry: SegmentGeometry | None = None
        self._share_tree: PartialHashTree | None = None
        self._crypttext_tree: PartialHashTree | None = None
        self._block_trees: dict[int, PartialHashTree] = {}
        self._codec = SegmentCodec(cap.needed, cap.total) if 1 <= cap.needed <= cap.total <= 256 \
            else None

    @property
    def has_ueb(self) -> bool:
        """Whether a valid UEB has been accepted."""
        return self.ueb is not None

    def accept_ueb(self, shnum: int, data: bytes) -> TrustedUEB:
        """Check a share's UEB against the cap; the first valid one is kept.

        :raises CorruptShare: if the UEB does not match the cap or is unusable.
        """
        if self.ueb is not None:
            return self.ueb
        cap = self.cap
        if self._codec is None:
            raise CorruptShare(shnum, f"cap has impossible k={cap.needed} N={cap.total}")
        try:
            ueb = check_ueb(data, cap.ueb_hash)
            geometry = ueb.geometry(cap.size, cap.needed, cap.total)
        except BadUEB as error:
            raise CorruptShare(shnum, str(error)) from None
        self.ueb = ueb
        self.geometry = geometry
        self._share_tree = PartialHashTree(cap.total, ueb.share_root_hash)
        self._crypttext_tree = PartialHashTree(max(1, geometry.num_segments),
                                               ueb.crypttext_root_hash)
        return ueb

    def _need_ueb(self) -> tuple[TrustedUEB, SegmentGeometry]:
        if self.ueb is None or self.geometry is None:
            raise RuntimeError("no UEB has been accepted yet")
        return self.ueb, self.geometry

    def accept_share_chain(self, shnum: int, chain_bytes: bytes) -> None:
        """Check share ``shnum``'s share-hash chain; on success its block tree root is trusted.

        :raises CorruptShare: on a malformed chain, a bad hash or missing nodes.
        """
        self._need_ueb()
        assert self._share_tree is not None
        if not 0 <= shnum < self.cap.total:
            raise CorruptShare(shnum, f"share number outside 0..{self.cap.total - 1}")
        if shnum in self._block_trees:
            return
        try:
            self._share_tree.add(parse_chain(chain_bytes))
        except (LayoutInvalid, HashTreeError) as error:
            raise CorruptShare(shnum, f"share hash chain: {error}") from None
        leaf = self._share_tree.get_leaf(shnum)
        if leaf is None:
            raise CorruptShare(shnum, "share hash chain does not include the share's own leaf")
        _, geometry = self._need_ueb()
        self._block_trees[shnum] = PartialHashTree(max(1, geometry.num_segments), leaf)

    def block_tree(self, shnum: int) -> PartialHashTree | None:
        """Share ``shnum``'s block hash tree, once its chain has been accepted."""
        return self._block_trees.get(shnum)

    def add_block_hashes(self, shnum: int, nodes: Mapping[int, bytes] | Iterable[tuple[int, bytes]]
                         ) -> None:
        """Check and keep nodes of share ``shnum``'s block hash tree.

        :raises CorruptShare: if they do not agree with the share's trusted root.
        """
        tree = self._block_trees.get(shnum)
        if tree is None:
            raise RuntimeError(f"share {shnum}'s chain has not been accepted")
        try:
            tree.add(nodes)
        except HashTreeError as error:
            raise CorruptShare(shnum, f"block hash tree: {error}") from None

    def check_block(self, shnum: int, segnum: int, block: bytes) -> None:
        """Check one block against its trusted leaf in the share's block hash tree.

        :raises BadBlock: if the block is the wrong length or does not hash to the leaf.
        """
        _, geometry = self._need_ueb()
        tree = self._block_trees.get(shnum)
        if tree is None:
            raise RuntimeError(f"share {shnum}'s chain has not been accepted")
        if len(block) != geometry.block_length(segnum):
            raise BadBlock(shnum, segnum, f"block is {len(block)} bytes, expected "
                           f"{geometry.block_length(segnum)}")
        leaf = tree.get_leaf(segnum)
        if leaf is None:
            raise RuntimeError(f"leaf {segnum} of share {shnum}'s block tree is not trusted yet")
        if block_hash(block) != leaf:
            raise BadBlock(shnum, segnum, "block does not match its block hash")

    def add_crypttext_hashes(self, nodes: Mapping[int, bytes] | Iterable[tuple[int, bytes]],
                             shnum: int) -> None:
        """Check and keep crypttext-hash-tree nodes read from share ``shnum``.

        :raises CorruptShare: if they disagree with the UEB's crypttext root.
        """
        self._need_ueb()
        assert self._crypttext_tree is not None
        try:
            self._crypttext_tree.add(nodes)
        except HashTreeError as error:
            raise CorruptShare(shnum, f"crypttext hash tree: {error}") from None

    def crypttext_nodes_missing(self, segnum: int) -> list[int]:
        """Crypttext-tree nodes still needed to check segment ``segnum``."""
        self._need_ueb()
        assert self._crypttext_tree is not None
        return self._crypttext_tree.missing_for_leaf(segnum)

    def decode_segment(self, segnum: int, blocks: Mapping[int, bytes]) -> bytes:
        """Rebuild segment ``segnum``'s ciphertext from k checked blocks and check it.

        :raises BadCrypttext: if the rebuilt ciphertext disagrees with the crypttext tree.
        """
        _, geometry = self._need_ueb()
        assert self._codec is not None and self._crypttext_tree is not None
        padded = self._codec.decode(blocks)
        crypttext = padded[: geometry.segment_length(segnum)]
        leaf = self._crypttext_tree.get_leaf(segnum)
        if leaf is None:
            raise RuntimeError(f"crypttext leaf {segnum} is not trusted yet")
        if crypttext_segment_hash(crypttext) != leaf:
            raise BadCrypttext(f"segment {segnum} does not match the crypttext hash tree")
        return crypttext

    def decrypt_segment(self, segnum: int, crypttext: bytes) -> bytes:
        """Decrypt a checked ciphertext segment (read caps only)."""
        _, geometry = self._need_ueb()
        if not isinstance(self.cap, CHKReadCap):
            raise TypeError("a verify cap cannot decrypt")
        return aes_ctr(self.cap.key, crypttext, geometry.segment_offset(segnum))

"""In-place updates of MDMF versions: rewrite only the segments a write touches.

A write of ``length`` bytes at ``offset`` into an MDMF version changes the
segments from ``offset // segment_size`` to the segment holding its last
byte (or the new last segment, when the write grows the file). Only those
segments are re-encoded, each under a new salt; every share gets their new
blocks, the block hash tree nodes that changed, a new share hash chain, a new
signature and a new header, all tested against the old version's checkstring.

Two shapes (``docs/formats/mdmf-update.md``):

* the share data keeps its length (the file does not grow past the tail's
  last block): the block hash tree stays where it is, and only the nodes on
  the paths from the changed leaves to the root are read and written;
* the share data grows: the block hash tree (stored after the share data)
  moves and may gain levels, so every old leaf is read and the whole new
  tree written. A tree is 64 bytes per segment per share: small beside
  the segments, but it grows with the file.

Pure: the shell reads what :class:`UpdatePlan` asks for, and hands it back to
:func:`old_tree_root`, :func:`decode_old_segment` and :func:`encode_update`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from attrs import frozen

from ..crypto.aes import aes_ctr
from ..crypto.rsa import PSS_SALT_SIZE
from ..immutable.codec import SegmentCodec
from ..immutable.hashtree import first_leaf_node, needed_hashes, num_nodes_for, parent
from ..util.hashutil import HASH_SIZE, merkle_internal_hash
from . import mdmf
from .encoder import MAX_SEQNUM, _fec
from .errors import CorruptShare, LayoutInvalid, MutableFormatError
from .hashes import (block_hash_tree, block_leaf, pack_chain, pack_hashes, root_from_chain,
                     share_hash_chain)
from .keys import SALT_SIZE, MutableKeys, data_key
from .version import Geometry, VersionInfo

__all__ = ["UpdateNotInPlace", "UpdatePlan", "plan_update", "old_tree_root",
           "decode_old_segment", "encode_update", "UpdatedVersion", "splice_segment",
           "splice_bytes"]


class UpdateNotInPlace(MutableFormatError):
    """This write cannot be made in place; publish a whole new version instead."""


def _share_data_length(geometry: Geometry) -> int:
    return sum(SALT_SIZE + geometry.block_length(n) for n in range(geometry.num_segments))


@frozen
class UpdatePlan:
    """One in-place update of an MDMF version: what to read and what will change.

    :ivar version: the version read (MDMF, not empty).
    :ivar offset: where the new bytes go (at most the old length: an append).
    :ivar length: how many new bytes (at least one).
    :ivar first_segment: the first segment that changes.
    :ivar last_segment: the last segment of the new version that changes.
    :ivar whole_tree: the share data grows, so the block hash tree moves and
        is read (its leaves) and written whole.
    """

    version: VersionInfo
    offset: int
    length: int
    first_segment: int
    last_segment: int
    whole_tree: bool

    @property
    def old_geometry(self) -> Geometry:
        """Segments of the version read."""
        return self.version.geometry

    @property
    def new_data_length(self) -> int:
        """The file's length after the update."""
        return max(self.version.data_length, self.offset + self.length)

    @property
    def new_geometry(self) -> Geometry:
        """Segments of the new version."""
        return Geometry(self.version.segment_size, self.new_data_length, self.version.needed)

    @property
    def changed_segments(self) -> range:
        """Every segment of the new version that is re-encoded."""
        return range(self.first_segment, self.last_segment + 1)

    @property
    def old_offsets(self) -> mdmf.MDMFOffsets:
        """The offset table of the version read."""
        return mdmf.MDMFOffsets(*self.version.offsets)

    def old_segments_needed(self) -> tuple[int, ...]:
        """Old segments whose plaintext the new one keeps part of (at most two)."""
        old = self.old_geometry
        size = self.version.segment_size
        end = self.offset + self.length
        needed = []
        for segnum in sorted({self.first_segment, self.last_segment}):
            if segnum >= old.num_segments:
                continue
            start = segnum * size
            stop = start + old.segment_length(segnum)
            if start < self.offset or end < stop:
                needed.append(segnum)
        return tuple(needed)

    def tree_nodes_needed(self) -> tuple[int, ...]:
        """Nodes of each share's stored block hash tree the update reads.

        In place: the changed leaves and every sibling on their paths. Moving
        tree: every old leaf.
        """
        old_count = self.old_geometry.num_segments
        if self.whole_tree:
            first = first_leaf_node(old_count)
            return tuple(range(first, first + old_count))
        nodes: set[int] = set()
        for leaf in self.changed_segments:
            nodes.update(needed_hashes(old_count, leaf, include_leaf=True))
        return tuple(sorted(nodes))

    def tree_reads(self) -> list[tuple[int, int]]:
        """Read vectors (offset, length) of :meth:`tree_nodes_needed`, runs coalesced."""
        return _runs(self.old_offsets.block_hash_tree, self.tree_nodes_needed())

    def block_read(self, segnum: int) -> tuple[int, int]:
        """Read vector of old segment ``segnum``'s salt and block."""
        old = self.old_geometry
        start = self.old_offsets.share_data + segnum * (SALT_SIZE + old.full_block_length)
        return start, SALT_SIZE + old.block_length(segnum)

    def new_offsets(self) -> mdmf.MDMFOffsets:
        """The offset table of the new version (only the tree and EOF may move)."""
        old = self.old_offsets
        tree = old.share_data + _share_data_length(self.new_geometry)
        nodes = num_nodes_for(max(1, self.new_geometry.num_segments))
        return mdmf.MDMFOffsets(old.enc_privkey, old.share_hash_chain, old.signature,
                                old.verification_key, old.verification_key_end, old.share_data,
                                tree, tree + HASH_SIZE * nodes)


def _runs(base: int, nodes: Sequence[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for node in nodes:
        start = base + HASH_SIZE * node
        if runs and runs[-1][0] + runs[-1][1] == start:
            runs[-1] = (runs[-1][0], runs[-1][1] + HASH_SIZE)
        else:
            runs.append((start, HASH_SIZE))
    return runs


def plan_update(version: VersionInfo, offset: int, length: int) -> UpdatePlan:
    """Plan writing ``length`` bytes at ``offset`` into ``version`` in place.

    :param offset: at most the version's length (equal: an append).
    :raises UpdateNotInPlace: for an SDMF or empty version, nothing to write,
        an offset past the end, or an offset table other than a writer lays out
        (regions that do not end where the next begins).
    """
    if version.iv is not None:
        raise UpdateNotInPlace("SDMF versions are one segment: published whole")
    if version.data_length == 0:
        raise UpdateNotInPlace("an empty version has no segments to update")
    if length < 1:
        raise UpdateNotInPlace("nothing to write")
    if not 0 <= offset <= version.data_length:
        raise UpdateNotInPlace(f"offset {offset} is past the end ({version.data_length})")
    if version.seqnum >= MAX_SEQNUM:
        raise UpdateNotInPlace("the seqnum cannot grow")
    geometry = version.geometry
    try:
        geometry.check()
    except LayoutInvalid as error:
        raise UpdateNotInPlace(str(error)) from None
    offsets = mdmf.MDMFOffsets(*version.offsets)
    old_count = geometry.num_segments
    if (offsets.block_hash_tree != offsets.share_data + _share_data_length(geometry)
            or offsets.eof != offsets.block_hash_tree + HASH_SIZE * num_nodes_for(old_count)):
        raise UpdateNotInPlace("the share data or block hash tree is not where a writer puts it")
    size = version.segment_size
    new_length = max(version.data_length, offset + length)
    new_geometry = Geometry(size, new_length, version.needed)
    first = offset // size
    last = (offset + length - 1) // size
    if new_length > version.data_length:
        last = new_geometry.num_segments - 1
    whole = _share_data_length(new_geometry) != _share_data_length(geometry)
    return UpdatePlan(version, offset, length, first, last, whole)


def old_tree_root(plan: UpdatePlan, shnum: int, nodes: Mapping[int, bytes],
                  chain: Mapping[int, bytes]) -> None:
    """Check the tree nodes read from share ``shnum`` against the signed root.

    The nodes must hash up, with the share's hash chain, to the version's root hash.

    :param nodes: node index -> hash, every one of :meth:`UpdatePlan.tree_nodes_needed`.
    :raises CorruptShare: when a node is missing or the hashes lead elsewhere.
    """
    try:
        root = _tree_root(plan, nodes)
        signed = root_from_chain(plan.version.total, shnum, root, chain)
    except (KeyError, LayoutInvalid) as error:
        raise CorruptShare(shnum, f"block hash tree or chain unusable: {error!r}") from None
    if signed != plan.version.root_hash:
        raise CorruptShare(shnum, "block hash tree and chain do not lead to the signed root")


def _tree_root(plan: UpdatePlan, nodes: Mapping[int, bytes]) -> bytes:
    count = plan.old_geometry.num_segments
    if plan.whole_tree:
        first = first_leaf_node(count)
        return block_hash_tree([nodes[first + n] for n in range(count)])[0]
    first = first_leaf_node(count)
    leaves = {first + n: nodes[first + n] for n in plan.changed_segments if n < count}
    return _recompute(nodes, leaves)[0]


def _recompute(known: Mapping[int, bytes], leaves: Mapping[int, bytes]) -> dict[int, bytes]:
    """Every node on the paths from ``leaves`` (node -> hash) up, siblings from ``known``."""
    values = dict(leaves)
    level = set(leaves)
    while level and level != {0}:
        parents = {parent(node) for node in level if node}
        for node in parents:
            left, right = 2 * node + 1, 2 * node + 2
            values[node] = merkle_internal_hash(values.get(left) or known[left],
                                                values.get(right) or known[right])
        level = parents
    return values


def old_leaf(plan: UpdatePlan, nodes: Mapping[int, bytes], segnum: int) -> bytes:
    """The (checked) old leaf of segment ``segnum`` among ``nodes``."""
    return nodes[first_leaf_node(plan.old_geometry.num_segments) + segnum]


def decode_old_segment(plan: UpdatePlan, readkey: bytes, segnum: int,
                       entries: Mapping[int, bytes], leaves: Mapping[int, bytes]) -> bytes:
    """The plaintext of old segment ``segnum`` from k shares' salt || block.

    :param entries: share number -> what :meth:`UpdatePlan.block_read` read.
    :param leaves: share number -> that share's checked leaf for the segment.
    :raises CorruptShare: for an entry that does not match its leaf.
    :raises UpdateNotInPlace: with fewer than k good entries.
    """
    version = plan.version
    expected = SALT_SIZE + plan.old_geometry.block_length(segnum)
    good: dict[int, bytes] = {}
    salt = b""
    for shnum in sorted(entries):
        entry = entries[shnum]
        if len(entry) != expected or block_leaf(entry[SALT_SIZE:], entry[:SALT_SIZE]) \
                != leaves[shnum]:
            raise CorruptShare(shnum, f"segment {segnum}: salt and block do not match the tree")
        good[shnum] = entry[SALT_SIZE:]
        salt = entry[:SALT_SIZE]
        if len(good) == version.needed:
            break
    if len(good) < version.needed:
        raise UpdateNotInPlace(f"segment {segnum}: {len(good)} blocks, {version.needed} needed")
    codec = SegmentCodec(version.needed, version.total)
    padded = codec.decode(good)
    crypttext = padded[:plan.old_geometry.segment_length(segnum)]
    return aes_ctr(data_key(salt, readkey), crypttext)


def splice_segment(plan: UpdatePlan, segnum: int, old_plaintext: bytes, data: bytes) -> bytes:
    """New segment ``segnum``: the old one's bytes with ``data`` (written at the plan's
    offset) laid over them."""
    size = plan.version.segment_size
    start = segnum * size
    stop = start + plan.new_geometry.segment_length(segnum)
    piece = bytearray(old_plaintext[:stop - start])
    piece.extend(bytes(stop - start - len(piece)))
    lo = max(plan.offset, start)
    hi = min(plan.offset + plan.length, stop)
    if lo < hi:
        piece[lo - start:hi - start] = data[lo - plan.offset:hi - plan.offset]
    return bytes(piece)


def splice_bytes(old: bytes, data: bytes, offset: int) -> bytes:
    """``old`` with ``data`` written over it from ``offset`` (appended at or past the end):
    what an update makes of the whole contents."""
    return old[:offset] + data + old[offset + len(data):]


@frozen
class UpdatedVersion:
    """The new version and, per share number, the write vectors turning the old share into it.

    :ivar old_checkstring: what every share must still start with.
    """

    version: VersionInfo
    old_checkstring: bytes
    writes: dict[int, tuple[tuple[int, bytes], ...]]

    @property
    def checkstring(self) -> bytes:
        """The new version's checkstring."""
        return self.version.checkstring


def encode_update(plan: UpdatePlan, keys: MutableKeys, segments: Sequence[bytes],
                  salts: Sequence[bytes], trees: Mapping[int, Mapping[int, bytes]],
                  pss_salt: bytes | None, seqnum: int | None = None) -> UpdatedVersion:
    """Re-encode the changed segments and build every share's writes.

    :param segments: the new plaintext of each of :attr:`UpdatePlan.changed_segments`.
    :param salts: one new 16-byte salt per changed segment.
    :param trees: for every share number 0..N-1, its checked nodes
        (:meth:`UpdatePlan.tree_nodes_needed`).
    :param seqnum: the new seqnum (the old one + 1 unless given).
    :raises UpdateNotInPlace: when a share's nodes are missing or a signature
        would not fit where the old one is.
    """
    version = plan.version
    needed, total = version.needed, version.total
    changed = plan.changed_segments
    if len(segments) != len(changed) or len(salts) != len(changed):
        raise ValueError("one segment and one salt per changed segment")
    if pss_salt is not None and len(pss_salt) != PSS_SALT_SIZE:
        raise ValueError(f"the PSS salt must be {PSS_SALT_SIZE} bytes")
    if set(trees) != set(range(total)):
        raise UpdateNotInPlace(f"the hashes of shares {sorted(set(range(total)) - set(trees))} "
                               "are missing")
    new_seqnum = version.seqnum + 1 if seqnum is None else seqnum
    codec = SegmentCodec(needed, total)
    blocks: list[list[bytes]] = []
    for segment, salt in zip(segments, salts):
        if len(salt) != SALT_SIZE:
            raise ValueError(f"salts are {SALT_SIZE} bytes")
        blocks.append(_fec(codec, aes_ctr(data_key(salt, keys.readkey), segment)))
    new_geometry = plan.new_geometry
    offsets = plan.new_offsets()
    old_count = plan.old_geometry.num_segments
    share_writes: dict[int, list[tuple[int, bytes]]] = {}
    share_roots: list[bytes] = []
    for shnum in range(total):
        nodes = trees[shnum]
        new_leaves = [block_leaf(blocks[i][shnum], salts[i]) for i in range(len(changed))]
        writes: list[tuple[int, bytes]] = []
        for i, segnum in enumerate(changed):
            start = offsets.share_data + segnum * (SALT_SIZE + new_geometry.full_block_length)
            writes.append((start, salts[i] + blocks[i][shnum]))
        if plan.whole_tree:
            first = first_leaf_node(old_count)
            kept = [nodes[first + n] for n in range(plan.first_segment)]
            tree = block_hash_tree(kept + new_leaves)
            writes.append((offsets.block_hash_tree, pack_hashes(tree)))
            share_roots.append(tree[0])
        else:
            first = first_leaf_node(old_count)
            values = _recompute(nodes, {first + segnum: new_leaves[i]
                                        for i, segnum in enumerate(changed)})
            for start, length in _runs(offsets.block_hash_tree, sorted(values)):
                node = (start - offsets.block_hash_tree) // HASH_SIZE
                writes.append((start, b"".join(values[node + j]
                                               for j in range(length // HASH_SIZE))))
            share_roots.append(values[0])
        share_writes[shnum] = writes
    share_tree = block_hash_tree(share_roots)
    root = share_tree[0]
    header = mdmf.MDMFHeader(new_seqnum, root, needed, total, version.segment_size,
                             new_geometry.data_length, offsets)
    signature = keys.signing_key.sign(header.signed_prefix, salt=pss_salt)
    if len(signature) != offsets.verification_key - offsets.signature:
        raise UpdateNotInPlace("the new signature would not fit where the old one is")
    result: dict[int, tuple[tuple[int, bytes], ...]] = {}
    for shnum in range(total):
        chain = pack_chain(share_hash_chain(share_tree, total, shnum))
        if len(chain) != offsets.signature - offsets.share_hash_chain:
            raise UpdateNotInPlace("the new share hash chain would not fit")
        result[shnum] = tuple(share_writes[shnum] + [(offsets.share_hash_chain, chain),
                                                     (offsets.signature, signature),
                                                     (0, header.pack())])
    return UpdatedVersion(header.version_info, version.checkstring, result)

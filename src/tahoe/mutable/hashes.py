"""Block hash trees, the share hash tree and share hash chains of mutable files.

``reference/mutable-dirnodes.md`` §1.5 and §4.1: each share has a block
hash tree over its blocks (MDMF leaves hash salt || block), whose root is
that share's leaf in the share hash tree; the share hash tree's root is
signed. A share stores its whole block hash tree and, as ``>H32s`` entries
in increasing node order, the siblings on its leaf's path to the root.

See ``docs/formats/mutable-files.md``.
"""
from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

from ..immutable.hashtree import build_tree, needed_hashes, num_nodes_for, parent, sibling
from ..util.hashutil import HASH_SIZE, block_hash, merkle_empty_leaf_hash, merkle_internal_hash
from .errors import LayoutInvalid

CHAIN_ENTRY = struct.Struct(">H32s")


def block_leaf(block: bytes, salt: bytes | None = None) -> bytes:
    """A block hash tree leaf: hash of the block (SDMF) or of salt || block (MDMF)."""
    return block_hash(block if salt is None else salt + block)


def block_hash_tree(leaves: Sequence[bytes]) -> list[bytes]:
    """The whole tree (root first) over the given leaves; ``[empty_leaf(0)]`` for none."""
    return build_tree(list(leaves) or [merkle_empty_leaf_hash(0)])


def pack_hashes(hashes: Sequence[bytes]) -> bytes:
    """Concatenate a list of 32-byte hashes."""
    return b"".join(hashes)


def parse_hashes(data: bytes, count: int | None = None) -> list[bytes]:
    """Split concatenated 32-byte hashes.

    :param count: the number expected, when known.
    :raises LayoutInvalid: for a length that is not a multiple of 32 or not ``count`` hashes.
    """
    if len(data) % HASH_SIZE:
        raise LayoutInvalid(f"a hash list of {len(data)} bytes is not a multiple of 32")
    hashes = [data[i:i + HASH_SIZE] for i in range(0, len(data), HASH_SIZE)]
    if count is not None and len(hashes) != count:
        raise LayoutInvalid(f"expected {count} hashes, found {len(hashes)}")
    return hashes


def check_whole_tree(nodes: Sequence[bytes], num_leaves: int) -> bytes:
    """Check a stored whole tree: the right size, every internal node the hash of its children.

    :param num_leaves: the number of real leaves (0 counts as 1).
    :returns: the root.
    :raises LayoutInvalid: when the tree is the wrong size or inconsistent.
    """
    expected = num_nodes_for(max(1, num_leaves))
    if len(nodes) != expected:
        raise LayoutInvalid(f"block hash tree has {len(nodes)} nodes, expected {expected}")
    for index in range(len(nodes) // 2 - 1, -1, -1):
        if merkle_internal_hash(nodes[2 * index + 1], nodes[2 * index + 2]) != nodes[index]:
            raise LayoutInvalid(f"block hash tree node {index} is not the hash of its children")
    first_leaf = len(nodes) // 2
    for position in range(max(1, num_leaves), len(nodes) - first_leaf):
        if nodes[first_leaf + position] != merkle_empty_leaf_hash(position):
            raise LayoutInvalid(f"block hash tree padding leaf {position} is wrong")
    if num_leaves == 0 and nodes[0] != merkle_empty_leaf_hash(0):
        raise LayoutInvalid("the block hash tree of an empty file must be the empty leaf")
    return nodes[0]


def share_hash_chain(tree: Sequence[bytes], num_leaves: int, leaf: int) -> dict[int, bytes]:
    """The chain for ``leaf`` of a whole share hash tree: sibling node index -> hash."""
    return {node: tree[node] for node in sorted(needed_hashes(num_leaves, leaf, False))}


def pack_chain(chain: Mapping[int, bytes]) -> bytes:
    """Encode a chain as ``>H32s`` entries in increasing node order."""
    return b"".join(CHAIN_ENTRY.pack(node, chain[node]) for node in sorted(chain))


def parse_chain(data: bytes) -> dict[int, bytes]:
    """Decode ``>H32s`` chain entries.

    :raises LayoutInvalid: on a length that is not a multiple of 34 or a repeated node.
    """
    if len(data) % CHAIN_ENTRY.size:
        raise LayoutInvalid(f"a share hash chain of {len(data)} bytes is not a multiple of 34")
    chain: dict[int, bytes] = {}
    for node, value in CHAIN_ENTRY.iter_unpack(data):
        if node in chain:
            raise LayoutInvalid(f"share hash chain repeats node {node}")
        chain[node] = value
    return chain


def chain_length(total: int) -> int:
    """Bytes of a share hash chain for N = ``total`` shares."""
    return CHAIN_ENTRY.size * len(needed_hashes(total, 0, False))


def root_from_chain(total: int, shnum: int, leaf_hash: bytes, chain: Mapping[int, bytes]) -> bytes:
    """Hash a share's leaf up its chain to the share hash tree root.

    :raises LayoutInvalid: unless the chain holds exactly the siblings on
        the path of leaf ``shnum`` (Tahoe refuses other entries too).
    """
    if not 0 <= shnum < total:
        raise LayoutInvalid(f"share number {shnum} outside 0..{total - 1}")
    wanted = set(needed_hashes(total, shnum, False))
    if set(chain) != wanted:
        raise LayoutInvalid(f"share hash chain holds nodes {sorted(chain)}, expected "
                            f"{sorted(wanted)}")
    node = num_nodes_for(total) // 2 + shnum
    value = leaf_hash
    while node:
        other = chain[sibling(node)]
        value = merkle_internal_hash(value, other) if node % 2 else \
            merkle_internal_hash(other, value)
        node = parent(node)
    return value

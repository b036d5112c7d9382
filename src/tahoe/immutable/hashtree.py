"""Merkle hash trees as Tahoe builds and checks them (``reference/immutable.md`` §5).

Nodes are numbered breadth-first from the root (node 0); node i has
children 2i+1 and 2i+2. A tree over m leaves has P = next_pow2(m) leaf
positions, the unused ones filled with padding hashes, and 2P-1 nodes.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence

from ..util.hashutil import HASH_SIZE, merkle_empty_leaf_hash, merkle_internal_hash
from ..util.mathutil import next_power_of_two
from .errors import BadHash, NotEnoughHashes


def num_nodes_for(num_leaves: int) -> int:
    """Number of nodes of a tree over ``num_leaves`` leaves (2P-1)."""
    return 2 * next_power_of_two(num_leaves) - 1


def first_leaf_node(num_leaves: int) -> int:
    """Node index of leaf position 0."""
    return next_power_of_two(num_leaves) - 1


def sibling(node: int) -> int:
    """The node that shares a parent with ``node`` (node must not be the root)."""
    return node + 1 if node % 2 else node - 1


def parent(node: int) -> int:
    """The parent of ``node`` (node must not be the root)."""
    return (node - 1) // 2


def needed_hashes(num_leaves: int, leaf: int, include_leaf: bool = True) -> list[int]:
    """Node indices needed to check leaf ``leaf`` against the root, in path order.

    The siblings along the path from the leaf up, then the leaf itself; in a
    one-node tree the leaf is the root (node 0).
    """
    node = first_leaf_node(num_leaves) + leaf
    needed = []
    start = node
    while node:
        needed.append(sibling(node))
        node = parent(node)
    if include_leaf:
        needed.append(start)
    return needed


def build_tree(leaves: Sequence[bytes]) -> list[bytes]:
    """Return all 2P-1 node hashes of the complete tree over ``leaves``, root first.

    :raises ValueError: for an empty leaf list.
    """
    count = len(leaves)
    if count == 1:
        return [leaves[0]]  # the leaf is the root (every block tree of a one-segment file)
    if count < 1:
        raise ValueError("a hash tree needs at least one leaf")
    width = next_power_of_two(count)
    row = list(leaves) + [merkle_empty_leaf_hash(i) for i in range(count, width)]
    levels = [row]
    while len(row) > 1:
        row = [merkle_internal_hash(row[i], row[i + 1]) for i in range(0, len(row), 2)]
        levels.append(row)
    nodes: list[bytes] = []
    for level in reversed(levels):
        nodes.extend(level)
    return nodes


def chain_order(total: int, shnum: int) -> list[int]:
    """See :func:`_chain_order` (remembered: every upload asks it for every share)."""
    return list(_chain_order(total, shnum))


@functools.lru_cache(maxsize=1024)
def _chain_order(total: int, shnum: int) -> tuple[int, ...]:
    """The order in which Tahoe 1.20 writes share ``shnum``'s share-hash-chain entries.

    Tahoe iterates a CPython ``set`` of small integers; this reproduces that
    order without depending on the interpreter (reference §5.3). Readers must
    accept any order; this matters only for byte-identical shares.
    """
    width = next_power_of_two(total)
    node = width - 1 + shnum
    values = []
    while node:
        values.append(sibling(node))
        node = parent(node)
    values.append(width - 1 + shnum)
    table: list[int | None] = [None] * 8
    used = 0
    for value in values:
        _set_insert(table, value)
        used += 1
        mask = len(table) - 1
        if used * 5 >= mask * 3:
            size = 8
            while size <= used * 4:
                size *= 2
            old = table
            table = [None] * size
            for item in old:
                if item is not None:
                    _set_insert(table, item)
    return tuple(v for v in table if v is not None)


def _set_insert(table: list[int | None], value: int) -> None:
    mask = len(table) - 1
    index = value & mask
    perturb = value
    while True:
        probes = 9 if index + 9 <= mask else 0
        for slot in range(index, index + probes + 1):
            if table[slot] is None:
                table[slot] = value
                return
        perturb >>= 5
        index = (index * 5 + 1 + perturb) & mask


class PartialHashTree:
    """A tree of which only some nodes are known, every known node checked.

    Start from a trusted root; :meth:`add` accepts further nodes only if they
    hash up, together with nodes already trusted, to a trusted node.

    :param num_leaves: number of real leaves (sets the tree's shape).
    :param root: the trusted root hash.
    """

    def __init__(self, num_leaves: int, root: bytes) -> None:
        if num_leaves < 1:
            raise ValueError("a hash tree needs at least one leaf")
        self.num_leaves = num_leaves
        self.num_nodes = num_nodes_for(num_leaves)
        self._first_leaf = first_leaf_node(num_leaves)
        self._trusted: dict[int, bytes] = {0: root}

    @property
    def root(self) -> bytes:
        """The trusted root hash."""
        return self._trusted[0]

    def leaf_node(self, leaf: int) -> int:
        """The node index of leaf position ``leaf``."""
        return self._first_leaf + leaf

    def get(self, node: int) -> bytes | None:
        """A trusted node's hash, or None when it is not known yet."""
        return self._trusted.get(node)

    def get_leaf(self, leaf: int) -> bytes | None:
        """A trusted leaf hash, or None when it is not known yet."""
        return self._trusted.get(self._first_leaf + leaf)

    def missing_for_leaf(self, leaf: int) -> list[int]:
        """The nodes (siblings on the path, and the leaf) not yet trusted."""
        return [n for n in needed_hashes(self.num_leaves, leaf) if n not in self._trusted]

    def add(self, nodes: Mapping[int, bytes] | Iterable[tuple[int, bytes]]) -> None:
        """Check ``nodes`` (index to hash) against the trusted ones and keep them.

        Nothing is kept unless every node checks out.

        :raises BadHash: a node disagrees with the trusted tree or is out of range.
        :raises NotEnoughHashes: a node cannot be connected to a trusted node.
        """
        new = dict(nodes.items() if isinstance(nodes, Mapping) else nodes)
        trusted = self._trusted
        merged = dict(trusted)
        for index, value in new.items():
            if not (0 <= index < self.num_nodes):
                raise BadHash(f"node index {index} outside a tree of {self.num_nodes} nodes")
            if len(value) != HASH_SIZE:
                raise BadHash(f"node {index} is {len(value)} bytes, not {HASH_SIZE}")
            known = trusted.get(index)
            if known is not None:
                if known != value:
                    raise BadHash(f"node {index} disagrees with the trusted tree")
            else:
                merged[index] = value
        checked = set(trusted)
        for start in sorted(new, reverse=True):
            node = start
            path = []
            while node not in checked:
                path.append(node)
                sib = sibling(node)
                if sib not in merged:
                    raise NotEnoughHashes(f"node {start} cannot be checked: node {sib} is missing")
                up = parent(node)
                left, right = (node, sib) if node % 2 else (sib, node)
                value = merkle_internal_hash(merged[left], merged[right])
                have = merged.get(up)
                if have is None:
                    merged[up] = value
                elif have != value:
                    raise BadHash(f"node {start} does not hash up to node {up}")
                path.append(sib)
                node = up
            checked.update(path)
        self._trusted = merged

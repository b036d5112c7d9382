"""Merkle trees, validation paths and Tahoe's chain order."""
from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.immutable.errors import BadHash, NotEnoughHashes
from tahoe.immutable.hashtree import (PartialHashTree, build_tree, chain_order,
                                      first_leaf_node, needed_hashes, num_nodes_for)
from tahoe.util.hashutil import merkle_empty_leaf_hash
from tests.vectors import load

TREES = load("immutable-hashtree.json")
ORDERS = load("immutable-sharehash-order.json")["orders"]


@pytest.mark.parametrize("case", TREES["empty_leaf_hashes"], ids=lambda c: str(c["leaf_index"]))
def test_padding_leaf_hashes(case: dict) -> None:
    """Padding leaves hash their leaf position in decimal."""
    assert merkle_empty_leaf_hash(case["leaf_index"]).hex() == case["hash_hex"]


@pytest.mark.parametrize("case", TREES["trees"], ids=lambda c: str(c["num_leaves"]))
def test_complete_trees(case: dict) -> None:
    """All nodes, the root, the shape and the needed hashes match Tahoe's trees."""
    leaves = [hashlib.sha256(b"leaf %d" % i).digest() for i in range(case["num_leaves"])]
    assert [leaf.hex() for leaf in leaves] == case["leaves_hex"]
    nodes = build_tree(leaves)
    assert [n.hex() for n in nodes] == case["nodes_hex"]
    assert nodes[0].hex() == case["root_hex"]
    assert num_nodes_for(case["num_leaves"]) == case["num_nodes"]
    assert first_leaf_node(case["num_leaves"]) == case["first_leaf_node_index"]
    for leaf, order in case["needed_hashes_with_leaf_in_tahoe_order"].items():
        assert sorted(needed_hashes(case["num_leaves"], int(leaf))) == sorted(order)
        assert chain_order(case["num_leaves"], int(leaf)) == order


@pytest.mark.parametrize("total", sorted(ORDERS, key=int))
def test_chain_order_matches_tahoe(total: str) -> None:
    """The simulated CPython set order equals Tahoe's written order for every share."""
    n = int(total)
    assert [chain_order(n, shnum) for shnum in range(n)] == ORDERS[total]


def _leaves(count: int) -> list[bytes]:
    return [hashlib.sha256(b"%d" % i).digest() for i in range(count)]


@given(st.integers(1, 40), st.data())
@settings(deadline=None)
def test_partial_tree_accepts_needed_hashes_in_any_order(count: int, data: st.DataObject) -> None:
    """A leaf with its needed hashes, given in any order, is accepted."""
    nodes = build_tree(_leaves(count))
    leaf = data.draw(st.integers(0, count - 1))
    needed = data.draw(st.permutations(needed_hashes(count, leaf)))
    tree = PartialHashTree(count, nodes[0])
    tree.add([(i, nodes[i]) for i in needed])
    assert tree.get_leaf(leaf) == nodes[first_leaf_node(count) + leaf]
    assert tree.missing_for_leaf(leaf) == []


@given(st.integers(2, 40), st.data())
@settings(deadline=None)
def test_partial_tree_rejects_a_changed_node(count: int, data: st.DataObject) -> None:
    """Changing any one supplied node makes the whole addition fail and keeps nothing."""
    nodes = build_tree(_leaves(count))
    leaf = data.draw(st.integers(0, count - 1))
    needed = needed_hashes(count, leaf)
    victim = data.draw(st.sampled_from(needed))
    supplied = {i: nodes[i] for i in needed}
    supplied[victim] = bytes(32)
    tree = PartialHashTree(count, nodes[0])
    with pytest.raises(BadHash):
        tree.add(supplied)
    assert tree.get_leaf(leaf) is None


def test_partial_tree_needs_enough_hashes() -> None:
    """A leaf without its siblings cannot be checked."""
    nodes = build_tree(_leaves(5))
    tree = PartialHashTree(5, nodes[0])
    with pytest.raises(NotEnoughHashes):
        tree.add({first_leaf_node(5): nodes[first_leaf_node(5)]})


def test_partial_tree_rejects_out_of_range_and_short_nodes() -> None:
    """Indices beyond the tree and hashes that are not 32 bytes are refused."""
    nodes = build_tree(_leaves(3))
    tree = PartialHashTree(3, nodes[0])
    with pytest.raises(BadHash):
        tree.add({7: nodes[3]})
    with pytest.raises(BadHash):
        tree.add({1: nodes[1][:31]})


def test_full_tree_add_is_accepted() -> None:
    """Adding every node of a large tree at once checks out."""
    nodes = build_tree(_leaves(1000))
    tree = PartialHashTree(1000, nodes[0])
    tree.add(enumerate(nodes))
    assert tree.get_leaf(999) == nodes[first_leaf_node(1000) + 999]

"""The permuted ring, servers-of-happiness and deterministic share placement."""
from __future__ import annotations

from itertools import combinations, permutations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.client.placement import (maximum_matching, permuted_ring, place_shares,
                                    replace_failed_server, ring_position, servers_of_happiness)
from tahoe.immutable.errors import BadEncodingParameters
from tests.vectors import load

RING = load("storage-permuted-ring.json")
HAPPINESS = load("storage-happiness.json")


def servers(count: int) -> list[str]:
    """``count`` server ids, in the order they stand for ring order."""
    return [f"v0-server{i:02d}" for i in range(count)]


# ---------------------------------------------------------------- ring

def test_ring_keys_match_the_vector() -> None:
    """SHA-1(SI || seed) equals the vector's key for every server."""
    si = bytes.fromhex(RING["storage_index_hex"])
    for server in RING["servers"]:
        seed = bytes.fromhex(server["permutation_seed_bytes_hex"])
        assert ring_position(si, seed).hex() == server["sha1(storage_index + seed)_hex"]


@pytest.mark.parametrize("rotation", range(8))
def test_permuted_order_matches_the_vector(rotation: int) -> None:
    """The ring order equals Tahoe's broker order, whatever order the servers come in."""
    si = bytes.fromhex(RING["storage_index_hex"])
    listed = RING["servers"][rotation:] + RING["servers"][:rotation]
    seeds = {s["nickname"]: bytes.fromhex(s["permutation_seed_bytes_hex"]) for s in listed}
    assert permuted_ring(si, seeds) == RING["permuted_order"]
    assert RING["peers_preferred_experiment"]["order_returned"] == RING["permuted_order"]


# ---------------------------------------------------------------- happiness

@pytest.mark.parametrize("case", HAPPINESS["servers_of_happiness_examples"],
                         ids=lambda c: c["name"])
def test_happiness_examples(case: dict) -> None:
    """Every servers_of_happiness example of the vector gives its value."""
    sharemap = {int(share): set(holders) for share, holders in case["sharemap"].items()}
    assert servers_of_happiness(sharemap) == case["servers_of_happiness"]


def test_happiness_of_nothing() -> None:
    """No shares, or shares on no servers, give happiness 0."""
    assert servers_of_happiness({}) == 0
    assert servers_of_happiness({0: set(), 1: []}) == 0


def brute_force_happiness(edges: list[tuple[str, int]]) -> int:
    """The largest set of edges with no server and no share repeated, by exhaustion."""
    for size in range(len(edges), 0, -1):
        for chosen in combinations(edges, size):
            if len({s for s, _ in chosen}) == size == len({n for _, n in chosen}):
                return size
    return 0


@given(edges=st.lists(st.tuples(st.sampled_from("ABCDEF"), st.integers(0, 5)),
                      max_size=12, unique=True))
@settings(deadline=None)
def test_happiness_is_a_maximum_matching(edges: list[tuple[str, int]]) -> None:
    """Happiness equals a brute-force maximum matching on small random graphs."""
    sharemap: dict[int, set[str]] = {}
    for server, share in edges:
        sharemap.setdefault(share, set()).add(server)
    assert servers_of_happiness(sharemap) == brute_force_happiness(edges)
    matching = maximum_matching({s: [n for t, n in edges if t == s] for s, _ in edges})
    assert all((server, share) in edges for server, share in matching.items())
    assert len(set(matching.values())) == len(matching)


# ---------------------------------------------------------------- placement

def test_fresh_placement_uses_the_first_servers_in_ring_order() -> None:
    """With 20 fresh servers and N=10, share i goes to the i-th server of the ring."""
    ring = servers(20)
    placement = place_shares(ring, total=10, happy=7)
    assert placement.uploads == {ring[i]: frozenset({i}) for i in range(10)}
    assert placement.happiness == 10 and placement.is_happy
    assert placement.unplaced == frozenset()


def test_fewer_servers_than_shares_round_robin() -> None:
    """With 4 servers and N=10 the shares go round-robin in ring order (happiness 4)."""
    ring = servers(4)
    placement = place_shares(ring, total=10, happy=4)
    assert placement.uploads == {ring[0]: frozenset({0, 4, 8}), ring[1]: frozenset({1, 5, 9}),
                                 ring[2]: frozenset({2, 6}), ring[3]: frozenset({3, 7})}
    expected = {int(k): set(v) for k, v in HAPPINESS["servers_of_happiness_examples"][4]
                ["sharemap"].items()}
    assert placement.happiness == servers_of_happiness(expected) == 4
    assert not place_shares(ring, total=10, happy=5).is_happy


def test_existing_shares_stay_where_they_are() -> None:
    """Shares already on a server are kept there and not uploaded again."""
    ring = servers(5)
    existing = {ring[3]: {0, 1}, ring[4]: {2}}
    placement = place_shares(ring, total=5, happy=5, existing=existing)
    uploaded = {share for shares in placement.uploads.values() for share in shares}
    assert 2 not in uploaded
    assert placement.shares_on(ring[4]) == {2}
    assert ring[3] in placement.sharemap[0] and ring[3] in placement.sharemap[1]
    assert placement.happiness == 5
    assert set(placement.sharemap) == set(range(5))


def test_duplicate_holdings_get_a_new_server() -> None:
    """A server holding every share counts once; the others' shares go to free servers."""
    ring = servers(3)
    placement = place_shares(ring, total=3, happy=3, existing={ring[2]: {0, 1, 2}})
    assert placement.uploads == {ring[0]: frozenset({1}), ring[1]: frozenset({2})}
    assert placement.happiness == 3


def test_read_only_holders_count_first() -> None:
    """Read-only servers keep their shares and are matched first; emptier servers go first."""
    ring = servers(2)
    placement = place_shares(ring, total=3, happy=3, existing={"ro": {0}, ring[0]: {0}},
                             readonly=["ro"])
    assert "ro" not in placement.uploads
    assert placement.happiness == 3
    assert placement.uploads == {ring[0]: frozenset({2}), ring[1]: frozenset({1})}


def test_no_writable_servers() -> None:
    """Without writable servers, shares nobody holds are reported unplaced."""
    placement = place_shares([], total=3, happy=1, existing={"ro": {1, 7}})
    assert placement.unplaced == {0, 2}
    assert placement.uploads == {}
    assert placement.happiness == 1 and placement.is_happy


@pytest.mark.parametrize("total, happy", [(0, 1), (257, 7), (10, 0), (10, 11)])
def test_bad_parameters(total: int, happy: int) -> None:
    """N outside 1..256 or happy outside 1..N are refused."""
    with pytest.raises(BadEncodingParameters):
        place_shares(servers(3), total=total, happy=happy)


def test_replacement_goes_to_the_next_unused_server() -> None:
    """A failed server's share moves to the first unused server in ring order."""
    ring = servers(12)
    placement = place_shares(ring, total=10, happy=7)
    current = {server: set(shares) for server, shares in placement.uploads.items()}
    replacement = replace_failed_server(current, ring[3], ring, total=10, happy=7)
    assert replacement.uploads == {ring[10]: frozenset({3})}
    assert replacement.happiness == 10 and replacement.is_happy
    current[ring[10]] = {3}
    again = replace_failed_server(current, ring[5], ring, total=10, happy=7, excluded=[ring[3]])
    assert again.uploads == {ring[11]: frozenset({5})}
    current[ring[11]] = {5}
    third = replace_failed_server(current, ring[0], ring, total=10, happy=7,
                                  excluded=[ring[3], ring[5]])
    assert third.uploads == {ring[1]: frozenset({0})}
    assert third.happiness == 9 and third.is_happy


def test_replacement_when_servers_run_out() -> None:
    """With no unused server left, lost shares are spread and happiness may fall short."""
    ring = servers(3)
    current = {ring[0]: {0}, ring[1]: {1}, ring[2]: {2}}
    replacement = replace_failed_server(current, ring[1], ring, total=3, happy=3)
    assert replacement.uploads == {ring[0]: frozenset({1})}
    assert replacement.happiness == 2 and not replacement.is_happy
    assert set(replacement.sharemap) == {0, 1, 2}


def test_replacement_covers_duplicated_shares() -> None:
    """When the survivor holding two shares counts once, one of them goes to an unused server."""
    ring = ["F", "A", "U"]
    current = {"F": {0}, "A": {0, 1}}
    replacement = replace_failed_server(current, "F", ring, total=2, happy=2)
    assert replacement.uploads == {"U": frozenset({1})}
    assert replacement.happiness == 2


@given(count=st.integers(0, 25), total=st.integers(1, 20), data=st.data())
@settings(deadline=None)
def test_fresh_placement_is_deterministic_and_maximal(count: int, total: int,
                                                      data: st.DataObject) -> None:
    """On fresh servers placement is repeatable, places every share and reaches min(N, servers)."""
    happy = data.draw(st.integers(1, total))
    ring = servers(count)
    placement = place_shares(ring, total, happy)
    assert placement == place_shares(list(ring), total, happy)
    assert placement.happiness == min(total, count)
    if count:
        assert set(placement.sharemap) == set(range(total))
        loads = [len(placement.uploads.get(s, ())) for s in ring]
        assert max(loads) - min(loads) <= 1
        assert loads == sorted(loads, reverse=True)


def best_possible(ring: list[str], readonly: dict[str, set[int]], total: int) -> int:
    """Happiness when writable servers may take any share, by maximum matching."""
    edges = {s: set(range(total)) for s in ring}
    edges.update({s: shares for s, shares in readonly.items() if s not in edges})
    return len(maximum_matching(edges))


@given(count=st.integers(0, 6), total=st.integers(1, 6), data=st.data())
@settings(deadline=None)
def test_placement_with_existing_shares_is_optimal(count: int, total: int,
                                                   data: st.DataObject) -> None:
    """With random existing shares, placement keeps them all and reaches the best happiness."""
    ring = servers(count)
    holders = ring + ["ro1", "ro2"]
    existing = data.draw(st.dictionaries(st.sampled_from(holders),
                                         st.sets(st.integers(0, total - 1), max_size=total)))
    placement = place_shares(ring, total, total, existing=existing, readonly=["ro2", "ro1"])
    readonly = {s: set(v) for s, v in existing.items() if s not in ring}
    assert placement.happiness == best_possible(ring, readonly, total)
    for server, shares in existing.items():
        assert set(shares) <= placement.shares_on(server)
        assert not placement.uploads.get(server, frozenset()) & set(shares)
    assert not set(placement.uploads) - set(ring)
    if ring:
        assert set(placement.sharemap) == set(range(total))
    again = place_shares(ring, total, total, existing=dict(reversed(list(existing.items()))),
                         readonly=["ro2", "ro1"])
    assert again.uploads == placement.uploads


@given(count=st.integers(2, 8), total=st.integers(1, 6), data=st.data())
@settings(deadline=None)
def test_replacement_reaches_the_best_happiness(count: int, total: int,
                                                data: st.DataObject) -> None:
    """After a failure, the replacement reaches the best happiness the survivors allow."""
    ring = servers(count)
    placement = place_shares(ring, total, 1)
    current = {s: set(placement.shares_on(s)) for s in ring if placement.shares_on(s)}
    failed = data.draw(st.sampled_from(ring))
    replacement = replace_failed_server(current, failed, ring, total, 1)
    survivors = [s for s in ring if s != failed]
    assert replacement.happiness == min(total, len(survivors))
    assert failed not in replacement.uploads
    assert set(replacement.sharemap) == set(range(total))
    for share in current.get(failed, ()):
        assert any(share in replacement.shares_on(s) for s in survivors)


def test_happiness_is_symmetric_in_listing_order() -> None:
    """Listing a share map's servers in any order gives the same happiness."""
    sharemap = {1: ["A"], 2: ["A", "E"], 3: ["A", "C"], 4: ["A", "D"], 6: ["B"]}
    for order in permutations("ABCDE"):
        reordered = {share: sorted(holders, key=order.index) for share, holders in sharemap.items()}
        assert servers_of_happiness(reordered) == 5

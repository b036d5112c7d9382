"""Server selection for one file: the permuted ring, happiness, and share placement.

Follows ``storage-protocol.md`` §8.2 (permuted ring) and §8.5 (happiness);
see ``docs/formats/announcements.md``. Server ids are the ``v0-`` strings
(any hashable, sortable string works); share numbers are ints in ``0..N-1``.

**Ring.** Servers are sorted by ``SHA-1(storage index ‖ permutation seed)``,
the 20-byte digests compared as bytes (ascending). This is exactly Tahoe's
order; peers.preferred has no effect in 1.20, so it is not modelled.

**Happiness.** The size of a maximum matching in the bipartite graph of
servers against share numbers, an edge wherever a server holds (or is
writing) a share: the number of servers that each hold a share no other
counted server does.

**Placement** (:func:`place_shares`). Tahoe 1.20 places shares through
Python sets, so which servers get which shares depends on the hash seed
(§8.4, quirk 3). We place deterministically, from the ring order:

1. *Keep what is there.* Take a maximum matching of the servers that already
   hold shares to those shares: read-only holders first, then writable
   servers in ring order; each server tries share numbers in ascending order.
   Augmenting never unmatches a server, so as many read-only holders as
   possible stay counted.
2. *One new share per free server.* The writable servers left unmatched
   (in ring order, emptiest first) each receive one of the still unmatched
   share numbers, in ascending order. On fresh servers this gives share
   ``i`` to the ``i``-th server of the ring.
3. *Spread the rest.* A share number still without a server stays where it
   already is, if any server holds it; otherwise it goes to the writable
   server holding the fewest shares of this file, the earliest in ring order
   on a tie. With fewer servers than shares this is round-robin in ring order.

Steps 1 and 2 reach the best happiness possible:
``min(N, R + W)`` where ``W`` is the number of writable servers and ``R`` the
largest number of read-only holders that can be matched to distinct shares.

**Replacement** (:func:`replace_failed_server`). When a server fails during
an upload, drop it (and any others already excluded) and run the same steps
over what the survivors hold or are writing: the shares it no longer covers
go to the servers in ring order that do not count yet, unused ones first.
"""
from __future__ import annotations

import hashlib
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

from attrs import frozen

from ..immutable.errors import BadEncodingParameters

K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound=Hashable)

#: Upper bound on N (zfec's limit, and Tahoe's).
MAX_SHARES = 256


# ---------------------------------------------------------------- permuted ring

def ring_position(storage_index: bytes, seed: bytes) -> bytes:
    """The 20-byte key that orders a server on the ring of one storage index."""
    return hashlib.sha1(storage_index + seed).digest()


def permuted_ring(storage_index: bytes, seeds: Mapping[str, bytes]) -> list[str]:
    """Server ids sorted by :func:`ring_position` (ascending), as Tahoe's broker sorts them.

    :param storage_index: the file's 16-byte storage index (or a mutable slot's).
    :param seeds: each connected server's permutation-seed bytes (see
        ``introducer.announcement.permutation_seed``).
    """
    return sorted(seeds, key=lambda server: ring_position(storage_index, seeds[server]))


# ---------------------------------------------------------------- happiness

def _augment(start: str, edges: Mapping[str, Sequence[int]],
             share_owner: dict[int, str], server_share: dict[str, int]) -> bool:
    """Look for an augmenting path from the free server ``start`` (breadth first); apply it."""
    came_from: dict[int, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for server in frontier:
            for share in edges.get(server, ()):
                if share in came_from:
                    continue
                came_from[share] = server
                owner = share_owner.get(share)
                if owner is None:
                    # Flip the path: every server on it takes the share it came through.
                    while True:
                        server = came_from[share]
                        previous = server_share.get(server)
                        share_owner[share] = server
                        server_share[server] = share
                        if previous is None:
                            return True
                        share = previous
                following.append(owner)
        frontier = following
    return False


def maximum_matching(edges: Mapping[str, Iterable[int]],
                     order: Iterable[str] | None = None) -> dict[str, int]:
    """A maximum matching of servers to share numbers, deterministic in ``order``.

    Servers are tried in ``order`` (default: the mapping's order), each
    trying its shares in ascending order; a server once matched stays matched.

    :param edges: server id -> share numbers it holds or can take.
    :returns: server id -> the share number it is matched with.
    """
    sorted_edges = {server: sorted(set(shares)) for server, shares in edges.items()}
    share_owner: dict[int, str] = {}
    server_share: dict[str, int] = {}
    for server in (sorted_edges if order is None else order):
        if server not in server_share and sorted_edges.get(server):
            _augment(server, sorted_edges, share_owner, server_share)
    return server_share


def servers_of_happiness(sharemap: Mapping[int, Iterable[str]]) -> int:
    """Tahoe's happiness: the size of a maximum matching of servers to shares (§8.5).

    :param sharemap: share number -> the servers that hold it (or have a writer for it).
    """
    # The usual case, each share on one server of its own, is a matching already.
    servers: set[str] = set()
    for holders in sharemap.values():
        if not isinstance(holders, (set, frozenset)) or len(holders) != 1:
            break
        servers |= holders
    else:
        if len(servers) == len(sharemap):
            return len(servers)
    return len(maximum_matching(invert(sharemap)))


def invert(mapping: Mapping[K, Iterable[V]]) -> dict[V, set[K]]:
    """Turn share -> servers into server -> shares (or back), as sets, in first-seen order."""
    inverted: dict[V, set[K]] = {}
    for key, values in mapping.items():
        for value in values:
            inverted.setdefault(value, set()).add(key)
    return inverted


# ---------------------------------------------------------------- placement

@frozen
class Placement:
    """Where the shares of one file go.

    :ivar uploads: writable server -> the new share numbers to allocate there,
        in ring order; servers that get nothing are left out.
    :ivar sharemap: share number -> every server holding it once the uploads
        are done (kept shares included), for each share placed anywhere.
    :ivar unplaced: share numbers no server holds or receives (only when
        there is no writable server).
    :ivar happiness: :func:`servers_of_happiness` of ``sharemap``.
    :ivar happy: the target the placement is judged against.
    """

    uploads: dict[str, frozenset[int]]
    sharemap: dict[int, frozenset[str]]
    unplaced: frozenset[int]
    happiness: int
    happy: int

    @property
    def is_happy(self) -> bool:
        """True when happiness reaches the target."""
        return self.happiness >= self.happy

    def shares_on(self, server: str) -> frozenset[int]:
        """Every share number ``server`` holds once the uploads are done."""
        return frozenset(share for share, servers in self.sharemap.items() if server in servers)


def _check_parameters(total: int, happy: int) -> None:
    if not (1 <= total <= MAX_SHARES):
        raise BadEncodingParameters(f"need 1 <= N <= {MAX_SHARES}, got N={total}")
    if not (1 <= happy <= total):
        raise BadEncodingParameters(f"need 1 <= happy <= N, got happy={happy} N={total}")


def place_shares(writable: Sequence[str], total: int, happy: int,
                 existing: Mapping[str, Collection[int]] | None = None,
                 readonly: Sequence[str] = ()) -> Placement:
    """Choose which share numbers go to which servers (see the module docstring).

    :param writable: the servers that may receive shares, in ring order
        (duplicates are ignored).
    :param total: N, the number of shares (1 to 256).
    :param happy: the happiness target (1 to N).
    :param existing: server -> share numbers it already holds (from
        ``get_buckets`` or ``allocate_buckets``' ``alreadygot``), for writable
        and read-only servers alike. Share numbers outside ``0..N-1`` are ignored.
    :param readonly: read-only servers in ring order; they keep their shares
        and receive none. Holders in ``existing`` that are in neither list
        count as read-only, after these, in sorted order.
    :returns: a :class:`Placement`; the same arguments always give the same one.
    :raises BadEncodingParameters: unless 1 <= happy <= N <= 256.
    """
    _check_parameters(total, happy)
    ring = list(dict.fromkeys(writable))
    writable_set = set(ring)
    held: dict[str, set[int]] = {}
    for server, shares in (existing or {}).items():
        in_range = {s for s in shares if isinstance(s, int) and 0 <= s < total}
        if in_range:
            held[server] = in_range
    readonly_order = [s for s in dict.fromkeys(readonly) if s not in writable_set]
    readonly_order += sorted(s for s in held if s not in writable_set and s not in readonly_order)

    # 1. keep: match holders to what they hold, read-only holders first.
    matched = maximum_matching(held, order=readonly_order + ring)
    matched_shares = set(matched.values())
    load = {server: len(held.get(server, ())) for server in ring}
    uploads: dict[str, set[int]] = {}

    def give(server: str, share: int) -> None:
        uploads.setdefault(server, set()).add(share)
        load[server] += 1

    # 2. one new share per writable server not yet counted, emptiest first.
    free_servers = sorted((s for s in ring if s not in matched), key=lambda s: load[s])
    waiting = [share for share in range(total) if share not in matched_shares]
    for server, share in zip(free_servers, waiting):
        give(server, share)
    leftover = waiting[len(free_servers):]

    # 3. spread: shares still nowhere go to the least-loaded server, ring order on ties.
    holders = invert(held)
    unplaced: set[int] = set()
    for share in leftover:
        if share in holders:
            continue
        if not ring:
            unplaced.add(share)
            continue
        give(min(ring, key=lambda s: load[s]), share)

    return _result(ring, held, uploads, unplaced, happy)


def _result(ring: Sequence[str], held: Mapping[str, set[int]],
            uploads: Mapping[str, set[int]], unplaced: set[int], happy: int) -> Placement:
    final: dict[int, set[str]] = {}
    for source in (held, uploads):
        for server, shares in source.items():
            for share in shares:
                final.setdefault(share, set()).add(server)
    sharemap = {share: frozenset(final[share]) for share in sorted(final)}
    return Placement(
        uploads={server: frozenset(uploads[server]) for server in ring if server in uploads},
        sharemap=sharemap,
        unplaced=frozenset(unplaced),
        happiness=servers_of_happiness(sharemap),
        happy=happy,
    )


def replace_failed_server(current: Mapping[str, Collection[int]], failed: str,
                          writable: Sequence[str], total: int, happy: int,
                          readonly: Sequence[str] = (),
                          excluded: Collection[str] = ()) -> Placement:
    """Re-place the shares a failed server no longer covers (see the module docstring).

    :param current: server -> the shares it holds or is being sent, before
        the failure (the failed server included).
    :param failed: the server that failed; it holds nothing any more.
    :param writable: every writable candidate, in ring order.
    :param excluded: servers failed earlier, also never chosen.
    :returns: a :class:`Placement` whose ``uploads`` are the new assignments
        only (shares already being written elsewhere are not repeated), and
        whose ``is_happy`` says whether the target can still be met.
    :raises BadEncodingParameters: unless 1 <= happy <= N <= 256.
    """
    gone = set(excluded) | {failed}
    survivors = {server: shares for server, shares in current.items() if server not in gone}
    return place_shares([s for s in writable if s not in gone], total, happy,
                        existing=survivors,
                        readonly=[s for s in readonly if s not in gone])

"""The lease checker's bulk tally gives, for any rows, what examining each share alone gives.

The reference below counts one share at a time, straight from Tahoe's rules
(``storage-protocol.md`` §5.5), with every lease unpacked and every figure
bumped as it is met; :class:`~tahoe.storage.expirer.CycleTally` counts keyed
tallies and reads all/any expired from a share's smallest and largest
expiration. Hypothesis draws buckets of immutable, mutable and corrupt shares
with 0 to 4 leases, and every kind of policy.
"""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.storage import crawl_state as cs
from tahoe.storage.expirer import CycleTally, bucket_rows
from tahoe.storage.leases import LEASE_DURATION, ExpiryPolicy
from tahoe.storage.paths import storage_index_to_b32
from tahoe.storage.share_index import CORRUPT, IMMUTABLE, KIND_NAMES, MUTABLE, IndexedShare

DAY = 86400
NOW = 1_790_000_000  # whole seconds: leases may end exactly now, at a cutoff, at a bin's edge


def _reference(buckets: list[tuple[bytes, list[IndexedShare]]], policy: ExpiryPolicy | None,
               enabled: bool) -> tuple[dict[str, Any], list, list]:
    """One share at a time, as the rules read."""
    cycle = cs.empty_cycle()
    delete, trim = [], []
    for storage_index, shares in buckets:
        bucket_figures = {"original", "configured", "actual"}
        kind: str | None = None
        for share in shares:
            if share.kind == CORRUPT:
                cycle["corrupt-shares"].append([storage_index_to_b32(storage_index),
                                                share.shnum])
                bucket_figures, kind = set(), "unknown"
                continue
            kind = KIND_NAMES[share.kind]
            leases = share.expirations
            histogram = cycle["leases-per-share-histogram"]
            histogram[str(len(leases))] = histogram.get(str(len(leases)), 0) + 1
            for expiration in leases:
                cs.add_lease_age(cycle, NOW - (expiration - LEASE_DURATION))
            figures = {"examined"}
            if all(e <= NOW for e in leases):
                figures.add("original")
            applies = policy is not None and policy.applies_to(kind)
            expired = [applies and policy.expired(e, NOW)  # type: ignore[union-attr]
                       for e in leases]
            if all(expired):  # no valid lease (or none at all): configured, and actual
                figures.add("configured")
                if enabled:
                    figures.add("actual")
                    if leases:  # cancelling the last expired lease deletes the share;
                        # one with no lease has none to cancel and stays (Tahoe 1.20)
                        delete.append((storage_index, share.shnum))
            elif enabled and any(expired):
                trim.append((storage_index, share.shnum))
            cs.add_share(cycle, figures, kind, share.size, share.disk_bytes)
            bucket_figures &= figures
        cs.add_bucket(cycle, {"examined"}, kind, 0)
        cs.add_bucket(cycle, bucket_figures, kind, shares[0].bucket_disk_bytes)
    return cycle, delete, trim


LEASE = st.builds(lambda days, offset: NOW + days * DAY + offset,
                  st.one_of(st.integers(-90, 60), st.sampled_from([-62, -31, -10, -1, 0, 1])),
                  st.sampled_from([0, 1, -1, LEASE_DURATION, LEASE_DURATION // 2]))
SHARE = st.tuples(st.sampled_from([IMMUTABLE, IMMUTABLE, MUTABLE, CORRUPT]),
                  st.integers(0, 5000), st.lists(LEASE, max_size=4))
BUCKETS = st.lists(st.lists(SHARE, min_size=1, max_size=4), max_size=12)
POLICY = st.one_of(
    st.none(),
    st.builds(lambda im, mu: ExpiryPolicy("age", immutable=im, mutable=mu),
              st.booleans(), st.booleans()),
    st.builds(lambda days: ExpiryPolicy("age", override_lease_duration=days * DAY),
              st.integers(0, 80)),
    st.builds(lambda days: ExpiryPolicy("cutoff-date", cutoff_date=NOW + days * DAY),
              st.integers(-100, 10)),
)


def _buckets(drawn: list) -> list[tuple[bytes, list[IndexedShare]]]:
    buckets = []
    for number, shares in enumerate(drawn):
        storage_index = bytes([number * 37 % 256]) + b"tally-bucket-si" + bytes([number])
        rows = []
        for shnum, (kind, size, leases) in enumerate(shares):
            leases = [] if kind == CORRUPT else leases
            rows.append(IndexedShare(storage_index, shnum, kind, size, size + 4096 - size % 4096,
                                     8192 + number, 0 if kind == CORRUPT else size // 2,
                                     tuple(leases)))
        buckets.append((storage_index, rows))
    return sorted(buckets)


@given(drawn=BUCKETS, policy=POLICY, enabled=st.booleans())
@settings(max_examples=300, deadline=None)
def test_the_tally_equals_one_share_at_a_time(drawn: list, policy: ExpiryPolicy | None,
                                              enabled: bool) -> None:
    buckets = _buckets(drawn)
    tally = CycleTally(NOW, policy, enabled)
    rows = [share.row() for _, shares in buckets for share in shares]
    for storage_index, bucket in bucket_rows(rows):
        tally.bucket(storage_index, bucket)
    assert (tally.figures(), tally.delete, tally.trim) == _reference(buckets, policy, enabled)


def test_rows_group_by_storage_index_in_order() -> None:
    rows = [(b"a", 0), (b"a", 2), (b"b", 1), (bytearray(b"c"), 0)]
    assert list(bucket_rows(rows)) == [(b"a", [(b"a", 0), (b"a", 2)]), (b"b", [(b"b", 1)]),
                                       (b"c", [(bytearray(b"c"), 0)])]
    assert list(bucket_rows([])) == []


def test_more_leases_than_the_row_packs_are_judged_by_their_extremes() -> None:
    """A share with more leases than the index packs (64): its smallest and largest
    expiration still say whether all or any expired."""
    young = NOW + LEASE_DURATION
    share = IndexedShare(b"s" * 16, 0, IMMUTABLE, 10, 4096, 4096, 5,
                         (NOW - DAY,) * 64 + (young,))
    row = share.row()
    assert len(row[7]) == 64 * 4 and row[9] == young
    tally = CycleTally(NOW, ExpiryPolicy("age"), True)
    tally.bucket(share.storage_index, [row])
    assert tally.delete == [] and tally.trim == [(share.storage_index, 0)]

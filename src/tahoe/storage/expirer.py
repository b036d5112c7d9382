"""Lease expiry from index rows: the lease checker's figures, and what to collect.

The lease checker (:mod:`.crawler`) hands every bucket's rows (in the shape of
:meth:`.share_index.IndexedShare.row`, as SQLite returns them) to a
:class:`CycleTally`. Counting follows Tahoe (``storage-protocol.md`` §5.5):
``examined`` (everything looked at), ``original`` (what would go if every
lease ended at its own expiration time), ``configured`` (what the configured
rule would remove, whether or not GC is enabled) and ``actual`` (what GC
removes); the lease-age and leases-per-share histograms; corrupt shares
listed and left alone.

When garbage collection is enabled the tally names the shares to delete
(every lease expired) and the shares to trim (some leases expired). The
collector (:mod:`.collector`) does that work, reading each file again first:
the rows are a hint.

A cycle examines every share (a million rows at a million shares), so the
tally counts in bulk: per share it keeps a handful of integers, keyed by
which figures the share falls under, and turns them into Tahoe's named
figures once, in :meth:`CycleTally.figures`. Whether all or any of a share's
leases expired is read from its smallest and largest expiration (each rule is
monotonic in the expiration time).

Pure: rows and the time in, figures and plans out.
"""
from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any

from .crawl_state import add_bucket, add_share, age_bin, age_bin_key, empty_cycle
from .leases import LEASE_DURATION, ExpiryPolicy
from .paths import storage_index_to_b32
from .share_index import CORRUPT, KIND_NAMES

__all__ = ["CycleTally", "bucket_rows"]

# The figures a share or bucket falls under, as bits (``examined`` always, for a share).
_ORIGINAL, _CONFIGURED, _ACTUAL = 1, 2, 4
_NAMES = (("original", _ORIGINAL), ("configured", _CONFIGURED), ("actual", _ACTUAL))
# the row's columns (IndexedShare.row)
_SI, _SHNUM, _KIND, _SIZE, _DISK_BYTES, _BUCKET_DISK_BYTES, _LEASES, _MIN, _MAX = (
    0, 1, 2, 3, 4, 5, 7, 8, 9)


def _figure_names(bits: int) -> list[str]:
    return [name for name, bit in _NAMES if bits & bit]


class CycleTally:
    """The figures of the buckets examined so far, and the shares to collect.

    :param policy: the configured rule (``None``: nothing is "configured" to expire).
    :param enabled: ``expire.enabled``: whether the shares the rule expires are collected.
    """

    def __init__(self, now: float, policy: ExpiryPolicy | None, enabled: bool) -> None:
        self.now = now
        self.policy = policy
        self.enabled = enabled
        #: shares whose leases all expired (to delete), ``(storage index, shnum)``
        self.delete: list[tuple[bytes, int]] = []
        #: shares with some expired leases (to trim)
        self.trim: list[tuple[bytes, int]] = []
        self._applies = {kind: policy is not None and policy.applies_to(KIND_NAMES[kind])
                         for kind in KIND_NAMES}
        # (bits, kind name) -> [shares, share bytes, disk bytes]
        self._shares: dict[tuple[int, str], list[int]] = {}
        # (bits, kind name) -> [buckets, disk bytes]; and examined buckets by kind name
        self._buckets: dict[tuple[int, str], list[int]] = {}
        self._examined: dict[str, int] = {}
        self._age_bins: dict[int, int] = {}
        self._leases_per_share: dict[int, int] = {}
        self._corrupt: list[list[Any]] = []

    def bucket(self, storage_index: bytes, rows: Sequence[Sequence[Any]],
               si_b32: str | None = None) -> None:
        """Count one bucket: its rows, in share-number order.

        :param si_b32: its name, if known (needed only to list a corrupt share).
        """
        now, policy, enabled = self.now, self.policy, self.enabled
        bucket_bits = _ORIGINAL | _CONFIGURED | _ACTUAL
        kind_name = ""
        for row in rows:
            kind = row[_KIND]
            if kind == CORRUPT:
                if si_b32 is None:
                    si_b32 = storage_index_to_b32(storage_index)
                self._corrupt.append([si_b32, row[_SHNUM]])
                bucket_bits = 0
                kind_name = "unknown"
                continue
            kind_name = KIND_NAMES[kind]
            leases = row[_LEASES]
            count = len(leases) // 4
            self._leases_per_share[count] = self._leases_per_share.get(count, 0) + 1
            if count == 1:
                self._age(row[_MIN])
            elif count:
                for expiration in struct.unpack(f">{count}L", leases):
                    self._age(expiration)
            applies = self._applies[kind]
            if not count:
                # No lease at all: counted as Tahoe 1.20 counts it (no valid lease, so in
                # every figure, its kind expired or not), and never deleted, as Tahoe
                # deletes a share only by cancelling its last expired lease.
                bits = _ORIGINAL | _CONFIGURED | (_ACTUAL if enabled else 0)
            else:
                # (applies only where there is a policy)
                bits = _ORIGINAL if row[_MAX] <= now else 0
                if applies and policy.expired(row[_MAX], now):  # type: ignore[union-attr]
                    bits |= _CONFIGURED
                    if enabled:
                        bits |= _ACTUAL
                        self.delete.append((storage_index, row[_SHNUM]))
                elif enabled and applies and policy.expired(  # type: ignore[union-attr]
                        row[_MIN], now):
                    self.trim.append((storage_index, row[_SHNUM]))
            tally = self._shares.get((bits, kind_name))
            if tally is None:
                tally = self._shares[(bits, kind_name)] = [0, 0, 0]
            tally[0] += 1
            tally[1] += row[_SIZE]
            tally[2] += row[_DISK_BYTES]
            bucket_bits &= bits
        if not rows:
            return
        self._examined[kind_name] = self._examined.get(kind_name, 0) + 1
        tally = self._buckets.get((bucket_bits, kind_name))
        if tally is None:
            tally = self._buckets[(bucket_bits, kind_name)] = [0, 0]
        tally[0] += 1
        tally[1] += rows[0][_BUCKET_DISK_BYTES]

    def _age(self, expiration: int) -> None:
        number = age_bin(self.now - (expiration - LEASE_DURATION))
        self._age_bins[number] = self._age_bins.get(number, 0) + 1

    def figures(self) -> dict[str, Any]:
        """The cycle figures (:func:`~.crawl_state.empty_cycle`'s shape) of what was counted."""
        cycle = empty_cycle()
        cycle["corrupt-shares"] = list(self._corrupt)
        for (bits, kind), (count, share_bytes, disk_bytes) in self._shares.items():
            add_share(cycle, ["examined", *_figure_names(bits)], kind, share_bytes, disk_bytes,
                      count)
        for kind, count in self._examined.items():
            add_bucket(cycle, ["examined"], kind, 0, count)
        for (bits, kind), (count, disk_bytes) in self._buckets.items():
            add_bucket(cycle, _figure_names(bits), kind, disk_bytes, count)
        cycle["lease-age-histogram"] = {age_bin_key(number): count
                                        for number, count in self._age_bins.items()}
        cycle["leases-per-share-histogram"] = {str(number): count for number, count
                                               in self._leases_per_share.items()}
        return cycle


def bucket_rows(rows: Iterable[Sequence[Any]]) -> Iterable[tuple[bytes, list[Sequence[Any]]]]:
    """Rows in (storage index, share number) order, grouped by storage index."""
    current: bytes | None = None
    bucket: list[Sequence[Any]] = []
    for row in rows:
        storage_index = bytes(row[_SI])
        if storage_index != current:
            if bucket:
                yield current, bucket  # type: ignore[misc]
            current, bucket = storage_index, []
        bucket.append(row)
    if bucket:
        yield current, bucket  # type: ignore[misc]

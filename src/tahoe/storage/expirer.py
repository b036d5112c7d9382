"""Lease expiry of one bucket, from its index rows: the figures, and what to collect.

The lease checker (:mod:`.crawler`) calls :func:`examine_bucket` for every
storage index, with the rows the share index holds for it. Counting follows
Tahoe (``storage-protocol.md`` §5.5): ``examined`` (everything looked at),
``original`` (what would go if every lease ended at its own expiration
time), ``configured`` (what the configured rule would remove, whether or not
GC is enabled) and ``actual`` (what GC removes); the lease-age and
leases-per-share histograms; corrupt shares listed and left alone.

When garbage collection is enabled the result names the shares to delete
(every lease expired) and the shares to trim (some leases expired). The
collector (:mod:`.collector`) does that work, reading each file again first:
the rows are a hint.

Pure: rows and the time in, figures and plans out.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .crawl_state import add_bucket, add_lease_age, add_share
from .leases import LEASE_DURATION, ExpiryPolicy
from .share_index import CORRUPT, IndexedShare

__all__ = ["BucketPlan", "examine_bucket"]


@dataclass
class BucketPlan:
    """What garbage collection should do in one bucket."""

    delete: list[IndexedShare] = field(default_factory=list)
    trim: list[IndexedShare] = field(default_factory=list)


def examine_bucket(shares: list[IndexedShare], si_b32: str, cycle_data: dict, now: float,
                   policy: ExpiryPolicy | None, enabled: bool) -> BucketPlan:
    """Count one bucket's shares into ``cycle_data``; what to collect if ``enabled``.

    :param shares: the bucket's rows, in share-number order.
    :param policy: the configured rule (``None``: nothing is "configured" to expire).
    """
    plan = BucketPlan()
    # As Tahoe counts: a bucket is "original"/"configured"/"actual" when every share in it
    # is; those figures add the directory's own disk use, and a bucket takes the kind of
    # its last share ("unknown" if that one is corrupt).
    bucket_figures = {"original", "configured", "actual"}
    kind: str | None = None
    for share in shares:
        if share.kind == CORRUPT:
            cycle_data["corrupt-shares"].append([si_b32, share.shnum])
            bucket_figures = set()
            kind = "unknown"
            continue
        kind = share.kind_name
        figures = _examine_share(share, kind, cycle_data, now, policy)
        if "configured" in figures and enabled:
            figures.add("actual")
            plan.delete.append(share)
        elif enabled and policy is not None and policy.applies_to(kind) and any(
                policy.expired(e, now) for e in share.expirations):
            plan.trim.append(share)
        add_share(cycle_data, figures, kind, share.size, share.disk_bytes)
        bucket_figures &= figures
    bucket_disk_bytes = shares[0].bucket_disk_bytes if shares else 0
    add_bucket(cycle_data, {"examined"}, kind, 0)
    add_bucket(cycle_data, bucket_figures, kind, bucket_disk_bytes)
    return plan


def _examine_share(share: IndexedShare, kind: str, cycle_data: dict, now: float,
                   policy: ExpiryPolicy | None) -> set[str]:
    """Count the share's leases; the figures it falls under (``actual`` left to the caller)."""
    expirations = share.expirations
    histogram = cycle_data["leases-per-share-histogram"]
    histogram[str(len(expirations))] = histogram.get(str(len(expirations)), 0) + 1
    for expiration in expirations:
        add_lease_age(cycle_data, now - (expiration - LEASE_DURATION))
    figures = {"examined"}
    if all(expiration <= now for expiration in expirations):
        figures.add("original")
    if policy is not None and policy.applies_to(kind) and all(
            policy.expired(e, now) for e in expirations):
        figures.add("configured")  # a share without leases goes too
    return figures

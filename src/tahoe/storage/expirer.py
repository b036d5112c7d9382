"""Lease expiry on disk: examine one bucket, remove expired leases, delete unleased shares.

The lease-checking crawler (:mod:`.crawler`) calls :func:`examine_bucket` for
every storage index in ``shares/<prefix>/``. For each share it counts the
leases (by age and per share) and, when garbage collection is enabled and
applies to the share's kind, removes the leases the policy finds expired
(``storage-protocol.md`` §5.5): an immutable file is rewritten without them
and truncated, a mutable file gets the slot zeroed; a share left with no
lease is deleted, and so is the bucket directory once empty. A file that is
neither kind of container is counted as corrupt and left alone.

Figures, as Tahoe reports them: ``examined`` (everything looked at),
``original`` (what would go if every lease ended at its own expiration
time), ``configured`` (what the configured rule would remove, whether or
not GC is enabled) and ``actual`` (what was removed).

Runs on the reactor thread, one bucket at a time, so no storage operation
sees a share half-examined.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from . import disk
from .containers import open_container
from .crawl_state import add_bucket, add_lease_age, add_share
from .errors import ContainerError
from .immutable_container import ImmutableContainer
from .leases import LEASE_DURATION, ExpiryPolicy
from .paths import share_number_of

__all__ = ["BucketResult", "examine_bucket"]


@dataclass
class BucketResult:
    """What examining one bucket did: shares deleted and the bucket kind seen."""

    deleted_shares: int = 0
    removed_bucket: bool = False


def _disk_bytes(path: str) -> tuple[int, int]:
    """(size, bytes of disk used: ``st_blocks`` × 512) of a file or directory."""
    stat = os.stat(path)
    return stat.st_size, getattr(stat, "st_blocks", 0) * 512


def examine_bucket(bucket_dir: str, si_b32: str, cycle_data: dict, now: float,
                   policy: ExpiryPolicy | None, enabled: bool) -> BucketResult:
    """Examine (and, if ``enabled``, expire) every share of one bucket.

    :param cycle_data: the lease checker's ``cycle-to-date`` (updated in place).
    :param policy: the configured rule (``None``: nothing is "configured" to expire).
    """
    result = BucketResult()
    shares = disk.list_shares(bucket_dir)
    # As Tahoe counts: a bucket is "original"/"configured"/"actual" when every
    # share in it is; those figures add the directory's own disk use, and a
    # bucket takes the kind of its last share ("unknown" if that one is corrupt).
    bucket_figures = {"original", "configured", "actual"}
    kind: str | None = None
    for shnum, path in sorted(shares.items()):
        try:
            size, diskbytes = _disk_bytes(path)
            with disk.open_file(path, writable=enabled) as file:
                container = open_container(file)
                kind = "immutable" if isinstance(container, ImmutableContainer) else "mutable"
                figures = _examine_share(container, kind, cycle_data, now, policy, enabled)
        except (ContainerError, OSError):
            cycle_data["corrupt-shares"].append([si_b32, shnum])
            bucket_figures = set()
            kind = "unknown"
            continue
        if "actual" in figures:
            disk.remove_quietly(path)
            result.deleted_shares += 1
        add_share(cycle_data, figures, kind, size, diskbytes)
        bucket_figures &= figures
    add_bucket(cycle_data, {"examined"}, kind, 0)
    add_bucket(cycle_data, bucket_figures, kind, _disk_bytes(bucket_dir)[1])
    if result.deleted_shares and not any(share_number_of(n) is not None
                                         for n in os.listdir(bucket_dir)):
        disk.remove_empty_dirs(bucket_dir)
        result.removed_bucket = True
    return result


def _examine_share(container: object, kind: str, cycle_data: dict, now: float,
                   policy: ExpiryPolicy | None, enabled: bool) -> set[str]:
    """Count the share's leases, remove expired ones if enabled; the figures it falls under."""
    # Immutable leases all count (owner 0 is what allocate_buckets writes); in a
    # mutable container owner 0 marks an empty slot.
    immutable = isinstance(container, ImmutableContainer)
    records = container.leases() if immutable else container.lease_records()  # type: ignore[attr-defined]
    in_use = [i for i, lease in enumerate(records) if immutable or not lease.is_empty_slot]
    live = [records[i] for i in in_use]
    histogram = cycle_data["leases-per-share-histogram"]
    histogram[str(len(live))] = histogram.get(str(len(live)), 0) + 1
    for lease in live:
        add_lease_age(cycle_data, now - (lease.expiration - LEASE_DURATION))
    figures = {"examined"}
    if all(lease.expiration <= now for lease in live):
        figures.add("original")
    applies = policy is not None and policy.applies_to(kind)
    configured = ([i for i in in_use if policy.lease_expired(records[i], now)]  # type: ignore[union-attr]
                  if applies else [])
    if applies and len(configured) == len(live):
        figures.add("configured")  # a share without leases goes too
        if enabled:
            figures.add("actual")  # the caller deletes the whole share
    elif enabled:
        for index in reversed(configured):
            container.remove_lease(index)  # type: ignore[attr-defined]
    return figures

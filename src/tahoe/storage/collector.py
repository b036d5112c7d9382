"""Garbage collection's disk work: delete shares whose leases all expired, trim the others.

The lease checker (:mod:`.crawler`) decides from index rows or from a scan
(:mod:`.expirer`); these functions act, in its worker threads. A share's
leases are read from its file under its bucket's lock before anything is
removed: a lease renewed since the row was written keeps the share
(``storage-protocol.md`` §5.5). A deleted share's emptied bucket directory
goes too. The reactor thread then brings the index in step with the files.
"""
from __future__ import annotations

import os

from attrs import frozen

from . import disk
from .containers import open_container
from .errors import ContainerError
from .immutable_container import ImmutableContainer
from .indexing import IndexKeeper
from .leases import ExpiryPolicy

__all__ = ["Outcome", "collect_share", "delete_share_file", "remove_empty_bucket"]


@frozen
class Outcome:
    """What collecting one share did: ``deleted``, ``trimmed`` or ``kept`` (its leases
    turned out live, or the file was gone or unreadable)."""

    storage_index: bytes
    shnum: int
    action: str


def collect_share(keeper: IndexKeeper, storage_index: bytes, shnum: int,
                  policy: ExpiryPolicy, now: float, delete: bool) -> Outcome:
    """Under the share's bucket lock: read its leases again and remove those the policy
    finds expired; the share itself (and its bucket directory, if emptied) when none is
    left and ``delete`` was planned."""
    path = keeper.share_path(storage_index, shnum)
    key = (storage_index, shnum)
    with keeper.lock(storage_index):
        return _collect(path, key, policy, now, delete)


def _collect(path: str, key: tuple[bytes, int], policy: ExpiryPolicy, now: float,
             delete: bool) -> Outcome:
    try:
        with disk.open_file(path, writable=True) as file:
            container = open_container(file)
            immutable = isinstance(container, ImmutableContainer)
            kind = "immutable" if immutable else "mutable"
            records = container.leases() if immutable else container.lease_records()
            in_use = [i for i, lease in enumerate(records)
                      if immutable or not lease.is_empty_slot]
            if not policy.applies_to(kind):
                return Outcome(*key, "kept")
            expired = [i for i in in_use if policy.expired(records[i].expiration, now)]
            if in_use and not expired:
                return Outcome(*key, "kept")
            if len(expired) < len(in_use):
                for index in reversed(expired):
                    container.remove_lease(index)
                return Outcome(*key, "trimmed")
            # every lease expired (or there is none)
    except (FileNotFoundError, ContainerError):
        return Outcome(*key, "kept")
    if not delete:
        return Outcome(*key, "kept")
    delete_share_file(path)
    return Outcome(*key, "deleted")


def remove_empty_bucket(keeper: IndexKeeper, storage_index: bytes) -> None:
    """Remove a bucket directory if it holds nothing (left so by a stop between a share's
    deletion and its directory's), under the bucket's lock, as an upload's close might be
    filling it."""
    with keeper.lock(storage_index):
        disk.remove_empty_dirs(os.path.dirname(keeper.share_path(storage_index, 0)))


def delete_share_file(path: str) -> None:
    """Remove a share file, and its bucket directory if that left it empty. The caller
    holds the bucket's lock and has just read the share's leases from the file."""
    disk.remove_quietly(path)
    disk.remove_empty_dirs(os.path.dirname(path))  # fails quietly while anything is left

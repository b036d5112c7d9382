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
from typing import Any

from attrs import frozen

from . import disk
from .containers import open_container
from .errors import ContainerError
from .immutable_container import ImmutableContainer
from .indexing import IndexKeeper
from .leases import ExpiryPolicy
from .randomaccess import MemoryFile
from .share_scan import WHOLE_READ

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
    # A small share (most are) is read whole in one call and judged in memory: one disk
    # read where the container's header and lease reads would be several on a cold disk.
    # Only a trim writes, and it goes through the file itself.
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return Outcome(*key, "kept")
    try:
        size = os.fstat(fd).st_size
        snapshot = MemoryFile(os.pread(fd, size, 0)) if size <= WHOLE_READ else None
    finally:
        os.close(fd)
    if snapshot is not None:
        try:
            action, _ = _judge(open_container(snapshot), policy, now)
        except ContainerError:
            return Outcome(*key, "kept")
        if action == "kept":
            return Outcome(*key, "kept")
        if action == "delete":
            return _delete(path, key, delete)
    try:
        with disk.open_file(path, writable=True) as file:
            container = open_container(file)
            action, expired = _judge(container, policy, now)
            if action == "trim":
                for index in reversed(expired):
                    container.remove_lease(index)
                return Outcome(*key, "trimmed")
    except (FileNotFoundError, ContainerError):
        return Outcome(*key, "kept")
    if action == "kept":
        return Outcome(*key, "kept")
    return _delete(path, key, delete)


def _judge(container: Any, policy: ExpiryPolicy, now: float) -> tuple[str, list[int]]:
    """``kept``, ``trim`` (with the indexes of the expired leases) or ``delete`` (every
    lease expired, or there is none)."""
    immutable = isinstance(container, ImmutableContainer)
    if not policy.applies_to("immutable" if immutable else "mutable"):
        return "kept", []
    records = container.leases() if immutable else container.lease_records()
    in_use = [i for i, lease in enumerate(records) if immutable or not lease.is_empty_slot]
    expired = [i for i in in_use if policy.expired(records[i].expiration, now)]
    if in_use and not expired:
        return "kept", []
    if len(expired) < len(in_use):
        return "trim", expired
    return "delete", expired


def _delete(path: str, key: tuple[bytes, int], planned: bool) -> Outcome:
    if not planned:
        return Outcome(*key, "kept")
    delete_share_file(path)
    return Outcome(*key, "deleted")


def remove_empty_bucket(keeper: IndexKeeper, storage_index: bytes) -> None:
    """Remove a bucket directory if it holds nothing (left so by a stop between a share's
    deletion and its directory's), under the bucket's lock, as an upload's close might be
    filling it."""
    with keeper.lock(storage_index):
        disk.remove_empty_dirs(keeper.bucket_dir(storage_index))


def delete_share_file(path: str) -> None:
    """Remove a share file, and its bucket directory if that left it empty. The caller
    holds the bucket's lock and has just read the share's leases from the file."""
    disk.remove_quietly(path)
    disk.remove_empty_dirs(os.path.dirname(path))  # fails quietly while anything is left

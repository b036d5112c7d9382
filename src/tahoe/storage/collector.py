"""Garbage collection's disk work: delete shares whose leases all expired, trim the others.

The lease checker (:mod:`.crawler`) decides from index rows or from a scan
(:mod:`.expirer`); these functions act, in the node's worker threads or, from
a fresh index, in its scanning processes (:func:`plan_and_collect`). A
share's leases are read from its file under its bucket's lock
(:mod:`.bucket_locks`, held across processes) before anything is removed: a
lease renewed since the row was written keeps the share
(``storage-protocol.md`` §5.5). A deleted share's emptied bucket directory
goes too. The reactor thread then brings the index in step with the files.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import Executor
from typing import Any, ContextManager

from attrs import frozen

from . import disk, paths
from .bucket_locks import BucketLocks
from .containers import open_container
from .errors import ContainerError
from .immutable_container import ImmutableContainer
from .leases import ExpiryPolicy
from .randomaccess import MemoryFile
from .share_index import open_reader
from .share_scan import (WHOLE_READ, PrefixScan, bucket_inodes, map_in_slices,
                         plan_from_index)

__all__ = ["Outcome", "collect_share", "collection_jobs", "delete_share_file",
           "plan_and_collect", "remove_empty_bucket"]


@frozen
class Outcome:
    """What collecting one share did: ``deleted``, ``trimmed``, ``kept`` (its leases
    turned out live, or the file was gone or unreadable) or ``failed`` (the disk refused
    part way, ``error`` says how: the file is to be read again)."""

    storage_index: bytes
    shnum: int
    action: str
    error: str = ""


def collect_share(lock: ContextManager[Any], path: str, key: tuple[bytes, int],
                  policy: ExpiryPolicy, now: float, delete: bool) -> Outcome:
    """Under the share's bucket ``lock``: read its leases again and remove those the policy
    finds expired; the share itself (and its bucket directory, if emptied) when none is
    left and ``delete`` was planned.

    :param key: ``(storage index, share number)``.
    """
    with lock:
        try:
            return _collect(path, key, policy, now, delete)
        except OSError as error:
            return Outcome(*key, "failed", f"{path}: {error.strerror or error}")


def _collect(path: str, key: tuple[bytes, int], policy: ExpiryPolicy, now: float,
             delete: bool) -> Outcome:
    # A small share (most are) is read whole in one call and judged in memory: one disk
    # read where the container's header and lease reads would be several on a cold disk.
    # Only a trim writes, and it goes through the file itself.
    try:
        fd = disk.open_fd(path)
    except FileNotFoundError:
        if delete:
            # gone already (a collection interrupted after its unlink): its emptied bucket
            # directory goes now
            disk.remove_empty_dirs(os.path.dirname(path))
        return Outcome(*key, "kept")
    except NotADirectoryError:
        return Outcome(*key, "kept")
    try:
        start = os.pread(fd, WHOLE_READ + 1, 0)
    finally:
        os.close(fd)
    if len(start) <= WHOLE_READ:  # the whole file
        try:
            action, _ = _judge(open_container(MemoryFile(start)), policy, now)
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
                container.remove_leases(expired)
                return Outcome(*key, "trimmed")
    except (FileNotFoundError, ContainerError):
        return Outcome(*key, "kept")
    if action == "kept":
        return Outcome(*key, "kept")
    return _delete(path, key, delete)


def _judge(container: Any, policy: ExpiryPolicy, now: float) -> tuple[str, list[int]]:
    """``kept``, ``trim`` (with the indexes of the expired lease records) or ``delete``
    (every lease expired; a share with no lease is kept, as Tahoe 1.20 keeps it)."""
    immutable = isinstance(container, ImmutableContainer)
    if not policy.applies_to("immutable" if immutable else "mutable"):
        return "kept", []
    # most shares are all expired or all live: told from the expiration times alone
    expired_now = [policy.expired(expiration, now)
                   for expiration in container.lease_expirations()]
    if not expired_now:
        return "kept", []  # no lease to cancel: kept, as Tahoe keeps it
    if all(expired_now):
        return "delete", []
    if not any(expired_now):
        return "kept", []
    records = container.leases() if immutable else container.lease_records()
    in_use = [i for i, lease in enumerate(records) if immutable or not lease.is_empty_slot]
    expired = [i for i in in_use if policy.expired(records[i].expiration, now)]
    if not expired:
        return "kept", []
    if len(expired) < len(in_use):
        return "trim", expired
    return "delete", expired


def _delete(path: str, key: tuple[bytes, int], planned: bool) -> Outcome:
    if not planned:
        return Outcome(*key, "kept")
    delete_share_file(path)
    return Outcome(*key, "deleted")


def collection_jobs(delete: list[tuple[bytes, int]], trim: list[tuple[bytes, int]]
                    ) -> list[tuple[bytes, int, bool]]:
    """``(storage index, share number, deletion planned)`` of each share to collect."""
    return [(si, shnum, True) for si, shnum in delete] + \
        [(si, shnum, False) for si, shnum in trim]


def remove_empty_bucket(lock: ContextManager[Any], bucket_dir: str) -> None:
    """Remove a bucket directory if it holds nothing (left so by a stop between a share's
    deletion and its directory's), under the bucket's ``lock``, as an upload's close might
    be filling it."""
    with lock:
        disk.remove_empty_dirs(bucket_dir)


def delete_share_file(path: str) -> None:
    """Remove a share file, and its bucket directory if that left it empty. The caller
    holds the bucket's lock and has just read the share's leases from the file."""
    disk.remove_quietly(path)
    disk.remove_empty_dirs(os.path.dirname(path))  # fails quietly while anything is left


# -- in a scanning process

_readers = threading.local()
_locks: dict[str, BucketLocks] = {}
_locks_opening = threading.Lock()


def plan_and_collect(index_path: str, lock_path: str, storage_dir: str, prefix: str,
                     after_bucket: str | None, now: float, policy: ExpiryPolicy | None,
                     enabled: bool, readers: Executor | None = None) -> PrefixScan:
    """The lease checker's work on a prefix the index holds, done in a scanning process:
    :func:`~.share_scan.plan_from_index` on the index file, then each share to collect
    collected here (its file read again under its bucket's lock, held across processes),
    many at once (``readers``) in the order of their bucket directories' inodes.

    Returns the figures, and in ``collected`` ``(storage index, share number, action,
    error)`` of each share collected (:class:`Outcome`), ``kept`` ones too (their rows
    were out of step with their files): the node brings those rows in step.
    """
    reader = getattr(_readers, index_path, None)
    if reader is None:
        reader = open_reader(index_path)
        setattr(_readers, index_path, reader)
    scan = plan_from_index(reader, prefix, after_bucket, now, policy, enabled)
    jobs = collection_jobs(scan.delete, scan.trim)
    scan.collected = []
    if not jobs or policy is None:
        return scan
    with _locks_opening:
        locks = _locks.get(lock_path)
        if locks is None:  # opened once, kept: closing it would drop this process's locks
            locks = _locks[lock_path] = BucketLocks(lock_path)
    prefix_dir = os.path.join(storage_dir, paths.SHARES_DIR, prefix)
    inodes = bucket_inodes(prefix_dir)
    named = sorted(((paths.storage_index_to_b32(si), si, shnum, delete)
                    for si, shnum, delete in jobs), key=lambda job: inodes.get(job[0], 0))

    def collect(job: tuple[str, bytes, int, bool]) -> Outcome:
        name, si, shnum, delete = job
        return collect_share(locks.lock(si), f"{prefix_dir}/{name}/{shnum}", (si, shnum),
                             policy, now, delete)  # type: ignore[arg-type]
    scan.collected = [(outcome.storage_index, outcome.shnum, outcome.action, outcome.error)
                      for outcome in map_in_slices(collect, named, readers)]
    scan.delete, scan.trim = [], []  # (the node needs only what was done)
    return scan

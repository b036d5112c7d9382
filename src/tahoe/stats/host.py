"""What the operating system tells about the node: memory, disk space, shares on disk.

Memory comes from ``/proc/self/status`` (Linux; elsewhere the keys are left
out), disk space from ``os.statvfs`` (``reference/frontends.md`` §5:
``storage_server.disk_*``), share and bucket counts from the share index
(:mod:`tahoe.storage.indexing`), or while it is being rebuilt from a walk of
``storage/shares/<prefix>/<SI>/<shnum>`` (``reference/storage-protocol.md`` §4).
"""
from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from attrs import frozen

from ..storage import paths

#: Where the kernel describes this process.
PROC_STATUS = "/proc/self/status"
#: A walk that took less than this (seconds) is cheap: it is redone as soon as
#: shares may have changed.
CHEAP_WALK = 0.05
#: A dearer walk is reused, even after changes, for this many times its duration
#: (one of 2 s, for millions of shares, for 200 s).
FRESHNESS_FACTOR = 100.0
#: Without any change seen, a count is reused for this long (seconds); shares
#: can also go away without a storage operation (an operator, a crawler).
UNCHANGED_MAX_AGE = 60.0


def parse_proc_status(text: str) -> dict[str, int]:
    """``node.memory.rss`` and ``node.memory.vmsize`` (bytes) from the text of
    ``/proc/<pid>/status`` (its ``VmRSS`` and ``VmSize`` lines, in kB); keys
    whose line is missing or malformed are left out."""
    wanted = {"VmRSS": "node.memory.rss", "VmSize": "node.memory.vmsize"}
    values: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name in wanted:
            fields = rest.split()
            if len(fields) == 2 and fields[0].isdigit() and fields[1].lower() == "kb":
                values[wanted[name]] = int(fields[0]) * 1024
    return values


def memory_usage(status_path: str = PROC_STATUS) -> dict[str, int]:
    """The node's resident and virtual memory in bytes ({} where there is no ``/proc``)."""
    try:
        with open(status_path, encoding="ascii", errors="replace") as status:
            return parse_proc_status(status.read())
    except OSError:
        return {}


def disk_usage(path: str) -> dict[str, int]:
    """``storage_server.disk_total``, ``disk_used``, ``disk_free_for_root`` and
    ``disk_free_for_nonroot`` (bytes) of the file system holding ``path``;
    {} if the platform cannot tell."""
    statvfs = getattr(os, "statvfs", None)
    if statvfs is None:
        return {}
    try:
        s = statvfs(path)
    except OSError:
        return {}
    total = s.f_frsize * s.f_blocks
    free_for_root = s.f_frsize * s.f_bfree
    return {"storage_server.disk_total": total,
            "storage_server.disk_used": total - free_for_root,
            "storage_server.disk_free_for_root": free_for_root,
            "storage_server.disk_free_for_nonroot": s.f_frsize * s.f_bavail}


@frozen
class ShareCount:
    """Shares held: storage indexes with at least one share, and share files."""

    buckets: int
    shares: int


def count_shares(shares_dir: str) -> ShareCount:
    """Walk ``shares/<prefix>/<SI>/`` (not ``incoming/``) and count buckets and shares.

    A share is an entry whose name is all digits; a storage index directory
    without one (an upload just allocated) is not counted. A missing
    directory counts as empty.
    """
    buckets = shares = 0
    for prefix in _directories(shares_dir):
        if prefix.name == paths.INCOMING_DIR:
            continue
        for bucket in _directories(prefix.path):
            try:
                found = sum(1 for entry in os.scandir(bucket.path) if entry.name.isdigit())
            except OSError:
                continue
            if found:
                buckets += 1
                shares += found
    return ShareCount(buckets, shares)


def _directories(path: str) -> list[os.DirEntry[str]]:
    try:
        return [entry for entry in os.scandir(path) if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return []


class ShareCounter:
    """The share count of one storage directory, walked in a worker thread.

    A count is reused while it is likely right: walked again when the storage
    server may have changed shares (``changes()`` differs from what it was at
    the walk) and the walk was cheap (:data:`CHEAP_WALK`) or old enough
    (:data:`FRESHNESS_FACTOR`), and at the latest after
    :data:`UNCHANGED_MAX_AGE`. Two requests that find it stale at once each walk.

    :param shares_dir: ``storage/shares``.
    :param clock: gives ``seconds()``.
    :param run_in_thread: ``run_in_thread(f, *args)`` returns an awaitable of ``f(*args)``.
    :param changes: returns a value that changes whenever shares may have been
        added or removed (e.g. the counts of ``close`` and ``writev`` operations).
    :param walk: the counting function (tests pass a fake).
    :param timer: monotonic seconds, read in the worker thread around the walk.
    :param index_totals: the counts a fresh share index keeps, or None: when it gives
        them, they are the count (no walk).
    :param index_pending: whether the share index is being rebuilt: its totals come
        when it is done, so no walk meanwhile (it would hold the request for as long as
        a walk of every bucket takes, and compete with the rebuild for the disk).
    """

    def __init__(self, shares_dir: str, clock: Any,
                 run_in_thread: Callable[..., Awaitable[tuple[ShareCount, float]]],
                 changes: Callable[[], object] = lambda: None,
                 walk: Callable[[str], ShareCount] = count_shares,
                 timer: Callable[[], float] = time.perf_counter,
                 index_totals: Callable[[], ShareCount | None] = lambda: None,
                 index_pending: Callable[[], bool] = lambda: False) -> None:
        self._shares_dir = shares_dir
        self._clock = clock
        self._run_in_thread = run_in_thread
        self._changes = changes
        self._walk = walk
        self._timer = timer
        self._index_totals = index_totals
        self._index_pending = index_pending
        self._current: ShareCount | None = None
        self._walked_at = 0.0
        self._walk_duration = 0.0
        self._changes_at_walk: object = None

    def current(self) -> ShareCount | None:
        """The index's count, else the latest walk's (``None`` before the first ended)."""
        return self._index_totals() or self._current

    def is_fresh(self) -> bool:
        """Whether the latest count may be reused now."""
        if self._current is None:
            return False
        age = float(self._clock.seconds()) - self._walked_at
        if self._changes() == self._changes_at_walk:
            return age < UNCHANGED_MAX_AGE
        return (self._walk_duration >= CHEAP_WALK
                and age < FRESHNESS_FACTOR * self._walk_duration)

    async def refresh(self) -> ShareCount | None:
        """Walk again unless the latest count is fresh (see :meth:`is_fresh`) or the index
        is being rebuilt (then the latest walk's count, if any).

        :raises OSError: if the walk failed in an unexpected way.
        """
        indexed = self._index_totals()
        if indexed is not None:
            return indexed
        if self._index_pending() or (self._current is not None and self.is_fresh()):
            return self._current
        changes = self._changes()
        count, duration = await self._run_in_thread(self._timed_walk, self._shares_dir)
        self._current = count
        self._walked_at = self._clock.seconds()
        self._walk_duration = duration
        self._changes_at_walk = changes
        return count

    def _timed_walk(self, shares_dir: str) -> tuple[ShareCount, float]:
        started = self._timer()
        count = self._walk(shares_dir)
        return count, max(0.0, self._timer() - started)

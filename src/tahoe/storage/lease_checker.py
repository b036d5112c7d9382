"""The lease checker: lease statistics every cycle and, if enabled, garbage collection.

A :class:`~.crawler.ShareCrawler` (``lease_checker.state.json`` and
``lease_checker.history.json``, in Tahoe 1.20's shape). With ``[storage]
expire.enabled`` it collects: :mod:`.expirer` decides, :mod:`.collector`
acts. With a fresh share index it reads rows and opens only the files of
shares with an expired lease; its walk is also how a stale index is rebuilt:
it reads every share file of a prefix not indexed yet, deletes there and then
those whose leases all expired, and hands the rows of the rest to the index.
It starts at once when the index needs rebuilding, else after its slow start.
"""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from attrs import define, field

from . import crawl_state
from .collector import Outcome, collect_share, collection_jobs, remove_empty_bucket
from .crawler import PrefixJob, RunInThread, ShareCrawler, index_holds, run_here
from .indexing import IndexKeeper
from .leases import ExpiryPolicy
from .share_index import prefix_value
from .share_scan import PrefixScan, plan_from_index, scan_prefix_for_walk, scan_share

__all__ = ["LeaseCheckingCrawler", "PrefixOutcome"]


@define
class PrefixOutcome:
    """What the lease checker did to one prefix, for the reactor thread to apply.

    :ivar figures: the cycle figures of its buckets (None if it did not count).
    :ivar rows: for a prefix the index did not hold: the row of every share left, read
        from its file (after garbage collection changed it).
    :ivar rows_written: whether the worker thread put ``rows`` in the index already
        (:meth:`~.indexing.IndexKeeper.write_scanned`).
    :ivar changed: for a prefix the index holds: shares whose files garbage collection
        changed or deleted, if the worker thread could not bring their rows in step
        (:meth:`~.indexing.IndexKeeper.refresh_collected`): the reactor thread does.
    :ivar deleted: shares deleted.
    """

    figures: dict[str, Any] | None
    rows: list[tuple[Any, ...]] | None = None
    rows_written: bool = False
    changed: list[tuple[bytes, int]] = field(factory=list)
    deleted: int = 0


class LeaseCheckingCrawler(ShareCrawler):
    """Lease statistics every cycle (twice a day at most) and, if enabled, garbage collection.

    :param policy: the configured ``[storage]expire.*`` rule.
    :param enabled: ``expire.enabled``: whether expired leases are really removed.
    """

    state_name = "lease_checker.state.json"
    history_name = "lease_checker.history.json"
    rebuilds = True
    slow_start = 360.0
    minimum_cycle_time = 12 * 60 * 60.0
    #: Prefixes under way at once while the walk reads files (rebuilding the index): the
    #: node's threads mostly wait for the scanning processes, which read ahead while the
    #: node collects, one prefix at a time (:attr:`parallel` from the index).
    parallel_scans = 8
    #: Prefixes under way at once from the index: the scanning processes examine their
    #: rows and collect (no work for the node's interpreter but the index's rows).
    parallel_from_index = 4

    def __init__(self, storage_dir: str | os.PathLike[str], clock: Any, keeper: IndexKeeper,
                 policy: ExpiryPolicy, enabled: bool, run_in_thread: RunInThread = run_here,
                 slow_start: float | None = None,
                 scanner: Callable[..., PrefixScan] = scan_prefix_for_walk,
                 collectors: Executor | None = None) -> None:
        super().__init__(storage_dir, clock, keeper, run_in_thread, slow_start)
        #: Threads that collect a prefix's expired shares several at once when the walk
        #: reads the index (a cold disk serves parallel reads and deletes faster than
        #: serial ones); None: one after the other.
        self.collectors = collectors
        #: Reads a prefix's files (:func:`~.share_scan.scan_prefix_for_walk`, or the same
        #: in other processes: the node's :class:`~.share_scan.ScanProcesses`, which
        #: :meth:`walked` lets rest).
        self.scanner = scanner
        self._collecting = threading.Lock()
        self.policy = policy
        self.enabled = enabled
        self.history_path = self.storage_dir / self.history_name
        self._history: tuple[tuple[int, int, int], dict[str, Any]] | None = None
        #: shares deleted since start (the statistics' share counts watch it).
        self.deleted_shares = 0
        # an index that falls out of step is rebuilt by the next walk: start it now
        keeper.stale_listeners.append(self.wake)

    def first_delay(self) -> float:
        """At once when the index needs rebuilding (the walk rebuilds it)."""
        if self._slow_start is None and not self.keeper.fresh:
            return 0.0
        return super().first_delay()

    def add_initial_state(self) -> None:
        # key by key: a state saved by another version may lack some
        cycle_data = self.state.setdefault("cycle-to-date", {})
        for key, value in crawl_state.empty_cycle().items():
            cycle_data.setdefault(key, value)

    def started_cycle(self, cycle: int) -> None:
        self.state["cycle-to-date"] = crawl_state.empty_cycle()

    # in a worker thread

    def work_prefix(self, job: PrefixJob, now: float) -> PrefixOutcome:
        if index_holds(self.keeper, job.prefix):
            return self._from_index(job, now)
        return self._from_files(job, now)

    def _from_index(self, job: PrefixJob, now: float) -> PrefixOutcome:
        """Examine the index's rows; open only the shares to collect."""
        outcome = PrefixOutcome(crawl_state.empty_cycle() if job.counts else None)
        if not job.counts:
            return outcome
        collect = getattr(self.scanner, "collect", None)
        small = getattr(self.scanner, "small", None)
        if small is not None and small(str(self.shares_dir / job.prefix)):
            collect = None  # (a few shares: not worth starting the processes)
        # The scanning processes examine the rows and collect (outside the node's
        # interpreter lock, under the bucket locks they share with the node).
        scan = collect(self.keeper.index.path, self.keeper.locks.path, str(self.storage_dir),
                       job.prefix, job.after_bucket, now, self.policy,
                       self.enabled) if collect else None
        if scan is not None and scan.collected is not None:
            done = [Outcome(*collected) for collected in scan.collected]
            outcome.changed = [(d.storage_index, d.shnum) for d in done]
        else:
            scan = plan_from_index(self.keeper.index, job.prefix, job.after_bucket,
                                   now, self.policy, self.enabled)
            done = self._collect(scan.delete, scan.trim, now, self.collectors)
            # (a scanning process that failed may have collected some of them before it
            # could say so: then every one is read again)
            outcome.changed = (scan.delete + scan.trim if collect else
                               [(d.storage_index, d.shnum) for d in done])
        if outcome.changed and self.keeper.refresh_collected(outcome.changed):
            outcome.changed = []  # (in step from here: the reactor thread need not wait)
        self._say_failures(done)
        outcome.figures = scan.figures
        outcome.deleted = _deletions(done)
        return outcome

    def _from_files(self, job: PrefixJob, now: float) -> PrefixOutcome:
        """Read every share file of the prefix (:attr:`scanner`, perhaps in another process),
        collect what expired, and hand the rows of the rest to the index."""
        scan = self.scanner(str(self.shares_dir), job.prefix, job.counts, job.after_bucket, now,
                            self.policy, self.enabled)
        with self._collecting:  # one thread at a time: the reactor's requests come first
            done = self._collect(scan.delete, scan.trim, now)
            if self.enabled:
                for storage_index in scan.empty:
                    remove_empty_bucket(self.keeper.lock(storage_index),
                                        self.keeper.bucket_dir(storage_index))
        rows = scan.rows
        if done:
            # the rows of what was collected as the files are now: none for a deleted share,
            # a trimmed one (or one the disk refused part way) read again (here, not on the
            # reactor thread)
            self._say_failures(done)
            changed = {(d.storage_index, d.shnum) for d in done}
            rows = [row for row in rows if (row[0], row[1]) not in changed]
            for d in done:
                if d.action != "deleted":
                    share = scan_share(self.keeper.share_path(d.storage_index, d.shnum),
                                       d.storage_index, d.shnum)
                    if share is not None:
                        rows.append(share.row())
        written = self.keeper.write_scanned(prefix_value(job.prefix), rows)
        return PrefixOutcome(scan.figures, rows=rows, rows_written=written,
                             deleted=_deletions(done))

    def _collect(self, delete: list[tuple[bytes, int]], trim: list[tuple[bytes, int]],
                 now: float, collectors: Executor | None = None) -> list[Outcome]:
        """Collect (each file read again under its bucket's lock), in ``collectors`` if
        given; what was deleted or trimmed. (A rebuilding walk collects one share after the
        other: the files were just read, and threads would only compete for the
        interpreter.)"""
        keeper = self.keeper

        def collect(job: tuple[bytes, int, bool]) -> Outcome:
            storage_index, shnum, delete = job
            return collect_share(keeper.lock(storage_index),
                                 keeper.share_path(storage_index, shnum), (storage_index, shnum),
                                 self.policy, now, delete)
        jobs = collection_jobs(delete, trim)
        run = collectors.map if collectors is not None and len(jobs) > 1 else map
        # every outcome, "kept" too: the row that planned it is out of step with the file
        # (a lease renewed, the file gone or unreadable), and is read again
        return list(run(collect, jobs))

    def _say_failures(self, done: list[Outcome]) -> None:
        failed = [d for d in done if d.action == "failed"]
        if failed:
            self._log.warn("garbage collection could not collect {count} share(s): {first}",
                           count=len(failed), first=failed[0].error)

    # on the reactor thread

    def apply_prefix(self, cycle: int, job: PrefixJob, result: PrefixOutcome) -> None:
        keeper = self.keeper
        if result.rows is not None:
            keeper.scanned(prefix_value(job.prefix), result.rows, result.rows_written)
        if result.changed:
            keeper.refresh(result.changed)
        if result.figures is not None:
            crawl_state.merge_cycle(self.state["cycle-to-date"], result.figures)
        self.deleted_shares += result.deleted
        keeper.deleted += result.deleted

    def finished_cycle(self, cycle: int) -> None:
        policy = self.policy
        mode = [policy.mode, policy.override_lease_duration, policy.cutoff_date,
                [kind for kind in ("immutable", "mutable") if policy.applies_to(kind)]]
        entry = crawl_state.history_entry(
            self.state["cycle-to-date"], self.state.get("current-cycle-start-time"),
            self.clock.seconds(), self.enabled, mode)
        self._write(self.history_path, json.dumps(
            crawl_state.history_with(self.history(), cycle, entry), sort_keys=True))

    def parallel_for(self, job: PrefixJob) -> int:
        return (self.parallel_from_index if index_holds(self.keeper, job.prefix)
                else self.parallel_scans)

    def walked(self) -> None:
        rest = getattr(self.scanner, "rest", None)
        if rest is not None:
            rest()

    def history(self) -> dict[str, Any]:
        """The saved history of finished cycles (cycle number as text -> figures); read
        again only when the file changed (``/storage`` asks for it at every request).
        Not to be changed by the caller."""
        try:
            stat = os.stat(self.history_path)
        except OSError:
            return {}
        version = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if self._history is not None and self._history[0] == version:
            return self._history[1]
        try:
            history = json.loads(self.history_path.read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        history = history if isinstance(history, dict) else {}
        self._history = (version, history)
        return history


def _deletions(done: list[Outcome]) -> int:
    return sum(d.action == "deleted" for d in done)

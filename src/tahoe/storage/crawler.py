"""The storage server's crawlers: walks over every prefix directory, resumable across restarts.

A crawler visits the 1024 prefix directories of ``storage/shares`` in sorted
order, a cycle at a time, and keeps its position in a state file in Tahoe
1.20's shape (``storage-protocol.md`` §4.7; keys in :mod:`.crawl_state`), so
that a storage directory moves between Tahoe and us with its crawl position
and history. What a prefix holds comes from the share index
(:mod:`.indexing`) once it is fresh, and from the files while it is not:

* :class:`BucketCountingCrawler` (``bucket_counter.state.json``): buckets
  per prefix, at most one cycle an hour. With a fresh index the total is the
  index's own count, always current.
* :class:`LeaseCheckingCrawler` (``lease_checker.state.json`` and
  ``lease_checker.history.json``): lease statistics every cycle (twice a day
  at most) and, with ``[storage]expire.enabled``, garbage collection
  (:mod:`.expirer` decides, :mod:`.collector` acts). With a fresh index it
  reads rows and opens only the files of shares with an expired lease. Its
  walk is also how a stale index is rebuilt: it reads every share file of
  a prefix not indexed yet, deletes there and then those whose leases all
  expired, and hands the rows of the rest to the index. It starts at once
  when the index needs rebuilding, else after :attr:`ShareCrawler.slow_start`.

Each prefix is worked on in a thread (``run_in_thread``; several prefixes at
once, :attr:`ShareCrawler.parallel`), its result applied on the reactor
thread in prefix order. The ``TAHOE_CRAWLER_SLOW_START`` environment
variable overrides the slow start (e.g. for tests).

Tahoe-LAFS before 1.17 kept these files as pickles without ``.json``; like
Tahoe 1.20, ``tahoe run`` refuses to start while one is there
(:data:`.crawl_state.LEGACY_STATE_FILES`) until ``tahoe admin migrate-crawler``
converts it.
"""
from __future__ import annotations

import collections
import json
import os
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from attrs import define, field
from twisted.internet import defer, task
from twisted.logger import Logger

from ..node.fileutil import write_atomically
from . import crawl_state, paths
from .collector import Outcome, collect_share, collection_jobs, remove_empty_bucket
from .indexing import IndexKeeper
from .leases import ExpiryPolicy
from .share_index import prefix_value
from .share_scan import PrefixScan, plan_from_index, scan_prefix_for_walk, scan_share

__all__ = ["BucketCountingCrawler", "LeaseCheckingCrawler", "ShareCrawler", "run_here"]

SLOW_START_VARIABLE = "TAHOE_CRAWLER_SLOW_START"

RunInThread = Callable[..., defer.Deferred]


def run_here(function: Callable[..., Any], *args: Any) -> defer.Deferred:
    """Run ``function(*args)`` now, on the calling thread (tests, and no thread pool)."""
    return defer.maybeDeferred(function, *args)


def _slow_start(default: float) -> float:
    text = os.environ.get(SLOW_START_VARIABLE)
    if text is None:
        return default
    try:
        return max(0.0, float(text))
    except ValueError:
        raise ValueError(f"{SLOW_START_VARIABLE}={text!r} is not a number of seconds") from None


@define
class PrefixJob:
    """One prefix of a walk: its position, name, whether it counts toward the cycle's
    figures (a prefix done before a restart is only indexed), and the bucket to resume
    after."""

    position: int
    prefix: str
    counts: bool
    after_bucket: str | None = None


class ShareCrawler:
    """Walks every prefix, a cycle at a time; subclasses say what to do with each.

    :param storage_dir: ``NODEDIR/storage`` (holds ``shares/`` and the state file).
    :param clock: an ``IReactorTime``; its ``seconds()`` is the wall clock too.
    :param keeper: the storage server's share index.
    :param run_in_thread: ``run_in_thread(f, *args)``: a Deferred of ``f(*args)`` run
        in a worker thread (:func:`run_here`, the default, runs it at once).
    :param slow_start: seconds before the first cycle (default: the class's, or
        the environment variable's).
    """

    state_name = ""
    slow_start = 300.0
    minimum_cycle_time = 300.0
    #: Wall-clock seconds between saves of the state during a cycle.
    save_interval = 1.0
    #: Prefixes worked on at once. More threads cost more than they gain: the work is
    #: short system calls, each giving up and taking back the GIL (measured in
    #: ``docs/performance.md``); two keep one prefix read while the last is applied.
    parallel = 2
    #: Whether this crawler's walk rebuilds the share index (the lease checker's does).
    rebuilds = False
    _log = Logger()

    def __init__(self, storage_dir: str | os.PathLike[str], clock: Any, keeper: IndexKeeper,
                 run_in_thread: RunInThread = run_here, slow_start: float | None = None) -> None:
        self.storage_dir = Path(storage_dir)
        self.shares_dir = self.storage_dir / paths.SHARES_DIR
        self.state_path = self.storage_dir / self.state_name
        self.clock = clock
        self.keeper = keeper
        self._run_in_thread = run_in_thread
        self._slow_start = slow_start
        self.state: dict[str, Any] = crawl_state.new_state()
        self.sleeping_until: float | None = None
        self._sleep: defer.Deferred | None = None
        self._stopping = False
        self._running: defer.Deferred | None = None
        self._saved_at = 0.0
        self._write_failed = False

    # lifecycle

    def first_delay(self) -> float:
        """Seconds from :meth:`start` to the first cycle."""
        if self._slow_start is not None:
            return self._slow_start
        return _slow_start(self.slow_start)

    def start(self) -> None:
        """Load the saved state (a bad or foreign one starts afresh) and start walking
        after :meth:`first_delay`."""
        self.state = self._load(self.state_path) or crawl_state.new_state()
        self.add_initial_state()
        self._stopping = False
        self._running = defer.Deferred.fromCoroutine(self._run())
        self._running.addErrback(lambda f: self._log.failure("crawler {name} stopped", f,
                                                               name=self.state_name))

    def stop(self) -> defer.Deferred:
        """Stop walking: work in threads finishes and is applied, the state is saved.
        Fires once nothing of this crawler runs any more."""
        self._stopping = True
        if self._sleep is not None:
            self._sleep.cancel()
        running, self._running = self._running, None
        if running is None or running.called:
            return defer.succeed(None)
        done: defer.Deferred = defer.Deferred()
        running.addBoth(lambda _: done.callback(None))
        return done

    def _load(self, path: Path) -> dict[str, Any] | None:
        try:
            state = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            self._log.warn("crawler state {path} unreadable ({error}); starting afresh",
                           path=str(path), error=str(error))
            return None
        if not crawl_state.is_valid_state(state):
            self._log.warn("crawler state {path} not understood; starting afresh", path=str(path))
            return None
        return state

    def _save(self, durable: bool = True) -> None:
        """Write the state file. The saves during a walk (once a second) are not synced:
        an ``fsync`` there commits the file system's journal with every change the
        collection has made, and the reactor waited for it (170 ms at the median, up to
        460 ms, at 1 M shares). A crash may lose their last seconds; the walk then
        repeats those prefixes, as Tahoe's crawler (which never syncs its state) does."""
        self._saved_at = self.clock.seconds()
        self._write(self.state_path, json.dumps(self.state, sort_keys=True), durable)

    def _write(self, path: Path, text: str, durable: bool = True) -> None:
        """Write a state or history file; one the disk refuses (full, say) is logged and the
        walk goes on (its state kept in memory, written at the next save): a crawler that
        stopped there would no longer expire the leases that free the disk."""
        try:
            write_atomically(path, text, durable=durable)
        except OSError as error:
            if not self._write_failed:
                self._log.warn("crawler {name}: cannot write {path} ({error}); going on",
                               name=self.state_name, path=str(path), error=error)
            self._write_failed = True
        else:
            self._write_failed = False

    def wake(self) -> None:
        """End a sleep between cycles soon (a stop still ends the walk). Never runs the
        walk inside the caller, which may hold a bucket lock."""
        def end_sleep() -> None:
            if self._sleep is not None:
                self._sleep.cancel()
        self.clock.callLater(0, end_sleep)

    async def _pause(self, delay: float) -> bool:
        """Sleep ``delay`` seconds (or until :meth:`wake`); False if stopped meanwhile."""
        if self._stopping:
            return False
        self.sleeping_until = self.clock.seconds() + delay
        self._sleep = task.deferLater(self.clock, delay, lambda: None)
        try:
            await self._sleep
        except defer.CancelledError:
            pass
        finally:
            self._sleep = None
            self.sleeping_until = None
        return not self._stopping

    # the walk

    async def _run(self) -> None:
        if not await self._pause(self.first_delay()):
            return
        while True:
            state = self.state
            if state["current-cycle"] is None:
                cycle = crawl_state.next_cycle(state)
                state["current-cycle"] = cycle
                state["current-cycle-start-time"] = self.clock.seconds()
                self.started_cycle(cycle)
            cycle = state["current-cycle"]
            finished = await self._walk(cycle, self._jobs())
            self.walked()
            if finished:
                self.finished_cycle(cycle)
                crawl_state.finish_cycle(state, cycle)
            self._save()
            if not finished:
                return
            while True:  # between cycles
                if self.rebuilds and not self.keeper.fresh:
                    # the index fell out of step during the cycle: read what it lacks now
                    walked = await self._walk(cycle, self._unindexed_jobs())
                    self.walked()
                    if not walked:
                        return
                cycle_age = self.clock.seconds() - (state.get("current-cycle-start-time") or 0)
                if cycle_age >= self.minimum_cycle_time:
                    break
                if not await self._pause(self.minimum_cycle_time - cycle_age):
                    return

    def _unindexed_jobs(self, end: int = len(paths.all_prefixes())) -> list[PrefixJob]:
        """The prefixes before ``end`` that the index does not hold: read, not counted."""
        return [PrefixJob(i, prefix, False) for i, prefix in enumerate(paths.all_prefixes()[:end])
                if not self.keeper.prefix_indexed(prefix_value(prefix))]

    def _jobs(self) -> list[PrefixJob]:
        """The prefixes this walk visits: from where the cycle stands, and those before it
        that the index does not hold yet (read, not counted again)."""
        prefixes = paths.all_prefixes()
        start, last_bucket = crawl_state.resume_point(self.state)
        jobs = self._unindexed_jobs(start) if self.rebuilds else []
        jobs += [PrefixJob(i, prefixes[i], True) for i in range(start, len(prefixes))]
        if jobs and jobs[0].counts and last_bucket is not None:
            jobs[0].after_bucket = last_bucket
        return jobs

    async def _walk(self, cycle: int, jobs: list[PrefixJob]) -> bool:
        """Work through ``jobs``; whether all were done (False if stopped before)."""
        now = self.clock.seconds()
        waiting = collections.deque(jobs)
        in_flight: collections.deque = collections.deque()
        while waiting or in_flight:
            while (waiting and len(in_flight) < self.parallel_for(waiting[0])
                   and not self._stopping):
                job = waiting.popleft()
                in_flight.append((job, self._run_in_thread(self.work_prefix, job, now)))
            if not in_flight:
                return False  # stopped
            job, working = in_flight.popleft()
            try:
                result = await working
            except Exception:  # noqa: BLE001 - one bad prefix must not stop the walk
                self._log.failure("crawler {name}: prefix {prefix}", name=self.state_name,
                                  prefix=job.prefix)
                result = None
            if result is not None:
                self.apply_prefix(cycle, job, result)
            if job.counts:
                self.state["last-complete-prefix"] = job.prefix
                self.state["last-complete-bucket"] = None
            if self.clock.seconds() - self._saved_at >= self.save_interval:
                self._save(durable=False)
        return not waiting

    # what subclasses fill in

    def add_initial_state(self) -> None:
        """Add this crawler's own keys to a fresh or loaded state."""

    def started_cycle(self, cycle: int) -> None:
        """A cycle begins."""

    def work_prefix(self, job: PrefixJob, now: float) -> Any:
        """In a worker thread: the work of one prefix; its result goes to :meth:`apply_prefix`."""

    def apply_prefix(self, cycle: int, job: PrefixJob, result: Any) -> None:
        """On the reactor thread, in prefix order: take in what :meth:`work_prefix` did."""

    def finished_cycle(self, cycle: int) -> None:
        """Every prefix has been visited."""

    def parallel_for(self, job: PrefixJob) -> int:
        """How many prefixes may be under way when ``job`` is started."""
        return self.parallel

    def walked(self) -> None:
        """A walk is over (finished or stopped): nothing is being read for it now."""


def _indexed(keeper: IndexKeeper, prefix: str) -> bool:
    return keeper.prefix_indexed(prefix_value(prefix))


class BucketCountingCrawler(ShareCrawler):
    """Counts buckets; ``last-complete-bucket-count`` after each full cycle (once an hour),
    or at any time from a fresh index."""

    state_name = "bucket_counter.state.json"
    slow_start = 300.0
    minimum_cycle_time = 60 * 60.0

    @property  # type: ignore[override]
    def state(self) -> dict[str, Any]:
        """The state, its total kept current from a fresh index."""
        state = self._state
        if self.keeper.fresh and not self.keeper.closed:
            state["last-complete-bucket-count"] = self.keeper.index.totals.buckets
        return state

    @state.setter
    def state(self, value: dict[str, Any]) -> None:
        self._state = value

    def add_initial_state(self) -> None:
        self._state.setdefault("bucket-counts", {})
        self._state.setdefault("storage-index-samples", {})
        self._state.setdefault("last-complete-bucket-count", None)

    def work_prefix(self, job: PrefixJob, now: float) -> tuple[int, str | None]:
        """The prefix's bucket count and a sample bucket name: one query of a fresh index
        (its smallest storage index), else a listing (its first name)."""
        if _indexed(self.keeper, job.prefix):
            count, first = self.keeper.index.bucket_count_and_first(prefix_value(job.prefix))
            return count, None if first is None else paths.storage_index_to_b32(first)
        try:
            names = sorted(os.listdir(self.shares_dir / job.prefix))
        except (FileNotFoundError, NotADirectoryError):
            names = []
        return len(names), names[0] if names else None

    def apply_prefix(self, cycle: int, job: PrefixJob, result: tuple[int, str | None]) -> None:
        if job.counts:
            crawl_state.count_prefix(self._state, cycle, job.prefix, *result)

    def finished_cycle(self, cycle: int) -> None:
        crawl_state.bucket_count_done(self._state, cycle)

    @property
    def last_complete_count(self) -> int | None:
        """Buckets held now (fresh index), or found by the last full cycle (``None``
        before one finished)."""
        return self.state.get("last-complete-bucket-count")


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
        if _indexed(self.keeper, job.prefix):
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
        return (self.parallel_from_index if _indexed(self.keeper, job.prefix)
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

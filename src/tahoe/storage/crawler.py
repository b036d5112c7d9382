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
* :class:`~.lease_checker.LeaseCheckingCrawler` (``lease_checker.state.json`` and
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attrs import define
from twisted.internet import defer, task
from twisted.logger import Logger

from ..node.fileutil import write_atomically
from . import crawl_state, paths
from .indexing import IndexKeeper
from .share_index import prefix_value

__all__ = ["BucketCountingCrawler", "PrefixJob", "ShareCrawler", "index_holds", "run_here"]

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


def index_holds(keeper: IndexKeeper, prefix: str) -> bool:
    """Whether the share index holds the prefix directory named ``prefix``."""
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
        if index_holds(self.keeper, job.prefix):
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

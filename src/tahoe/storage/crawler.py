"""The storage server's crawlers: slow walks over every bucket, resumable across restarts.

A crawler visits the 1024 prefix directories of ``storage/shares`` in sorted
order and every bucket (storage index) in each, in time slices on the
reactor thread: after :attr:`ShareCrawler.slice_seconds` of work it saves
its position to its state file (``storage-protocol.md`` §4.7; keys in
:mod:`.crawl_state`) and sleeps long enough to stay under
:attr:`ShareCrawler.cpu_fraction` of a core. A cycle starts
:attr:`ShareCrawler.slow_start` seconds after the node starts (the
``TAHOE_CRAWLER_SLOW_START`` environment variable overrides it, e.g. for
tests), and cycles begin at most once per :attr:`ShareCrawler.minimum_cycle_time`.

* :class:`BucketCountingCrawler` (``bucket_counter.state.json``): buckets
  per prefix and the total of the last full cycle.
* :class:`LeaseCheckingCrawler` (``lease_checker.state.json`` and
  ``lease_checker.history.json``): lease statistics every cycle and, with
  ``[storage]expire.enabled``, garbage collection (:mod:`.expirer`).

Tahoe-LAFS before 1.17 kept these files as pickles without ``.json``; like
Tahoe 1.20, ``tahoe run`` refuses to start while one is there
(:data:`.crawl_state.LEGACY_STATE_FILES`) until ``tahoe admin migrate-crawler``
converts it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from twisted.logger import Logger

from ..node.fileutil import write_atomically
from . import crawl_state
from .expirer import examine_bucket
from .leases import ExpiryPolicy
from .paths import SHARES_DIR, all_prefixes

__all__ = ["BucketCountingCrawler", "LeaseCheckingCrawler", "ShareCrawler"]

SLOW_START_VARIABLE = "TAHOE_CRAWLER_SLOW_START"
#: The longest a crawler sleeps between slices.
MAX_SLEEP = 299.0


def _slow_start(default: float) -> float:
    text = os.environ.get(SLOW_START_VARIABLE)
    if text is None:
        return default
    try:
        return max(0.0, float(text))
    except ValueError:
        raise ValueError(f"{SLOW_START_VARIABLE}={text!r} is not a number of seconds") from None


class ShareCrawler:
    """Walks every bucket in slices; subclasses say what to do with each.

    :param storage_dir: ``NODEDIR/storage`` (holds ``shares/`` and the state file).
    :param clock: an ``IReactorTime``; its ``seconds()`` is the wall clock too.
    """

    state_name = ""
    slow_start = 300.0
    minimum_cycle_time = 300.0
    cpu_fraction = 0.10
    slice_seconds = 0.2
    _log = Logger()

    def __init__(self, storage_dir: str | os.PathLike[str], clock: Any,
                 slow_start: float | None = None) -> None:
        self.storage_dir = Path(storage_dir)
        self.shares_dir = self.storage_dir / SHARES_DIR
        self.state_path = self.storage_dir / self.state_name
        self.clock = clock
        self.slow_start = _slow_start(self.slow_start) if slow_start is None else slow_start
        self.state: dict[str, Any] = crawl_state.new_state()
        self._timer: Any = None
        self.sleeping_until: float | None = None

    # lifecycle

    def start(self) -> None:
        """Load the saved state (a bad or foreign one starts afresh) and schedule the first slice."""
        self.state = self._load(self.state_path) or crawl_state.new_state()
        self.add_initial_state()
        self._schedule(self.slow_start)

    def stop(self) -> None:
        """Cancel the next slice (each slice has saved the state already)."""
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

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

    def _save(self) -> None:
        write_atomically(self.state_path, json.dumps(self.state, sort_keys=True))

    def _schedule(self, delay: float) -> None:
        self.sleeping_until = self.clock.seconds() + delay
        self._timer = self.clock.callLater(delay, self._slice)

    # the walk

    def _slice(self) -> None:
        self._timer = None
        self.sleeping_until = None
        started = self.clock.seconds()
        state = self.state
        if state["current-cycle"] is None:
            cycle = crawl_state.next_cycle(state)
            state["current-cycle"] = cycle
            state["current-cycle-start-time"] = started
            self.started_cycle(cycle)
        cycle = state["current-cycle"]
        finished = self._walk(cycle, started)
        if finished:
            self.finished_cycle(cycle)
            crawl_state.finish_cycle(state, cycle)
        self._save()
        elapsed = max(0.0, self.clock.seconds() - started)
        sleep = min(MAX_SLEEP, elapsed / self.cpu_fraction - elapsed)
        if finished:
            cycle_age = self.clock.seconds() - (state.get("current-cycle-start-time") or started)
            sleep = max(sleep, self.minimum_cycle_time - cycle_age)
        self._schedule(sleep)

    def _walk(self, cycle: int, started: float) -> bool:
        """Work until the slice is used up; whether the cycle is complete."""
        prefixes = all_prefixes()
        index, last_bucket = crawl_state.resume_point(self.state)
        while index < len(prefixes):
            prefix = prefixes[index]
            prefix_dir = self.shares_dir / prefix
            try:
                buckets = sorted(os.listdir(prefix_dir))
            except (FileNotFoundError, NotADirectoryError):
                buckets = []
            for si_b32 in buckets:
                if last_bucket is not None and si_b32 <= last_bucket:
                    continue
                try:
                    self.process_bucket(cycle, prefix, si_b32, str(prefix_dir / si_b32))
                except Exception:  # noqa: BLE001 - one bad bucket must not stop the crawler
                    self._log.failure("crawler: bucket {si}", si=si_b32)
                self.state["last-complete-bucket"] = si_b32
                if self.clock.seconds() - started >= self.slice_seconds:
                    return False
            self.finished_prefix(cycle, prefix, buckets)
            self.state["last-complete-prefix"] = prefix
            self.state["last-complete-bucket"] = last_bucket = None
            index += 1
            if self.clock.seconds() - started >= self.slice_seconds and index < len(prefixes):
                return False
        return True

    # what subclasses fill in

    def add_initial_state(self) -> None:
        """Add this crawler's own keys to a fresh or loaded state."""

    def started_cycle(self, cycle: int) -> None:
        """A cycle begins."""

    def process_bucket(self, cycle: int, prefix: str, si_b32: str, bucket_dir: str) -> None:
        """Visit one bucket."""

    def finished_prefix(self, cycle: int, prefix: str, buckets: list[str]) -> None:
        """Every bucket of ``prefix`` has been visited."""

    def finished_cycle(self, cycle: int) -> None:
        """Every prefix has been visited."""


class BucketCountingCrawler(ShareCrawler):
    """Counts buckets; ``last-complete-bucket-count`` after each full cycle (once an hour)."""

    state_name = "bucket_counter.state.json"
    slow_start = 300.0
    minimum_cycle_time = 60 * 60.0

    def add_initial_state(self) -> None:
        self.state.setdefault("bucket-counts", {})
        self.state.setdefault("storage-index-samples", {})
        self.state.setdefault("last-complete-bucket-count", None)

    def finished_prefix(self, cycle: int, prefix: str, buckets: list[str]) -> None:
        crawl_state.count_prefix(self.state, cycle, prefix, buckets)

    def finished_cycle(self, cycle: int) -> None:
        crawl_state.bucket_count_done(self.state, cycle)

    @property
    def last_complete_count(self) -> int | None:
        """Buckets found by the last full cycle, ``None`` before one finished."""
        return self.state.get("last-complete-bucket-count")


class LeaseCheckingCrawler(ShareCrawler):
    """Lease statistics every cycle (twice a day at most) and, if enabled, garbage collection.

    :param policy: the configured ``[storage]expire.*`` rule.
    :param enabled: ``expire.enabled``: whether expired leases are really removed.
    """

    state_name = "lease_checker.state.json"
    history_name = "lease_checker.history.json"
    slow_start = 360.0
    minimum_cycle_time = 12 * 60 * 60.0

    def __init__(self, storage_dir: str | os.PathLike[str], clock: Any, policy: ExpiryPolicy,
                 enabled: bool, slow_start: float | None = None) -> None:
        super().__init__(storage_dir, clock, slow_start)
        self.policy = policy
        self.enabled = enabled
        self.history_path = self.storage_dir / self.history_name
        #: shares deleted since start (the statistics' share counts watch it).
        self.deleted_shares = 0

    def add_initial_state(self) -> None:
        # key by key: a state saved by another version may lack some
        cycle_data = self.state.setdefault("cycle-to-date", {})
        for key, value in crawl_state.empty_cycle().items():
            cycle_data.setdefault(key, value)

    def started_cycle(self, cycle: int) -> None:
        self.state["cycle-to-date"] = crawl_state.empty_cycle()

    def process_bucket(self, cycle: int, prefix: str, si_b32: str, bucket_dir: str) -> None:
        result = examine_bucket(bucket_dir, si_b32, self.state["cycle-to-date"],
                                self.clock.seconds(), self.policy, self.enabled)
        self.deleted_shares += result.deleted_shares

    def finished_cycle(self, cycle: int) -> None:
        policy = self.policy
        mode = [policy.mode, policy.override_lease_duration, policy.cutoff_date,
                [kind for kind in ("immutable", "mutable") if policy.applies_to(kind)]]
        entry = crawl_state.history_entry(
            self.state["cycle-to-date"], self.state.get("current-cycle-start-time"),
            self.clock.seconds(), self.enabled, mode)
        write_atomically(self.history_path, json.dumps(
            crawl_state.history_with(self.history(), cycle, entry), sort_keys=True))

    def history(self) -> dict[str, Any]:
        """The saved history of finished cycles (cycle number as text -> figures)."""
        try:
            history = json.loads(self.history_path.read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        return history if isinstance(history, dict) else {}

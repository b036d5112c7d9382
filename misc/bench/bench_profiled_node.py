"""Run one of our nodes (``tahoe run``) with cProfile switched on and off by signals.

    python bench_profiled_node.py OUT_PREFIX run --allow-stdin-close NODEDIR

* ``SIGUSR1`` starts a profile: the reactor thread, and every function the
  node hands to the thread pool (``deferToThreadPool``: hashing, encoding)
  each profiled in its worker thread;
* ``SIGUSR2`` stops it and writes ``OUT_PREFIX-<n>.main.prof`` (the reactor
  thread) and ``OUT_PREFIX-<n>.workers.prof`` (all worker calls merged), then
  ``OUT_PREFIX-<n>.done``, for ``n`` = 1, 2, …

The signal handlers run on the main (reactor) thread, so the main profile is
enabled there; start-up and idle time are outside any profile. Every profile
times its own thread's CPU (``time.thread_time``), not the wall clock, so a
thread waiting for the GIL or descheduled by other work on the machine is
not charged for it.
"""
from __future__ import annotations

import cProfile
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["main"]


class Profiles:
    """The profiles of the current window (main thread and worker calls)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.count = 0
        self.active = False
        self.main: cProfile.Profile | None = None
        self.workers: list[cProfile.Profile] = []
        self.lock = threading.Lock()

    def start(self, *_: Any) -> None:
        """SIGUSR1: begin a window."""
        if self.active:
            return
        self.workers = []
        self.main = cProfile.Profile(time.thread_time)
        self.active = True
        self.main.enable()

    def stop(self, *_: Any) -> None:
        """SIGUSR2: end the window and write the files."""
        if not self.active or self.main is None:
            return
        self.main.disable()
        self.active = False
        self.count += 1
        base = f"{self.prefix}-{self.count}"
        self.main.dump_stats(base + ".main.prof")
        with self.lock:
            workers = list(self.workers)
        if workers:
            merged = workers[0]
            merged.create_stats()
            import pstats
            stats = pstats.Stats(merged)
            for other in workers[1:]:
                other.create_stats()
                stats.add(other)
            stats.dump_stats(base + ".workers.prof")
        Path(base + ".done").write_text(f"{len(workers)} worker calls\n")

    def wrap(self, func: Any) -> Any:
        """``func`` profiled in whichever thread runs it, when a window is open."""
        def profiled(*args: Any, **kwargs: Any) -> Any:
            if not self.active:
                return func(*args, **kwargs)
            profile = cProfile.Profile(time.thread_time)
            with self.lock:
                self.workers.append(profile)
            profile.enable()
            try:
                return func(*args, **kwargs)
            finally:
                profile.disable()
        return profiled


def main(argv: list[str]) -> int:
    """Install the signal handlers and the thread-pool hook, then run ``tahoe ARGV``."""
    prefix, tahoe_argv = argv[0], argv[1:]
    profiles = Profiles(prefix)
    signal.signal(signal.SIGUSR1, profiles.start)
    signal.signal(signal.SIGUSR2, profiles.stop)
    from twisted.internet import threads
    original = threads.deferToThreadPool

    def deferToThreadPool(reactor: Any, pool: Any, f: Any, *args: Any,  # noqa: N802
                          **kwargs: Any) -> Any:
        return original(reactor, pool, profiles.wrap(f), *args, **kwargs)

    threads.deferToThreadPool = deferToThreadPool
    import os

    from tahoe.cli.main import run as tahoe_run
    return tahoe_run(tahoe_argv, sys.stdout, sys.stderr, os.environ)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""What a running client or storage node reports at ``/statistics``.

Ties the pure :class:`~.registry.Statistics` to the node's clock, its
process (uptime, CPU, memory) and, on storage nodes, the storage server (space,
share counts). Keys: ``reference/frontends.md`` §5, and ours in ``docs/munin.md``.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from twisted.internet import threads

from ..storage import paths
from .host import ShareCount, ShareCounter, disk_usage, memory_usage
from .monitor import CPUMonitor
from .registry import Statistics, Value


def reactor_thread_runner(reactor: Any) -> Callable[..., Any]:
    """``run(f, *args)``: a Deferred of ``f(*args)`` run in the reactor's thread pool."""
    def run(function: Callable[..., Any], *args: Any) -> Any:
        return threads.deferToThreadPool(reactor, reactor.getThreadPool(), function, *args)
    return run


def _index_totals(index: Any) -> ShareCount | None:
    """Buckets and shares from a fresh share index; None while it is not to be trusted."""
    if index is None or not index.fresh or index.closed:
        return None
    totals = index.index.totals
    return ShareCount(totals.buckets, totals.shares)


def _index_pending(index: Any) -> bool:
    """Whether a share index is being rebuilt (its totals will come)."""
    return index is not None and not index.fresh and not index.closed


class NodeStatistics:
    """The statistics of one node.

    :param clock: the reactor (``seconds``, ``callLater``), or a ``task.Clock``.
    :param timer: monotonic seconds, for operation latencies.
    :param process_time: CPU seconds used by this process.
    :param memory: returns the ``node.memory.*`` values.
    :param run_in_thread: runs the share walk off the reactor thread; defaults
        to the reactor's thread pool.
    """

    def __init__(self, clock: Any, *, timer: Callable[[], float] = time.perf_counter,
                 process_time: Callable[[], float] = time.process_time,
                 memory: Callable[[], dict[str, int]] = memory_usage,
                 run_in_thread: Callable[..., Any] | None = None) -> None:
        self._clock = clock
        self.statistics = Statistics(timer)
        self.cpu = CPUMonitor(clock, process_time)
        self._memory = memory
        self._run_in_thread = run_in_thread
        self._started = clock.seconds()
        self._share_counters: list[ShareCounter] = []
        self.statistics.add_producer(self._node_values)

    def start(self) -> None:
        """Start sampling the CPU."""
        self.cpu.start()

    def stop(self) -> None:
        """Stop sampling the CPU."""
        self.cpu.stop()

    def _node_values(self) -> dict[str, Value]:
        values: dict[str, Value] = {"node.uptime": self._clock.seconds() - self._started}
        values.update(self.cpu.usage.stats())
        values.update(self._memory())
        return values

    def add_storage_server(self, server: Any, storage_dir: str | os.PathLike[str],
                           expired: Callable[[], int] = lambda: 0, index: Any = None) -> None:
        """Report the storage server's space and the shares under ``storage_dir``.

        :param server: has ``stats()`` (a ``StorageStats``).
        :param expired: how many shares garbage collection has deleted so far.
        :param index: the server's :class:`~tahoe.storage.indexing.IndexKeeper`: while it
            is fresh, its running totals are the share counts (no walk).
        """
        shares_dir = os.path.join(os.fspath(storage_dir), paths.SHARES_DIR)
        counters = self.statistics.counters

        def changes() -> tuple[int, int, int]:
            # shares appear at close (immutable), appear or go at writev (mutable),
            # and go when garbage collection deletes them
            now = counters()
            return (now.get("storage_server.close", 0), now.get("storage_server.writev", 0),
                    expired())

        counter = ShareCounter(shares_dir, self._clock,
                               self._run_in_thread or reactor_thread_runner(self._clock),
                               changes, index_totals=lambda: _index_totals(index),
                               index_pending=lambda: _index_pending(index))
        self._share_counters.append(counter)

        def storage_values() -> dict[str, Value]:
            stats = server.stats()
            values: dict[str, Value] = {
                "storage_server.allocated": stats.allocated,
                "storage_server.reserved_space": stats.reserved_space,
                "storage_server.disk_avail": stats.available,
                "storage_server.accepting_immutable_shares": stats.accepting_immutable_shares,
            }
            values.update(disk_usage(shares_dir))
            count = counter.current()
            if count is not None:
                values["storage_server.total_bucket_count"] = count.buckets
                values["storage_server.total_share_count"] = count.shares
            return values

        self.statistics.add_producer(storage_values)

    async def document(self) -> dict[str, dict[str, Any]]:
        """The ``{"counters", "stats"}`` document, share counts refreshed if stale."""
        for counter in self._share_counters:
            await counter.refresh()
        return self.statistics.document()

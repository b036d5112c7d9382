"""CPU per operation for every process of a grid, and the other work on the machine meanwhile.

* :class:`CpuMeter` adds up, for a named operation (``upload_1k``, ``mkdir``,
  ``cp_up_300``...), the wall time and the CPU each process used while it
  ran: every node of the grid (its process tree from ``/proc/<pid>/stat``,
  with the children it reaped), ``cli`` (the CLI processes the benchmark ran
  and reaped meanwhile: ``RUSAGE_CHILDREN``) and ``bench`` (the benchmark
  process itself, the HTTP client of the web-API operations:
  ``RUSAGE_SELF``).  Divided by the number of operations this is CPU per
  operation; summed over the processes and divided by the cores, a floor
  under the wall time.
* :class:`LoadAccount` measures the *other* work on the machine while one
  grid is measured: busy time of every CPU (``/proc/stat``) minus the CPU of
  the benchmark and everything it started, plus the CPU of the grids that
  are meant to be frozen (so a grid that was not really stopped counts as
  other work).
"""
from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from bench_proc import machine_busy_seconds, proc_table, tree_seconds

__all__ = ["CpuMeter", "Load", "LoadAccount", "Roots"]

#: Process name -> the PIDs whose trees make it up (a node: the ``tahoe run`` process and
#: the PID of its ``running.process``, the same process or a child).
Roots = Mapping[str, Sequence[int]]


def _rusage_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


class CpuMeter:
    """CPU per process of one grid, added up per operation into ``into``.

    :param roots: gives the grid's processes when a measurement starts.
    :param into: ``{op: {"ops": n, "wall_s": s, "cpu_s": {process: s}}}``, added to.
    """

    def __init__(self, roots: Callable[[], Roots], into: dict[str, Any]) -> None:
        self.roots = roots
        self.into = into

    @contextmanager
    def measure(self, op: str, count: int) -> Iterator[None]:
        """Count the body as ``count`` operations ``op`` (nothing is recorded if it raises)."""
        roots = self.roots()
        table = proc_table()
        before = {name: tree_seconds(pids, table) for name, pids in roots.items()}
        bench, cli = _rusage_seconds(resource.RUSAGE_SELF), _rusage_seconds(
            resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        yield
        wall = time.perf_counter() - started
        used = {"bench": _rusage_seconds(resource.RUSAGE_SELF) - bench,
                "cli": _rusage_seconds(resource.RUSAGE_CHILDREN) - cli}
        table = proc_table()
        for name, pids in roots.items():
            used[name] = max(0.0, tree_seconds(pids, table) - before[name])
        entry = self.into.setdefault(op, {"ops": 0, "wall_s": 0.0, "cpu_s": {}})
        entry["ops"] += count
        entry["wall_s"] += wall
        for name, seconds in used.items():
            entry["cpu_s"][name] = entry["cpu_s"].get(name, 0.0) + seconds


@dataclass(frozen=True)
class Load:
    """Wall time of a stretch of measuring and the other work's CPU-seconds in it (of which
    ``frozen_s`` by the grids meant to be frozen: zero when freezing works)."""

    wall_s: float
    foreign_s: float
    frozen_s: float = 0.0

    @property
    def pct(self) -> float:
        """Other work in % of one core."""
        return 100.0 * self.foreign_s / self.wall_s if self.wall_s > 0 else 0.0


class LoadAccount:
    """Other work on the machine from now until :meth:`stop`.

    :param frozen: the processes (trees) of the grids that should be frozen
        meanwhile; whatever CPU they use counts as other work.
    """

    def __init__(self, frozen: Sequence[int] = ()) -> None:
        self.root = os.getpid()
        self.frozen = list(frozen)
        table = proc_table()
        ours = _rusage_seconds(resource.RUSAGE_SELF) + _rusage_seconds(resource.RUSAGE_CHILDREN)
        self._start = (time.monotonic(), machine_busy_seconds(), ours + self._below(table),
                       tree_seconds(self.frozen, table))

    def _below(self, table: dict[int, Any]) -> float:
        """CPU of the live processes below this one (nodes, CLIs, the guard)."""
        return tree_seconds([self.root], table) - table[self.root].seconds

    def stop(self) -> Load:
        """The stretch since the account was made.

        This process's own CPU comes from ``getrusage`` read inside the stretch
        whose busy time is counted, the two scans of ``/proc`` (several ms each)
        outside it, so the benchmark's book-keeping is not taken for other work.
        """
        busy = machine_busy_seconds()
        ours = _rusage_seconds(resource.RUSAGE_SELF) + _rusage_seconds(resource.RUSAGE_CHILDREN)
        wall = time.monotonic()
        table = proc_table()
        ours += self._below(table)
        wall0, busy0, ours0, frozen0 = self._start
        frozen = tree_seconds(self.frozen, table) - frozen0
        return Load(wall - wall0, max(0.0, (busy - busy0) - (ours - ours0) + frozen), frozen)

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
  grid is measured: the CPU of every process that is not the benchmark or
  below it, the time the hypervisor stole, and the CPU of the grids that are
  meant to be frozen (so a grid that was not really stopped counts as other
  work).
"""
from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from bench_proc import descendants, proc_table, steal_seconds, tree_seconds

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

    Other work is the CPU used meanwhile by every process that is not this one
    or below it (``/proc/<pid>/stat``, with what each reaped: a process that
    ended counts in its reaper's, an orphan's in PID 1's, less what it had used
    before), plus the time
    the hypervisor stole (``steal`` of ``/proc/stat``), plus whatever the
    grids meant to be frozen used.  Counting the other processes rather than
    taking ours from the machine's busy time keeps a quiet machine at exactly
    zero: busy time is sampled at each timer tick, and over blocks of tens of
    milliseconds its sampling error alone would be several % of a core.
    (Interrupt time is left out: on a machine doing nothing else it is our
    own loopback traffic.)

    :param frozen: the processes (trees) of the grids that should be frozen
        meanwhile; whatever CPU they use counts as other work.
    :param measured: the processes (trees) of the grid being measured, ours even
        if they were not below this process.
    """

    def __init__(self, frozen: Sequence[int] = (), measured: Sequence[int] = ()) -> None:
        self.roots = [os.getpid(), *measured]
        self.frozen = list(frozen)
        self._start = self._snapshot()

    def _snapshot(self) -> tuple[float, float, dict[int, float], float]:
        table = proc_table()
        ours = descendants(self.roots, table) | descendants(self.frozen, table)
        others = {pid: info.seconds for pid, info in table.items() if pid not in ours}
        return (time.monotonic(), steal_seconds(), others, tree_seconds(self.frozen, table))

    def stop(self) -> Load:
        """The stretch since the account was made."""
        wall, steal, others, frozen = self._snapshot()
        wall0, steal0, others0, frozen0 = self._start
        # A process that appeared meanwhile counts whole. One that ended was reaped: its
        # reaper's cutime grew by its whole life, of which what it had used before is taken off.
        processes = sum(max(0.0, seconds - others0.get(pid, 0.0))
                        for pid, seconds in others.items())
        processes = max(0.0, processes - sum(seconds for pid, seconds in others0.items()
                                             if pid not in others))
        frozen_used = max(0.0, frozen - frozen0)
        return Load(wall - wall0, processes + max(0.0, steal - steal0) + frozen_used,
                    frozen_used)

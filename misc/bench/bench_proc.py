"""Memory and CPU of node processes, read from ``/proc`` (Linux).

* RSS: ``VmRSS`` of ``/proc/<pid>/status``; the peak over an interval is the
  larger of ``VmHWM`` (the kernel's high-water mark, reset at the start of the
  interval by writing ``5`` to ``/proc/<pid>/clear_refs``) and the largest
  ``VmRSS`` seen by a thread polling every few milliseconds (in case the
  reset is not allowed).
* CPU: ``utime + stime`` of ``/proc/<pid>/stat`` in clock ticks; for a
  process tree (a node and whatever it started), ``utime + stime + cutime +
  cstime`` of every live process in it, so children it reaped still count.
* Memory at rest: ``Rss``, ``Pss`` and USS (``Private_Clean +
  Private_Dirty``) of ``/proc/<pid>/smaps_rollup``.

A node's PID is the first field of ``running.process`` in its directory
(both Tahoe 1.20 and we write it); the PID of the ``tahoe run`` process we
started is the fallback.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CpuAccount", "MemoryWatch", "ProcInfo", "cpu_seconds", "descendants",
           "machine_busy_seconds", "memory_mib", "node_pid", "proc_table", "reset_peak",
           "rss_mib", "status_kib", "steal_seconds", "tree_seconds", "wait_for_quiet_machine",
           "wait_quiet"]

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")
KIB_PER_MIB = 1024.0


def node_pid(basedir: Path, fallback: int) -> int:
    """The PID in ``basedir/running.process`` (first field), else ``fallback``."""
    try:
        return int((basedir / "running.process").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return fallback


def status_kib(pid: int, field: str) -> int | None:
    """A ``kB`` field (``VmRSS``, ``VmHWM``) of ``/proc/<pid>/status``, or None if gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def rss_mib(pid: int) -> float | None:
    """Resident set size of ``pid`` in MiB."""
    kib = status_kib(pid, "VmRSS")
    return None if kib is None else kib / KIB_PER_MIB


def reset_peak(pid: int) -> bool:
    """Reset the kernel's ``VmHWM`` of ``pid`` to its current RSS; False if not allowed."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as clear:
            clear.write("5")
        return True
    except OSError:
        return False


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds ``pid`` has used so far, or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_SECOND


class MemoryWatch:
    """Peak RSS of one process between :meth:`start` and :meth:`stop`.

    :param pid: the process.
    :param interval: seconds between ``VmRSS`` polls.
    """

    def __init__(self, pid: int, interval: float = 0.01) -> None:
        self.pid = pid
        self.interval = interval
        self.before_mib: float | None = None
        self.peak_mib: float | None = None
        self.hwm_reset = False
        self._max_kib = 0
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> MemoryWatch:
        """Record the RSS now, reset the high-water mark and start polling."""
        self.before_mib = rss_mib(self.pid)
        self.hwm_reset = reset_peak(self.pid)
        self._thread = threading.Thread(target=self._poll, name=f"rss-{self.pid}", daemon=True)
        self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._done.is_set():
            kib = status_kib(self.pid, "VmRSS")
            if kib is not None:
                self._max_kib = max(self._max_kib, kib)
            self._done.wait(self.interval)

    def stop(self) -> float | None:
        """Stop polling; return the peak RSS in MiB."""
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        peaks = [self._max_kib]
        if self.hwm_reset:
            peaks.append(status_kib(self.pid, "VmHWM") or 0)
        self.peak_mib = max(peaks) / KIB_PER_MIB if max(peaks) else None
        return self.peak_mib

    def __enter__(self) -> MemoryWatch:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def cpu_over(pids: Sequence[int], window: float,
             wait: Callable[[float], None] = time.sleep) -> list[float | None]:
    """Each process's CPU use over ``window`` seconds, as a percentage of one core."""
    before = [cpu_seconds(pid) for pid in pids]
    started = time.monotonic()
    wait(window)
    elapsed = time.monotonic() - started
    after = [cpu_seconds(pid) for pid in pids]
    return [None if b is None or a is None else 100.0 * (a - b) / elapsed
            for b, a in zip(before, after)]


def wait_quiet(pids: Sequence[int], *, threshold_pct: float = 10.0, window: float = 0.25,
               timeout: float = 20.0) -> float:
    """Wait until the processes together use less than ``threshold_pct`` of a core.

    Polls in windows of ``window`` seconds with a deadline; used after a grid
    starts (connections, announcements) so that measurements start on a
    quiet grid.

    :returns: seconds waited (``timeout`` if the grid never got quiet).
    """
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        usage = cpu_over(pids, window)
        if sum(u or 0.0 for u in usage) < threshold_pct:
            break
    return time.monotonic() - started


def memory_mib(pid: int) -> dict[str, float] | None:
    """``rss``, ``pss`` and ``uss`` (private clean + dirty) of ``pid`` in MiB, from
    ``/proc/<pid>/smaps_rollup``; None if the process is gone or the file unreadable."""
    kib: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                parts = line.split()
                if len(parts) == 3 and parts[2] == "kB":
                    kib[parts[0].rstrip(":")] = int(parts[1])
    except (OSError, ValueError):
        return None
    if "Rss" not in kib:
        return None
    return {"rss": kib["Rss"] / KIB_PER_MIB, "pss": kib.get("Pss", 0) / KIB_PER_MIB,
            "uss": (kib.get("Private_Clean", 0) + kib.get("Private_Dirty", 0)) / KIB_PER_MIB}


@dataclass(frozen=True)
class ProcInfo:
    """One line of the process table.

    :ivar ppid: the parent's PID.
    :ivar state: the state letter of ``/proc/<pid>/stat`` (``T``: stopped, ``Z``: zombie).
    :ivar seconds: CPU-seconds used, its reaped children's included
        (``utime + stime + cutime + cstime``).
    """

    ppid: int
    state: str
    seconds: float


def proc_table() -> dict[int, ProcInfo]:
    """Every process of the machine, read from ``/proc/<pid>/stat`` in one pass."""
    table: dict[int, ProcInfo] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                text = stat.read()
        except OSError:
            continue
        fields = text.rsplit(")", 1)[1].split()
        table[int(entry)] = ProcInfo(int(fields[1]), fields[0],
                                     sum(int(f) for f in fields[11:15]) / TICKS_PER_SECOND)
    return table


def descendants(roots: Iterable[int], table: dict[int, ProcInfo]) -> set[int]:
    """The roots that are alive and every process below them."""
    children: dict[int, list[int]] = {}
    for pid, info in table.items():
        children.setdefault(info.ppid, []).append(pid)
    found: set[int] = set()
    todo = [pid for pid in roots if pid in table]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return found


def tree_seconds(roots: Iterable[int], table: dict[int, ProcInfo]) -> float:
    """CPU-seconds of the process trees of ``roots`` (live processes, with what they reaped)."""
    return sum(table[pid].seconds for pid in descendants(roots, table))


def machine_busy_seconds() -> float:
    """CPU-seconds all CPUs spent not idle since boot (user, nice, system, irq, softirq, steal)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / TICKS_PER_SECOND


def steal_seconds() -> float:
    """CPU-seconds the hypervisor gave to others since boot (``steal`` of ``/proc/stat``)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    return int(fields[7]) / TICKS_PER_SECOND


def _our_seconds(root: int) -> float:
    """CPU-seconds of ``root`` and every live descendant, with their reaped children."""
    return tree_seconds([root], proc_table())


class CpuAccount:
    """How much CPU *other* work on the machine used while we measured.

    ``foreign = machine busy time − CPU of this process and its descendants``
    (nodes, CLIs, helpers), over the wall time, in % of one core (a 2-core
    machine has 200 %).  A process of ours that exits and is reaped still
    counts as ours; one that exits unreaped would count as foreign.
    """

    def __init__(self) -> None:
        self.root = os.getpid()
        self._start = (time.monotonic(), machine_busy_seconds(), _our_seconds(self.root))

    def foreign_pct(self) -> float:
        """Other work's CPU since this account was made, in % of one core."""
        wall, busy, ours = self._start
        elapsed = time.monotonic() - wall
        if elapsed <= 0:
            return 0.0
        other = (machine_busy_seconds() - busy) - (_our_seconds(self.root) - ours)
        return max(0.0, 100.0 * other / elapsed)


def wait_for_quiet_machine(max_wait: float, threshold_pct: float = 25.0,
                           window: float = 1.0) -> tuple[float, float]:
    """Wait (at most ``max_wait`` s) until other work uses under ``threshold_pct`` of a core.

    :returns: (seconds waited, other work's CPU in the last window, % of a core).
    """
    started = time.monotonic()
    foreign = 0.0
    while True:
        account = CpuAccount()
        time.sleep(window)
        foreign = account.foreign_pct()
        if foreign < threshold_pct or time.monotonic() - started >= max_wait:
            return time.monotonic() - started, foreign

"""Freezing a grid with SIGSTOP while another is measured, and never leaving one frozen.

``bench.py --compare`` keeps our grid and Tahoe's up at once and measures
them in alternating blocks; the grid not being measured is frozen
(``SIGSTOP`` to every process of its nodes' process trees) so that its
timers, crawlers and connection checks take no CPU from the one being
measured, and thawed (``SIGCONT``) before its turn.

A frozen grid must never outlive the run frozen. Three things see to it:

* :class:`Freezer` is a context manager: leaving it (normally, by an
  exception, by ``KeyboardInterrupt`` on Ctrl-C, or by the ``SystemExit``
  that ``bench.py`` raises on SIGTERM and SIGHUP) thaws every process it
  froze, before the node processes are stopped;
* a guard process (this file run with ``--guard``, in its own session so
  Ctrl-C does not reach it) is told every PID before it is stopped and after
  it is continued; when the benchmark's end of the pipe closes (the
  benchmark exited, even killed with SIGKILL) it continues every PID still
  frozen;
* a process is recorded as frozen before the signal is sent.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from bench_proc import descendants, proc_table  # noqa: E402

__all__ = ["FreezeFailed", "Freezer"]

#: Seconds for every process of a grid to show the stopped state after SIGSTOP (a process in
#: uninterruptible sleep, e.g. flushing a large upload's shares to disk, stops only after it).
STOP_TIMEOUT = 60.0
#: Rounds of looking for processes started (forked) while a grid was being stopped.
RESCANS = 5


class FreezeFailed(RuntimeError):
    """A process did not stop (its grid is thawed again before this is raised)."""


class Freezer:
    """Stops and continues named groups of process trees (our grid, Tahoe's grid)."""

    def __init__(self) -> None:
        self._frozen: dict[str, list[int]] = {}
        self._guard: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Freezer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def frozen(self, name: str) -> bool:
        """Whether the group ``name`` is frozen now."""
        return name in self._frozen

    def freeze(self, name: str, roots: Iterable[int]) -> list[int]:
        """SIGSTOP every live process in the trees of ``roots``; wait until each is stopped.

        :returns: the PIDs stopped.
        :raises FreezeFailed: if one does not stop within :data:`STOP_TIMEOUT` (the
            group is thawed first).
        """
        roots = list(roots)
        stopped = self._frozen.setdefault(name, [])
        for _ in range(RESCANS):
            table = proc_table()
            new = [pid for pid in sorted(descendants(roots, table))
                   if pid not in stopped and table[pid].state not in "ZX"]
            if not new:
                break
            for pid in new:
                stopped.append(pid)  # recorded (and told to the guard) before it is stopped
                self._tell("S", pid)
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + STOP_TIMEOUT
        while True:
            table = proc_table()
            running = [pid for pid in stopped
                       if pid in table and table[pid].state not in "TtZX"]
            if not running:
                return list(stopped)
            if time.monotonic() > deadline:
                self.thaw(name)
                raise FreezeFailed(f"{name}: processes {running} did not stop")
            time.sleep(0.005)

    def thaw(self, name: str) -> None:
        """SIGCONT every process of the group ``name`` (nothing if it is not frozen)."""
        for pid in self._frozen.pop(name, []):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            self._tell("C", pid)

    def thaw_all(self) -> None:
        """Thaw every group."""
        for name in list(self._frozen):
            self.thaw(name)

    def close(self) -> None:
        """Thaw every group and end the guard."""
        self.thaw_all()
        if self._guard is not None:
            guard, self._guard = self._guard, None
            try:
                if guard.stdin is not None:
                    guard.stdin.close()
            except OSError:
                pass
            try:
                guard.wait(timeout=10)
            except subprocess.TimeoutExpired:
                guard.kill()
                guard.wait()

    def _tell(self, what: str, pid: int) -> None:
        """Tell the guard that ``pid`` is about to be stopped (``S``) or was continued (``C``)."""
        if self._guard is None:
            if what != "S":
                return
            self._guard = subprocess.Popen(
                [sys.executable, "-I", str(Path(__file__).resolve()), "--guard"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)
        pipe: IO[bytes] | None = self._guard.stdin
        try:
            if pipe is not None:
                pipe.write(f"{what} {pid}\n".encode("ascii"))
                pipe.flush()
        except (BrokenPipeError, ValueError):
            pass  # the guard died: the context manager still thaws


def _guard() -> int:
    """Read ``S PID`` / ``C PID`` lines until end of file, then continue every PID still stopped."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    frozen: set[int] = set()
    for line in sys.stdin.buffer:
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            (frozen.add if parts[0] == b"S" else frozen.discard)(int(parts[1]))
    for pid in frozen:
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--guard"]:
        sys.exit(_guard())
    sys.exit(f"usage: {sys.argv[0]} --guard (started by Freezer, not by hand)")

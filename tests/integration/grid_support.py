"""Run ``tahoe grid`` (ours, as a separate program) from tests, and clean up after it.

Every node a test's grid starts is stopped at the end: first with ``tahoe grid
stop``, then, for any PID recorded in ``grid.json`` that still runs (same
kernel start time), by SIGKILL to that PID.  Nothing is looked up by name.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.nodes import our_tahoe

GRID_TIMEOUT = 180.0


def tahoe(*args: str | os.PathLike[str], timeout: float = GRID_TIMEOUT,
          input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run our ``tahoe ARGS`` to completion (stdin from /dev/null unless ``input``)."""
    return subprocess.run([str(our_tahoe()), *map(os.fspath, args)],
                          stdin=None if input is not None else subprocess.DEVNULL,
                          input=input, capture_output=True, timeout=timeout)


def recorded_nodes(grid_dir: Path) -> list[dict[str, object]]:
    """The node entries of ``grid.json`` (empty if there is none)."""
    try:
        return list(json.loads((grid_dir / "grid.json").read_text())["nodes"])
    except FileNotFoundError:
        return []


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def process_alive(pid: int, start_time: str | None = None) -> bool:
    """Whether ``pid`` runs (a zombie does not count), with this start time if given."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    if state in ("Z", "X"):
        return False
    return start_time is None or _start_time(pid) == start_time


def kill_leftovers(grid_dir: Path) -> list[int]:
    """SIGKILL every recorded node PID that still runs; return those PIDs."""
    killed = []
    for node in recorded_nodes(grid_dir):
        pid, start_time = node.get("pid"), node.get("start_time")
        if isinstance(pid, int) and process_alive(pid, start_time if isinstance(start_time, str)
                                                  else None):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed


@pytest.fixture
def grid_cleanup() -> Iterator[list[Path]]:
    """Grid directories a test uses: stopped (and leftovers killed) when it ends."""
    directories: list[Path] = []
    yield directories
    for directory in directories:
        if (directory / "grid.json").exists():
            tahoe("grid", "stop", directory, "--timeout=10")
            kill_leftovers(directory)

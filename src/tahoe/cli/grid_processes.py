"""The node processes of a local grid: start, watch and stop them by PID; ``grid.json``.

Used by :mod:`tahoe.cli.grid`.  Every node runs as
``<python> -m tahoe.cli.main run NODEDIR`` in a session of its own (so a
Ctrl-C on the terminal reaches only the grid command, which then stops the
nodes), with its output appended to ``GRIDDIR/logs/<name>.log``.  A node is
known by its PID and, on Linux, the kernel's start time of that PID, so a PID
reused by an unrelated process is never signalled.  Nothing is ever looked up
by name.  Standard library only; no Twisted.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

__all__ = ["GRID_FILE", "GridFileError", "NodeRecord", "NodeFailed", "WaitTimeout",
           "process_start_time", "pid_alive", "spawn", "stop_nodes", "wait_until",
           "read_grid_file", "update_node_record", "write_grid_file"]

T = TypeVar("T")

GRID_FILE = "grid.json"
GRID_FILE_FORMAT = "tahoe-lafs-py local grid"
POLL_INTERVAL = 0.05
STOP_TIMEOUT = 15.0
LOG_TAIL_LINES = 25


class GridFileError(Exception):
    """``grid.json`` is missing or unreadable."""


class NodeFailed(Exception):
    """A node process exited while the grid needed it.

    :ivar node: the node's record.
    :ivar status: its exit status (negative: killed by that signal).
    """

    def __init__(self, node: NodeRecord, status: int | None) -> None:
        self.node = node
        self.status = status
        super().__init__(f"node {node.name} exited with status {status}")


class WaitTimeout(Exception):
    """A condition did not become true before its deadline."""


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (Linux ``/proc``), or None if unknown."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[19] if len(fields) > 19 else None


def _process_state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def pid_alive(pid: int, start_time: str | None = None) -> bool:
    """Whether ``pid`` is a live process (not a zombie) started at ``start_time`` if given."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return start_time is None
    if _process_state(pid) in ("Z", "X"):
        return False
    if start_time is not None:
        current = process_start_time(pid)
        if current is not None and current != start_time:
            return False
    return True


class NodeRecord:
    """One node of the grid: its name, role, directory, ports and (when running) process.

    :ivar name: ``introducer``, ``storage<i>`` or ``client``; also the nickname.
    :ivar role: ``"introducer"``, ``"storage"`` or ``"client"``.
    :ivar web_port: the gateway's port, or None (the introducer has no gateway).
    :ivar tub_port: the Foolscap port, or None (the client does not listen).
    :ivar pid: the process id while running, else None.
    :ivar start_time: the kernel's start time of ``pid`` (to tell it from a reused PID).
    """

    def __init__(self, name: str, role: str, web_port: int | None, tub_port: int | None,
                 pid: int | None = None, start_time: str | None = None) -> None:
        self.name = name
        self.role = role
        self.web_port = web_port
        self.tub_port = tub_port
        self.pid = pid
        self.start_time = start_time
        self.popen: subprocess.Popen[bytes] | None = None
        self.grid_dir = ""
        self.log_offset = 0  # where this run's output starts in the log

    def __repr__(self) -> str:
        return f"<NodeRecord {self.name} pid={self.pid}>"

    @property
    def basedir(self) -> str:
        """The node directory."""
        return os.path.join(self.grid_dir, self.name)

    @property
    def log_path(self) -> str:
        """Where the node's output goes."""
        return os.path.join(self.grid_dir, "logs", f"{self.name}.log")

    def to_json(self) -> dict[str, Any]:
        """The node's entry in ``grid.json``."""
        return {"name": self.name, "role": self.role, "web_port": self.web_port,
                "tub_port": self.tub_port, "pid": self.pid, "start_time": self.start_time}

    @classmethod
    def from_json(cls, entry: Mapping[str, Any], grid_dir: str) -> NodeRecord:
        """A record from its ``grid.json`` entry."""
        node = cls(str(entry["name"]), str(entry["role"]), entry.get("web_port"),
                   entry.get("tub_port"), entry.get("pid"), entry.get("start_time"))
        node.grid_dir = grid_dir
        return node

    def running(self) -> bool:
        """Whether the node's process is alive (reaping it if it is our child and has exited)."""
        if self.popen is not None:
            return self.popen.poll() is None
        return self.pid is not None and pid_alive(self.pid, self.start_time)

    def exit_status(self) -> int | None:
        """The exit status if the process is our child and has exited, else None."""
        return self.popen.poll() if self.popen is not None else None

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of this run's log, indented, for error messages."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(self.log_offset, f.tell() - 16384))
                text = f.read().decode("utf-8", "replace")
        except OSError as e:
            return f"    <cannot read {self.log_path}: {e.strerror}>"
        return "\n".join("    " + line for line in text.splitlines()[-lines:])

    def url(self) -> str | None:
        """The node's gateway URL from ``node.url`` once written (None before)."""
        try:
            with open(os.path.join(self.basedir, "node.url")) as f:
                line = f.readline().strip()
        except OSError:
            return None
        return line if line.startswith("http") and line.endswith("/") else None


def spawn(node: NodeRecord, env: Mapping[str, str], *, hold_stdin: bool) -> None:
    """Start ``tahoe run`` for ``node`` in a new session; set ``node.pid`` and ``popen``.

    :param hold_stdin: give the node a stdin pipe that we hold, so that it stops
        by itself when this process dies (foreground grids); otherwise stdin is
        /dev/null and ``--allow-stdin-close`` keeps it running (background grids).
    :raises OSError: if the process cannot be started.
    """
    argv = [sys.executable, "-m", "tahoe.cli.main", "run"]
    if not hold_stdin:
        argv.append("--allow-stdin-close")
    argv.append(node.basedir)
    os.makedirs(os.path.dirname(node.log_path), exist_ok=True)
    child_env = dict(env)
    child_env["PYTHONUNBUFFERED"] = "1"  # the log shows what happened up to a failure
    with open(node.log_path, "ab") as log:
        node.log_offset = log.tell()
        log.write(f"\n$ {' '.join(argv)}\n".encode())
        log.flush()
        node.popen = subprocess.Popen(
            argv, stdin=subprocess.PIPE if hold_stdin else subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, cwd=node.grid_dir, env=child_env,
            start_new_session=True, close_fds=True)
    node.pid = node.popen.pid
    node.start_time = process_start_time(node.pid)


def _signal(node: NodeRecord, signum: int) -> None:
    if node.pid is None or not node.running():
        return
    try:
        os.kill(node.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_for_exit(nodes: list[NodeRecord], timeout: float) -> bool:
    """Poll until none of ``nodes`` runs, for at most ``timeout`` s; whether all have exited."""
    deadline = time.monotonic() + timeout
    while any(node.running() for node in nodes):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_INTERVAL)
    return True


def stop_nodes(nodes: Iterable[NodeRecord], timeout: float = STOP_TIMEOUT) -> list[NodeRecord]:
    """Stop the running nodes by PID: SIGTERM to all at once, SIGKILL after ``timeout``.

    Waits (polling) until every one has exited; clears ``pid`` of the stopped ones.

    :returns: the nodes that were running.
    """
    running = [node for node in nodes if node.running()]
    for node in running:
        _signal(node, signal.SIGTERM)
    if not _wait_for_exit(running, timeout):
        for node in running:
            _signal(node, signal.SIGKILL)
        _wait_for_exit(running, timeout)
    for node in running:
        if not node.running():
            if node.popen is not None and node.popen.stdin is not None:
                node.popen.stdin.close()
            node.pid = node.start_time = None
    return running


def wait_until(condition: Callable[[], T | None], what: str, deadline: float,
               nodes: Iterable[NodeRecord]) -> T:
    """Poll ``condition`` until it returns a true value; return that value.

    ``OSError`` and ``ValueError`` from ``condition`` mean "not yet".

    :param deadline: a ``time.monotonic()`` value.
    :param nodes: nodes that must keep running meanwhile.
    :raises NodeFailed: as soon as one of ``nodes`` has exited.
    :raises WaitTimeout: at the deadline (the message names ``what``).
    """
    nodes = list(nodes)
    while True:
        try:
            value = condition()
        except (OSError, ValueError):
            value = None
        if value:
            return value
        for node in nodes:
            if not node.running():
                raise NodeFailed(node, node.exit_status())
        if time.monotonic() >= deadline:
            raise WaitTimeout(what)
        time.sleep(POLL_INTERVAL)


def read_grid_file(grid_dir: str) -> tuple[dict[str, Any], list[NodeRecord]]:
    """``grid.json`` of ``grid_dir``: its settings and its nodes.

    :raises GridFileError: if it is missing or malformed.
    """
    path = os.path.join(grid_dir, GRID_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
        if document.get("format") != GRID_FILE_FORMAT:
            raise ValueError("not a grid file")
        nodes = [NodeRecord.from_json(entry, grid_dir) for entry in document["nodes"]]
    except FileNotFoundError:
        raise GridFileError(f"{grid_dir} holds no local grid (no {GRID_FILE})") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise GridFileError(f"cannot read {path}: {e}") from None
    return document, nodes


def write_grid_file(grid_dir: str, settings: Mapping[str, Any],
                    nodes: Iterable[NodeRecord]) -> None:
    """Write ``grid.json`` atomically: the settings and every node's record."""
    from ..node.fileutil import write_atomically
    document = {**settings, "format": GRID_FILE_FORMAT,
                "nodes": [node.to_json() for node in nodes]}
    write_atomically(os.path.join(grid_dir, GRID_FILE),
                     json.dumps(document, indent=1) + "\n", durable=False)


def update_node_record(grid_dir: str, settings: Mapping[str, Any], node: NodeRecord) -> None:
    """Replace one node's record in ``grid.json``, keeping the others as they are now.

    The read and the write hold an exclusive lock on the grid directory, so that
    ``tahoe grid restart`` of several nodes at once (each its own process) keeps every
    one's new PID; without it, the last to write dropped the others'.
    """
    from ..node.fileutil import directory_lock
    with directory_lock(grid_dir):
        _, current = read_grid_file(grid_dir)
        write_grid_file(grid_dir, settings,
                        [node if n.name == node.name else n for n in current])

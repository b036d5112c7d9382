"""Start, watch and stop external processes (nodes, CLIs) from tests.

Every process is started with its stdin from ``/dev/null`` (or a pipe the test
holds), its stdout and stderr appended to a log file under the test's tmp dir,
and its PID recorded in a :class:`ManagedProcess`.  It is stopped by that PID
only: SIGTERM, then SIGKILL if it has not exited by a deadline.  Nothing here
looks processes up by name.

There are no fixed sleeps: :func:`wait_until` and :func:`wait_for_file` poll
with a deadline, and give up early (with the tail of the log) when a process
they depend on has exited.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Literal, TypeVar

__all__ = [
    "ManagedProcess",
    "ProcessDied",
    "ProcessSet",
    "WaitTimeout",
    "start_process",
    "wait_for_file",
    "wait_until",
]

T = TypeVar("T")

DEFAULT_STOP_TIMEOUT = 15.0
POLL_INTERVAL = 0.05
LOG_TAIL_CHARS = 3000


class WaitTimeout(TimeoutError):
    """A condition did not become true before its deadline."""


class ProcessDied(RuntimeError):
    """A process that a wait depends on exited while we were waiting."""


class ManagedProcess:
    """A child process started by :func:`start_process`, known by its PID.

    :ivar argv: the command line.
    :ivar pid: the process id recorded at start.
    :ivar log_path: the file that receives its stdout and stderr.
    """

    def __init__(self, argv: Sequence[str], popen: subprocess.Popen[bytes], log_path: Path) -> None:
        self.argv = tuple(argv)
        self.pid = popen.pid
        self.log_path = log_path
        self._popen = popen

    def __repr__(self) -> str:
        return f"<ManagedProcess pid={self.pid} argv={' '.join(self.argv)!r}>"

    @property
    def stdin(self) -> IO[bytes] | None:
        """The write end of the stdin pipe, or None when stdin is /dev/null."""
        return self._popen.stdin

    @property
    def returncode(self) -> int | None:
        """The exit status if the process has exited (negative: killed by a signal), else None."""
        return self._popen.poll()

    def is_running(self) -> bool:
        """Whether the process has not exited yet."""
        return self.returncode is None

    def log_tail(self, max_chars: int = LOG_TAIL_CHARS) -> str:
        """The last ``max_chars`` characters of the log file (for error messages)."""
        try:
            data = self.log_path.read_bytes()
        except OSError as e:
            return f"<cannot read {self.log_path}: {e}>"
        return data[-max_chars:].decode("utf-8", "replace")

    def describe(self) -> str:
        """A multi-line summary: command, PID, exit status and the end of the log."""
        return (f"process {self.pid} ({' '.join(self.argv)}), exit status {self.returncode}, "
                f"log {self.log_path}:\n{self.log_tail()}")

    def close_stdin(self) -> None:
        """Close our end of the stdin pipe, if there is one."""
        if self._popen.stdin is not None and not self._popen.stdin.closed:
            self._popen.stdin.close()

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT) -> int:
        """Stop the process by its PID: SIGTERM, then SIGKILL after ``timeout`` seconds.

        Stopping a process that already exited only collects its status.

        :returns: the exit status (negative for a signal).
        """
        if self._popen.poll() is None:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self._popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._popen.wait(timeout=timeout)
        self.close_stdin()
        return self._popen.returncode


def start_process(
    argv: Sequence[str | os.PathLike[str]],
    *,
    log_path: Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: Literal["devnull", "pipe"] = "devnull",
) -> ManagedProcess:
    """Start ``argv`` in the background with output appended to ``log_path``.

    :param stdin: ``"devnull"`` (the default) or ``"pipe"``; with a pipe the
        caller holds the write end (``process.stdin``), so the child sees
        end-of-file when we close it or when the test process dies.
    :raises OSError: if the program cannot be started.
    """
    args = [os.fspath(a) for a in argv]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(f"$ {' '.join(args)}\n".encode())
        log.flush()
        popen = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL if stdin == "devnull" else subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=dict(env) if env is not None else None,
        )
    return ManagedProcess(args, popen, log_path)


class ProcessSet:
    """The processes one fixture or test started; stops them all, newest first.

    Use as a context manager, or call :meth:`stop_all` in a ``finally``.
    """

    def __init__(self) -> None:
        self._processes: list[ManagedProcess] = []

    def __enter__(self) -> ProcessSet:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop_all()

    def __iter__(self) -> Iterator[ManagedProcess]:
        return iter(list(self._processes))

    def start(
        self,
        argv: Sequence[str | os.PathLike[str]],
        *,
        log_path: Path,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        stdin: Literal["devnull", "pipe"] = "devnull",
    ) -> ManagedProcess:
        """Like :func:`start_process`, and remember the process for :meth:`stop_all`."""
        process = start_process(argv, log_path=log_path, cwd=cwd, env=env, stdin=stdin)
        self._processes.append(process)
        return process

    def adopt(self, process: ManagedProcess) -> ManagedProcess:
        """Remember a process started elsewhere, so that :meth:`stop_all` stops it."""
        self._processes.append(process)
        return process

    def stop_all(self, timeout: float = DEFAULT_STOP_TIMEOUT) -> dict[int, int]:
        """Stop every remembered process by PID (newest first) and forget them.

        :returns: PID -> exit status.
        """
        statuses: dict[int, int] = {}
        while self._processes:
            process = self._processes.pop()
            statuses[process.pid] = process.stop(timeout)
        return statuses


def _check_alive(processes: Iterable[ManagedProcess], what: str) -> None:
    for process in processes:
        if not process.is_running():
            raise ProcessDied(f"while waiting for {what}: {process.describe()}")


def wait_until(
    predicate: Callable[[], T | None],
    timeout: float,
    what: str,
    *,
    processes: Iterable[ManagedProcess] = (),
    ignore: tuple[type[BaseException], ...] = (),
    interval: float = POLL_INTERVAL,
) -> T:
    """Call ``predicate`` until it returns a true value, and return that value.

    :param timeout: seconds before giving up.
    :param what: a description of the condition, used in error messages.
    :param processes: processes that must stay alive meanwhile; if one exits,
        stop waiting at once.
    :param ignore: exception types that mean "not yet" (e.g. ``OSError`` while
        a server is still starting); the last one is reported on timeout.
    :raises WaitTimeout: if ``timeout`` passes first.
    :raises ProcessDied: if one of ``processes`` exits first.
    """
    processes = tuple(processes)
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = predicate()
        except ignore as e:
            last_error = e
        else:
            if value:
                return value
        _check_alive(processes, what)
        if time.monotonic() >= deadline:
            message = f"timed out after {timeout:g} s waiting for {what}"
            if last_error is not None:
                message += f" (last error: {last_error!r})"
            for process in processes:
                message += "\n" + process.describe()
            raise WaitTimeout(message)
        time.sleep(interval)


def wait_for_file(
    path: Path,
    timeout: float,
    *,
    processes: Iterable[ManagedProcess] = (),
    nonempty: bool = True,
) -> Path:
    """Wait until ``path`` exists (and, by default, is not empty).

    Raises like :func:`wait_until`.
    """
    def present() -> bool:
        try:
            return path.stat().st_size > 0 or not nonempty
        except FileNotFoundError:
            return False

    wait_until(present, timeout, f"file {path}", processes=processes)
    return path

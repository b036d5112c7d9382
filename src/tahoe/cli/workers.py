"""A small pool of threads for the CLI's concurrent requests (standard library only).

``tahoe cp`` runs many short blocking HTTP requests (one per file, one per
directory); a few threads keep a bounded number of them in flight.  Tasks may
submit further tasks (a directory is created once its last child is done).
The first task to raise stops the pool: queued tasks are dropped, running
ones finish, and :meth:`TaskPool.wait` re-raises that exception.
:mod:`concurrent.futures` would do, but costs about 20 ms of imports
(``logging``) on every run.
"""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping

__all__ = ["DEFAULT_WORKERS", "TaskPool", "workers_from"]

#: Requests in flight at once by default.
DEFAULT_WORKERS = 16


def workers_from(env: Mapping[str, str], variable: str) -> int:
    """The number of workers the environment variable ``variable`` asks for (at least 1),
    or :data:`DEFAULT_WORKERS` when it is unset or not a number."""
    try:
        return max(1, int(env.get(variable, "")))
    except ValueError:
        return DEFAULT_WORKERS


class TaskPool:
    """Run callables on at most ``workers`` daemon threads, started as work arrives.

    :param workers: the most tasks running at once (at least 1).
    """

    def __init__(self, workers: int = DEFAULT_WORKERS) -> None:
        self._limit = max(1, workers)
        self._lock = threading.Lock()
        self._work_ready = threading.Condition(self._lock)
        self._all_done = threading.Condition(self._lock)
        self._queue: deque[Callable[[], None]] = deque()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._unfinished = 0
        self._error: BaseException | None = None
        self._closed = False

    def submit(self, task: Callable[[], None]) -> None:
        """Queue ``task`` (ignored once a task has failed)."""
        with self._lock:
            if self._error is not None or self._closed:
                return
            self._queue.append(task)
            self._unfinished += 1
            if self._idle == 0 and len(self._threads) < self._limit:
                thread = threading.Thread(target=self._work, daemon=True,
                                          name=f"tahoe-cli-{len(self._threads)}")
                self._threads.append(thread)
                thread.start()
            else:
                self._work_ready.notify()

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._idle += 1
                    self._work_ready.wait()
                    self._idle -= 1
                if not self._queue:
                    return
                task = self._queue.popleft()
            try:
                task()
            except BaseException as e:  # reported by wait(), in the main thread
                with self._lock:
                    if self._error is None:
                        self._error = e
                    self._unfinished -= len(self._queue)
                    self._queue.clear()
            with self._lock:
                self._unfinished -= 1
                if self._unfinished == 0:
                    self._all_done.notify_all()

    def wait(self) -> None:
        """Wait until every task is done (or dropped after a failure), then stop the threads.

        :raises BaseException: the first exception a task raised.
        """
        with self._lock:
            while self._unfinished:
                self._all_done.wait()
            self._closed = True
            self._work_ready.notify_all()
            error, self._error = self._error, None
        if error is not None:
            raise error

    def run(self, tasks: list[Callable[[], None]]) -> None:
        """Submit ``tasks`` and :meth:`wait` for them."""
        for task in tasks:
            self.submit(task)
        self.wait()

"""A timeout that activity pushes back without touching the reactor's timers.

Bulk transfers deliver thousands of chunks a second; cancelling and
re-arming a ``callLater`` on each costs more than the chunk's own work.
:class:`Deadline` keeps one timer: activity only records the time, and when
the timer fires early it re-arms itself for what is left.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet.interfaces import IReactorTime


class Deadline:
    """Calls ``expired()`` once ``timeout`` seconds pass without :meth:`touch`.

    :param clock: the reactor's clock.
    :param expired: what to call (once) when the time is up.
    """

    def __init__(self, clock: IReactorTime, expired: Callable[[], None]) -> None:
        self._clock = clock
        self._expired = expired
        self._timeout: float | None = None
        self._last = 0.0
        self._call: Any = None

    def start(self, timeout: float | None) -> None:
        """(Re)start the wait with ``timeout`` seconds (None: no timeout)."""
        self._timeout = timeout
        self._last = self._clock.seconds()
        if timeout is None:
            self.stop()
        elif self._call is None or not self._call.active():
            self._call = self._clock.callLater(timeout, self._check)
        elif self._call.getTime() > self._last + timeout:
            self._call.reset(timeout)

    def touch(self) -> None:
        """Something happened: the deadline moves to ``timeout`` seconds from now."""
        self._last = self._clock.seconds()

    def stop(self) -> None:
        """No timeout until the next :meth:`start`."""
        self._timeout = None
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None

    def _check(self) -> None:
        self._call = None
        if self._timeout is None:
            return
        left = self._last + self._timeout - self._clock.seconds()
        if left > 0:
            self._call = self._clock.callLater(left, self._check)
        else:
            self._timeout = None
            self._expired()

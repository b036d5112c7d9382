"""Timeouts that activity pushes back without touching the reactor's timers.

Bulk transfers deliver thousands of chunks a second; cancelling and
re-arming a ``callLater`` on each costs more than the chunk's own work.
:class:`Deadline` keeps one timer: activity only records the time, and when
the timer fires early it re-arms itself for what is left. :class:`Deadlines`
does the same for many things at once (a storage server's open share writers,
an upload's awaited answers) with one timer for all of them.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from twisted.internet.interfaces import IReactorTime

T = TypeVar("T")


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


class Deadlines(Generic[T]):
    """Times out many things with one reactor timer. Each thing's time is ``due(thing)``,
    read again when the timer fires (so use may move it later); then every thing whose
    time has come is dropped and given to ``expired``, and the timer is set for the
    earliest time left. (A timer per thing cost a reactor heap push when it started, a
    reset at each use and a cancel when it ended.)

    :param clock: gives the time and runs the timer.
    """

    def __init__(self, clock: IReactorTime, due: Callable[[T], float],
                 expired: Callable[[T], None]) -> None:
        self.clock = clock
        self._due = due
        self._expired = expired
        self._things: dict[T, None] = {}
        self._call: Any = None

    def watch(self, thing: T) -> None:
        """Time ``thing`` out (until :meth:`forget`)."""
        self._things[thing] = None
        self._arm(self._due(thing))

    def forget(self, thing: T) -> None:
        """``thing`` ended: no timeout for it."""
        self._things.pop(thing, None)

    def stop(self) -> None:
        """Time nothing out any more; no timer is left."""
        self._things.clear()
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None

    def _arm(self, when: float) -> None:
        delay = max(0.0, when - self.clock.seconds())
        if self._call is None:
            self._call = self.clock.callLater(delay, self._check)
        elif self._call.getTime() > when:
            self._call.reset(delay)

    def _check(self) -> None:
        self._call = None
        now = self.clock.seconds()
        for thing in [t for t in self._things if self._due(t) <= now]:
            del self._things[thing]
            self._expired(thing)
        if self._things:
            self._arm(min(self._due(thing) for thing in self._things))

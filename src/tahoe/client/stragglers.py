"""Answers from several storage servers at once, without waiting on a hung one.

Many operations send one call to each of several servers together and use
what comes back: a servermap update's probes, a publish's writes, a check's
queries. A server that hangs with its connection open (stopped, swapping, its
disk stuck) answers none of them, and the connection's own response timeout
(a minute) would hold the whole operation, on every operation, until it ends.

:func:`gather` fires as ``DeferredList(consumeErrors=True)`` does, except that
once the first answer is in, the calls still out have :data:`STRAGGLER_GRACE`
seconds (or twice as long as the first answer took, when that is longer: a
bulk transfer) from the latest answer, and none at all if their server is
already suspected. A call still out when that much time passed without an
answer is cancelled, so it counts as failed (:class:`NoAnswer`), as with
a lost server, and its server is suspected
(:meth:`~tahoe.client.broker.StorageServerHandle.suspect`): pinged, and unless
it answers at once, disconnected until a new connection answers.

An immutable upload uses the same grace in its own way
(:mod:`tahoe.client.share_push`), with the two timers here:
:class:`AnswerDeadlines` gives each allocation its timeout, brought forward
(:meth:`~AnswerDeadlines.hasten`) to :data:`STRAGGLER_GRACE` once the upload
can be happy without the server; :func:`unless_stalled` bounds a wait on
servers that stop taking data or answering closes.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from twisted.internet.defer import CancelledError, Deferred, DeferredList
from twisted.python.failure import Failure

from ..httpwire.deadline import Deadlines

if TYPE_CHECKING:
    from .broker import StorageServerHandle

#: Seconds a server may answer after the first of the others (or after the upload could
#: be happy without it): a healthy one answers within milliseconds of them.
STRAGGLER_GRACE = 5.0

T = TypeVar("T")


class NoAnswer(Exception):
    """A server left a call unanswered while the other servers answered theirs."""


def gather(calls: Sequence[tuple["StorageServerHandle", Deferred]], what: str) -> Deferred:
    """Wait for each call's answer, giving up on the stragglers (see the module docstring).

    :param calls: a server and the Deferred of the call made to it, for each call.
    :param what: the call, for the log (``"a slot read"``).
    :returns: a Deferred firing with ``[(success, result or Failure), ...]`` in the order
        of ``calls``.
    """
    done = DeferredList([d for _, d in calls], consumeErrors=True)
    if not calls:
        return done
    clock = calls[0][0].clock
    started = clock.seconds()
    timer: list[Any] = []
    grace: list[float] = []
    given_up: dict[int, str] = {}

    def give_up(only_suspected: bool) -> None:
        waited = clock.seconds() - started
        for i, (server, d) in enumerate(calls):
            if d.called:
                continue
            if server.suspected:
                given_up[i] = f"{what} not waited for: an earlier call to the server is unanswered"
            elif not only_suspected:
                given_up[i] = f"no answer to {what} in {waited:.1f} s"
                server.suspect(given_up[i])
            else:
                continue
            d.cancel()

    def answered(result: Any) -> Any:
        if done.called:
            return result
        if not timer:
            grace.append(max(STRAGGLER_GRACE, 2 * (clock.seconds() - started)))
            timer.append(clock.callLater(grace[0], give_up, False))
            give_up(only_suspected=True)
        elif timer[0].active():
            timer[0].reset(grace[0])
        return result

    def finished(results: list[tuple[bool, Any]]) -> list[tuple[bool, Any]]:
        if timer and timer[0].active():
            timer[0].cancel()
        return [(False, Failure(NoAnswer(given_up[i])))
                if i in given_up and not ok and result.check(CancelledError) else (ok, result)
                for i, (ok, result) in enumerate(results)]

    for _, d in calls:
        d.addBoth(answered)
    done.addBoth(finished)
    return done


class AnswerDeadlines(Deadlines[Deferred]):
    """Cancels each Deferred watched that has not fired ``timeout`` seconds after it was
    given (an allocation's answer: the server is then replaced), with one timer for all.

    :param clock: the reactor's clock.
    :param late: called with an answer just before it is cancelled.
    """

    def __init__(self, clock: Any, timeout: float,
                 late: Callable[[Deferred], None] = lambda answer: None) -> None:
        self._timeout = timeout
        self._late = late
        self._deadlines: dict[Deferred, float] = {}
        super().__init__(clock, self._deadlines.__getitem__, self._expire)

    def watch(self, answer: Deferred) -> None:
        """Cancel ``answer`` unless it fires within the timeout."""
        self._deadlines[answer] = self.clock.seconds() + self._timeout
        super().watch(answer)

    def hasten(self, answer: Deferred, within: float) -> None:
        """Cancel ``answer`` unless it fires within ``within`` seconds from now (or its own
        deadline, if that comes first)."""
        if answer in self._deadlines:
            when = min(self._deadlines[answer], self.clock.seconds() + within)
            self._deadlines[answer] = when
            self._arm(when)

    def stop(self) -> None:
        """Watch nothing any more."""
        super().stop()
        self._deadlines.clear()

    def _expire(self, answer: Deferred) -> None:
        del self._deadlines[answer]
        if not answer.called:
            self._late(answer)
            answer.cancel()


async def unless_stalled(clock: Any, waiting: Deferred,
                         owing: Callable[[], list[tuple[T, float]]],
                         give_up: Callable[[list[T], float], bool]) -> None:
    """Wait for ``waiting``, unless what it waits on stalls.

    :param owing: what the wait is still owed by, each with the time it last made
        progress (read again at each look).
    :param give_up: given those silent for :data:`STRAGGLER_GRACE` seconds and the time,
        gives them up (True: the wait ends) or not (False: they are looked at again a
        grace later).
    """
    ended: Deferred = Deferred()
    waiting.addBoth(lambda result: ended.called or ended.callback(None))
    timer: Any = None

    def look() -> None:
        nonlocal timer
        timer = None
        if ended.called:
            return
        now = clock.seconds()
        parties = owing()
        silent = [thing for thing, last in parties if now - last >= STRAGGLER_GRACE]
        if silent and give_up(silent, now):
            if not ended.called:
                ended.callback(None)
            return
        if parties:
            # Next when the earliest may stall.
            delay = min(last for _, last in parties) + STRAGGLER_GRACE - now
            timer = clock.callLater(delay if delay > 0 else STRAGGLER_GRACE, look)

    look()
    try:
        await ended
    finally:
        if timer is not None and timer.active():
            timer.cancel()

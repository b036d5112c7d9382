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
(:mod:`tahoe.client.share_push`): it waits for the allocations it needs for
happiness, then for the rest :data:`STRAGGLER_GRACE` more.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import CancelledError, Deferred, DeferredList
from twisted.python.failure import Failure

if TYPE_CHECKING:
    from .broker import StorageServerHandle

#: Seconds a server may answer after the first of the others (or after the upload could
#: be happy without it): a healthy one answers within milliseconds of them.
STRAGGLER_GRACE = 5.0


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

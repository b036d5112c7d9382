"""The upload's allocation timer: one reactor timer for every answer awaited, on a task.Clock."""
from __future__ import annotations

from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.task import Clock

from tahoe.client.stragglers import AnswerDeadlines


def _cancelled(d: Deferred) -> bool:
    failures: list[bool] = []
    d.addErrback(lambda failure: failures.append(bool(failure.check(CancelledError))))
    return failures == [True]


def test_each_answer_gets_its_own_time_with_one_timer() -> None:
    """An answer not come within the timeout of its own start is cancelled; one that came,
    or that started later, is left; a single timer is pending at any time."""
    clock = Clock()
    deadlines = AnswerDeadlines(clock, 30)
    first, answered, later = Deferred(), Deferred(), Deferred()
    deadlines.watch(first)
    deadlines.watch(answered)
    clock.advance(10)
    deadlines.watch(later)
    assert len(clock.getDelayedCalls()) == 1
    answered.callback(None)
    clock.advance(20)
    assert _cancelled(first)
    assert not later.called and len(clock.getDelayedCalls()) == 1
    clock.advance(10)
    assert _cancelled(later)
    assert not clock.getDelayedCalls()


def test_stop_leaves_no_timer() -> None:
    """Once the upload is over, no timer stays behind (it would hold the upload's shares)."""
    clock = Clock()
    deadlines = AnswerDeadlines(clock, 30)
    waiting: Deferred = Deferred()
    deadlines.watch(waiting)
    deadlines.stop()
    assert not clock.getDelayedCalls()
    clock.advance(60)
    assert not waiting.called


def test_hasten_brings_an_answers_time_forward_and_tells_who_was_late() -> None:
    """An answer hastened to 5 s from now is cancelled then (``late`` called first); one
    whose own time comes sooner keeps it."""
    clock = Clock()
    late: list[Deferred] = []
    deadlines = AnswerDeadlines(clock, 30, late.append)
    slow, soon = Deferred(), Deferred()
    deadlines.watch(slow)
    clock.advance(27)
    deadlines.watch(soon)
    deadlines.hasten(slow, 5)
    deadlines.hasten(soon, 5)
    clock.advance(3)
    assert _cancelled(slow) and late == [slow]
    assert not soon.called
    clock.advance(2)
    assert _cancelled(soon) and late == [slow, soon]

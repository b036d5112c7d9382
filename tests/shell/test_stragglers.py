"""``client.stragglers.gather`` on a task.Clock: the calls still out once the first answer
came get a grace, then fail with NoAnswer and their servers are suspected."""
from __future__ import annotations

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock

from tahoe.client.stragglers import STRAGGLER_GRACE, NoAnswer, gather


class _Server:
    """What ``gather`` uses of a server handle: its clock, and whether it is suspected."""

    def __init__(self, clock: Clock, suspected: bool = False) -> None:
        self.clock = clock
        self.suspected = suspected
        self.suspicions: list[str] = []

    def suspect(self, why: str) -> None:
        self.suspicions.append(why)


def _results(d: Deferred) -> list:
    out: list = []
    d.addCallback(out.append)
    return out


def test_all_answered_in_order_and_no_timer_left() -> None:
    clock = Clock()
    servers = [_Server(clock) for _ in range(3)]
    calls = [(s, Deferred()) for s in servers]
    out = _results(gather(calls, "a read"))
    calls[2][1].callback("c")
    calls[0][1].errback(ValueError("x"))
    clock.advance(1)
    calls[1][1].callback("b")
    [results] = out
    assert [ok for ok, _ in results] == [False, True, True]
    assert results[0][1].check(ValueError) and [r for _, r in results[1:]] == ["b", "c"]
    assert not clock.getDelayedCalls()
    assert not any(s.suspicions for s in servers)


def test_a_silent_server_is_given_up_a_grace_after_the_first_answer() -> None:
    clock = Clock()
    servers = [_Server(clock) for _ in range(3)]
    calls = [(s, Deferred()) for s in servers]
    out = _results(gather(calls, "a read"))
    clock.advance(0.01)
    calls[0][1].callback("a")
    calls[1][1].callback("b")
    clock.advance(STRAGGLER_GRACE - 0.1)
    assert not out
    clock.advance(0.1)
    [results] = out
    assert results[:2] == [(True, "a"), (True, "b")]
    assert not results[2][0] and results[2][1].check(NoAnswer)
    assert "no answer to a read in 5.0 s" in results[2][1].getErrorMessage()
    assert servers[2].suspicions == ["no answer to a read in 5.0 s"]
    assert not servers[0].suspicions and not clock.getDelayedCalls()


def test_a_slow_first_answer_gives_the_others_twice_as_long() -> None:
    """A bulk read whose first answer took 10 s: the others have 20 s more, not 5."""
    clock = Clock()
    servers = [_Server(clock) for _ in range(2)]
    calls = [(s, Deferred()) for s in servers]
    out = _results(gather(calls, "a share read"))
    clock.advance(10)
    calls[0][1].callback("a")
    clock.advance(19)
    assert not out
    calls[1][1].callback("b")
    assert out == [[(True, "a"), (True, "b")]]


def test_a_suspected_server_gets_no_grace() -> None:
    """A server whose ping is out (an earlier call went unanswered) is not waited for once
    another answered; it is not suspected again (the ping is out already)."""
    clock = Clock()
    suspected = _Server(clock, suspected=True)
    calls = [(_Server(clock), Deferred()), (suspected, Deferred())]
    out = _results(gather(calls, "a write"))
    calls[0][1].callback("a")
    [results] = out
    assert results[0] == (True, "a") and results[1][1].check(NoAnswer)
    assert "earlier call to the server is unanswered" in results[1][1].getErrorMessage()
    assert not suspected.suspicions and not clock.getDelayedCalls()


def test_each_answer_gives_the_rest_the_grace_again() -> None:
    """Answers coming one by one (shares sent one after the other over a slow link) are
    all waited for; only a silence as long as the grace gives up."""
    clock = Clock()
    servers = [_Server(clock) for _ in range(4)]
    calls = [(s, Deferred()) for s in servers]
    out = _results(gather(calls, "a slot write"))
    clock.advance(0.1)
    calls[0][1].callback(0)
    for i in (1, 2):
        clock.advance(STRAGGLER_GRACE - 1)
        calls[i][1].callback(i)
    clock.advance(STRAGGLER_GRACE - 0.5)
    assert not out
    clock.advance(0.5)
    [results] = out
    assert results[:3] == [(True, 0), (True, 1), (True, 2)] and results[3][1].check(NoAnswer)

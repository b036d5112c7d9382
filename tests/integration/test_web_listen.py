"""The web port's site is built at its first connection (:mod:`tahoe.web.listen`).

A real listener on 127.0.0.1 and real connections: the site is not made
until a client connects, is made once for all the connections that follow,
and a site that cannot be made closes that connection only: the port goes
on listening, and the next connection tries again.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest_twisted
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.protocol import ClientFactory, Factory, Protocol

from tahoe.web.listen import LazySite, listen_web


class _Hello(Protocol):
    def connectionMade(self) -> None:  # noqa: N802 (Twisted)
        self.transport.write(b"hello")
        self.transport.loseConnection()


class _Read(Protocol):
    def __init__(self, done: Deferred) -> None:
        self.done = done
        self.data = b""

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 (Twisted)
        self.data += data

    def connectionLost(self, reason: Any) -> None:  # noqa: N802 (Twisted)
        self.done.callback(self.data)


async def _read_from(port: Any) -> bytes:
    done: Deferred = Deferred()
    factory = ClientFactory.forProtocol(lambda: _Read(done))
    reactor.connectTCP("127.0.0.1", port.getHost().port, factory)  # type: ignore[attr-defined]
    return await done  # type: ignore[no-any-return]


@pytest_twisted.ensureDeferred
async def test_the_site_is_made_at_the_first_connection_and_a_failure_keeps_listening(
        tmp_path: Path) -> None:
    made: list[int] = []
    broken = [True]

    def make() -> Factory:
        made.append(1)
        if broken[0]:
            raise RuntimeError("no site today")
        return Factory.forProtocol(_Hello)
    lazy = LazySite(make)
    port = await listen_web(reactor, "tcp:0:interface=127.0.0.1", lazy, tmp_path)
    try:
        assert (tmp_path / "node.url").read_text() == \
            f"http://127.0.0.1:{port.getHost().port}/\n"
        assert made == [] and not lazy.built
        assert await _read_from(port) == b""  # closed: the site could not be made
        broken[0] = False
        assert await _read_from(port) == b"hello"  # still listening; made now
        assert await _read_from(port) == b"hello"
        assert len(made) == 2 and lazy.built
        assert lazy.modules_before is not None and "twisted.internet.reactor" in lazy.modules_before
    finally:
        await port.stopListening()

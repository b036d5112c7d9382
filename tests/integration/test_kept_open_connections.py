"""Kept-open HTTPS connections on real TLS sockets on 127.0.0.1: the server ending them, and
requests to a server that cannot take them pipelined.

Twisted's web server, and so Tahoe-LAFS 1.20's storage server, closes a
connection that has been idle for 60 s. Our client refreshed a server's
version every 60 s, so against a real Tahoe grid every server was lost and
reconnected once a minute, and its bulk transfers were stopped with it.
Here the same Twisted ``Site`` runs with a short idle timeout, and a scripted
server closes a connection as a request reaches it (the race every kept-alive
client has): a GET is sent again on a new connection, a POST is not, the
server counts as lost only when no new connection can be made. A third
answers late, to see whether a request is written before the answer before it
(pipelined, to our servers) or after (to any other, Tahoe's among them).
"""
from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import attr
import pytest
import pytest_twisted
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import serverFromString
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.task import deferLater
from twisted.web.resource import Resource
from twisted.web.server import Site

from tahoe.client.https_connector import endpoint_for
from tahoe.client.storage_api import ServerGone
from tahoe.client.storage_https import HTTPSStorageClient
from tahoe.httpwire.client import ConnectionGone, PersistentConnection
from tahoe.httpwire.threaded import ThreadedConnection
from tahoe.httpwire.tls import TLSServerFactory, certificate_spki_hash, server_context
from tahoe.util.nurl import NURL
from tests.integration.storage_fixtures import new_tub
from tests.integration.test_storage_clients import _failure

IDLE = 0.4  # the Site's idle timeout (Twisted's default, and Tahoe's: 60 s)
LATE = 0.05  # how long the late server takes to answer
ANSWER = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"


class _Hello(Resource):
    isLeaf = True

    def render_GET(self, request: Any) -> bytes:  # noqa: N802 (Twisted)
        return b"hello"


class _CountingSite(Site):
    connections = 0

    def buildProtocol(self, addr: Any) -> Any:  # noqa: N802 (Twisted)
        self.connections += 1
        return super().buildProtocol(addr)


class _ScriptedProtocol(Protocol):
    """Splits what comes into requests (bodies by ``content-length``) for :meth:`received`."""

    factory: "_Scripted"

    def connectionMade(self) -> None:  # noqa: N802 (Twisted)
        self.factory.connections += 1
        self.factory.open.append(self)
        self.buffer = b""
        self.requests = 0

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 (Twisted)
        self.buffer += data
        while b"\r\n\r\n" in self.buffer and self.connected:
            head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            length = re.search(rb"content-length: (\d+)", head, re.IGNORECASE)
            self.buffer = self.buffer[int(length.group(1)) if length else 0:]
            self.requests += 1
            self.received(head)

    def received(self, head: bytes) -> None:
        raise NotImplementedError


class _ClosesOnSecondRequest(_ScriptedProtocol):
    """Answers a connection's first request; closes the connection when the second comes,
    unanswered, as a server whose idle timeout fired as the request crossed the wire."""

    def received(self, head: bytes) -> None:
        self.factory.requests.append((self.factory.connections, head.split(b" ", 1)[0]))
        if self.requests > 1:
            self.transport.loseConnection()
            return
        self.transport.write(ANSWER)


class _AnswersLate(_ScriptedProtocol):
    """Answers each request, in order, ``LATE`` s after the answer before it; notes in
    ``factory.events`` each request's arrival and each answer's sending, by target."""

    def received(self, head: bytes) -> None:
        from twisted.internet import reactor
        target = head.split(b" ", 2)[1]
        self.factory.events.append(("request", target))
        self.due = getattr(self, "due", 0.0)
        at = max(reactor.seconds(), self.due) + LATE
        self.due = at
        reactor.callLater(at - reactor.seconds(), self._answer, target)

    def _answer(self, target: bytes) -> None:
        if self.connected:
            self.factory.events.append(("answer", target))
            self.transport.write(ANSWER)


class _Scripted(Factory):
    def __init__(self, protocol: type[_ScriptedProtocol]) -> None:
        self.protocol = protocol
        self.connections = 0
        self.open: list[_ScriptedProtocol] = []
        self.requests: list[tuple[int, bytes]] = []
        self.events: list[tuple[str, bytes]] = []


@attr.s(auto_attribs=True)
class Listening:
    """A TLS server on 127.0.0.1 and what a client needs to reach it."""

    factory: Any
    port: Any
    spki_hash: str

    @property
    def number(self) -> int:
        return int(self.port.getHost().port)

    def persistent(self, lost: list[Any]) -> PersistentConnection:
        from twisted.internet import reactor
        nurl = NURL(self.spki_hash, "127.0.0.1", self.number, "swiss")
        return PersistentConnection(endpoint_for(nurl, reactor), b"127.0.0.1", reactor,
                                    on_lost=lost.append)

    def storage_client(self, made: list[ThreadedConnection]) -> HTTPSStorageClient:
        """An HTTPS storage client whose bulk connections, as they are made, go into ``made``."""
        from twisted.internet import reactor

        def bulk() -> ThreadedConnection:
            made.append(ThreadedConnection("127.0.0.1", self.number, self.spki_hash, reactor))
            return made[-1]
        return HTTPSStorageClient(self.persistent([]), b"swiss", bulk=bulk)


async def _listen(factory: Any) -> Listening:
    from twisted.internet import reactor
    certificate = new_tub().myCertificate
    port = await serverFromString(reactor, "tcp:0:interface=127.0.0.1").listen(
        TLSServerFactory(server_context(certificate), factory))
    return Listening(factory, port, certificate_spki_hash(certificate))


@pytest_twisted.async_yield_fixture
async def site() -> AsyncIterator[Listening]:
    """Twisted's web server, idle connections closed after ``IDLE`` s."""
    listening = await _listen(_CountingSite(_Hello(), timeout=IDLE))
    yield listening
    await listening.port.stopListening()


async def _stop_listening(listening: Listening) -> None:
    if listening.port.connected:
        await listening.port.stopListening()


@pytest_twisted.async_yield_fixture
async def scripted() -> AsyncIterator[Listening]:
    listening = await _listen(_Scripted(_ClosesOnSecondRequest))
    yield listening
    await _stop_listening(listening)


@pytest_twisted.async_yield_fixture
async def late() -> AsyncIterator[Listening]:
    listening = await _listen(_Scripted(_AnswersLate))
    yield listening
    await _stop_listening(listening)


def _sleep(seconds: float) -> Deferred:
    from twisted.internet import reactor
    return deferLater(reactor, seconds, lambda: None)


@pytest_twisted.ensureDeferred
async def test_a_connection_the_server_closed_when_idle_is_reopened_quietly(
        site: Listening) -> None:
    """Twisted's web server closes an idle connection: no loss is reported, and the next
    request is answered."""
    lost: list[Any] = []
    connection = site.persistent(lost)
    try:
        assert (await connection.request(b"GET", b"/")).body == b"hello"
        # The server closed it, and a new one was opened at once. The server closed that one
        # too, unused: it is replaced only when a request comes.
        await _sleep(IDLE * 4)
        assert site.factory.connections == 2 and not connection.is_open
        assert (await connection.request(b"GET", b"/")).body == b"hello"
        assert lost == [] and site.factory.connections == 3
    finally:
        connection.stop()


@pytest_twisted.ensureDeferred
async def test_a_bulk_connection_the_server_closed_when_idle_is_replaced(site: Listening) -> None:
    """The bulk connection the server closed when idle is replaced at the next bulk request."""
    made: list[ThreadedConnection] = []
    client = site.storage_client(made)
    try:
        for _ in range(2):
            assert (await client.request(b"GET", "/", bulk=True)).body == b"hello"
            await _sleep(IDLE * 4)
        assert len(made) == 2
    finally:
        client.stop()


@pytest_twisted.ensureDeferred
async def test_a_get_crossing_the_servers_close_is_sent_again_once(scripted: Listening) -> None:
    """A GET (or HEAD) that reaches a connection as the server closes it is answered on a new
    one."""
    lost: list[Any] = []
    connection = scripted.persistent(lost)
    try:
        assert (await connection.request(b"GET", b"/a")).body == b"hello"
        assert (await connection.request(b"GET", b"/b")).body == b"hello"
        # /b reached the first connection as it closed, then the second one, which answered it
        assert scripted.factory.requests == [(1, b"GET"), (1, b"GET"), (2, b"GET")]
        assert lost == []
        # a second crossing on the second connection: sent again once more, on a third
        assert (await connection.request(b"HEAD", b"/c")).status == 200
        assert scripted.factory.requests[3:] == [(2, b"HEAD"), (3, b"HEAD")]
    finally:
        connection.stop()


@pytest_twisted.ensureDeferred
async def test_a_post_crossing_the_servers_close_is_not_sent_again(scripted: Listening) -> None:
    """A POST that reaches a closing connection fails: it may have been acted on, so it is not
    sent again."""
    lost: list[Any] = []
    connection = scripted.persistent(lost)
    try:
        assert (await connection.request(b"GET", b"/a")).status == 200
        error = await _failure(connection.request(b"POST", b"/b", body=b"x"))
        assert isinstance(error, ConnectionGone)
        await _sleep(0.2)
        assert scripted.factory.requests == [(1, b"GET"), (1, b"POST")]  # not sent again
        assert lost == []  # the server is still there: a new connection was made
        assert scripted.factory.connections == 2
    finally:
        connection.stop()


@pytest_twisted.ensureDeferred
async def test_a_bulk_get_crossing_the_servers_close_is_sent_again(scripted: Listening) -> None:
    """Over the bulk connection too: a GET is sent again on a new one, a PATCH is not."""
    made: list[ThreadedConnection] = []
    client = scripted.storage_client(made)
    try:
        for path in ("/a", "/b"):
            assert (await client.request(b"GET", path, bulk=True)).body == b"hello"
        assert len(made) == 2 and [m for _, m in scripted.factory.requests] == [b"GET"] * 3
        error = await _failure(client.request(b"PATCH", "/c", body=b"x" * 10, bulk=True))
        assert isinstance(error, ServerGone)
        assert len(made) == 2 and scripted.factory.requests[-1] == (2, b"PATCH")
    finally:
        client.stop()


@pytest.mark.parametrize("stop", ["listening", "answering"])
@pytest_twisted.ensureDeferred
async def test_a_server_that_is_gone_is_reported_lost(scripted: Listening, stop: str) -> None:
    """The server closes the connection and no new one can be made: then it is lost."""
    lost: list[Any] = []
    connection = scripted.persistent(lost)
    try:
        assert (await connection.request(b"GET", b"/a")).status == 200
        await scripted.port.stopListening()
        if stop == "listening":  # it closes the idle connection as it goes
            for protocol in scripted.factory.open:
                protocol.transport.loseConnection()
        else:  # a request finds it closing
            error = await _failure(connection.request(b"GET", b"/b"))
            assert isinstance(error, ConnectionGone) and "cannot connect" in str(error)
        for _ in range(100):  # a refused connection can take a moment to be reported
            if lost:
                break
            await _sleep(0.05)
        assert lost == [connection]
    finally:
        connection.stop()


@pytest.mark.parametrize("pipelining", [False, True])
@pytest_twisted.ensureDeferred
async def test_requests_wait_for_the_answers_before_them_unless_pipelining(
        late: Listening, pipelining: bool) -> None:
    """To a server not known to take pipelined requests (Tahoe 1.20's: its web server drops
    the connection when a pipelined answer starts while the one before it fills the send
    buffer) each request is written once the answer before it came, on the kept-open and the
    bulk connection alike; to ours, at once."""
    from twisted.internet.defer import gatherResults
    made: list[ThreadedConnection] = []
    client = late.storage_client(made)
    client.pipelining = pipelining
    try:
        for bulk in (False, True):
            late.factory.events.clear()
            targets = [f"/{'bulk' if bulk else 'main'}/{n}" for n in range(3)]
            answers = await gatherResults([client.request(b"GET", target, bulk=bulk)
                                           for target in targets])
            assert [a.body for a in answers] == [b"hello"] * 3
            if pipelining:
                assert [kind for kind, _ in late.factory.events[:3]] == ["request"] * 3
            else:
                assert late.factory.events == [
                    (kind, target.encode()) for target in targets
                    for kind in ("request", "answer")]
        assert len(made) == 1 and late.factory.connections == 2
    finally:
        client.stop()

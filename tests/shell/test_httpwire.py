"""The lean HTTP/1.1 protocols on in-memory transports: pipelining, streaming, limits, timeouts."""
from __future__ import annotations

from typing import Any

import pytest
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure

from tahoe.httpwire.client import (ConnectionGone, HTTP1ClientProtocol, HTTPResponse,
                                   ProtocolViolation, ResponseTimeout)
from tahoe.httpwire.server import HTTP1ServerProtocol, HTTPError, Limits, Request, Response


class Echo:
    """Answers with the method, target and body it got; ``/slow`` answers when told to."""

    def __init__(self) -> None:
        self.seen: list[Request] = []
        self.slow: list[Deferred] = []
        self.closed = 0

    def __call__(self, request: Request) -> Any:
        self.seen.append(request)
        if request.path == b"/refuse":
            raise HTTPError(404, "no such thing")
        if request.path == b"/crash":
            raise KeyError("internal detail")
        request.connection.on_close(self, self._closed)
        return _Handler(self, request)

    def _closed(self) -> None:
        self.closed += 1


class _Handler:
    def __init__(self, app: Echo, request: Request) -> None:
        self.app = app
        self.request = request
        self.body = b""

    def body_received(self, data: bytes) -> None:
        self.body += data
        if len(self.body) > 1000:
            raise HTTPError(413, "too big")

    def body_complete(self) -> Any:
        answer = Response(200, [(b"x-seen", self.request.method + b" " + self.request.target)],
                          self.body)
        if self.request.path == b"/slow":
            d: Deferred = Deferred()
            self.app.slow.append(d)
            d.addCallback(lambda _: answer)
            return d
        return answer


def _server(limits: Limits = Limits()) -> tuple[HTTP1ServerProtocol, StringTransport, Echo, Clock]:
    app, clock = Echo(), Clock()
    protocol = HTTP1ServerProtocol(app, clock, limits)
    transport = StringTransport()
    protocol.makeConnection(transport)
    return protocol, transport, app, clock


def _answers(transport: StringTransport) -> list[HTTPResponse]:
    client = HTTP1ClientProtocol(b"x", Clock())
    client.makeConnection(StringTransport())
    got: list[HTTPResponse] = []
    raw = transport.value()
    count = raw.count(b"HTTP/1.1 ") - raw.count(b"HTTP/1.1 100 ")
    for _ in range(count):
        client.request(b"GET", b"/").addCallback(got.append)
    client.dataReceived(raw)
    return got


def test_pipelined_requests_answered_in_order() -> None:
    """Three requests in one read are answered in order, a slow one holding back the rest."""
    protocol, transport, app, _ = _server()
    protocol.dataReceived(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
                          b"POST /slow HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
                          b"PUT /c HTTP/1.1\r\nContent-Length: 2\r\n\r\nde")
    assert [r.status for r in _answers(transport)] == [200]
    app.slow[0].callback(None)
    answers = _answers(transport)
    assert [(r.header(b"x-seen"), r.body) for r in answers] == [
        (b"GET /a", b""), (b"POST /slow", b"abc"), (b"PUT /c", b"de")]


def test_errors_are_short_text_and_keep_the_connection() -> None:
    """A refusal answers with its status; an application crash is a 500 without details;
    both keep the connection for the next request."""
    protocol, transport, _, _ = _server()
    protocol.dataReceived(b"GET /refuse HTTP/1.1\r\n\r\nGET /crash HTTP/1.1\r\n\r\n"
                          b"GET /ok HTTP/1.1\r\n\r\n")
    statuses = [(r.status, r.body) for r in _answers(transport)]
    assert statuses == [(404, b"no such thing"), (500, b"internal error"), (200, b"")]
    assert not transport.disconnecting


def test_refused_body_is_dropped_and_the_next_request_served() -> None:
    """A body the handler refuses midway is read to its end and dropped; 413 is answered."""
    protocol, transport, _, _ = _server()
    body = b"x" * 2000
    protocol.dataReceived(b"PUT /big HTTP/1.1\r\nContent-Length: 2000\r\n\r\n" + body +
                          b"GET /after HTTP/1.1\r\n\r\n")
    assert [r.status for r in _answers(transport)] == [413, 200]


def test_chunked_request_bodies() -> None:
    """Chunked request bodies arrive whole."""
    protocol, transport, _, _ = _server()
    protocol.dataReceived(b"PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                          b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
    assert [r.body for r in _answers(transport)] == [b"abcde"]


def test_malformed_request_is_400_and_closes() -> None:
    """Bytes that are not HTTP are answered 400 and the connection is closed."""
    protocol, transport, _, _ = _server()
    protocol.dataReceived(b"\x16\x03\x01 not http at all\r\n\r\n")
    assert [r.status for r in _answers(transport)] == [400]
    assert transport.disconnecting


def test_header_limits() -> None:
    """Too many header bytes is 431 and closes; so is a request target that is too long (414)."""
    protocol, transport, _, _ = _server(Limits(header_bytes=1000, target_bytes=100))
    protocol.dataReceived(b"GET / HTTP/1.1\r\n" + b"X-A: " + b"a" * 2000)
    assert [r.status for r in _answers(transport)] == [431]
    assert transport.disconnecting
    protocol, transport, _, _ = _server(Limits(target_bytes=100))
    protocol.dataReceived(b"GET /" + b"a" * 200 + b" HTTP/1.1\r\n\r\n")
    assert [r.status for r in _answers(transport)] == [414]


def test_idle_and_stalled_connections_time_out() -> None:
    """An idle connection is closed after the idle timeout; a request that stops halfway
    through its headers gets 408."""
    protocol, transport, _, clock = _server(Limits(idle_timeout=100, request_timeout=10))
    clock.advance(99)
    assert not transport.disconnecting
    clock.advance(2)
    assert transport.disconnecting
    protocol, transport, _, clock = _server(Limits(idle_timeout=100, request_timeout=10))
    protocol.dataReceived(b"GET / HTTP/1.1\r\nHost: x\r\n")
    clock.advance(11)
    assert [r.status for r in _answers(transport)] == [408]


def test_closing_the_connection_runs_its_hooks() -> None:
    """Work tied to a connection (an upload's abort) is done when it closes."""
    protocol, transport, app, _ = _server()
    protocol.dataReceived(b"GET / HTTP/1.1\r\n\r\n")
    protocol.connectionLost(Failure(ConnectionGone("gone")))
    assert app.closed == 1


def test_connection_close_and_http10() -> None:
    """``Connection: close`` and HTTP/1.0 get one answer and a closed connection."""
    for request in (b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", b"GET / HTTP/1.0\r\n\r\n"):
        protocol, transport, _, _ = _server()
        protocol.dataReceived(request)
        assert [r.status for r in _answers(transport)] == [200]
        assert transport.disconnecting


def _client() -> tuple[HTTP1ClientProtocol, StringTransport, Clock]:
    clock = Clock()
    client = HTTP1ClientProtocol(b"server:1", clock, response_timeout=30)
    transport = StringTransport()
    client.makeConnection(transport)
    return client, transport, clock


def test_client_pipelines_and_matches_answers() -> None:
    """Requests are written at once; answers (one chunked) fire their requests in order."""
    client, transport, _ = _client()
    got: list[Any] = []
    client.request(b"GET", b"/a").addCallback(got.append)
    client.request(b"POST", b"/b", [(b"x-k", b"v")], b"body").addCallback(got.append)
    assert transport.value() == (b"GET /a HTTP/1.1\r\nhost: server:1\r\n\r\n"
                                 b"POST /b HTTP/1.1\r\nhost: server:1\r\nx-k: v\r\n"
                                 b"content-length: 4\r\n\r\nbody")
    client.dataReceived(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 201 Created\r\n"
                        b"transfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
    assert [(r.status, r.body) for r in got] == [(200, b"ok"), (201, b"abc")]


def test_client_failures() -> None:
    """A lost connection fails what is waiting; silence past the timeout aborts (counted from
    the request, not from an idle time before it); an answer nobody asked for drops the
    connection; an answer larger than allowed is refused; garbage is a protocol violation."""
    client, _, _ = _client()
    waiting = client.request(b"GET", b"/")
    client.connectionLost(Failure(ConnectionGone("bye")))
    with pytest.raises(ConnectionGone):
        waiting.result.raiseException()
    waiting.addErrback(lambda f: None)

    client, transport, clock = _client()
    waiting = client.request(b"GET", b"/")
    clock.advance(31)
    assert transport.disconnecting or transport.disconnected
    assert isinstance(waiting.result.value, ResponseTimeout)
    waiting.addErrback(lambda f: None)

    client, transport, clock = _client()
    client.request(b"GET", b"/")
    client.dataReceived(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
    clock.advance(25)
    waiting = client.request(b"GET", b"/")
    clock.advance(20)  # idle time does not count: 20 s since this request
    assert not (transport.disconnecting or transport.disconnected)
    clock.advance(11)
    assert isinstance(waiting.result.value, ResponseTimeout)
    waiting.addErrback(lambda f: None)
    clock.advance(100)
    assert not clock.getDelayedCalls()

    client, transport, _ = _client()
    answered = client.request(b"GET", b"/")
    client.dataReceived(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n" * 2)
    assert answered.result.status == 200
    assert transport.disconnecting  # an answer nobody asked for: dropped

    client, _, _ = _client()
    waiting = client.request(b"GET", b"/", max_body=4)
    client.dataReceived(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n0123456789")
    assert isinstance(waiting.result.value, ProtocolViolation)
    waiting.addErrback(lambda f: None)

    client, _, _ = _client()
    waiting = client.request(b"GET", b"/")
    client.dataReceived(b"\x00\x01 garbage\r\n\r\n")
    assert isinstance(waiting.result.value, ProtocolViolation)
    waiting.addErrback(lambda f: None)

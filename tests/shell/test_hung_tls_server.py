"""A server that accepts TCP connections but never answers (a hung process: its kernel still
completes the TCP handshake) does not hold the HTTPS client's requests for good.

Real sockets on 127.0.0.1: a listening socket that is never accepted from."""
from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
import pytest_twisted
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint

from tahoe.httpwire.client import ConnectionGone, PersistentConnection
from tahoe.httpwire.tls import PinnedTLSEndpoint

SPKI = "A" * 43  # never checked: no handshake ever ends


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose connections complete (the kernel's backlog) and then hear nothing."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def _connection(port: int, handshake_timeout: float | None) -> PersistentConnection:
    endpoint = PinnedTLSEndpoint(TCP4ClientEndpoint(reactor, "127.0.0.1", port), SPKI,
                                 reactor, handshake_timeout)
    return PersistentConnection(endpoint, b"127.0.0.1", reactor)


async def _failure_of(d: Deferred) -> BaseException:
    try:
        await d
    except BaseException as error:  # noqa: BLE001 (the test looks at it)
        return error
    raise AssertionError("the request was answered")


@pytest_twisted.ensureDeferred
async def test_a_handshake_that_never_ends_fails_the_waiting_requests(silent_port: int) -> None:
    connection = _connection(silent_port, 0.3)
    started = time.monotonic()
    try:
        error = await _failure_of(connection.request(b"GET", b"/storage/v1/version"))
    finally:
        connection.stop()
    assert isinstance(error, ConnectionGone)
    assert "no TLS handshake within 0.3 s" in str(error)
    assert time.monotonic() - started < 5


@pytest_twisted.ensureDeferred
async def test_stopping_fails_requests_waiting_for_a_connection(silent_port: int) -> None:
    """Without a handshake timeout, stopping the connection still answers its waiters."""
    connection = _connection(silent_port, None)
    waiting = connection.request(b"GET", b"/storage/v1/version")
    await _sleep(0.2)
    assert not waiting.called
    connection.stop()
    assert waiting.called, "a request waiting for the connection outlived its stop"
    assert isinstance(await _failure_of(waiting), ConnectionGone)


def _sleep(seconds: float) -> Deferred:
    d: Deferred = Deferred()
    reactor.callLater(seconds, d.callback, None)
    return d

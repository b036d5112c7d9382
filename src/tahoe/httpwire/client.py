"""An HTTP/1.1 client for APIs: persistent connections, pipelined requests.

:class:`HTTP1ClientProtocol` writes each request the moment it is made and
matches answers to requests in order, so several requests cost one round
trip. To a server not known to take pipelined requests (``pipelining``
off), it writes a request only once the answer before it has come:
Tahoe-LAFS 1.20's storage server (Twisted's web server, whose
``registerProducer`` does not pause a new producer while the send buffer is
full) drops the connection when a pipelined request's answer starts while
the answer before it still fills the buffer. :class:`PersistentConnection` keeps one such connection to a server
open (connecting on first use and again after a loss) and queues requests
while it connects.

A request whose connection is lost before its answer fails with
:class:`ConnectionGone`, except in the race every kept-alive connection has:
the server closes a connection it finds idle (Twisted's web server, and so
Tahoe-LAFS 1.20's storage server, after 60 s) while a request is on its way
to it. :class:`PersistentConnection` then opens a new connection at once,
without calling the connection lost, and sends a GET or HEAD that had no
answer begun again, once, on it (:class:`StaleConnection`). A request whose
connection sees no byte for
``response_timeout`` seconds while answers are due fails with
:class:`ResponseTimeout` (and the connection is dropped: with pipelining, a
stuck answer holds up every later one). Answers larger than the request's
``max_body`` are refused the same way.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import httptools
from attrs import define, field, frozen
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime, IStreamClientEndpoint
from twisted.internet.error import ConnectionDone
from twisted.internet.protocol import Protocol
from twisted.logger import Logger
from twisted.python.failure import Failure

from .deadline import Deadline
from .tcp import set_no_delay

#: Default largest answer body accepted (bytes).
MAX_BODY = 256 * 1024 * 1024
#: Seconds without a byte while answers are due before the connection is dropped.
RESPONSE_TIMEOUT = 60.0


class HTTPClientError(Exception):
    """Root of the transport failures of this client."""


class ConnectionGone(HTTPClientError):
    """The connection closed (or could not be opened) before the answer came."""


class StaleConnection(ConnectionGone):
    """The server closed the connection cleanly before it began to answer this request (or
    the request was never written): it may never have read it, and a GET may be sent again
    on a new connection."""


#: Methods sent again, once, when their kept-alive connection turns out to be closed.
RESENDABLE = frozenset({b"GET", b"HEAD"})


def resend_if_stale(d: Deferred, method: bytes, again: Callable[[], Deferred]) -> Deferred:
    """Chain onto ``d`` (a request's answer) the sending again, once, of a GET or HEAD that
    failed with :class:`StaleConnection`: ``again()`` sends it on a new connection."""
    if method in RESENDABLE:
        d.addErrback(lambda failure: again() if failure.check(StaleConnection) else failure)
    return d


class ResponseTimeout(HTTPClientError):
    """No byte came for too long while an answer was due."""


class ProtocolViolation(HTTPClientError):
    """The server's bytes are not a well-formed HTTP/1.1 answer (or one too large)."""


@frozen
class HTTPResponse:
    """An answer: status code, headers (names lower-cased, in order) and body."""

    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes

    def header(self, name: bytes) -> bytes | None:
        """The first value of a header (``name`` lower-case), or None."""
        for key, value in self.headers:
            if key == name:
                return value
        return None


@define
class _Pending:
    deferred: Deferred
    method: bytes
    max_body: int
    headers: list[tuple[bytes, bytes]] = field(factory=list)
    body: list[bytes] = field(factory=list)
    size: int = 0
    #: Whether any byte of its answer came.
    begun: bool = False
    #: For a request of a batch (:meth:`HTTP1ClientProtocol.request_many`): the answers of
    #: the batch so far, which ``deferred`` (shared by the batch) gets once this one is the last.
    batch: list[HTTPResponse] | None = None
    last: bool = True


def format_request(method: bytes, target: bytes, host: bytes,
                   headers: Sequence[tuple[bytes, bytes]], body: bytes,
                   with_body: bool = True) -> bytes:
    """A request's bytes, ``Host`` and ``Content-Length`` added; the body follows them
    unless ``with_body`` is false (the caller then writes it)."""
    lines = [b"%s %s HTTP/1.1\r\nhost: %s\r\n" % (method, target, host)]
    lines += [b"%s: %s\r\n" % header for header in headers]
    if body or method in (b"POST", b"PUT", b"PATCH"):
        lines.append(b"content-length: %d\r\n" % len(body))
    lines.append(b"\r\n")
    if with_body:
        lines.append(body)
    return b"".join(lines)


class HTTP1ClientProtocol(Protocol):
    """One client connection; requests are written at once and answered in order.

    :param host: the ``Host`` header value.
    :param clock: for the response timeout.
    """

    _log = Logger()

    def __init__(self, host: bytes, clock: IReactorTime,
                 response_timeout: float = RESPONSE_TIMEOUT) -> None:
        self._host = host
        self._clock = clock
        self._response_timeout = response_timeout
        self._parser = httptools.HttpResponseParser(self)
        self._pending: deque[_Pending] = deque()
        self._deadline = Deadline(clock, self._timed_out)
        self.closing = False
        self._aborted = False
        #: Answers received (1xx not counted).
        self.answered = 0
        #: Set when the connection is lost: whether the server closed it cleanly with nothing
        #: of an answer under way (every request then waiting failed with
        #: :class:`StaleConnection`), rather than our giving it up, a reset, a TLS stream cut
        #: short (a server killed) or an answer cut short.
        self.closed_when_idle = False
        #: Whether a request is written before the answers to those before it. When not, the
        #: requests made meanwhile wait here, in order.
        self.pipelining = True
        self._unsent: deque[tuple[list[bytes], list[_Pending]]] = deque()
        self.connected_deferred: Deferred = Deferred()
        self.lost_deferred: Deferred = Deferred()

    @property
    def outstanding(self) -> int:
        """Requests made and not yet answered (written or waiting to be)."""
        return len(self._pending) + sum(len(pending) for _, pending in self._unsent)

    def connectionMade(self) -> None:  # noqa: N802 (Twisted)
        """Turn Nagle off underneath (TLS or not) and say we are ready."""
        set_no_delay(self.transport)
        self.connected_deferred.callback(self)

    def request(self, method: bytes, target: bytes, headers: Sequence[tuple[bytes, bytes]] = (),
                body: bytes = b"", max_body: int = MAX_BODY) -> Deferred:
        """Send a request (now, or after the answers due if not :attr:`pipelining`); a Deferred
        fires with its :class:`HTTPResponse`.

        ``Host`` and ``Content-Length`` are added.

        :raises ConnectionGone: (through the Deferred) if the connection is closing.
        """
        d: Deferred = Deferred()
        if self.closing or self.transport is None:
            d.errback(ConnectionGone("the connection is closing"))
            return d
        if len(body) < 64 * 1024:
            data = [format_request(method, target, self._host, headers, body)]
        else:
            data = [format_request(method, target, self._host, headers, body, False), body]
        self._submit(data, [_Pending(d, method, max_body)])
        return d

    def request_many(self, requests: Sequence[tuple[bytes, bytes, Sequence[tuple[bytes, bytes]],
                                                    bytes]],
                     max_body: int = MAX_BODY) -> Deferred:
        """Send several requests, ``(method, target, headers, body)`` each, in one write;
        one Deferred fires with the list of their answers (:class:`HTTPResponse`), in order,
        once the last is in, or fails with the first transport failure. The requests are
        pipelined: send them only to a server that takes that. Without :attr:`pipelining`,
        the batch waits for the answers due before it, as one request does.
        """
        d: Deferred = Deferred()
        if self.closing or self.transport is None:
            d.errback(ConnectionGone("the connection is closing"))
            return d
        host = self._host
        data = b"".join([format_request(method, target, host, headers, body)
                         for method, target, headers, body in requests])
        answers: list[HTTPResponse] = []
        pending = [_Pending(d, method, max_body, batch=answers, last=False)
                   for method, _, _, _ in requests]
        pending[-1].last = True
        self._submit([data], pending)
        return d

    def _submit(self, data: list[bytes], pending: list[_Pending]) -> None:
        if self.pipelining or not self.outstanding:
            self._write(data, pending)
        else:
            self._unsent.append((data, pending))

    def _write(self, data: list[bytes], pending: list[_Pending]) -> None:
        assert self.transport is not None
        if len(data) == 1:
            self.transport.write(data[0])
        else:
            self.transport.writeSequence(data)
        idle = not self._pending
        self._pending.extend(pending)
        if idle:
            self._arm_timer()

    def close(self) -> None:
        """Take no more requests; close once the ones written are answered."""
        self.closing = True
        if not self.outstanding and self.transport is not None:
            self.transport.loseConnection()

    def abort(self, reason: Exception) -> None:
        """Drop the connection now, failing every request not yet answered with ``reason``."""
        self.closing = True
        self._aborted = True
        self._fail_all(reason)
        if self.transport is not None:
            self.transport.abortConnection()

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 (Twisted)
        """Parse answers."""
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as error:
            cause = error.__context__ if isinstance(error, httptools.HttpParserCallbackError) \
                else error
            self.abort(cause if isinstance(cause, HTTPClientError)
                       else ProtocolViolation(f"malformed HTTP answer: {cause}"))
            return
        if self._pending:
            self._deadline.touch()
        # Idle, the deadline is left to run out: no answer is then due, and the timer is
        # not cancelled and made again for every request (each a reactor heap operation).

    def connectionLost(self, reason: Failure = None) -> None:  # noqa: N802 (Twisted)
        """Fail what is still waiting."""
        self.closing = True
        self._deadline.stop()
        message = (f"connection lost: {reason.getErrorMessage()}" if reason is not None
                   else "connection lost")
        if not self._aborted and reason is not None and reason.check(ConnectionDone) \
                and not any(p.begun for p in self._pending):
            self.closed_when_idle = True
            self._fail_all(StaleConnection(message))
        else:
            self._fail_all(ConnectionGone(message))
        if not self.connected_deferred.called:
            self.connected_deferred.errback(ConnectionGone(f"{message} while connecting"))
        self.lost_deferred.callback(None)

    # -- parser callbacks

    def on_message_begin(self) -> None:
        if not self._pending:
            raise ProtocolViolation("an answer came that no request asked for")
        self._pending[0].begun = True

    def on_header(self, name: bytes, value: bytes) -> None:
        self._pending[0].headers.append((name.lower(), value))

    def on_body(self, data: bytes) -> None:
        pending = self._pending[0]
        pending.size += len(data)
        if pending.size > pending.max_body:
            raise ProtocolViolation(f"answer body larger than {pending.max_body} bytes")
        pending.body.append(data)

    def on_message_complete(self) -> None:
        status = self._parser.get_status_code()
        pending = self._pending[0]
        if 100 <= status < 200:
            pending.headers.clear()
            return
        self._pending.popleft()
        self.answered += 1
        if not self._parser.should_keep_alive():
            self.closing = True
        body = pending.body[0] if len(pending.body) == 1 else b"".join(pending.body)
        if self._unsent and not self._pending and not self.closing \
                and self.transport is not None:
            self._write(*self._unsent.popleft())
        response = HTTPResponse(status, tuple(pending.headers), body)
        if pending.batch is None:
            pending.deferred.callback(response)
        else:
            pending.batch.append(response)
            if pending.last:
                pending.deferred.callback(pending.batch)
        if self.closing and not self._pending and self.transport is not None:
            unsent, self._unsent = self._unsent, deque()
            for _, requests in unsent:  # never written: a GET among them is sent elsewhere
                _fail(requests, StaleConnection("the server closes the connection"))
            self.transport.loseConnection()

    # -- timeouts

    def _arm_timer(self) -> None:
        self._deadline.start(self._response_timeout)

    def _timed_out(self) -> None:
        if self._pending:
            self.abort(ResponseTimeout(f"no answer for {self._response_timeout:g} s"))

    def _fail_all(self, reason: Exception) -> None:
        pending, self._pending = self._pending, deque()
        unsent, self._unsent = self._unsent, deque()
        _fail([*pending, *(request for _, requests in unsent for request in requests)], reason)


def _fail(requests: Sequence[_Pending], reason: Exception) -> None:
    """Fail each request's Deferred (once for a batch, which shares one)."""
    for request in requests:
        if not request.deferred.called:
            request.deferred.errback(reason)


class PersistentConnection:
    """One kept-open connection to a server, reopened on demand after a loss.

    :param endpoint: how to connect (TLS included).
    :param host: the ``Host`` header value.
    :param clock: the reactor's clock.
    :param on_lost: called with this object when an open connection is lost, unless the server
        closed it while idle (see the module's docstring) and a new one could be opened.
    """

    def __init__(self, endpoint: IStreamClientEndpoint, host: bytes, clock: IReactorTime,
                 on_lost: Callable[["PersistentConnection"], None] | None = None,
                 response_timeout: float = RESPONSE_TIMEOUT) -> None:
        self._endpoint = endpoint
        self._host = host
        self._clock = clock
        self._on_lost = on_lost
        self._response_timeout = response_timeout
        self._protocol: HTTP1ClientProtocol | None = None
        self._waiters: list[Deferred] | None = None
        self._stopped = False
        self._pipelining = True

    @property
    def pipelining(self) -> bool:
        """Whether requests are written before the answers to earlier ones come (see
        :attr:`HTTP1ClientProtocol.pipelining`)."""
        return self._pipelining

    @pipelining.setter
    def pipelining(self, value: bool) -> None:
        self._pipelining = value
        if self._protocol is not None:
            self._protocol.pipelining = value

    @property
    def is_open(self) -> bool:
        """Whether a connection is open and taking requests."""
        return self._protocol is not None and not self._protocol.closing

    @property
    def protocol(self) -> HTTP1ClientProtocol | None:
        """The open connection's protocol, if any."""
        return self._protocol if self.is_open else None

    def connect(self) -> Deferred:
        """A Deferred that fires with an open protocol, connecting if needed.

        Fails with :class:`ConnectionGone` if the connection cannot be made.
        Waiters are answered in the order they asked.
        """
        waiter: Deferred = Deferred()
        if self._stopped:
            waiter.errback(ConnectionGone("connection stopped"))
        elif self.is_open:
            waiter.callback(self._protocol)
        elif self._waiters is not None:
            self._waiters.append(waiter)
        else:
            self._waiters = [waiter]
            self._open()
        return waiter

    def _open(self) -> None:
        from twisted.internet.endpoints import connectProtocol

        protocol = HTTP1ClientProtocol(self._host, self._clock, self._response_timeout)
        protocol.pipelining = self._pipelining

        def connected(_: Any) -> None:
            if self._stopped:
                protocol.abort(ConnectionGone("connection stopped"))
                self._answer_waiters(Failure(ConnectionGone("connection stopped")))
                return
            self._protocol = protocol
            protocol.lost_deferred.addCallback(lambda _: self._lost(protocol))
            self._answer_waiters(protocol)

        def failed(failure: Failure) -> None:
            self._answer_waiters(Failure(ConnectionGone(
                f"cannot connect: {failure.getErrorMessage()}")))

        d = connectProtocol(self._endpoint, protocol)
        d.addCallback(lambda _: protocol.connected_deferred)
        d.addCallbacks(connected, failed)

    def _answer_waiters(self, result: Any) -> None:
        waiters, self._waiters = self._waiters or [], None
        for waiter in waiters:
            if isinstance(result, Failure):
                waiter.errback(result)
            else:
                waiter.callback(result)

    def _lost(self, protocol: HTTP1ClientProtocol) -> None:
        if self._protocol is not protocol:
            return
        self._protocol = None
        if self._stopped:
            return
        if protocol.closed_when_idle:
            # The server ended a kept-alive connection: it is gone only if a new one cannot be
            # made. One that had answered is replaced now, so that the next request need not
            # wait; one never used is replaced when a request comes (a server that closes
            # every connection at once must not be reconnected to in a loop).
            if protocol.answered:
                self.connect().addErrback(self._reopen_failed)
        elif self._on_lost is not None:
            self._on_lost(self)

    def _reopen_failed(self, failure: Failure) -> None:
        if self._on_lost is not None and not self._stopped and self._protocol is None:
            self._on_lost(self)

    def request(self, method: bytes, target: bytes, headers: Sequence[tuple[bytes, bytes]] = (),
                body: bytes = b"", max_body: int = MAX_BODY) -> Deferred:
        """Send a request on the open connection (opening one if needed).

        Requests made while connecting are written, in order, once connected. A GET or HEAD
        that fails with :class:`StaleConnection` is sent again, once, on a new connection.
        """
        def send() -> Deferred:  # (once stopped, it fails with ConnectionGone)
            return self._send(method, target, headers, body, max_body)
        return resend_if_stale(send(), method, send)

    def _send(self, method: bytes, target: bytes, headers: Sequence[tuple[bytes, bytes]],
              body: bytes, max_body: int) -> Deferred:
        if self.is_open:
            assert self._protocol is not None
            return self._protocol.request(method, target, headers, body, max_body)
        d = self.connect()
        d.addCallback(lambda protocol: protocol.request(method, target, headers, body, max_body))
        return d

    def request_many(self, requests: Sequence[tuple[bytes, bytes, Sequence[tuple[bytes, bytes]],
                                                    bytes]],
                     max_body: int = MAX_BODY) -> Deferred:
        """Send requests in one write (:meth:`HTTP1ClientProtocol.request_many`) on the open
        connection, opening one if needed. None of them is sent again."""
        if self.is_open:
            assert self._protocol is not None
            return self._protocol.request_many(requests, max_body)
        d = self.connect()
        d.addCallback(lambda protocol: protocol.request_many(requests, max_body))
        return d

    def stop(self) -> None:
        """Close the connection and open no more; requests waiting for a connection being
        opened fail at once (its handshake may never end: a hung server)."""
        self._stopped = True
        if self._protocol is not None:
            self._protocol.abort(ConnectionGone("connection stopped"))
            self._protocol = None
        self._answer_waiters(Failure(ConnectionGone("connection stopped")))

"""An HTTP/1.1 server protocol for APIs: pipelined, streaming, bounded.

Requests on one connection are answered strictly in order. The application
sees each request as soon as its headers are in (:data:`Application`) and
returns a :class:`RequestHandler` that receives the body as it arrives,
so a large upload goes straight to its destination and is never held
whole. A request that arrives while an earlier one is still being answered
waits, and its bytes are buffered (the connection stops reading past
:attr:`Limits.buffered_bytes`).

Every answer has a ``Content-Length`` (no chunked responses); a large body
is streamed from a :class:`StreamBody` as the peer reads it. Anything the
client gets wrong gets a 4xx answer with a short text body, and the
connection stays usable where HTTP allows it. An exception in the
application becomes a 500 with a generic message (and a log entry), never
a traceback on the wire.

Limits (:class:`Limits`): request line and headers, header count, body
bytes discarded after a refusal, bytes buffered for waiting requests,
requests waiting, and timeouts for idle connections and stalled requests.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import httptools
from attrs import define, field
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IPushProducer, IReactorTime
from twisted.internet.protocol import Factory, Protocol
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from .deadline import Deadline
from .messages import (REASONS, STREAM_PIECE, Application, ConnectionScope, HTTPError, Limits,
                       Request, RequestHandler, Response, StreamBody, header_pairs,
                       text_response)

__all__ = ["Application", "ConnectionScope", "HTTP1ServerFactory", "HTTP1ServerProtocol",
           "HTTPError", "Limits", "Request", "RequestHandler", "Response", "StreamBody",
           "header_pairs", "text_response"]


@define
class _Exchange:
    """One request and what is known of it so far."""

    request: Request | None = None
    handler: RequestHandler | None = None
    error: HTTPError | None = None
    buffered: list[bytes] = field(factory=list)
    buffered_size: int = 0
    discarded: int = 0
    complete: bool = False
    started: bool = False
    #: It came with ``Expect: 100-continue``.
    expects_continue: bool = False


@implementer(IPushProducer)
class _BodyStreamer:
    """Writes a :class:`StreamBody` to a transport as fast as the peer reads it."""

    def __init__(self, transport: Any, body: StreamBody, done: Callable[[bool], None]) -> None:
        self._transport = transport
        self._body = body
        self._done = done
        self._offset = 0
        self._paused = False
        self._finished = False

    def start(self) -> None:
        self._transport.registerProducer(self, True)
        self._write_more()

    def _write_more(self) -> None:
        while not self._paused and not self._finished:
            remaining = self._body.length - self._offset
            if remaining <= 0:
                self._finish(True)
                return
            try:
                piece = self._body.read(self._offset, min(STREAM_PIECE, remaining))
            except Exception:
                Logger().failure("reading a response body failed")
                piece = b""
            if not piece:
                # The promised length can no longer be met: the only honest end is to close.
                self._finish(False)
                return
            self._offset += len(piece)
            self._transport.write(piece)

    def _finish(self, ok: bool) -> None:
        if not self._finished:
            self._finished = True
            self._transport.unregisterProducer()
            self._done(ok)

    def pauseProducing(self) -> None:  # noqa: N802 (Twisted)
        self._paused = True

    def resumeProducing(self) -> None:  # noqa: N802 (Twisted)
        self._paused = False
        self._write_more()

    def stopProducing(self) -> None:  # noqa: N802 (Twisted)
        self._finish(False)


class HTTP1ServerProtocol(Protocol):
    """One HTTP/1.1 connection (see the module docstring)."""

    _log = Logger()

    def __init__(self, application: Application, clock: IReactorTime, limits: Limits) -> None:
        self._application = application
        self._clock = clock
        self._limits = limits
        self._parser = httptools.HttpRequestParser(self)
        self._exchanges: deque[_Exchange] = deque()
        self._parsing: _Exchange | None = None
        self._in_headers = False
        self._header_bytes = 0
        self._target: list[bytes] = []
        self._headers: list[tuple[bytes, bytes]] = []
        self._answering = False
        self._buffered = 0
        self._paused = False
        self._closing = False
        self._deadline = Deadline(clock, self._timed_out)
        self._timeout_kind: float | None = None
        self._scope = ConnectionScope()

    # -- connection

    def connectionMade(self) -> None:  # noqa: N802 (Twisted)
        """Start the idle timer."""
        self._arm_timer()

    def connectionLost(self, reason: Failure = None) -> None:  # noqa: N802 (Twisted)
        """Forget everything in flight."""
        self._closing = True
        self._deadline.stop()
        self._exchanges.clear()
        self._scope.close()

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 (Twisted)
        """Parse what came; requests are started and answered as they complete."""
        if self._closing:
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(HTTPError(501, "protocol upgrades are not supported", close=True))
            return
        except httptools.HttpParserError as error:
            if isinstance(error, httptools.HttpParserCallbackError):
                self._log.failure("HTTP request handling failed", Failure(error.__context__ or
                                                                            error))
                self._fail(HTTPError(500, "internal error", close=True))
            else:
                self._fail(HTTPError(400, f"malformed HTTP request: {error}", close=True))
            return
        if self._in_headers:
            self._header_bytes += len(data)
            if self._header_bytes > self._limits.header_bytes:
                self._fail(HTTPError(431, "request headers too large", close=True))
                return
        self._arm_timer()
        self._flow_control()

    # -- parser callbacks (they must not raise)

    def on_message_begin(self) -> None:
        self._parsing = _Exchange()
        self._in_headers = True
        self._header_bytes = 0
        self._target = []
        self._headers = []

    def on_url(self, url: bytes) -> None:
        self._target.append(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        exchange = self._parsing
        assert exchange is not None
        self._in_headers = False
        if self._closing:
            return
        target = b"".join(self._target)
        headers = self._headers
        keep_alive = bool(self._parser.should_keep_alive())
        length = None
        for name, value in headers:  # (one pass for the two headers looked at here)
            if name == b"content-length":
                if length is None:
                    length = int(value) if value and value.isdigit() else -1
            elif name == b"expect" and value.lower() == b"100-continue":
                exchange.expects_continue = True
        request = Request(self._parser.get_method(), target, headers, keep_alive,
                          None if length is None or length < 0 else length, self._scope)
        exchange.request = request
        if len(target) > self._limits.target_bytes:
            exchange.error = HTTPError(414, "request target too long", close=True)
        elif len(headers) > self._limits.header_count:
            exchange.error = HTTPError(431, "too many request headers", close=True)
        elif self._parser.get_http_version() not in ("1.1", "1.0"):
            exchange.error = HTTPError(505, "only HTTP/1.1 and 1.0 are supported", close=True)
        if len(self._exchanges) > self._limits.waiting_requests:
            exchange.error = HTTPError(503, "too many pipelined requests", close=True)
        self._exchanges.append(exchange)
        if self._exchanges[0] is exchange and not self._answering:
            self._start(exchange)
        else:
            # Waiting behind another request: its headers count as buffered bytes too.
            exchange.buffered_size = len(target) + sum(len(k) + len(v) for k, v in headers)
            self._buffered += exchange.buffered_size

    def on_body(self, data: bytes) -> None:
        exchange = self._parsing
        if exchange is None or self._closing:
            return
        if exchange.started:
            self._deliver(exchange, data)
        else:
            exchange.buffered.append(data)
            exchange.buffered_size += len(data)
            self._buffered += len(data)

    def on_message_complete(self) -> None:
        exchange = self._parsing
        if exchange is None:
            return
        self._parsing = None
        exchange.complete = True
        if exchange.started and self._exchanges and self._exchanges[0] is exchange \
                and not self._answering:
            self._finish(exchange)

    # -- answering

    def _start(self, exchange: _Exchange) -> None:
        """The exchange is first in line: hand it to the application and feed it its body."""
        exchange.started = True
        request = exchange.request
        assert request is not None
        if exchange.error is None:
            try:
                exchange.handler = self._application(request)
            except HTTPError as error:
                exchange.error = error
            except Exception:
                self._log.failure("HTTP application failed on {method} {target}",
                                  method=request.method, target=request.path[:200])
                exchange.error = HTTPError(500, "internal error")
        if exchange.error is None and exchange.expects_continue:
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        buffered, exchange.buffered = exchange.buffered, []
        self._buffered -= exchange.buffered_size
        exchange.buffered_size = 0
        for data in buffered:
            self._deliver(exchange, data)
        if exchange.complete:
            self._finish(exchange)

    def _deliver(self, exchange: _Exchange, data: bytes) -> None:
        if exchange.error is None:
            assert exchange.handler is not None
            try:
                exchange.handler.body_received(data)
                return
            except HTTPError as error:
                exchange.error = error
            except Exception:
                self._log.failure("HTTP request body handling failed")
                exchange.error = HTTPError(500, "internal error")
        exchange.discarded += len(data)
        if exchange.discarded > self._limits.discard_bytes:
            # Reading a refused body to its end is not worth it: answer and close.
            exchange.error.close = True
            exchange.complete = True
            if self._exchanges and self._exchanges[0] is exchange and not self._answering:
                self._finish(exchange)

    def _finish(self, exchange: _Exchange) -> None:
        """Body complete: get the answer (maybe later) and send it."""
        self._answering = True
        if exchange.error is not None:
            self._send(exchange, self._error_response(exchange.error))
            return
        assert exchange.handler is not None
        try:
            result = exchange.handler.body_complete()
        except HTTPError as error:
            self._send(exchange, self._error_response(error))
            return
        except Exception:
            self._log.failure("HTTP application failed")
            self._send(exchange, text_response(500, "internal error"))
            return
        if isinstance(result, Response) or not isinstance(result, Deferred):
            self._send(exchange, result)  # (Deferred's isinstance goes through abc: asked last)
        else:
            result.addCallbacks(lambda response: self._send(exchange, response),
                                lambda failure: self._send(exchange, self._failure_response(failure)))

    def _failure_response(self, failure: Failure) -> Response:
        if failure.check(HTTPError):
            return self._error_response(failure.value)
        self._log.failure("HTTP application failed", failure)
        return text_response(500, "internal error")

    def _error_response(self, error: HTTPError) -> Response:
        return text_response(error.status, error.message or REASONS.get(error.status, b"").decode(),
                             close=error.close)

    def _send(self, exchange: _Exchange, response: Response) -> None:
        if self._closing or self.transport is None:
            return
        request = exchange.request
        assert request is not None
        close = not request.keep_alive
        said = False  # whether the answer has a Connection header of its own
        lines = [b"HTTP/1.1 %d %s\r\n" % (response.status, REASONS.get(response.status, b"Unknown"))]
        for name, value in response.headers:
            lines.append(b"%s: %s\r\n" % (name, value))
            if name == b"connection":
                said = True
                close = close or value == b"close"
        length = response.stream.length if response.stream is not None else len(response.body)
        if close and not said:
            lines.append(b"connection: close\r\n")
        if response.status not in (204, 304) and not 100 <= response.status < 200:
            lines.append(b"content-length: %d\r\n" % length)
        lines.append(b"\r\n")
        if request.method == b"HEAD" or response.status in (204, 304):
            self.transport.write(b"".join(lines))
            self._sent(exchange, close)
        elif response.stream is None:
            lines.append(response.body)
            self.transport.write(b"".join(lines))
            self._sent(exchange, close)
        else:
            self.transport.write(b"".join(lines))
            streamer = _BodyStreamer(self.transport, response.stream,
                                     lambda ok: self._sent(exchange, close or not ok))
            streamer.start()

    def _sent(self, exchange: _Exchange, close: bool) -> None:
        if self._closing:
            return
        if self._exchanges and self._exchanges[0] is exchange:
            self._exchanges.popleft()
        self._answering = False
        if close:
            self._closing = True
            self.transport.loseConnection()
            return
        self._arm_timer()
        if self._exchanges and not self._exchanges[0].started \
                and self._exchanges[0].request is not None:
            self._start(self._exchanges[0])
        self._flow_control()

    def _fail(self, error: HTTPError) -> None:
        """A request that cannot be parsed: answer it after the ones before it, then close."""
        self._parsing = None
        self._in_headers = False
        placeholder = _Exchange(Request(b"GET", b"", [], False), error=error, complete=True)
        if self._exchanges and self._exchanges[-1].request is not None \
                and not self._exchanges[-1].complete:
            self._exchanges[-1].error = self._exchanges[-1].error or error
            self._exchanges[-1].complete = True
        else:
            self._exchanges.append(placeholder)
        self._closing_after_answers()

    def _closing_after_answers(self) -> None:
        # Stop reading; answer what is queued; the failing exchange closes the connection.
        self._parser = _Closed()
        head = self._exchanges[0] if self._exchanges else None
        if head is not None and not self._answering:
            if not head.started:
                self._start(head)
            elif head.complete:
                self._finish(head)

    # -- flow control and timeouts

    def _flow_control(self) -> None:
        if self.transport is None:
            return
        if not self._paused and self._buffered > self._limits.buffered_bytes:
            self._paused = True
            self.transport.pauseProducing()
        elif self._paused and self._buffered <= self._limits.buffered_bytes // 2:
            self._paused = False
            self.transport.resumeProducing()

    def _arm_timer(self) -> None:
        """Activity: the applicable timeout (idle, request, or none while we answer) runs
        from now."""
        if self._closing:
            return
        busy = self._parsing is not None or bool(self._exchanges)
        if busy and self._answering:
            timeout = None  # our own work in progress: no client timeout applies
        elif busy:
            timeout = self._limits.request_timeout
        else:
            timeout = self._limits.idle_timeout
        if timeout == self._timeout_kind and timeout is not None:
            self._deadline.touch()
        else:
            self._timeout_kind = timeout
            self._deadline.start(timeout)

    def _timed_out(self) -> None:
        self._timeout_kind = None
        if self._parsing is not None and self._parsing.request is None:
            self._fail(HTTPError(408, "request timed out", close=True))
        else:
            self._closing = True
            self.transport.abortConnection()


class _Closed:
    """Stands in for the parser once a connection stops reading requests."""

    def feed_data(self, data: bytes) -> None:
        """Ignore everything."""

    def should_keep_alive(self) -> bool:
        return False


class HTTP1ServerFactory(Factory):
    """Makes :class:`HTTP1ServerProtocol` instances for one application (under TLS, ALPN
    is the TLS layer's: ``httpwire.tls.server_context``)."""

    def __init__(self, application: Application, clock: IReactorTime,
                 limits: Limits | None = None) -> None:
        self._application = application
        self._clock = clock
        self._limits = limits or Limits()

    def buildProtocol(self, addr: Any) -> HTTP1ServerProtocol:  # noqa: N802 (Twisted)
        """A protocol for one connection."""
        protocol = HTTP1ServerProtocol(self._application, self._clock, self._limits)
        protocol.factory = self
        return protocol


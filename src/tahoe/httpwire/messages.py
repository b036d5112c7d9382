"""The values an HTTP/1.1 API exchanges with :mod:`.server`: the limits, requests,
responses, the handler an application returns for a request, errors that become 4xx
answers, and the per-connection scope requests share."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol as TypingProtocol

from attrs import define, field, frozen
from twisted.internet.defer import Deferred
from twisted.logger import Logger

REASONS = {
    100: b"Continue", 200: b"OK", 201: b"Created", 204: b"No Content", 206: b"Partial Content",
    400: b"Bad Request", 401: b"Unauthorized", 404: b"Not Found", 405: b"Method Not Allowed",
    406: b"Not Acceptable", 408: b"Request Timeout", 409: b"Conflict", 411: b"Length Required",
    413: b"Request Entity Too Large", 414: b"Request-URI Too Long", 415: b"Unsupported Media Type",
    416: b"Requested Range Not Satisfiable", 417: b"Expectation Failed",
    431: b"Request Header Fields Too Large", 500: b"Internal Server Error",
    501: b"Not Implemented", 503: b"Service Unavailable", 505: b"HTTP Version Not Supported",
    507: b"Insufficient Storage",
}
#: Bytes written per piece of a streamed body.
STREAM_PIECE = 256 * 1024


@frozen
class Limits:
    """What one connection may cost the server.

    :ivar header_bytes: request line and headers of one request.
    :ivar header_count: headers of one request.
    :ivar target_bytes: the request target (path and query).
    :ivar discard_bytes: body bytes read and dropped after a refusal before
        the connection is closed instead.
    :ivar buffered_bytes: bytes of waiting (pipelined) requests held before
        the connection stops reading.
    :ivar waiting_requests: requests waiting behind the one being answered.
    :ivar idle_timeout: seconds a connection may sit with nothing in progress.
    :ivar request_timeout: seconds a partly received request may go without a byte.
    """

    header_bytes: int = 32 * 1024
    header_count: int = 100
    target_bytes: int = 8 * 1024
    discard_bytes: int = 1024 * 1024
    buffered_bytes: int = 4 * 1024 * 1024
    waiting_requests: int = 256
    idle_timeout: float = 15 * 60.0
    request_timeout: float = 60.0


class HTTPError(Exception):
    """Raised by an application to answer with ``status`` and a short text ``message``.

    :ivar close: close the connection after this answer.
    """

    def __init__(self, status: int, message: str = "", *, close: bool = False) -> None:
        super().__init__(status, message)
        self.status = status
        self.message = message
        self.close = close


class ConnectionScope:
    """What lives as long as one connection: callbacks run when it closes."""

    def __init__(self) -> None:
        self._hooks: dict[object, Callable[[], None]] = {}
        self.closed = False

    def on_close(self, key: object, hook: Callable[[], None]) -> None:
        """Run ``hook()`` when the connection closes (replacing any hook under ``key``)."""
        self._hooks[key] = hook

    def forget(self, key: object) -> None:
        """Drop the hook under ``key``, if any."""
        self._hooks.pop(key, None)

    def close(self) -> None:
        """The connection closed: run every hook once."""
        self.closed = True
        hooks, self._hooks = self._hooks, {}
        for hook in hooks.values():
            try:
                hook()
            except Exception:
                Logger().failure("a connection-close hook failed")


@define
class Request:
    """One request as far as its headers.

    :ivar method: e.g. ``b"GET"``.
    :ivar target: the raw request target (path and query).
    :ivar headers: ``(name, value)`` pairs in order, names lower-cased.
    :ivar keep_alive: whether the client allows the connection to stay open.
    :ivar content_length: the ``Content-Length``, if sent.
    :ivar connection: the connection's scope (for work tied to the connection).
    """

    method: bytes
    target: bytes
    headers: list[tuple[bytes, bytes]]
    keep_alive: bool
    content_length: int | None = None
    connection: ConnectionScope = field(factory=ConnectionScope)

    @property
    def path(self) -> bytes:
        """The target without its query."""
        return self.target.split(b"?", 1)[0]

    def header(self, name: bytes) -> bytes | None:
        """The first value of a header (``name`` lower-case), or None."""
        for key, value in self.headers:
            if key == name:
                return value
        return None

    def header_values(self, name: bytes) -> list[bytes]:
        """Every value of a header (``name`` lower-case), in order."""
        return [value for key, value in self.headers if key == name]


class StreamBody(TypingProtocol):
    """A response body read piece by piece as the peer takes it."""

    length: int

    def read(self, offset: int, length: int) -> bytes:
        """Bytes ``[offset, offset+length)`` of the body (all of them)."""


@define
class Response:
    """An answer: status, headers (``Content-Length`` is added), and a body."""

    status: int
    headers: list[tuple[bytes, bytes]] = field(factory=list)
    body: bytes = b""
    stream: StreamBody | None = None


class RequestHandler(TypingProtocol):
    """What an application returns for one request."""

    def body_received(self, data: bytes) -> None:
        """A piece of the body, in order. May raise :class:`HTTPError` (the rest is dropped)."""

    def body_complete(self) -> "Response | Deferred[Response]":
        """The whole body is in: the answer (or a Deferred of it). May raise :class:`HTTPError`."""


#: Called when a request's headers are in: returns its handler or raises :class:`HTTPError`.
Application = Callable[[Request], RequestHandler]


def text_response(status: int, message: str, close: bool = False) -> Response:
    """A plain-text answer (errors)."""
    headers = [(b"content-type", b"text/plain; charset=utf-8")]
    if close:
        headers.append((b"connection", b"close"))
    return Response(status, headers, message.encode("utf-8"))


def header_pairs(pairs: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """Headers given as text, as the bytes pairs a :class:`Response` holds."""
    return [(name.encode("latin-1"), value.encode("latin-1")) for name, value in pairs]

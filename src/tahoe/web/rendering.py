"""What every gateway page shares: arguments, async rendering, errors, back-pressure.

Kept apart from :mod:`tahoe.web.common`, whose error table names the errors of
the file and directory layers, so that the pages a storage node serves
(``/statistics``, ``/storage``, ``/status``) load none of those layers. Errors
are still translated at one boundary, through one table (STYLE.md §8):
:func:`render_async` runs a coroutine for a request and turns any exception
into a status and a plain-text body (``reference/frontends.md`` §3.10); a
:class:`WebError` carries its own status, anything else goes through
:func:`tahoe.web.common.status_for`, imported at the first such error.
"""
from __future__ import annotations

import html
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import unquote_to_bytes

from twisted.internet.defer import CancelledError, Deferred
from twisted.python import log
from twisted.web import server
from twisted.web.server import Request

from .errorpage import error_page
from .headers import set_security_headers, wants_html


class WebError(Exception):
    """A request the gateway refuses, with the HTTP status to answer it with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def parse_query(query: bytes) -> dict[bytes, list[bytes]]:
    """``a=1&b=&c`` as name -> values, percent-decoded to bytes (``+`` is a space).

    Unlike :func:`urllib.parse.parse_qs` on bytes, which re-encodes its results
    as ASCII (a ``%E2%98%83`` in the query raised ``UnicodeEncodeError``, a 500),
    any byte, raw or percent-encoded, is accepted; text is decoded later by
    :func:`arg`.  A field without ``=`` has the empty value.
    """
    result: dict[bytes, list[bytes]] = {}
    for field in query.split(b"&"):
        if not field:
            continue
        name, _, value = field.partition(b"=")
        result.setdefault(unquote_to_bytes(name.replace(b"+", b" ")), []).append(
            unquote_to_bytes(value.replace(b"+", b" ")))
    return result


def _query_args(request: Request) -> dict[bytes, list[bytes]]:
    cached = getattr(request, "_tahoe_query_args", None)
    if cached is None:
        cached = parse_query(request.uri.partition(b"?")[2].partition(b"#")[0])
        request._tahoe_query_args = cached  # type: ignore[attr-defined]
    return cached  # type: ignore[no-any-return]


def arg(request: Request, name: str, default: str | None = None) -> str | None:
    """A query or form argument, decoded as UTF-8 (the query wins over the form)."""
    key = name.encode("ascii")
    values = _query_args(request).get(key) or request.args.get(key)
    if not values:
        return default
    value = values[0]
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def raw_arg(request: Request, name: str) -> bytes | None:
    """A query or form argument as bytes (the query wins), e.g. the ``file`` form field."""
    key = name.encode("ascii")
    values = _query_args(request).get(key) or request.args.get(key)
    if not values:
        return None
    value = values[0]
    return value if isinstance(value, bytes) else str(value).encode("utf-8")


def _boolean(value: str) -> bool:
    lowered = value.lower()
    if lowered in ("true", "t", "1", "on"):
        return True
    if lowered in ("false", "f", "0", "off"):
        return False
    raise ValueError(value)


def redirect(request: Request, location: str, status: int = 302) -> bytes:
    """Answer with a redirect to ``location`` (passed through unchanged) and a small page."""
    request.setResponseCode(status)
    request.setHeader(b"Location", location.encode("utf-8"))
    request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
    escaped = html.escape(location, quote=True)
    return (f'<html><head><meta http-equiv="refresh" content="0;URL={escaped}"></head>'
            f'<body bgcolor="#FFFFFF" text="#000000"><a href="{escaped}">click here</a>'
            f"</body></html>").encode("utf-8")


def boolean_arg(request: Request, name: str, default: bool) -> bool:
    """A boolean argument as Tahoe reads it (true/t/1/on, false/f/0/off).

    :raises WebError: 400 for anything else.
    """
    value = arg(request, name)
    if value is None:
        return default
    try:
        return _boolean(value)
    except ValueError:
        raise WebError(f"invalid boolean argument: {value.encode()!r}") from None


def fail_request(request: Request, error: BaseException) -> None:
    """Answer ``request`` with the status and message the error table gives."""
    if isinstance(error, WebError):
        status, message = error.status, str(error)
    else:
        # the whole table, with the file and directory layers' errors: loaded on first use
        from .common import status_for
        status, message = status_for(error)
    if status == 500:
        log.err(error, "unexpected error in the web gateway")
    if request.finished or getattr(request, "_disconnected", False):
        return
    if request.startedWriting:
        # Too late for a status code; cut the response short so the client sees the failure.
        request.loseConnection()
        return
    request.setResponseCode(status)
    if wants_html(request):  # a browser: the same status, a page with a way back
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        body = error_page(status, message, request.path.decode("utf-8", "replace"))
    else:
        request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
        body = message.encode("utf-8") + b"\n"
    request.setHeader(b"Content-Length", b"%d" % len(body))
    request.write(body)
    request.finish()


def render_async(request: Request,
                 handler: Callable[[Request], Coroutine[Any, Any, bytes | None]]) -> Any:
    """Render with a coroutine; its bytes (if any) become the body, errors a status.

    :returns: ``NOT_DONE_YET`` for Twisted.
    """
    if not getattr(request, "security_headers_set", False):
        set_security_headers(request)  # (a GatewayRequest has them from its process)
    d = Deferred.fromCoroutine(handler(request))
    finished = request.notifyFinish()
    finished.addErrback(lambda f: d.cancel())

    def done(body: bytes | None) -> None:
        if body is not None and not request.finished:
            request.setHeader(b"Content-Length", b"%d" % len(body))
            request.write(body)
        if not request.finished:
            request.finish()

    def failed(failure: Any) -> None:
        if failure.check(CancelledError):
            return
        fail_request(request, failure.value)

    d.addCallbacks(done, failed)
    return server.NOT_DONE_YET


class StreamPausing:
    """A push producer for ``request.registerProducer``: awaits while the client is slow."""

    def __init__(self) -> None:
        self._paused: Deferred | None = None
        self.stopped = False

    def pauseProducing(self) -> None:  # noqa: N802 (Twisted)
        """The transport's buffer is full."""
        if self._paused is None:
            self._paused = Deferred()

    def resumeProducing(self) -> None:  # noqa: N802 (Twisted)
        """The transport drained."""
        paused, self._paused = self._paused, None
        if paused is not None:
            paused.callback(None)

    def stopProducing(self) -> None:  # noqa: N802 (Twisted)
        """The client went away."""
        self.stopped = True
        self.resumeProducing()

    async def ready(self) -> None:
        """Wait until the client can take more."""
        if self._paused is not None:
            await self._paused

"""What every gateway resource shares: argument parsing, errors to HTTP statuses, async rendering.

Errors are translated at one boundary, through one table (STYLE.md §8):
:func:`render_async` runs a coroutine for a request and turns any exception
into a status and a plain-text body (``reference/frontends.md`` §3.10).
"""
from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from twisted.internet.defer import CancelledError, Deferred
from twisted.python import log
from twisted.web import server
from twisted.web.server import Request

from ..caps.errors import CapError
from ..client.errors import NotEnoughSharesError, UploadUnhappinessError
from ..immutable.errors import BadEncodingParameters


class WebError(Exception):
    """A request the gateway refuses, with the HTTP status to answer it with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def arg(request: Request, name: str, default: str | None = None) -> str | None:
    """A query or form argument, decoded as UTF-8 (the query wins over the form)."""
    values = request.args.get(name.encode("ascii"))
    if not values:
        return default
    value = values[0]
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def boolean_arg(request: Request, name: str, default: bool) -> bool:
    """A boolean argument as Tahoe reads it (true/t/1/on, false/f/0/off).

    :raises WebError: 400 for anything else.
    """
    value = arg(request, name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in ("true", "t", "1", "on"):
        return True
    if lowered in ("false", "f", "0", "off"):
        return False
    raise WebError(f"invalid boolean argument: {value.encode()!r}")


def set_security_headers(request: Request) -> None:
    """The headers Tahoe sends on every response."""
    request.setHeader(b"X-Frame-Options", b"DENY")
    request.setHeader(b"Referrer-Policy", b"no-referrer")


def _status_for(error: BaseException) -> tuple[int, str]:
    if isinstance(error, WebError):
        return error.status, str(error)
    if isinstance(error, CapError):
        return 400, f"Invalid capability: {error}"
    if isinstance(error, NotEnoughSharesError):
        return 410, f"{type(error).__name__}: {error}"
    if isinstance(error, UploadUnhappinessError):
        return 500, f"UploadUnhappinessError: {error}"
    if isinstance(error, BadEncodingParameters):
        return 400, str(error)
    return 500, f"Internal error: {type(error).__name__}: {error}"


def fail_request(request: Request, error: BaseException) -> None:
    """Answer ``request`` with the status and message the error table gives."""
    status, message = _status_for(error)
    if status == 500:
        log.err(error, "unexpected error in the web gateway")
    if request.finished or getattr(request, "_disconnected", False):
        return
    if request.startedWriting:
        # Too late for a status code; cut the response short so the client sees the failure.
        request.loseConnection()
        return
    request.setResponseCode(status)
    request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
    request.setHeader(b"Content-Length", b"%d" % len(message.encode("utf-8") + b"\n"))
    request.write(message.encode("utf-8") + b"\n")
    request.finish()


def render_async(request: Request,
                 handler: Callable[[Request], Coroutine[Any, Any, bytes | None]]) -> Any:
    """Render with a coroutine; its bytes (if any) become the body, errors a status.

    :returns: ``NOT_DONE_YET`` for Twisted.
    """
    set_security_headers(request)
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

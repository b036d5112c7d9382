"""What every gateway resource shares: argument parsing, errors to HTTP statuses, async rendering.

Errors are translated at one boundary, through one table (STYLE.md §8):
:func:`render_async` runs a coroutine for a request and turns any exception
into a status and a plain-text body (``reference/frontends.md`` §3.10).
"""
from __future__ import annotations

import html
from collections.abc import Callable, Coroutine
from email import message_from_bytes, policy
from typing import Any, Literal, Union
from urllib.parse import unquote_to_bytes

from twisted.internet.defer import CancelledError, Deferred
from twisted.python import log
from twisted.web import server
from twisted.web.server import Request

from ..caps.errors import CapError
from ..caps.mutable import MutableFormat
from ..client.errors import NotEnoughSharesError, UploadUnhappinessError
from ..client.uploadable import FileUploadable, Uploadable
from ..dirnode.errors import (BadMetadata, ChildCapError, ChildOfWrongTypeError,
                              CorruptDirectory, DirnodeError, ExistingChildError,
                              MustBeDeepImmutableError, MustBeReadonlyError,
                              MustNotBeUnknownRWError, NoSuchChildError, NotMutableError,
                              NotWriteableError)
from ..immutable.errors import BadEncodingParameters
from ..mutable.errors import NotEnoughShares, UncoordinatedWriteError, UnrecoverableFile
from .errorpage import error_page
from .headers import set_security_headers, wants_html

#: ``replace=`` as Tahoe reads it: True, False, or only files may be replaced.
Replace = Union[bool, Literal["only-files"]]
EXISTING_CHILD = ("There was already a child by that name, and you asked me to not "
                  "replace it.")
EMPTY_PATH_COMPONENT = ("The webapi does not allow empty pathname components, i.e. a "
                        "double slash")


class WebError(Exception):
    """A request the gateway refuses, with the HTTP status to answer it with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ChildNotFound(NoSuchChildError):
    """No child of this name (404 ``No such child: NAME``).

    :ivar child_name: the name as the client gave it.
    """

    def __init__(self, name: str) -> None:
        super().__init__(f"no child named {name!r}")
        self.child_name = name


class FileInTheWay(ChildOfWrongTypeError):
    """A directory was to be created (or walked through) where a file is linked (409)."""


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


KNOWN_FORMATS = ("CHK", "SDMF", "MDMF")


def format_arg(request: Request, default: str | None) -> str | None:
    """``format=`` (upper-cased), else SDMF for ``mutable=true``, else ``default``.

    :raises WebError: 400 ``Unknown format: X, I know CHK, SDMF, MDMF``.
    """
    fmt = arg(request, "format")
    if fmt:
        if fmt.upper() not in KNOWN_FORMATS:
            raise WebError(f"Unknown format: {fmt}, I know CHK, SDMF, MDMF")
        return fmt.upper()
    return "SDMF" if boolean_arg(request, "mutable", False) else default


def requested_format(request: Request) -> str:
    """The format of a new file: ``CHK`` unless ``format=`` or ``mutable=true`` says otherwise."""
    return format_arg(request, "CHK") or "CHK"


def mkdir_format(request: Request) -> MutableFormat | None:
    """The format of a new directory (None: the gateway's default; ``CHK`` is ignored here)."""
    fmt = format_arg(request, None)
    if fmt == "SDMF":
        return MutableFormat.SDMF
    if fmt == "MDMF":
        return MutableFormat.MDMF
    return None


def replace_arg(request: Request, default: str = "true") -> Replace:
    """``replace=``: a boolean or ``only-files`` (case-insensitive).

    :raises WebError: 400 ``invalid replace= argument: 'X'`` for anything else.
    """
    value = arg(request, "replace", default) or ""
    if value.lower() == "only-files":
        return "only-files"
    try:
        return _boolean(value)
    except ValueError:
        raise WebError(f"invalid replace= argument: {value!r}") from None


def _boolean(value: str) -> bool:
    lowered = value.lower()
    if lowered in ("true", "t", "1", "on"):
        return True
    if lowered in ("false", "f", "0", "off"):
        return False
    raise ValueError(value)


def multipart_filename(request: Request, field: str) -> str | None:
    """The file name a ``multipart/form-data`` body gives for ``field``, if any."""
    content_type = request.getHeader(b"content-type") or b""
    if not content_type.lower().startswith(b"multipart/form-data"):
        return None
    request.content.seek(0)
    body = request.content.read()
    request.content.seek(0)
    message = message_from_bytes(b"MIME-Version: 1.0\r\nContent-Type: " + content_type
                                 + b"\r\n\r\n" + body, policy=policy.HTTP)
    if not message.is_multipart():
        return None
    for part in message.get_payload():  # type: ignore[union-attr]
        disposition_name = part.get_param("name", header="content-disposition")  # type: ignore
        if disposition_name == field:
            name = part.get_filename()  # type: ignore[union-attr]
            return str(name) if name is not None else None
    return None


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


def body_uploadable(request: Request) -> Uploadable:
    """The request body as an upload source (Twisted spools large bodies to a file)."""
    content = request.content
    content.seek(0, 2)
    size = content.tell()
    content.seek(0)
    return FileUploadable(content, size)


def _child_name(error: BaseException) -> str:
    name = getattr(error, "name", None)
    return "<unknown name>" if name is None else repr(name)


def _dirnode_status(error: DirnodeError) -> tuple[int, str]:
    """Statuses and messages of directory errors (``reference/frontends.md`` §3.10)."""
    if isinstance(error, NoSuchChildError):
        name = getattr(error, "child_name", None)
        return 404, f"No such child: {name if name is not None else error}"
    if isinstance(error, ExistingChildError):
        return 409, EXISTING_CHILD
    if isinstance(error, FileInTheWay):
        return 409, str(error)
    if isinstance(error, MustNotBeUnknownRWError):
        return 400, (f"MustNotBeUnknownRWError: an operation to add a child named "
                     f"{_child_name(error)} to a directory was given an unknown cap in a "
                     f"write slot; give it in the read slot (ro_uri) instead")
    if isinstance(error, MustBeDeepImmutableError):
        return 400, (f"MustBeDeepImmutableError: the cap given for the child named "
                     f"{_child_name(error)} must be immutable: it is added to an immutable "
                     f"directory, or came from one as an unknown cap")
    if isinstance(error, MustBeReadonlyError):
        return 400, (f"MustBeReadonlyError: the cap given for the child named "
                     f"{_child_name(error)} must be read-only: it is given in a read slot "
                     f"(ro_uri), or came from one as an unknown cap")
    if isinstance(error, (ChildCapError, BadMetadata, ChildOfWrongTypeError, NotMutableError,
                          NotWriteableError)):
        return 400, f"{type(error).__name__}: {error}"
    if isinstance(error, CorruptDirectory):
        return 500, f"CorruptDirectory: {error}"
    return 500, f"Internal error: {type(error).__name__}: {error}"


def status_for(error: BaseException) -> tuple[int, str]:
    """The HTTP status and plain-text message the error table gives an exception."""
    if isinstance(error, WebError):
        return error.status, str(error)
    if isinstance(error, DirnodeError):
        return _dirnode_status(error)
    if isinstance(error, (UnrecoverableFile, NotEnoughShares)):
        return 410, (f"UnrecoverableFileError: the directory (or mutable file) could not be "
                     f"retrieved, because there were not enough good shares ({error}). "
                     f"Servers may be disconnected or shares lost; a filecheck of this "
                     f"object tells more.")
    if isinstance(error, UncoordinatedWriteError):
        return 500, f"UncoordinatedWriteError: {error}"
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

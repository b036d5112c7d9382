"""HTTP/1.1 of the S3 gateway: limits, the early signature check, the site.

* :class:`S3Request` checks a request's signature as soon as its headers are
  in (the body is not signed by it): a request that fails keeps nothing of
  its body, one that waits for ``100 Continue`` is answered at once and its
  connection closed, so no one without a key can fill the disk through
  Twisted's spool; a body over S3's 5 GiB is dropped as it arrives.
* :class:`_Channel` reads at most :data:`READ_HEADER_SECTION` bytes of
  headers; past that it answers S3's ``RequestHeaderSectionTooLarge`` itself.
* :class:`S3Site`: no tracebacks, an access log without query strings (a
  presigned URL is a bearer credential) and without caps.
"""
from __future__ import annotations

import io
import re
import secrets
import tempfile
from typing import Any

from twisted.web import http, server

from ..web.spool import SpoolGuard
from . import xmlio
from .errors import S3Error

__all__ = ["S3Request", "S3Site", "censor", "censored_log_line", "check_request", "header_dict",
           "MAX_HEADER_SECTION", "MAX_OBJECT_SIZE", "MAX_BODY", "READ_HEADER_SECTION"]

#: S3's limit on the header section of a request, in bytes.
MAX_HEADER_SECTION = 8 * 1024
#: S3's largest object of one PutObject, and largest part (5 GiB), decoded.
MAX_OBJECT_SIZE = 5 * 1024 ** 3
#: The largest request body kept: :data:`MAX_OBJECT_SIZE`, with room for the chunk
#: headers of an aws-chunked body (1 % more).
MAX_BODY = MAX_OBJECT_SIZE * 101 // 100
#: The most bytes of request line and headers read: a request with more is answered at
#: once (S3's XML error) and its connection closed.
READ_HEADER_SECTION = 64 * 1024
def censor(text: str) -> str:
    """A log line without caps."""
    return re.sub(r"URI(:|%3A)[^\s'\"/?&#]*", "URI:[CENSORED]", text, flags=re.IGNORECASE)


def censored_log_line(timestamp: str, request: Any) -> str:
    """The access-log line of a request: its path without the query, never a cap."""
    path = request.uri.split(b"?", 1)[0].decode("utf-8", "replace")
    address = request.getClientAddress()
    host = getattr(address, "host", "-")
    request_id = request.responseHeaders.getRawHeaders(b"x-amz-request-id", [b"-"])[0]
    return (f'"{host}" - - {timestamp} "{request.method.decode("latin-1")} {censor(path)}"'
            f' {request.code} {request.sentLength or "-"} {request_id.decode("latin-1")}')


def header_dict(headers: Any) -> dict[str, str]:
    """Twisted's headers as lower-case name -> value (several values joined by ``,``)."""
    found: dict[str, list[str]] = {}
    for name, values in headers.getAllRawHeaders():
        found.setdefault(name.decode("latin-1").lower(), []).extend(
            v.decode("latin-1") for v in values)
    return {name: ",".join(values) for name, values in found.items()}


def check_request(request: server.Request) -> None:
    """What was found wrong with a request before it was answered: its signature (as
    :class:`S3Request` checked it), S3's limits on its headers (8 KiB) and body
    (:data:`MAX_BODY`).

    :raises S3Error: the signature's refusal, ``ServiceUnavailable`` (a body that could
        not be kept: the node's temporary directory full), ``RequestHeaderSectionTooLarge``,
        ``EntityTooLarge``.
    """
    refused = getattr(request, "refused", None)
    if refused is not None:
        raise refused
    if isinstance(request, SpoolGuard) and request.spool_error is not None:
        raise S3Error("ServiceUnavailable", request.spool_problem())
    too_large = getattr(request, "too_large", None)
    if too_large is not None:
        raise S3Error("EntityTooLarge", ProposedSize=str(too_large),
                      MaxSizeAllowed=str(MAX_BODY))
    size = sum(len(name) + 4 + len(value) for name, values
               in request.requestHeaders.getAllRawHeaders() for value in values)
    if size > MAX_HEADER_SECTION:
        raise S3Error("RequestHeaderSectionTooLarge", MaxSizeAllowed=str(MAX_HEADER_SECTION))


#: Bodies below this size are kept in memory (as Twisted does), larger ones in a file.
SPOOL_IN_MEMORY = 100_000
#: How the named spools of UploadPart bodies begin (in the node's temporary directory).
SPOOL_PREFIX = "s3-part-"


def _is_upload_part(request_line: bytes) -> bool:
    """Whether a request line is an UploadPart's (a PUT with a part number and upload id)."""
    method, _, rest = request_line.partition(b" ")
    query = rest.partition(b"?")[2].partition(b" ")[0]
    names = {pair.partition(b"=")[0] for pair in query.split(b"&")}
    return method == b"PUT" and {b"partNumber", b"uploadId"} <= names


class S3Request(SpoolGuard, server.Request):
    """A request whose body is kept (in Twisted's spool) only when it may be used.

    Its signature is checked as soon as its headers are in (before the body, which it
    does not cover): a request that fails it keeps nothing of its body, and one that
    asked ``Expect: 100-continue`` is answered at once (its body is never sent) and
    its connection closed. So no one without a key can fill the gateway's disk. A
    body over :data:`MAX_BODY` bytes is read and dropped too, and refused with
    ``EntityTooLarge``.
    """

    #: The most bytes of a body kept.
    max_body = MAX_BODY
    #: The body's length when it is over :attr:`max_body` (declared or counted).
    too_large: int | None = None
    #: Why the request was refused once its headers were in, if it was.
    refused: S3Error | None = None
    _body_bytes = 0

    def gotLength(self, length: int | None) -> None:  # noqa: N802 (Twisted)
        """Check the signature, then spool as Twisted does, unless the request is refused
        or its declared length too large."""
        precheck = getattr(self.channel, "precheck", None)
        if precheck is not None:
            self.refused = precheck(self.requestHeaders)
        if self.refused is not None:
            self.content = io.BytesIO()
            expect = self.requestHeaders.getRawHeaders(b"expect") or [b""]
            if expect[0].lower() == b"100-continue":
                self.requestHeaders.removeHeader(b"expect")  # no 100 Continue after it
                self.channel.refuse(self.refused)
            return
        if length is not None and length > self.max_body:
            self.too_large = length
            self.content = io.BytesIO()
            return
        if _is_upload_part(getattr(self.channel, "request_line", b"")) and (
                length is None or length >= SPOOL_IN_MEMORY):
            # A named spool, which the staging links as the part instead of copying it;
            # closing it (at the request's end, or its connection's) removes its name.
            try:
                self.content = tempfile.NamedTemporaryFile(prefix=SPOOL_PREFIX)  # noqa: SIM115
            except OSError as error:
                self._drop_body(error)
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:  # noqa: N802 (Twisted)
        """Keep the chunk, unless the request was refused or its body grew past
        :attr:`max_body`."""
        if self.refused is not None:
            return
        self._body_bytes += len(data)
        if self.too_large is not None or self._body_bytes > self.max_body:
            self.too_large = max(self.too_large or 0, self._body_bytes)
            return
        super().handleContentChunk(data)


class _Channel(http.HTTPChannel):
    """HTTP/1.1 where a header section over S3's limit gets S3's error: up to
    :data:`READ_HEADER_SECTION` bytes the request is read and refused by
    :func:`_check_sizes`; past that, the connection is answered here, in S3's XML,
    and closed (Twisted's own limit, 16 KiB, answered a bare 400)."""

    totalHeadersSize = 2 * READ_HEADER_SECTION  # not reached: see lineReceived
    _header_bytes = 0
    #: The request line of the request whose headers are being read.
    request_line = b""

    def lineReceived(self, line: bytes) -> None:  # noqa: N802 (Twisted)
        """Count the header section's bytes; refuse it past :data:`READ_HEADER_SECTION`."""
        if self._header_bytes == 0:
            self.request_line = line
        self._header_bytes += len(line) + 2
        if self._header_bytes > READ_HEADER_SECTION:
            self.refuse(S3Error("RequestHeaderSectionTooLarge",
                                MaxSizeAllowed=str(MAX_HEADER_SECTION)))
            return
        if not line:
            self._header_bytes = 0  # the end of this request's headers
        super().lineReceived(line)

    def precheck(self, headers: Any) -> S3Error | None:
        """Why the request whose headers are in must be refused (its signature), if so."""
        parts = self.request_line.split(b" ")
        check = getattr(self.site.resource, "precheck", None)
        if len(parts) != 3 or check is None:
            return None
        return check(parts[0].decode("latin-1"), parts[1].decode("utf-8", "replace"),  # type: ignore[no-any-return]
                     header_dict(headers))

    def refuse(self, error: S3Error) -> None:
        """Answer ``error`` at once, in S3's XML, and close the connection (nothing more
        of it is read)."""
        self.lineReceived = self.dataReceived = lambda *args: None  # type: ignore[method-assign]
        request_id = secrets.token_hex(8).upper()
        body = xmlio.error_body(error.code, error.message, error.extra, request_id=request_id)
        reason = http.RESPONSES.get(error.status, b"Error")
        self.transport.write(b"HTTP/1.1 %d %s\r\nContent-Type: application/xml\r\n"
                             b"Content-Length: %d\r\nx-amz-request-id: %s\r\n"
                             b"Connection: close\r\n\r\n%s"
                             % (error.status, reason, len(body), request_id.encode("ascii"),
                                body))
        self.loseConnection()


class S3Site(server.Site):
    """The gateway's site: no tracebacks, a censored access log."""

    protocol = _Channel
    requestFactory = S3Request

    def __init__(self, root: Any) -> None:
        super().__init__(root, logFormatter=censored_log_line)
        self.displayTracebacks = False

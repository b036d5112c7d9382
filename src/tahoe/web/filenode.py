"""``/uri/$FILECAP``: read an immutable file, its JSON description and its info page.

Facts: ``reference/frontends.md`` §3.1 (ETags, headers), §3.3 "Reading"
(filename=, save=, Range), §3.4 (JSON), §3.10 (errors).
"""
from __future__ import annotations

import json
import mimetypes
import re
from typing import Any

from twisted.web import resource
from twisted.web.server import Request

from ..caps.immutable import CHKReadCap, LiteralCap
from ..client.services import ClientServices
from ..util import base32
from . import json_nodes
from .common import StreamPausing, WebError, arg, boolean_arg, render_async
from .headers import set_file_content_policy
from .infohtml import file_info_page

_RANGE = re.compile(r"\Abytes=(\d*)-(\d*)\Z")


def content_type_for(filename: str) -> bytes:
    """The Content-Type Tahoe guesses from a name: by extension, else text/plain."""
    guessed, encoding = mimetypes.guess_type(filename, strict=False)
    if guessed is None or encoding:
        return b"text/plain" if "." not in filename else b"application/octet-stream"
    return guessed.encode("ascii")


def parse_range(header: bytes | None, size: int) -> tuple[int, int] | None | str:
    """The first byte range of a Range header as (first, last inclusive).

    :returns: None to send the whole file (no header, or one we ignore),
        ``"unsatisfiable"`` when the first byte is beyond the end.
    """
    if not header:
        return None
    text = header.decode("latin-1").strip().split(",")[0].strip()
    match = _RANGE.match(text)
    if not match or (not match.group(1) and not match.group(2)):
        return None
    first_text, last_text = match.groups()
    if not first_text:
        count = int(last_text)
        if count == 0:
            return "unsatisfiable"
        return max(0, size - count), size - 1
    first = int(first_text)
    if not last_text:
        return None if first >= size else (first, size - 1)
    last = int(last_text)
    if last < first:
        return None
    if first >= size:
        return "unsatisfiable"
    return first, min(last, size - 1)


def select_range(request: Request, size: int) -> tuple[int, int]:
    """Apply the request's Range header to a body of ``size`` bytes: ``(first, length)``.

    A satisfiable range sets 206 and ``Content-Range`` (for GET and HEAD alike,
    as Tahoe does); no header, or one that is ignored, selects the whole body.

    :raises WebError: 416 ``First beyond end of file`` when the range starts past the end.
    """
    wanted = parse_range(request.getHeader(b"range"), size)
    if wanted == "unsatisfiable":
        request.setHeader(b"Content-Range", b"bytes */%d" % size)
        raise WebError("First beyond end of file", 416)
    if wanted is None:
        return 0, size
    first, last = wanted  # type: ignore[misc]
    request.setResponseCode(206)
    request.setHeader(b"Content-Range", b"bytes %d-%d/%d" % (first, last, size))
    return first, max(0, last - first + 1)


def file_json(cap: CHKReadCap | LiteralCap, metadata: dict | None = None) -> list:
    """``["filenode", {...}]`` for an immutable file (§3.4)."""
    return json_nodes.file_json(cap, None, metadata)


class ImmutableFileResource(resource.Resource):
    """An immutable file (CHK or LIT) addressed by its read cap."""

    isLeaf = True

    def __init__(self, client: ClientServices, cap: CHKReadCap | LiteralCap,
                 name: str | None = None, metadata: dict[str, Any] | None = None) -> None:
        super().__init__()
        self._client = client
        self._cap = cap
        self._name = name
        self._metadata = metadata

    async def serve(self, request: Request) -> bytes | None:
        """Answer a GET or HEAD (for a resource that already walked a path to this file)."""
        if request.method == b"HEAD":
            return await self._head(request)
        return await self._get(request)

    def _etag(self, request: Request, kind: str) -> bool:
        """Set the ETag of an immutable file; True when the client already has it (304)."""
        if isinstance(self._cap, LiteralCap):
            return False
        tag = f"{base32.b2a(self._cap.storage_index)}-{kind}".encode("ascii")
        request.setHeader(b"ETag", tag)
        if request.getHeader(b"if-none-match") in (tag, b'"' + tag + b'"'):
            request.setResponseCode(304)
            return True
        return False

    def render_GET(self, request: Request) -> Any:  # noqa: N802 (Twisted)
        """Contents, or ``t=json``/``t=info``/``t=uri``/``t=readonly-uri``."""
        return render_async(request, self._get)

    def render_HEAD(self, request: Request) -> Any:  # noqa: N802 (Twisted)
        """Headers of the contents only."""
        return render_async(request, self._head)

    async def _head(self, request: Request) -> bytes | None:
        if arg(request, "t", ""):
            raise WebError("HEAD is only allowed on file contents (no t=)")
        self._content_headers(request)
        if self._etag(request, ""):
            return None
        _, length = select_range(request, self._cap.size)
        request.setHeader(b"Content-Length", b"%d" % length)
        return None

    async def _get(self, request: Request) -> bytes | None:
        t = arg(request, "t", "")
        if t == "":
            return await self._contents(request)
        if t == "json":
            if self._etag(request, "json"):
                return b""
            request.setHeader(b"Content-Type", b"text/plain")
            return (json.dumps(file_json(self._cap, self._metadata), indent=1) + "\n"
                    ).encode("utf-8")
        if t in ("uri", "readonly-uri"):
            if self._etag(request, t):
                return b""
            request.setHeader(b"Content-Type", b"text/plain")
            return self._cap.to_string().encode("ascii")
        if t == "info":
            request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
            return file_info_page(self._cap, here=request.path.decode("utf-8", "replace"),
                                  name=self._name, size=self._cap.size)
        raise WebError(f"GET file: bad t={t}")

    def _content_headers(self, request: Request) -> str:
        filename = arg(request, "filename") or self._name or "unknown"
        request.setHeader(b"Content-Type", content_type_for(filename))
        set_file_content_policy(request, content_type_for(filename))
        request.setHeader(b"Accept-Ranges", b"bytes")
        if boolean_arg(request, "save", False):
            request.setHeader(b"Content-Disposition",
                              b'attachment; filename="' + filename.encode("utf-8") + b'"')
        return filename

    async def _contents(self, request: Request) -> bytes | None:
        cap, size = self._cap, self._cap.size
        self._content_headers(request)
        if self._etag(request, ""):
            return b""
        first, length = select_range(request, size)
        if isinstance(cap, LiteralCap):
            return cap.data[first:first + length]
        download = self._client.download(cap)
        chunks = download.read(first, length)
        try:
            first_chunk = await chunks.__anext__()
        except StopAsyncIteration:
            first_chunk = b""
        # The headers go out only once the first segment is verified, so a missing
        # file still gets its 410.
        request.setHeader(b"Content-Length", b"%d" % length)
        if request.method == b"HEAD":
            return None
        producer = StreamPausing()
        request.registerProducer(producer, True)
        try:
            request.write(first_chunk)
            async for chunk in chunks:
                if producer.stopped:
                    break
                await producer.ready()
                request.write(chunk)
        finally:
            request.unregisterProducer()
        return None

"""``/uri`` (and ``/cap``): upload unlinked files and address objects by cap.

Facts: ``reference/frontends.md`` §3.3 "Unlinked creation" and §3.1.
"""
from __future__ import annotations

import html
from typing import Any
from urllib.parse import quote, unquote_to_bytes, urljoin

from twisted.python import log
from twisted.web import resource
from twisted.web.server import Request

from ..caps.errors import CapError
from ..caps.immutable import CHKReadCap, LiteralCap
from ..caps.parse import parse_cap
from ..client.services import ClientServices
from ..client.uploadable import BytesUploadable, FileUploadable, Uploadable
from .common import WebError, arg, boolean_arg, render_async
from .filenode import ImmutableFileResource

KNOWN_FORMATS = ("CHK", "SDMF", "MDMF")


def requested_format(request: Request) -> str:
    """``format=`` (case-insensitive) or ``mutable=true``; CHK when neither is given.

    :raises WebError: for an unknown format.
    """
    fmt = arg(request, "format")
    if fmt is not None:
        if fmt.upper() not in KNOWN_FORMATS:
            raise WebError(f"Unknown format: {fmt}, I know CHK, SDMF, MDMF")
        return fmt.upper()
    return "SDMF" if boolean_arg(request, "mutable", False) else "CHK"


def body_uploadable(request: Request) -> Uploadable:
    """The request body as an upload source (Twisted spools large bodies to a file)."""
    content = request.content
    content.seek(0, 2)
    size = content.tell()
    content.seek(0)
    return FileUploadable(content, size)


class ErrorResource(resource.Resource):
    """Answers every method with one error (e.g. a malformed cap in the path)."""

    isLeaf = True

    def __init__(self, error: WebError) -> None:
        super().__init__()
        self._error = error

    def render(self, request: Request) -> Any:
        """Fail with the stored error."""
        async def fail(_: Request) -> bytes:
            raise self._error
        return render_async(request, fail)


class NoChildrenResource(ErrorResource):
    """A path that continues past a file cap."""


def node_for_cap(client: ClientServices, text: str, rest: list[str]) -> resource.Resource:
    """The resource for ``/uri/<cap>/<rest...>``."""
    try:
        cap = parse_cap(text)
    except CapError as error:
        return ErrorResource(WebError(f"Invalid capability: {error}"))
    if isinstance(cap, (CHKReadCap, LiteralCap)):
        if rest and rest != [""]:
            return NoChildrenResource(WebError(f"Files have no children named {rest[0]!r}"))
        return ImmutableFileResource(client, cap)
    return ErrorResource(WebError(
        f"this gateway cannot handle {text.split(':', 2)[0:2]} caps yet", 400))


class URIResource(resource.Resource):
    """``/uri``: ``PUT`` and ``POST ?t=upload`` upload, ``GET ?uri=`` redirects, children are caps."""

    def __init__(self, client: ClientServices) -> None:
        super().__init__()
        self._client = client

    def getChild(self, path: bytes, request: Request) -> resource.Resource:  # noqa: N802
        """``/uri/<cap>[/...]``: hand the rest of the path to the object's resource."""
        if path == b"":
            return self
        text = unquote_to_bytes(path).decode("utf-8", "replace")
        rest = [unquote_to_bytes(p).decode("utf-8", "replace") for p in request.postpath]
        request.postpath = []
        return node_for_cap(self._client, text, rest)

    def render_PUT(self, request: Request) -> Any:  # noqa: N802 (Twisted)
        """Upload the body as a new unlinked file; answer its cap."""
        return render_async(request, self._put)

    def render_POST(self, request: Request) -> Any:  # noqa: N802 (Twisted)
        """``t=upload`` (multipart form field ``file``)."""
        return render_async(request, self._post)

    def render_GET(self, request: Request) -> Any:  # noqa: N802 (Twisted)
        """``?uri=CAP`` redirects to ``/uri/CAP``."""
        return render_async(request, self._get)

    async def _upload(self, request: Request, source: Uploadable) -> str:
        fmt = requested_format(request)
        if fmt != "CHK":
            raise WebError(f"{fmt} (mutable) files are not supported by this gateway yet")
        result = await self._client.upload(source)
        log.msg(format="upload of %(size)d bytes: %(timings)s", size=source.size,
                timings={k: round(v * 1000, 2) for k, v in result.timings.items()})
        return result.cap.to_string()

    async def _put(self, request: Request) -> bytes:
        t = arg(request, "t", "")
        if t == "mkdir":
            raise WebError("directories are not supported by this gateway yet")
        if t:
            raise WebError("/uri accepts only PUT, PUT?t=mkdir, POST?t=upload, and POST?t=mkdir")
        cap = await self._upload(request, body_uploadable(request))
        request.setHeader(b"Content-Type", b"text/plain")
        return cap.encode("ascii")

    async def _post(self, request: Request) -> bytes | None:
        t = arg(request, "t", "upload")
        if t != "upload":
            if t.startswith("mkdir"):
                raise WebError("directories are not supported by this gateway yet")
            raise WebError("/uri accepts only PUT, PUT?t=mkdir, POST?t=upload, and POST?t=mkdir")
        files = request.args.get(b"file")
        if not files:
            raise WebError("POST /uri?t=upload needs a multipart form field 'file'")
        cap = await self._upload(request, BytesUploadable(files[0]))
        when_done = arg(request, "when_done")
        if when_done:
            target = when_done.replace("%(uri)s", quote(cap, safe=""))
            location = urljoin(request.prePathURL().decode("ascii") + "/", target)
            request.setResponseCode(302)
            request.setHeader(b"Location", location.encode("utf-8"))
            return b""
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        escaped = html.escape(cap)
        return (f"<!DOCTYPE html><html><head><title>Tahoe-LAFS - Upload Results</title></head>"
                f"<body><h1>Upload Results</h1><p>File uploaded. Its cap is:</p>"
                f"<p><a href=\"/uri/{quote(cap, safe='')}\"><code>{escaped}</code></a></p>"
                f"<p><a href=\"/\">Return to the Welcome Page</a></p></body></html>"
                ).encode("utf-8")

    async def _get(self, request: Request) -> bytes:
        cap = arg(request, "uri")
        if cap is None:
            raise WebError("GET /uri requires uri=")
        try:
            parse_cap(cap.strip())
        except CapError:
            raise WebError("Invalid capability") from None
        others = [(k, v) for k, vs in request.args.items() if k != b"uri" for v in vs]
        query = "&".join(f"{quote(k)}={quote(v)}" for k, v in others)
        location = "/uri/" + quote(cap.strip(), safe="") + (f"?{query}" if query else "")
        request.setResponseCode(302)
        request.setHeader(b"Location", location.encode("ascii"))
        return b""

"""``/uri`` (and ``/cap``): create unlinked files and directories, and address objects by cap.

Facts: ``reference/frontends.md`` §3.3 "Unlinked creation", §3.1, §3.11 and
§8 (``mutable=true`` means SDMF; ``mkdir-with-children`` ignores ``format=``;
directories without ``format=`` get ``[client]mutable.format``).
"""
from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote_to_bytes, urljoin

from twisted.web import resource
from twisted.web.server import Request

from ..caps.errors import CapError
from ..caps.mutable import MutableFormat
from ..caps.parse import parse_cap
from ..client.services import ClientServices
from ..client.uploadable import BytesUploadable, Uploadable
from ..dirnode.packing import pack_new_directory
from ..mutable.keys import MutableKeys
from ..caps.dirnode import DirectoryCap
from .common import (KNOWN_FORMATS, WebError, arg, body_uploadable, boolean_arg, format_arg,
                     multipart_filename, raw_arg, redirect, render_async, requested_format)
from .headers import wants_html
from .page import cap_line, esc, page
from .directory import CapResource
from .dirpost import creation_children, request_body
from .mutablefile import create_mutable, private_key_arg
from .operations import Operations
from .traversal import Gateway

__all__ = ["KNOWN_FORMATS", "URIResource", "body_uploadable", "node_for_cap",
           "requested_format"]
ONLY = "/uri accepts only PUT, PUT?t=mkdir, POST?t=upload, and POST?t=mkdir"


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


class RedirectResource(resource.Resource):
    """Redirects (302) to a fixed location, e.g. ``GET /uri/`` to ``/uri``."""

    isLeaf = True

    def __init__(self, location: str) -> None:
        super().__init__()
        self._location = location

    def render(self, request: Request) -> Any:
        """Redirect."""
        async def go(_: Request) -> bytes:
            return redirect(request, self._location)
        return render_async(request, go)


def upload_results_page(cap: str, filename: str | None) -> bytes:
    """The page after an upload from the welcome page: the new cap, ready to copy."""
    quoted = quote(cap, safe="")
    name = quote(filename or "download", safe="")
    main = (f"<p>{esc(filename) + ' was' if filename else 'The file was'} uploaded. "
            "Its cap is:</p>" + f"<p>{cap_line(cap, 'new-cap')}</p>"
            "<p class=\"muted\">Keep the cap: it is the only way back to this file.</p>"
            f'<p class="actions"><a class="button" href="/uri/{quoted}">Open</a>'
            f'<a class="button" href="/uri/{quoted}?t=info">More info</a>'
            f'<a class="button" href="/file/{quoted}/@@named=/{name}?save=true" '
            'rel="noreferrer">Download</a><a class="button" href="/">Return to the Welcome Page'
            "</a></p>")
    return page("Tahoe-LAFS - Upload Results", main, script=True, heading="Upload Results")


def node_for_cap(gateway: Gateway, text: str, rest: list[str]) -> resource.Resource:
    """The resource for ``/uri/<cap>/<rest...>`` (any kind of cap, any method)."""
    try:
        parse_cap(text.strip())
    except CapError as error:
        return ErrorResource(WebError(f"Invalid capability: {error}"))
    return CapResource(gateway, text, rest)


class URIResource(resource.Resource):
    """``/uri``: ``PUT`` and ``POST`` create, ``GET ?uri=`` redirects, children are caps.

    :param mutable_format: ``[client]mutable.format``, the format of new
        directories created without ``format=``.
    """

    def __init__(self, client: ClientServices,
                 mutable_format: MutableFormat | str = MutableFormat.SDMF) -> None:
        super().__init__()
        if isinstance(mutable_format, str):
            mutable_format = MutableFormat[mutable_format.upper()]
        self._client = client
        self._gateway = Gateway(client, mutable_format, Operations(client.clock))

    @property
    def gateway(self) -> Gateway:
        """What other resources of this gateway (``/file``, ``/named``) share."""
        return self._gateway

    def getChild(self, path: bytes, request: Request) -> resource.Resource:  # noqa: N802
        """``/uri/<cap>[/...]``: hand the rest of the path to the object's resource."""
        if path == b"" and not request.postpath:
            return RedirectResource("/uri") if request.method == b"GET" else self
        if path == b"":
            return ErrorResource(WebError("Invalid capability: the cap is empty"))
        text = unquote_to_bytes(path).decode("utf-8", "replace")
        rest = [unquote_to_bytes(p).decode("utf-8", "replace") for p in request.postpath]
        request.postpath = []
        return node_for_cap(self._gateway, text, rest)

    def render_PUT(self, request: Request) -> Any:  # noqa: N802 (Twisted)
        """Upload the body as a new unlinked file, or ``t=mkdir``."""
        return render_async(request, self._put)

    def render_POST(self, request: Request) -> Any:  # noqa: N802 (Twisted)
        """``t=upload`` (multipart field ``file``), ``t=mkdir[-with-children|-immutable]``."""
        return render_async(request, self._post)

    def render_GET(self, request: Request) -> Any:  # noqa: N802 (Twisted)
        """``?uri=CAP`` redirects to ``/uri/CAP``."""
        return render_async(request, self._get)

    async def _upload(self, request: Request, source: Uploadable) -> str:
        # (not logged: its start, end and rate are in the history of /status, its latency
        # in the statistics; the access log has the request)
        result = await self._client.upload(source)
        return result.cap.to_string()

    async def _put(self, request: Request) -> bytes:
        t = (arg(request, "t", "") or "").strip()
        request.setHeader(b"Content-Type", b"text/plain")
        if t == "mkdir":
            fmt = format_arg(request, None)
            if fmt == "CHK":
                raise WebError("format=CHK not accepted for PUT /uri?t=mkdir")
            return (await self._mkdir(request, fmt, {})).encode("ascii")
        if t:
            raise WebError(ONLY)
        fmt = requested_format(request)
        if fmt != "CHK":
            cap = await create_mutable(self._gateway, request_body(request), fmt,
                                       private_key_arg(request))
            return cap.to_string().encode("ascii")
        return (await self._upload(request, body_uploadable(request))).encode("ascii")

    async def _mkdir(self, request: Request, fmt: str | None,
                     children: dict[str, Any]) -> str:
        """A new mutable directory (``private-key=`` gives it a chosen signing key)."""
        file_format = MutableFormat[fmt] if fmt in ("SDMF", "MDMF") \
            else self._gateway.mutable_format
        key = private_key_arg(request)
        if key is None:
            cap = await self._client.directories.create(children, file_format)
            return cap.to_string()
        keys = MutableKeys.from_signing_key(key)
        data = pack_new_directory(children, keys.writekey)
        file_cap = await self._client.mutable.create(data, file_format, signing_key=key)
        return DirectoryCap(file_cap).to_string()

    async def _post(self, request: Request) -> bytes | None:
        t = (arg(request, "t", "") or "").strip()
        if t in ("", "upload"):
            return await self._post_upload(request)
        if t == "mkdir":
            content_type = request.getHeader(b"content-type") or b""
            if not content_type.startswith(b"multipart/form-data") and request_body(request):
                raise WebError("t=mkdir does not accept children=, try t=mkdir-with-children "
                               "instead")
            fmt = format_arg(request, None)
            if fmt == "CHK":
                raise WebError("format=CHK not currently accepted for POST /uri?t=mkdir")
            cap = await self._mkdir(request, fmt, {})
        elif t == "mkdir-with-children":
            cap = await self._mkdir(request, None, creation_children(request))
        elif t == "mkdir-immutable":
            cap = (await self._client.directories.create_immutable(
                creation_children(request))).to_string()
        else:
            raise WebError(ONLY)
        if boolean_arg(request, "redirect_to_result", False):
            redirect(request, "uri/" + quote(cap, safe=""), 303)
            return b""
        request.setHeader(b"Content-Type", b"text/plain")
        return cap.encode("ascii")

    async def _post_upload(self, request: Request) -> bytes | None:
        contents = raw_arg(request, "file")
        if contents is None:
            raise WebError("POST /uri?t=upload needs a multipart form field 'file'")
        fmt = requested_format(request)
        if fmt != "CHK":
            cap = (await create_mutable(self._gateway, contents, fmt)).to_string()
            if wants_html(request):  # a browser: the results page; scripts get the bare cap
                request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
                return upload_results_page(cap, multipart_filename(request, "file"))
            request.setHeader(b"Content-Type", b"text/plain")
            return cap.encode("ascii")
        cap_text = await self._upload(request, BytesUploadable(contents))
        when_done = arg(request, "when_done")
        if when_done:
            target = when_done.replace("%(uri)s", quote(cap_text, safe=""))
            location = urljoin(request.prePathURL().decode("ascii") + "/", target)
            return redirect(request, location)
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        return upload_results_page(cap_text, multipart_filename(request, "file"))

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
        return redirect(request, location)

"""``/file/$FILECAP/…/NAME`` and ``/named/$FILECAP/…/NAME``: download a file under a name.

Facts: ``reference/frontends.md`` §3.3 "Reading" and §3.12: only GET and
HEAD (other methods: 400), only file caps (``… is not a file-cap``, 400),
any number of path segments after the cap of which the **last** is the
name that chooses the Content-Type; a bare ``/file`` is 404. Directory
listings link files this way so that a displayed page never learns its
parent directory's cap.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import unquote_to_bytes

from twisted.web import resource
from twisted.web.server import Request

from ..caps.errors import CapError
from ..caps.immutable import CHKReadCap, LiteralCap
from ..caps.parse import parse_cap
from .common import WebError, render_async
from .filenode import ImmutableFileResource
from .mutablefile import MUTABLE_FILE_CAPS, MutableFileView
from .traversal import Gateway


class NamedFile(resource.Resource):
    """One file cap and the name after it."""

    isLeaf = True

    def __init__(self, gateway: Gateway, cap_text: str, name: str | None) -> None:
        super().__init__()
        self._gateway = gateway
        self._cap_text = cap_text
        self._name = name

    def render(self, request: Request) -> Any:
        """GET and HEAD only."""
        return render_async(request, self._serve)

    async def _serve(self, request: Request) -> bytes | None:
        if request.method not in (b"GET", b"HEAD"):
            raise WebError("/file can only be used with GET or HEAD")
        try:
            cap = parse_cap(self._cap_text)
        except CapError:
            raise WebError(f"{self._cap_text!r} is not a valid file- or directory- cap") \
                from None
        if isinstance(cap, (CHKReadCap, LiteralCap)):
            return await ImmutableFileResource(self._gateway.client, cap,
                                               self._name).serve(request)
        if isinstance(cap, MUTABLE_FILE_CAPS):
            return await MutableFileView(self._gateway, cap, self._name).serve(request)
        raise WebError(f"{self._cap_text!r} is not a file-cap")


class NamedFileRoot(resource.Resource):
    """``/file`` and ``/named``: the next segment is a file cap."""

    def __init__(self, gateway: Gateway) -> None:
        super().__init__()
        self._gateway = gateway

    def getChild(self, path: bytes, request: Request) -> resource.Resource:  # noqa: N802
        """``<cap>[/…/NAME]``: the last segment (if any) is the name."""
        if path == b"":
            return self
        rest = [segment for segment in request.postpath if segment]
        request.postpath = []
        name = unquote_to_bytes(rest[-1]).decode("utf-8", "replace") if rest else None
        return NamedFile(self._gateway, unquote_to_bytes(path).decode("utf-8", "replace"),
                         name)

    def render(self, request: Request) -> Any:
        """A bare ``/file`` names nothing."""
        async def missing(_: Request) -> bytes:
            raise WebError("/file must be followed by a file-cap and a name", 404)
        return render_async(request, missing)

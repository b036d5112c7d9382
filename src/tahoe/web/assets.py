"""The gateway's own static files: one stylesheet, one script, one icon.

They live in the package data directory ``tahoe/web/static/`` (shipped by
``setup.py``'s ``package_data``) and are read once, when the gateway
starts. Each is served at the root (``/tahoe.css``, Tahoe's stylesheet
URL; ``/tahoe.js``; ``/icon.svg``, also as ``/favicon.ico``) with an ETag
and ``Cache-Control: no-cache``: a browser keeps a copy and revalidates it
with one request, so a new version shows at once.
"""
from __future__ import annotations

import hashlib
from importlib import resources
from typing import Any

from twisted.web import resource

__all__ = ["ASSETS", "AssetResource", "add_assets", "read_asset"]

#: File name -> (served at, Content-Type).
ASSETS = {
    "tahoe.css": ((b"tahoe.css",), b"text/css; charset=utf-8"),
    "tahoe.js": ((b"tahoe.js",), b"text/javascript; charset=utf-8"),
    "icon.svg": ((b"icon.svg", b"favicon.ico"), b"image/svg+xml"),
}


def read_asset(name: str) -> bytes:
    """The bytes of one file of the package data directory ``static/``."""
    return (resources.files("tahoe.web") / "static" / name).read_bytes()


class AssetResource(resource.Resource):
    """One static file (GET and HEAD), revalidated by its ETag."""

    isLeaf = True

    def __init__(self, body: bytes, content_type: bytes) -> None:
        super().__init__()
        self._body = body
        self._content_type = content_type
        self._etag = b'"' + hashlib.sha256(body).hexdigest()[:20].encode("ascii") + b'"'

    def render_GET(self, request: Any) -> bytes:  # noqa: N802 (Twisted)
        """The file, or 304 when the browser's copy is current."""
        request.setHeader(b"ETag", self._etag)
        request.setHeader(b"Cache-Control", b"no-cache")
        if request.getHeader(b"if-none-match") == self._etag:
            request.setResponseCode(304)
            return b""
        request.setHeader(b"Content-Type", self._content_type)
        return self._body

    render_HEAD = render_GET


def add_assets(root: resource.Resource) -> None:
    """Serve every file of :data:`ASSETS` under ``root``."""
    for name, (paths, content_type) in ASSETS.items():
        served = AssetResource(read_asset(name), content_type)
        for path in paths:
            root.putChild(path, served)

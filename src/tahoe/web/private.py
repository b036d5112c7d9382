"""``/private``: the part of the gateway that needs the node's API token.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §3.10, §3.12): a request must
carry ``Authorization: tahoe-lafs <token>``, the token being the one the node
wrote to ``private/api_auth_token`` when it started; anything else gets 401
with ``WWW-Authenticate: tahoe-lafs realm="tahoe-lafs"``. Tahoe serves its
Eliot log stream (a WebSocket) under it; we serve one page of our own:

* ``GET /private/diagnostics?t=json``: ``{"modules": [...],
  "modules_before_web": [...]}``, the names of the Python modules the node
  has loaded, sorted, now and when its web site was built (at the first
  connection to the web port, :mod:`tahoe.web.listen`; ``null`` if not
  known) (``docs/performance.md``, memory: a node loads what it uses).
  Module names only, no secret.

Anything else an authorized request asks for gets 404.
"""
from __future__ import annotations

import hmac
import json
import sys

from twisted.web import resource
from twisted.web.server import Request

__all__ = ["DiagnosticsResource", "PrivateResource", "SCHEME"]

SCHEME = b"tahoe-lafs"


class _Unauthorized(resource.Resource):
    isLeaf = True

    def render(self, request: Request) -> bytes:
        request.setResponseCode(401)
        request.setHeader(b"WWW-Authenticate", SCHEME + b' realm="tahoe-lafs"')
        request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
        return b"Unauthorized\n"


class DiagnosticsResource(resource.Resource):
    """``/private/diagnostics``: what the node has loaded, as JSON (``t=json``).

    :param before_web: the modules loaded when the web site was built, if known.
    """

    isLeaf = True

    def __init__(self, before_web: list[str] | None = None) -> None:
        super().__init__()
        self._before_web = before_web

    def render_GET(self, request: Request) -> bytes:  # noqa: N802 (Twisted)
        """The loaded modules for ``t=json``; 400 for any other ``t`` or none."""
        if request.args.get(b"t") != [b"json"]:
            request.setResponseCode(400)
            request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
            return b"Bad Format: this page has only t=json\n"
        request.setHeader(b"Content-Type", b"application/json; charset=utf-8")
        return json.dumps({"modules": sorted(sys.modules),
                           "modules_before_web": self._before_web}).encode("ascii") + b"\n"


class PrivateResource(resource.Resource):
    """Everything below ``/private``, for holders of ``token`` only.

    :param token: the node's API token (without the newline).
    :param before_web: the modules loaded when the web site was built, if known.
    """

    def __init__(self, token: bytes, before_web: list[str] | None = None) -> None:
        super().__init__()
        self._token = token
        self._before_web = before_web

    def authorized(self, request: Request) -> bool:
        """Whether ``request`` carries the token (compared in constant time)."""
        scheme, _, offered = (request.getHeader(b"authorization") or b"").strip().partition(b" ")
        return scheme.lower() == SCHEME and hmac.compare_digest(offered.strip(), self._token)

    def getChild(self, path: bytes, request: Request) -> resource.Resource:  # noqa: N802
        """401 without the token; otherwise what is below (404 but for ``diagnostics``)."""
        if not self.authorized(request):
            return _Unauthorized()
        if path == b"diagnostics":
            return DiagnosticsResource(self._before_web)
        return resource.NoResource()

    def render(self, request: Request) -> bytes:
        """``/private`` itself: 401 without the token, else 404."""
        target = self.getChild(b"", request)
        return target.render(request)  # type: ignore[no-any-return]

"""``/private``: the part of the gateway that needs the node's API token.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §3.10, §3.12): a request must
carry ``Authorization: tahoe-lafs <token>``, the token being the one the node
wrote to ``private/api_auth_token`` when it started; anything else gets 401
with ``WWW-Authenticate: tahoe-lafs realm="tahoe-lafs"``. Tahoe serves its
Eliot log stream (a WebSocket) under it; nothing is served here yet, so an
authorized request gets 404.
"""
from __future__ import annotations

import hmac

from twisted.web import resource
from twisted.web.server import Request

__all__ = ["PrivateResource", "SCHEME"]

SCHEME = b"tahoe-lafs"


class _Unauthorized(resource.Resource):
    isLeaf = True

    def render(self, request: Request) -> bytes:
        request.setResponseCode(401)
        request.setHeader(b"WWW-Authenticate", SCHEME + b' realm="tahoe-lafs"')
        request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
        return b"Unauthorized\n"


class PrivateResource(resource.Resource):
    """Everything below ``/private``, for holders of ``token`` only.

    :param token: the node's API token (without the newline).
    """

    def __init__(self, token: bytes) -> None:
        super().__init__()
        self._token = token

    def authorized(self, request: Request) -> bool:
        """Whether ``request`` carries the token (compared in constant time)."""
        scheme, _, offered = (request.getHeader(b"authorization") or b"").strip().partition(b" ")
        return scheme.lower() == SCHEME and hmac.compare_digest(offered.strip(), self._token)

    def getChild(self, path: bytes, request: Request) -> resource.Resource:  # noqa: N802
        """401 without the token; otherwise what is below (nothing yet: 404)."""
        if not self.authorized(request):
            return _Unauthorized()
        return resource.NoResource()

    def render(self, request: Request) -> bytes:
        """``/private`` itself: 401 without the token, else 404."""
        target = self.getChild(b"", request)
        return target.render(request)  # type: ignore[no-any-return]

"""The gateway's root resource: the welcome page and ``GET /?t=json``."""
from __future__ import annotations

import html
from collections.abc import Callable

from twisted.web import resource
from twisted.web.server import Request

from .json_shapes import ServerSummary, dumps, introducer_json, welcome_json


def _arg(request: Request, name: str) -> str | None:
    values = request.args.get(name.encode())
    return values[0].decode("utf-8", "replace") if values else None


class WelcomeResource(resource.Resource):
    """``/`` of a client or storage node.

    :param introducer_statuses: returns one status string per introducer.
    :param servers: returns every known storage server.
    :param identity: (nickname, node id) shown on the HTML page.
    """

    def __init__(self, introducer_statuses: Callable[[], list[str]],
                 servers: Callable[[], list[ServerSummary]], identity: tuple[str, str]) -> None:
        super().__init__()
        self._introducer_statuses = introducer_statuses
        self._servers = servers
        self._identity = identity

    def getChild(self, path: bytes, request: Request) -> resource.Resource:  # noqa: N802 (Twisted)
        """Serve the welcome page for ``/`` itself; anything else is not found here."""
        if path == b"":
            return self
        return resource.NoResource()

    def render_GET(self, request: Request) -> bytes:  # noqa: N802 (Twisted)
        """JSON for ``t=json``; a plain HTML summary otherwise; 400 for other ``t``."""
        request.setHeader(b"X-Frame-Options", b"DENY")
        request.setHeader(b"Referrer-Policy", b"no-referrer")
        fmt = _arg(request, "t")
        if fmt == "json":
            request.setHeader(b"Content-Type", b"application/json; charset=utf-8")
            return dumps(welcome_json(self._introducer_statuses(), self._servers()))
        if fmt not in (None, ""):
            request.setResponseCode(400)
            request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
            return b"Bad Format"
        nickname, nodeid = self._identity
        rows = "".join(
            f"<tr><td>{html.escape(s.nickname)}</td><td><code>{html.escape(s.nodeid)}</code></td>"
            f"<td>{html.escape(s.connection_status)}</td>"
            f"<td>{'' if s.available_space is None else s.available_space}</td></tr>"
            for s in self._servers())
        intro = "".join(f"<li>{html.escape(s)}</li>" for s in self._introducer_statuses())
        page = (f"<!DOCTYPE html><html><head><title>Tahoe-LAFS - Welcome</title></head><body>"
                f"<h1>{html.escape(nickname)}</h1><p>Node ID: <code>{html.escape(nodeid)}</code></p>"
                f"<h2>Introducers</h2><ul>{intro}</ul>"
                f"<h2>Storage servers</h2><table><tr><th>Nickname</th><th>Node ID</th>"
                f"<th>Connection</th><th>Available space</th></tr>{rows}</table></body></html>")
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        return page.encode("utf-8")


class IntroducerWelcomeResource(resource.Resource):
    """``/`` of an introducer: how many subscribers and announcements per service."""

    isLeaf = True

    def __init__(self, summary: Callable[[], tuple[dict[str, int], dict[str, int]]]) -> None:
        super().__init__()
        self._summary = summary

    def render_GET(self, request: Request) -> bytes:  # noqa: N802 (Twisted)
        """JSON for ``t=json``, a one-line text summary otherwise."""
        subscriptions, announcements = self._summary()
        if _arg(request, "t") == "json":
            request.setHeader(b"Content-Type", b"application/json; charset=utf-8")
            return dumps(introducer_json(subscriptions, announcements))
        request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
        return (f"Introducer: subscriptions {subscriptions}, announcements {announcements}\n"
                ).encode("utf-8")

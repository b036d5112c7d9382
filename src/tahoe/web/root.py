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
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        return welcome_page(self._identity, self._introducer_statuses(), self._servers())


def _space(value: int | None) -> str:
    if value is None:
        return "?"
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000  # type: ignore[assignment]
    return "?"


def welcome_page(identity: tuple[str, str], introducers: list[str],
                 servers: list[ServerSummary]) -> bytes:
    """The welcome page: the node, its forms, the introducers and the storage servers."""
    nickname, nodeid = identity
    connected = sum(1 for s in servers if s.connection_status.lower().startswith("connected"))
    rows = "".join(
        f"<tr><td>{html.escape(s.nickname)}<br><code>{html.escape(s.nodeid)}</code></td>"
        f"<td>{html.escape(s.connection_status)}</td>"
        f"<td>{html.escape(s.version or '?')}</td><td>{_space(s.available_space)}</td></tr>"
        for s in sorted(servers, key=lambda s: (s.nickname, s.nodeid)))
    intro = "".join(f"<li>{html.escape(s)}</li>" for s in introducers) or "<li>none</li>"
    page = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Tahoe-LAFS - Welcome</title></head><body>
<h1>{html.escape(nickname or "Tahoe-LAFS node")}</h1>
<p>Node ID: <code>{html.escape(nodeid)}</code></p>
<p><a href="status">Recent and Active Operations</a> |
<a href="statistics">Operational Statistics</a></p>
<h2>View File or Directory</h2>
<form action="uri" method="get" id="view-form">
<input type="text" name="uri" size="60" placeholder="URI:…">
<input type="submit" value="View"></form>
<h2>Download Tahoe-URI</h2>
<form action="uri" method="get" id="download-form">
<input type="text" name="uri" size="60" placeholder="URI:…">
<input type="text" name="filename" placeholder="file name">
<input type="hidden" name="save" value="true">
<input type="submit" value="Download"></form>
<h2>Upload File</h2>
<form action="uri" method="post" enctype="multipart/form-data" id="upload-form">
<input type="hidden" name="t" value="upload">
<input type="file" name="file">
<select name="format"><option value="chk">Immutable</option>
<option value="sdmf">SDMF</option><option value="mdmf">MDMF</option></select>
<input type="submit" value="Upload"></form>
<h2>Create Directory</h2>
<form action="uri" method="post" enctype="multipart/form-data" id="mkdir-form">
<input type="hidden" name="t" value="mkdir">
<input type="hidden" name="redirect_to_result" value="true">
<select name="format"><option value="sdmf">SDMF</option><option value="mdmf">MDMF</option>
</select>
<input type="submit" value="Create a directory"></form>
<h2>Introducers</h2><ul>{intro}</ul>
<h2>Connected to {connected} of {len(servers)} known storage servers</h2>
<table border="1"><tr><th>Nickname / Node ID</th><th>Connection</th><th>Version</th>
<th>Available space</th></tr>{rows}</table>
</body></html>"""
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

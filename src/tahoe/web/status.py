"""``/status``: active and recent uploads and downloads (``reference/frontends.md`` §3.9, §4)."""
from __future__ import annotations

import html
import json
import time
from typing import Any

from twisted.web import resource
from twisted.web.server import Request

from ..client.history import Operation, OperationHistory
from ..util import base32
from .common import arg, set_security_headers


def _row(op: Operation) -> str:
    si = base32.b2a(op.storage_index)[:10] if op.storage_index else "-"
    size = "-" if op.size is None else f"{op.size:,}"
    started = time.strftime("%H:%M:%S", time.localtime(op.started))
    elapsed = "" if op.finished is None else f"{(op.finished - op.started) * 1000:.1f} ms"
    return (f"<tr><td>{html.escape(op.kind)}</td><td><code>{si}</code></td><td>{size}</td>"
            f"<td>{op.progress * 100:.0f}%</td><td>{html.escape(op.status)}</td>"
            f"<td>{started}</td><td>{elapsed}</td></tr>")


def _table(title: str, ops: list[Operation]) -> str:
    header = ("<tr><th>Type</th><th>Storage Index</th><th>Size</th><th>Progress</th>"
              "<th>Status</th><th>Started</th><th>Elapsed</th></tr>")
    rows = "".join(_row(op) for op in ops) or "<tr><td colspan=7>none</td></tr>"
    return f"<h2>{html.escape(title)}</h2><table border=1>{header}{rows}</table>"


class StatusResource(resource.Resource):
    """Tables of active and recent operations; ``t=json`` for scripts (GET or POST)."""

    isLeaf = True

    def __init__(self, history: OperationHistory) -> None:
        super().__init__()
        self._history = history

    def render_GET(self, request: Request) -> bytes:  # noqa: N802 (Twisted)
        """HTML, or JSON for ``t=json``."""
        set_security_headers(request)
        if (arg(request, "t") or "").lower() == "json":
            request.setHeader(b"Content-Type", b"application/json")
            return (json.dumps(self._history.as_json(), indent=1) + "\n").encode("utf-8")
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        page = ("<!DOCTYPE html><html><head><title>Tahoe-LAFS - Recent and Active Operations"
                "</title></head><body><h1>Recent and Active Operations</h1>"
                + _table("Active Operations", self._history.active())
                + _table("Recent Operations", self._history.recent())
                + '<p><a href="/">Return to the Welcome Page</a></p></body></html>')
        return page.encode("utf-8")

    def render_POST(self, request: Request) -> Any:  # noqa: N802 (Twisted)
        """As GET (``tahoe status`` posts ``t=json``)."""
        return self.render_GET(request)

"""``/status``: active and recent uploads and downloads (``reference/frontends.md`` §3.9, §4).

The page shows both lists as tables (size, progress, status, start, time
taken, rate) and, above them, a chart of the rate of each recent
operation, oldest on the left, drawn on the server
(:mod:`tahoe.web.svgchart`). ``t=json`` (GET or POST) is Tahoe's JSON.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from twisted.web import resource
from twisted.web.server import Request

from ..client.history import Operation, OperationHistory
from ..util import base32
from .rendering import arg
from .humanize import human_duration, human_rate, human_size, human_time
from .page import esc, page, size_html, table
from .svgchart import Bar, BarGroup, bar_chart, legend

__all__ = ["StatusResource", "rate_chart", "status_page"]

_SERIES = {"upload": "upload", "download": "download"}


def _row(op: Operation) -> list[str]:
    si = base32.b2a(op.storage_index)[:10] if op.storage_index else "-"
    elapsed = None if op.finished is None else op.finished - op.started
    percent = round(op.progress * 100)
    progress = (f'<progress max="100" value="{percent}" aria-label="{percent}%"></progress> '
                f"{percent}%")
    return [esc(op.kind), f"<code>{si}</code>", size_html(op.size), progress, esc(op.status),
            esc(human_time(op.started)), esc(human_duration(elapsed)),
            esc(human_rate(op.rate))]


def _table(title: str, ops: list[Operation]) -> str:
    headers = ["Type", "Storage index", "Size", "Progress", "Status", "Started (UTC)",
               "Time taken", "Rate"]
    return f"<h2>{esc(title)}</h2>" + table(headers, (_row(op) for op in ops), empty="None.")


def rate_chart(recent: Sequence[Operation]) -> str:
    """Bars of the rate of each finished operation with a size, oldest first."""
    groups = []
    for op in reversed(recent):
        rate = op.rate
        if rate is None:
            continue
        tooltip = (f"{op.kind} of {human_size(op.size)} at {human_rate(rate)}, "
                   f"{human_time(op.started)} UTC")
        groups.append(BarGroup("", (Bar(rate, _SERIES.get(op.kind, "other"), tooltip),)))
    return bar_chart(groups, title="Rate of each recent upload and download",
                     value_format=human_rate, empty="No finished upload or download yet.")


def status_page(history: OperationHistory) -> bytes:
    """The HTML page: the rate chart, then the active and the recent operations."""
    recent = history.recent()
    chart = (f'<figure class="chart-box">{rate_chart(recent)}'
             f"<figcaption>Rate of each recent operation, oldest on the left"
             f"{legend([('upload', 'upload'), ('download', 'download'), ('other', 'other')])}"
             "</figcaption></figure>")
    main = (chart + _table("Active Operations", history.active())
            + _table("Recent Operations", recent)
            + '<p class="actions"><a class="button" href="?t=json">JSON</a></p>')
    return page("Tahoe-LAFS - Recent and Active Operations", main, current="/status",
                heading="Recent and Active Operations")


class StatusResource(resource.Resource):
    """Tables of active and recent operations; ``t=json`` for scripts (GET or POST)."""

    isLeaf = True

    def __init__(self, history: OperationHistory) -> None:
        super().__init__()
        self._history = history

    def render_GET(self, request: Request) -> bytes:  # noqa: N802 (Twisted)
        """HTML, or JSON for ``t=json``."""
        if (arg(request, "t") or "").lower() == "json":
            request.setHeader(b"Content-Type", b"application/json")
            return (json.dumps(self._history.as_json(), indent=1) + "\n").encode("utf-8")
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        return status_page(self._history)

    def render_POST(self, request: Request) -> Any:  # noqa: N802 (Twisted)
        """As GET (``tahoe status`` posts ``t=json``)."""
        return self.render_GET(request)

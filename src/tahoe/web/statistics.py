"""``/statistics``: the node's counters and stats as HTML, JSON or OpenMetrics.

Facts: ``reference/frontends.md`` §5 (keys, JSON, OpenMetrics), §3.9 and §4
(the page). Any method works; ``t`` is compared case-insensitively:
``t=json`` gives ``text/plain`` JSON indented by one space, ``t=openmetrics``
the OpenMetrics text, no ``t`` an HTML page; any other ``t`` is a 400.
"""
from __future__ import annotations

import html
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from twisted.web import resource
from twisted.web.server import Request

from ..stats.openmetrics import CONTENT_TYPE as OPENMETRICS_TYPE
from ..stats.openmetrics import render_openmetrics
from .common import WebError, arg, render_async

Document = Mapping[str, Mapping[str, Any]]

#: (title, files counter, bytes counter) of the summary table.
_SUMMARY_ROWS = (
    ("Immutable files uploaded", "uploader.files_uploaded", "uploader.bytes_uploaded"),
    ("Immutable files downloaded", "downloader.files_downloaded", "downloader.bytes_downloaded"),
    ("Mutable files published", "mutable.files_published", "mutable.bytes_published"),
    ("Mutable files retrieved", "mutable.files_retrieved", "mutable.bytes_retrieved"),
)


def statistics_json(document: Document) -> bytes:
    """The ``t=json`` body: one-space indented JSON and a newline."""
    return (json.dumps(document, indent=1, sort_keys=True) + "\n").encode("utf-8")


def statistics_page(document: Document) -> str:
    """The HTML page: the upload/download/publish/retrieve totals, then every
    value, sorted."""
    counters = document.get("counters", {})
    rows = "".join(
        f"<tr><th>{html.escape(title)}</th><td>{counters.get(files, 0)} files</td>"
        f"<td>{counters.get(size, 0)} bytes</td></tr>" for title, files, size in _SUMMARY_ROWS)
    raw = html.escape(json.dumps(document, indent=1, sort_keys=True))
    return ("<!DOCTYPE html><html><head><title>Tahoe-LAFS - Operational Statistics</title>"
            "</head><body><h1>Operational Statistics</h1>"
            f"<h2>General</h2><table>{rows}</table>"
            f"<h2>Raw stats:</h2><pre>{raw}</pre>"
            "<p><a href=\"?t=json\">JSON</a> <a href=\"?t=openmetrics\">OpenMetrics</a></p>"
            "<p><a href=\"/\">Return to the Welcome Page</a></p></body></html>")


class StatisticsResource(resource.Resource):
    """``/statistics``.

    :param document: returns (asynchronously) the ``{"counters", "stats"}`` document.
    """

    isLeaf = True

    def __init__(self, document: Callable[[], Awaitable[Document]]) -> None:
        super().__init__()
        self._document = document

    def render(self, request: Request) -> Any:
        """Every method is answered the same way."""
        return render_async(request, self._render)

    async def _render(self, request: Request) -> bytes:
        fmt = (arg(request, "t") or "").lower()
        if fmt not in ("", "json", "openmetrics"):
            raise WebError(f"Unknown t= value: {fmt}")
        document = await self._document()
        if fmt == "json":
            request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
            return statistics_json(document)
        if fmt == "openmetrics":
            request.setHeader(b"Content-Type", OPENMETRICS_TYPE.encode("ascii"))
            return render_openmetrics(document).encode("utf-8")
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        return statistics_page(document).encode("utf-8")

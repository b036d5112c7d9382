"""``/statistics``: the node's counters and stats as HTML, JSON or OpenMetrics.

Facts: ``reference/frontends.md`` §5 (keys, JSON, OpenMetrics), §3.9 and §4
(the page). Any method works; ``t`` is compared case-insensitively:
``t=json`` gives ``text/plain`` JSON indented by one space, ``t=openmetrics``
the OpenMetrics text, no ``t`` an HTML page (:mod:`tahoe.web.statshtml`);
any other ``t`` is a 400.
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from twisted.web import resource
from twisted.web.server import Request

from ..stats.openmetrics import CONTENT_TYPE as OPENMETRICS_TYPE
from ..stats.openmetrics import render_openmetrics
from .rendering import WebError, arg, render_async
from .statshtml import statistics_page

Document = Mapping[str, Mapping[str, Any]]


def statistics_json(document: Document) -> bytes:
    """The ``t=json`` body: one-space indented JSON and a newline."""
    return (json.dumps(document, indent=1, sort_keys=True) + "\n").encode("utf-8")


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

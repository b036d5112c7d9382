"""``/helper_status``: the upload helper's counters (``docs/helper.md``).

``t=json`` gives Tahoe's ``chk_upload_helper.*`` dictionary as one-space
indented JSON (``{}`` on a node that runs no helper); otherwise a small HTML
table of the same values.
"""
from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping

from twisted.web import resource
from twisted.web.server import Request

Values = Mapping[str, int]


class HelperStatusResource(resource.Resource):
    """``/helper_status``.

    :param values: returns the helper's counters and gauges, or None without a helper.
    """

    isLeaf = True

    def __init__(self, values: Callable[[], Values | None]) -> None:
        super().__init__()
        self._values = values

    def render_GET(self, request: Request) -> bytes:
        values = self._values()
        t = (request.args.get(b"t") or [b""])[0].decode("utf-8", "replace").lower()
        if t == "json":
            request.setHeader(b"content-type", b"text/plain")
            return (json.dumps(dict(values or {}), indent=1, sort_keys=True) + "\n").encode()
        request.setHeader(b"content-type", b"text/html; charset=utf-8")
        if values is None:
            return b"<!DOCTYPE html><html><body><h1>No helper is running</h1></body></html>"
        rows = "".join(f"<tr><td>{html.escape(name)}</td><td>{value}</td></tr>"
                       for name, value in sorted(values.items()))
        return (f"<!DOCTYPE html><html><head><title>Helper Status</title></head><body>"
                f"<h1>Upload helper</h1><table>{rows}</table></body></html>").encode()

"""``POST $CAP[/PATH]?t=check``: where a file's or directory's shares are (``frontends.md`` §3.6).

``add-lease=true`` renews our leases on the shares found (the way to keep
files alive on servers that expire leases); ``verify=true`` reads every
share whole and checks it; ``output=JSON`` gives Tahoe's JSON (as
text/plain, like Tahoe), otherwise an HTML page, with a link to
``return_to`` when given. ``repair=`` is refused (400) until supported.
"""
from __future__ import annotations

import html
import json
from typing import Any

from twisted.web.server import Request

from ..client.checker import UncheckableCap
from .common import WebError, arg, boolean_arg
from .traversal import Gateway

__all__ = ["post_check"]


async def post_check(gateway: Gateway, request: Request, cap: Any) -> bytes:
    """Check the object ``cap`` names and render the results."""
    if boolean_arg(request, "repair", False):
        raise WebError("t=check&repair=true is not supported by this gateway yet")
    try:
        results = await gateway.client.checker.check(
            cap, add_lease=boolean_arg(request, "add-lease", False),
            verify=boolean_arg(request, "verify", False))
    except UncheckableCap as error:
        raise WebError(str(error)) from None
    if (arg(request, "output") or "").lower() == "json":
        request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
        return (json.dumps(results, indent=1) + "\n").encode("utf-8")
    request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
    return _page(results, arg(request, "return_to")).encode("utf-8")


def _page(results: dict[str, Any], return_to: str | None) -> str:
    details = results.get("results", {})
    healthy = details.get("healthy")
    rows = "".join(f"<tr><th>{html.escape(key)}</th><td>{html.escape(str(value))}</td></tr>"
                   for key, value in details.items() if key not in ("sharemap", "healthy"))
    sharemap = "".join(f"<tr><td>{html.escape(share)}</td><td>{html.escape(', '.join(servers))}"
                       f"</td></tr>" for share, servers in details.get("sharemap", {}).items())
    back = (f'<p><a href="{html.escape(return_to, quote=True)}">Return to file/directory.</a></p>'
            if return_to else "")
    summary = results.get("summary") or ("Healthy" if healthy else "Not Healthy")
    return ("<!DOCTYPE html><html><head><title>Tahoe-LAFS - Check Results</title></head><body>"
            "<h1>File Check Results for SI="
            f"{html.escape(results.get('storage-index') or '(LIT)')}</h1>"
            f"<p>{'Healthy' if healthy else 'Not Healthy'}: {html.escape(summary)}</p>"
            f"<table border=1>{rows}</table>"
            + (f"<h2>Share map</h2><table border=1>{sharemap}</table>" if sharemap else "")
            + back + "</body></html>")

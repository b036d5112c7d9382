"""``POST $CAP[/PATH]?t=check``: where a file's or directory's shares are (``frontends.md`` §3.6).

``add-lease=true`` renews our leases on the shares found (the way to keep
files alive on servers that expire leases); ``verify=true`` reads every
share whole and checks it; ``output=JSON`` gives Tahoe's JSON (as
text/plain, like Tahoe), otherwise an HTML page, with a link to
``return_to`` when given. ``repair=true`` repairs what needs it
(:mod:`tahoe.client.repairer`) and answers Tahoe's check-and-repair shape.
"""
from __future__ import annotations

import html
import json
from typing import Any

from twisted.web.server import Request

from ..client.checker import UncheckableCap
from ..client.repairer import check_and_repair
from .common import WebError, arg, boolean_arg
from .traversal import Gateway

__all__ = ["post_check"]


async def post_check(gateway: Gateway, request: Request, cap: Any) -> bytes:
    """Check the object ``cap`` names and render the results."""
    add_lease = boolean_arg(request, "add-lease", False)
    verify = boolean_arg(request, "verify", False)
    try:
        if boolean_arg(request, "repair", False):
            results = await check_and_repair(gateway.client, cap, add_lease, verify)
        else:
            results = await gateway.client.checker.check(cap, add_lease=add_lease,
                                                         verify=verify)
    except UncheckableCap as error:
        raise WebError(str(error)) from None
    if (arg(request, "output") or "").lower() == "json":
        request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
        return (json.dumps(results, indent=1) + "\n").encode("utf-8")
    request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
    return _page(results, arg(request, "return_to")).encode("utf-8")


def _page(results: dict[str, Any], return_to: str | None) -> str:
    if "pre-repair-results" in results:
        attempt = ("Repair successful." if results["repair-successful"] else "Repair failed.") \
            if results["repair-attempted"] else "No repair was needed or possible."
        return _page(results["post-repair-results"], return_to).replace(
            "</h1>", f"</h1><p>{attempt}</p>", 1)
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

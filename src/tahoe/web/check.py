"""``POST $CAP[/PATH]?t=check``: where a file's or directory's shares are (``frontends.md`` §3.6).

``add-lease=true`` renews our leases on the shares found (the way to keep
files alive on servers that expire leases); ``verify=true`` reads every
share whole and checks it; ``output=JSON`` gives Tahoe's JSON (as
text/plain, like Tahoe), otherwise an HTML page (:mod:`tahoe.web.checkhtml`)
with a link to ``return_to`` when given. ``repair=true`` repairs what needs
it (:mod:`tahoe.client.repairer`) and answers Tahoe's check-and-repair shape.
"""
from __future__ import annotations

import json
from typing import Any

from twisted.web.server import Request

from ..client.checker import UncheckableCap
from ..client.repairer import check_and_repair
from .checkhtml import check_results_page
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
    arguments = [(name, "true") for name in ("verify", "repair", "add-lease")
                 if boolean_arg(request, name, False)]
    nicknames = {s.nodeid: s.nickname for s in gateway.client.broker.summaries()}
    return check_results_page(results, here=request.path.decode("utf-8", "replace"),
                              return_to=arg(request, "return_to"), arguments=arguments,
                              nicknames=nicknames)

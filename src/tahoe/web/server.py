"""Start the gateway's HTTP listener and publish ``node.url`` once it listens."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from twisted.internet import endpoints
from twisted.web import resource, server

from ..node.fileutil import write_atomically
from .headers import set_security_headers
from .logformat import censored_log_line


class GatewayRequest(server.Request):
    """A request whose response carries the security headers, whatever resource answers it."""

    def process(self) -> None:
        """Set the headers (``tahoe.web.headers``), then dispatch as Twisted does."""
        set_security_headers(self)
        super().process()


def url_for_port(listening_port: Any, tls: bool = False) -> str:
    """The ``node.url`` line for a listening port: always 127.0.0.1 (frontends.md §1.1)."""
    scheme = "https" if tls else "http"
    return f"{scheme}://127.0.0.1:{listening_port.getHost().port}/"


async def start_web_server(reactor: Any, strport: str, root: resource.Resource,
                           basedir: Path) -> Any:
    """Listen on ``strport`` and write ``node.url`` atomically when ready.

    :returns: the listening port (stop it with ``stopListening``).
    """
    site = server.Site(root, logFormatter=censored_log_line)
    site.requestFactory = GatewayRequest
    site.displayTracebacks = False
    endpoint = endpoints.serverFromString(reactor, strport)
    port = await endpoint.listen(site)
    write_atomically(basedir / "node.url", url_for_port(port, strport.startswith("ssl:")) + "\n")
    return port

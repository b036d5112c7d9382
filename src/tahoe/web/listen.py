"""The web port: listening at once, the site built (and its code imported) at the first connection.

A storage node or an introducer mostly serves no web page at all; Twisted's
web server and the pages cost a node about 3 MiB of memory, so they are
loaded only when someone connects (a browser, ``tahoe status``, a munin
plugin). This module imports nothing of ``twisted.web``.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from twisted.internet import endpoints
from twisted.internet.protocol import Factory, Protocol
from twisted.python import log

from ..node.fileutil import write_atomically

__all__ = ["LazySite", "listen_web", "url_for_port"]


class LazySite(Factory):
    """A factory that makes its site by ``make_site()`` when first needed, then hands
    every connection to it."""

    def __init__(self, make_site: Callable[[], Factory]) -> None:
        self._make_site = make_site
        self._site: Factory | None = None
        #: The modules loaded just before the site was made (a diagnostic, a few kB).
        self.modules_before: list[str] | None = None

    def site(self) -> Factory:
        """The site, made now if it was not yet."""
        if self._site is None:
            self.modules_before = sorted(sys.modules)
            self._site = self._make_site()
            self._site.doStart()
        return self._site

    @property
    def built(self) -> bool:
        """Whether the site was made."""
        return self._site is not None

    def buildProtocol(self, addr: Any) -> Protocol | None:  # noqa: N802 (Twisted's name)
        """The site's protocol for a new connection. If the site cannot be made, the
        connection is closed and the failure logged; the next connection tries again
        (an exception here would stop the port listening)."""
        try:
            site = self.site()
        except Exception:
            log.err(None, "the web site could not be built")
            return None
        return site.buildProtocol(addr)

    def stopFactory(self) -> None:  # noqa: N802 (Twisted's name)
        if self._site is not None:
            self._site.doStop()


def url_for_port(listening_port: Any, tls: bool = False) -> str:
    """The ``node.url`` line for a listening port: always 127.0.0.1 (frontends.md §1.1)."""
    scheme = "https" if tls else "http"
    return f"{scheme}://127.0.0.1:{listening_port.getHost().port}/"


async def listen_web(reactor: Any, strport: str, factory: Factory, basedir: Path) -> Any:
    """Listen on ``strport`` and write ``node.url`` atomically when ready.

    :returns: the listening port (stop it with ``stopListening``).
    """
    endpoint = endpoints.serverFromString(reactor, strport)
    port = await endpoint.listen(factory)
    write_atomically(basedir / "node.url", url_for_port(port, strport.startswith("ssl:")) + "\n")
    return port

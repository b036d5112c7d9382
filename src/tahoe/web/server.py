"""Start the gateway's HTTP listener and publish ``node.url`` once it listens."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from twisted.web import resource, server, static

from .headers import set_security_headers
from .listen import listen_web
from .logformat import censored_log_line
from .spool import SpoolGuard


class _AllowedMethodsOnly:
    """Wraps a resource: a method it does not implement is a 405 with ``Allow``.

    Twisted answers 405 only for GET, HEAD and POST and a 501 "Huh?" page for
    any other method (a DELETE on ``/status/``, say), which a client cannot
    tell from a server fault.  HEAD is left to Twisted, which answers it with
    GET where GET is allowed.  A HEAD answered with a body is finished here,
    without one (Twisted would log a warning quoting the request URI).
    """

    def __init__(self, wrapped: resource.IResource) -> None:
        self._wrapped = wrapped

    def render(self, request: server.Request) -> Any:
        """Render the wrapped resource; a method it does not implement gets a 405."""
        try:
            body = self._wrapped.render(request)
        except resource.UnsupportedMethod as refusal:
            allowed = list(refusal.allowedMethods)
            if request.method == b"HEAD" and b"GET" in allowed:
                raise
            request.setResponseCode(405)
            request.setHeader(b"Allow", b", ".join(allowed))
            request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
            return b"Method Not Allowed: this resource allows " + b", ".join(allowed) + b"\n"
        if request.method == b"HEAD" and isinstance(body, bytes) and body:
            # Finish here: Twisted would log the whole request, its URI (a cap) included.
            request.setHeader(b"Content-Length", b"%d" % len(body))
            request.write(b"")
            request.finish()
            return server.NOT_DONE_YET
        return body


class GatewayRequest(SpoolGuard, server.Request):
    """A request whose response carries the security headers, whatever resource answers
    it; one whose body could not be kept (:class:`~.spool.SpoolGuard`) is answered 507."""

    #: Whether they are set already (``rendering.render_async`` sets them on other requests).
    security_headers_set = True

    def process(self) -> None:
        """Set the headers (``tahoe.web.headers``), then dispatch as Twisted does."""
        set_security_headers(self)
        if self.spool_error is not None:
            body = f"Insufficient Storage: {self.spool_problem()}\n".encode()
            self.setResponseCode(507)
            self.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
            self.setHeader(b"Content-Length", b"%d" % len(body))
            self.write(body)
            self.finish()
            return
        if self.method in (b"POST", b"PUT"):
            site = self.channel.site
            first_write, site.first_write = site.first_write, None
            if first_write is not None:
                first_write()
        super().process()

    def render(self, resrc: resource.IResource) -> None:
        """Render as Twisted does, with 405 rather than 501 for an unimplemented method."""
        super().render(_AllowedMethodsOnly(resrc))

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:  # noqa: N802
        """Dispatch as Twisted does, once the Content-Type has no line-break characters.

        Twisted parses a POST's Content-Type with :mod:`email`, which refuses a
        value holding a character Python splits lines at (``\x85``,
        ``\x1c``-``\x1e``, ...): the exception dropped the connection without
        an answer.  Such bytes are removed; what is left is judged as usual.
        """
        values = self.requestHeaders.getRawHeaders(b"content-type")
        if values:
            self.requestHeaders.setRawHeaders(b"content-type",
                                              [_without_line_breaks(v) for v in values])
        super().requestReceived(command, path, version)


def _without_line_breaks(value: bytes) -> bytes:
    """``value`` without the bytes whose Latin-1 character ``str.splitlines`` breaks at."""
    return bytes(b for b in value if len((chr(b) + "x").splitlines()) == 1)


def make_site(root: resource.Resource, static_dir: str | None = None,
              first_write: Callable[[], None] | None = None) -> server.Site:
    """The gateway's site over ``root``.

    :param static_dir: served under ``/static/`` (``[node]web.static``,
        ``NODEDIR/public_html`` by default), as Tahoe 1.20 does: Twisted's file server
        (no path out of the directory but by a symbolic link the operator made; a
        directory without an index page is listed; a file of an unknown type is sent
        as ``application/octet-stream``, not Twisted's default ``text/html``). A
        missing directory answers 404.
    :param first_write: called once, as the first POST or PUT (a request that may
        create something) arrives.
    """
    if static_dir is not None:
        root.putChild(b"static", static.File(static_dir,
                                             defaultType="application/octet-stream"))
    site = server.Site(root, logFormatter=censored_log_line)
    site.requestFactory = GatewayRequest
    site.first_write = first_write
    site.displayTracebacks = False
    return site


async def start_web_server(reactor: Any, strport: str, root: resource.Resource,
                           basedir: Path, first_write: Callable[[], None] | None = None) -> Any:
    """Listen on ``strport`` with the site over ``root`` (:func:`make_site`) and write
    ``node.url`` atomically when ready.

    :returns: the listening port (stop it with ``stopListening``).
    """
    return await listen_web(reactor, strport, make_site(root, first_write=first_write),
                            basedir)

"""The gateway's root resource: the welcome page and ``GET /?t=json``.

The pages themselves are drawn by :mod:`tahoe.web.welcome` (client nodes)
and :func:`introducer_page` (introducers).
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from twisted.web import resource
from twisted.web.server import Request

from ..client.history import OperationHistory
from .assets import add_assets
from .errorpage import NotFoundResource
from .json_shapes import ServerSummary, dumps, introducer_json, welcome_json
from .page import page, table
from .welcome import welcome_page

__all__ = ["IntroducerWelcomeResource", "WelcomeResource", "introducer_page", "welcome_page"]


def _arg(request: Request, name: str) -> str | None:
    values = request.args.get(name.encode())
    return values[0].decode("utf-8", "replace") if values else None


class WelcomeResource(resource.Resource):
    """``/`` of a client or storage node.

    :param introducer_statuses: returns one status string per introducer.
    :param servers: returns every known storage server.
    :param identity: (nickname, node id) shown on the HTML page.
    :param history: the client's operations (the page lists the last ones).
    :param happy: ``shares.happy`` (the page warns below it).
    :param clock: gives the time (``seconds()``) for "last received".
    """

    def __init__(self, introducer_statuses: Callable[[], list[str]],
                 servers: Callable[[], list[ServerSummary]], identity: tuple[str, str],
                 *, history: OperationHistory | None = None, happy: int | None = None,
                 clock: Any = None) -> None:
        super().__init__()
        self._introducer_statuses = introducer_statuses
        self._servers = servers
        self._identity = identity
        self._history = history
        self._happy = happy
        self._clock = clock
        self._lazy: dict[bytes, Callable[[], Mapping[bytes, resource.Resource]]] = {}
        add_assets(self)

    def add_lazy_children(self, names: Collection[bytes],
                          build: Callable[[], Mapping[bytes, resource.Resource]]) -> None:
        """Children built, and their code imported, at the first request for any of them.

        :param build: returns the children by name, ``names`` exactly.
        """
        for name in names:
            self._lazy[name] = build

    def build_lazy_children(self) -> None:
        """Build every lazy child now (a gateway node, shortly after it started)."""
        while self._lazy:
            self._build(next(iter(self._lazy)))

    def _build(self, path: bytes) -> resource.Resource:
        built = self._lazy[path]()
        for name, child in built.items():
            del self._lazy[name]
            self.putChild(name, child)
        return built[path]

    def getChild(self, path: bytes, request: Request) -> resource.Resource:  # noqa: N802 (Twisted)
        """Serve the welcome page for ``/`` itself, a lazy child once built; anything else
        is not found here."""
        if path == b"":
            return self
        if path not in self._lazy:
            return NotFoundResource()
        return self._build(path)

    def render_GET(self, request: Request) -> bytes:  # noqa: N802 (Twisted)
        """JSON for ``t=json``; the HTML page otherwise; 400 for other ``t``."""
        fmt = _arg(request, "t")
        if fmt == "json":
            request.setHeader(b"Content-Type", b"application/json; charset=utf-8")
            return dumps(welcome_json(self._introducer_statuses(), self._servers()))
        if fmt not in (None, ""):
            request.setResponseCode(400)
            request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
            return b"Bad Format"
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        recent = self._history.recent() if self._history is not None else []
        now = self._clock.seconds() if self._clock is not None else None
        return welcome_page(self._identity, self._introducer_statuses(), self._servers(),
                            happy=self._happy, recent=recent, now=now)


def introducer_page(subscriptions: Mapping[str, int], announcements: Mapping[str, int]) -> bytes:
    """An introducer's page: announcements and subscribers per service."""
    services = sorted(set(subscriptions) | set(announcements))
    rows = [[service, str(announcements.get(service, 0)), str(subscriptions.get(service, 0))]
            for service in services]
    main = table(["Service", "Announcements", "Subscribers"], rows,
                 empty="No announcement or subscription yet.")
    return page("Tahoe-LAFS - Introducer", main, heading="Introducer")


class IntroducerWelcomeResource(resource.Resource):
    """``/`` of an introducer: how many subscribers and announcements per service."""

    def __init__(self, summary: Callable[[], tuple[dict[str, int], dict[str, int]]]) -> None:
        super().__init__()
        self._summary = summary
        add_assets(self)

    def getChild(self, path: bytes, request: Request) -> resource.Resource:  # noqa: N802 (Twisted)
        """Serve the page for ``/`` itself (and, as before, any other path)."""
        return self

    def render_GET(self, request: Request) -> bytes:  # noqa: N802 (Twisted)
        """JSON for ``t=json``, an HTML page otherwise."""
        subscriptions, announcements = self._summary()
        if _arg(request, "t") == "json":
            request.setHeader(b"Content-Type", b"application/json; charset=utf-8")
            return dumps(introducer_json(subscriptions, announcements))
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        return introducer_page(subscriptions, announcements)

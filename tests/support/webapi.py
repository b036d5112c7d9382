"""A few web-API calls on a node's gateway, with the standard library only.

Works against any gateway that follows ``shared/reference/frontends.md`` §3
(Tahoe-LAFS 1.20's or ours).  Proxies from the environment are never used:
every URL here is on 127.0.0.1.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from typing import Any

from tests.support.processes import ManagedProcess, wait_until

__all__ = [
    "WebError",
    "connected_servers",
    "download",
    "get_json",
    "upload",
    "wait_for_connected_servers",
    "welcome",
]

HTTP_TIMEOUT = 60.0

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class WebError(RuntimeError):
    """The gateway answered with an HTTP error status (the body is in the message)."""

    def __init__(self, method: str, url: str, status: int, body: str) -> None:
        super().__init__(f"{method} {url} -> {status}: {body[:2000]}")
        self.status = status
        self.body = body


def _request(method: str, url: str, data: bytes | None = None,
             timeout: float = HTTP_TIMEOUT) -> bytes:
    request = urllib.request.Request(url, data=data, method=method)
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            body: bytes = response.read()
            return body
    except urllib.error.HTTPError as e:
        raise WebError(method, url, e.code, e.read().decode("utf-8", "replace")) from None


def get_json(url: str, timeout: float = HTTP_TIMEOUT) -> Any:
    """GET ``url`` and decode the JSON body.

    :raises WebError: on an HTTP error status.
    :raises OSError: if the node cannot be reached.
    """
    return json.loads(_request("GET", url, timeout=timeout))


def welcome(node_url: str, timeout: float = HTTP_TIMEOUT) -> dict[str, Any]:
    """The node's ``GET /?t=json``: ``{"introducers": {...}, "servers": [...]}`` (§3.9)."""
    result: dict[str, Any] = get_json(urllib.parse.urljoin(node_url, "/?t=json"), timeout)
    return result


def connected_servers(welcome_json: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries of ``servers`` whose ``connection_status`` says connected.

    Tahoe 1.20 writes ``Connected to tcp:HOST:PORT via tcp`` for Foolscap and
    ``connected`` for HTTPS, so the prefix is compared case-insensitively.
    """
    return [server for server in welcome_json.get("servers", [])
            if str(server.get("connection_status", "")).lower().startswith("connected")]


def wait_for_connected_servers(node_url: str, count: int, timeout: float, *,
                               processes: Iterable[ManagedProcess] = ()) -> list[dict[str, Any]]:
    """Poll ``GET /?t=json`` until at least ``count`` servers are connected and their
    version is known; return them. (A client uses a server only once it has its version:
    over Foolscap, Tahoe shows a server connected before the version has arrived.)

    :raises WaitTimeout: if that does not happen within ``timeout`` seconds
        (the message shows the last listing).
    :raises ProcessDied: if one of ``processes`` exits first.
    """
    last: list[dict[str, Any]] = []

    def enough() -> list[dict[str, Any]] | None:
        listing = welcome(node_url, timeout=10.0)
        last[:] = listing.get("servers", [])
        servers = [server for server in connected_servers(listing) if server.get("version")]
        return servers if len(servers) >= count else None

    try:
        return wait_until(enough, timeout, f"{count} connected servers at {node_url}",
                          processes=processes, ignore=(OSError, ValueError))
    except TimeoutError as e:
        raise type(e)(f"{e}\nlast server listing: {json.dumps(last, indent=1)}") from None


def upload(node_url: str, data: bytes, timeout: float = HTTP_TIMEOUT) -> str:
    """``PUT /uri``: upload ``data`` as an unlinked immutable file; return its cap.

    The cap is ``URI:CHK:…`` (or ``URI:LIT:…`` for 55 bytes or fewer).

    :raises WebError: on an HTTP error status (e.g. not enough servers).
    """
    return _request("PUT", urllib.parse.urljoin(node_url, "/uri"), data=data,
                    timeout=timeout).decode("ascii").strip()


def download(node_url: str, cap: str, timeout: float = HTTP_TIMEOUT) -> bytes:
    """``GET /uri/<cap>``: the file's contents.

    :raises WebError: on an HTTP error status.
    """
    url = urllib.parse.urljoin(node_url, "/uri/" + urllib.parse.quote(cap, safe=""))
    return _request("GET", url, timeout=timeout)


def mkdir(node_url: str, timeout: float = HTTP_TIMEOUT) -> str:
    """``POST /uri?t=mkdir``: create an unlinked directory (a mutable file); return its cap."""
    return _request("POST", urllib.parse.urljoin(node_url, "/uri?t=mkdir"), data=b"",
                    timeout=timeout).decode("ascii").strip()

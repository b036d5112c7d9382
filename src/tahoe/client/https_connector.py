"""Keeping a storage server reachable over HTTPS: connect, ask its version, reconnect.

A server announcing NURLs is tried at each of them in turn until one
answers ``GET /storage/v1/version`` over TLS with the pinned key; that
connection is then kept open and used for every call
(``client.storage_https``). When it is lost, the server counts as
disconnected until a new connection answers again, tried after
:data:`RETRY_FIRST` seconds and then less and less often (up to
:data:`RETRY_MOST`). While connected, the version is asked again every
:data:`REFRESH` seconds: that refreshes the available space and notices a
peer that went silent without closing.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from twisted.internet.interfaces import IReactorTime
from twisted.python import log
from twisted.python.failure import Failure

from ..httpwire.client import PersistentConnection
from ..httpwire.threaded import ThreadedConnection
from ..httpwire.tls import PinnedTLSEndpoint
from ..util.errors import BadNURL
from ..util.nurl import NURL, parse_nurl
from .storage_https import HTTPSStorageClient

if TYPE_CHECKING:
    from .broker import StorageServerHandle

RETRY_FIRST = 1.0
RETRY_FACTOR = 2.0
RETRY_MOST = 60.0
REFRESH = 60.0
#: Seconds a ping (or any answer) may take before the connection is dropped.
RESPONSE_TIMEOUT = 60.0
#: Seconds to connect, and again to finish the TLS handshake (a server that hangs with its
#: kernel still accepting connections never finishes it).
CONNECT_TIMEOUT = 30.0
#: Application versions of servers known to answer pipelined requests in order.
PIPELINING_SERVERS = (b"tahoe-lafs-py/",)


def usable_nurls(announcement: Mapping[str, Any]) -> list[NURL]:
    """The announcement's NURLs this client can use (TCP ones that parse)."""
    nurls = []
    for text in announcement.get("anonymous-storage-NURLs") or ():
        try:
            nurl = parse_nurl(text)
        except BadNURL as error:
            log.msg(f"ignoring a malformed NURL: {error}")
            continue
        if nurl.scheme == "pb":
            nurls.append(nurl)
    return nurls


def takes_pipelining(version: Mapping[bytes, Any]) -> bool:
    """Whether a server (by its version answer) may be sent writes before an allocation's answer."""
    application = version.get(b"application-version")
    return isinstance(application, bytes) and application.startswith(PIPELINING_SERVERS)


def endpoint_for(nurl: NURL, clock: Any) -> Any:
    """A TLS client endpoint to a NURL's address, accepting only its pinned key."""
    from twisted.internet.endpoints import HostnameEndpoint

    host = nurl.host.strip("[]")
    return PinnedTLSEndpoint(HostnameEndpoint(clock, host, nurl.port, timeout=CONNECT_TIMEOUT),
                             nurl.spki_hash, clock, CONNECT_TIMEOUT)


class HTTPSConnector:
    """Keeps one storage server connected over HTTPS (see the module docstring)."""

    def __init__(self, handle: "StorageServerHandle", clock: IReactorTime,
                 on_change: Callable[[], None]) -> None:
        self._handle = handle
        self._clock = clock
        self._on_change = on_change
        self._index = 0
        self._delay = RETRY_FIRST
        self._timer: Any = None
        self._client: HTTPSStorageClient | None = None
        self._stopped = False
        self.nurl: NURL = handle.nurls[0]
        self.last_error: str | None = None

    def start(self) -> None:
        """Make the first attempt."""
        self._attempt()

    def status(self) -> str:
        """For the welcome page: connected where, or trying, or why not."""
        if self._handle.is_connected:
            return f"Connected to tcp:{self.nurl.host}:{self.nurl.port} via HTTPS"
        if self._timer is not None and self._timer.active():
            wait = max(0, int(self._timer.getTime() - self._clock.seconds()))
            reason = f" ({self.last_error})" if self.last_error else ""
            return f"Reconnecting in {wait} seconds{reason}"
        return "Trying to connect"

    def _attempt(self) -> None:
        self._timer = None
        if self._stopped:
            return
        nurl = self._handle.nurls[self._index % len(self._handle.nurls)]
        self.nurl = nurl
        reactor = self._clock
        connection = PersistentConnection(endpoint_for(nurl, reactor),
                                          f"{nurl.host}:{nurl.port}".encode("ascii"),
                                          reactor, on_lost=lambda _: self._lost(client),
                                          response_timeout=RESPONSE_TIMEOUT)
        client = HTTPSStorageClient(
            connection, nurl.swissnum_bytes, pipelining=False,
            bulk=lambda: ThreadedConnection(nurl.host.strip("[]"), nurl.port, nurl.spki_hash,
                                            reactor, response_timeout=RESPONSE_TIMEOUT))
        self._client = client
        d = client.get_version()
        d.addCallbacks(self._connected, self._failed, callbackArgs=(client,),
                       errbackArgs=(client,))

    def _connected(self, version: dict, client: HTTPSStorageClient) -> None:
        if self._stopped or client is not self._client:
            return
        client.pipelining = takes_pipelining(version)
        self._delay = RETRY_FIRST
        self.last_error = None
        handle = self._handle
        handle.storage = client
        handle.version = version
        handle.last_received = self._clock.seconds()
        self._timer = self._clock.callLater(REFRESH, self._refresh, client)
        self._on_change()

    def _refresh(self, client: HTTPSStorageClient) -> None:
        self._timer = None
        d = client.get_version()

        def got(version: dict) -> None:
            if self._handle.storage is client:
                self._handle.version = version
                self._handle.last_received = self._clock.seconds()
                self._timer = self._clock.callLater(REFRESH, self._refresh, client)

        def failed(failure: Failure) -> None:
            if self._handle.storage is client:
                log.msg(f"version from {self._handle.nickname!r} failed: "
                        f"{failure.getErrorMessage()}")
                self._lost(client)
        d.addCallbacks(got, failed)

    def _failed(self, failure: Failure, client: HTTPSStorageClient) -> None:
        client.stop()
        if self._stopped or client is not self._client:
            return
        self.last_error = failure.getErrorMessage()
        log.msg(f"HTTPS storage server {self._handle.nickname!r} at "
                f"{self.nurl.host}:{self.nurl.port}: {self.last_error}")
        self._index += 1
        self._retry()

    def drop(self, why: str) -> None:
        """Close the connection in use (the server does not answer on it) and reconnect
        as after any loss; the welcome page says ``why``."""
        if self._client is not None:
            self._lost(self._client, why)

    def _lost(self, client: HTTPSStorageClient, why: str = "connection lost") -> None:
        if self._stopped or client is not self._client:
            return
        client.stop()
        self._client = None
        handle = self._handle
        was_connected = handle.is_connected
        handle.storage = None
        handle.version = None
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        self.last_error = why
        self._retry()
        if was_connected:
            self._on_change()

    def _retry(self) -> None:
        if self._timer is None and not self._stopped:
            self._timer = self._clock.callLater(self._delay, self._attempt)
            self._delay = min(self._delay * RETRY_FACTOR, RETRY_MOST)

    def stop(self) -> None:
        """Close the connection and stop trying."""
        self._stopped = True
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        if self._client is not None:
            self._client.stop()
            self._client = None

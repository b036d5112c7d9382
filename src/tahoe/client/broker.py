"""The client's table of storage servers: announced or static, connected or not.

Each server is known by its id (``v0-`` + base32 Ed25519 key); the broker
keeps a reconnecting connection to it, HTTPS to a NURL or Foolscap to its
``anonymous-storage-FURL`` (§7.8), and the ``get_version`` answer
(``reference/storage-protocol.md`` §2.2, §7.2, §7.7, §7.8, §8.1).

With ``[grid_managers]`` keys configured, the broker also decides which
servers may be given shares (:meth:`StorageBroker.may_store`,
:meth:`StorageBroker.upload_candidates`): those whose announcement carries an
unexpired certificate signed by a configured manager for their own key
(``docs/formats/grid-manager.md``), as Tahoe 1.20's ``upload_permitted``.
Reads, checks and servermap updates still use every server.

A server that leaves a call unanswered too long (an upload's allocation,
``client.share_push``; a call made to several servers at once,
``client.stragglers``) is pinged (:meth:`StorageServerHandle.suspect`); unless
it answers within :data:`PING_TIMEOUT` its connection is dropped, so it counts
as not connected (and no upload waits for it) until a new connection answers.
While the ping is out, uploads place no shares on it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

from foolscap.api import Tub
from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionLost
from twisted.internet.interfaces import IReactorTime
from twisted.python import log
from twisted.python.failure import Failure

from ..crypto.ed25519 import VerifyingKey
from ..grid_manager.certificate import ANNOUNCEMENT_KEY, Finding, certified_until, \
    check_certificates
from ..util import base32
from ..web.json_shapes import ServerSummary
from .https_connector import HTTPSConnector, usable_nurls
from .placement import permuted_ring
from .storage_api import DISCONNECTED, StorageServerClient
from .storage_foolscap import FoolscapStorageClient

STORAGE_V1 = b"http://allmydata.org/tahoe/protocols/storage/v1"
#: Seconds a suspected server has to answer a ping before its connection is dropped.
PING_TIMEOUT = 10.0


def maximum_immutable_share_size(version: Mapping[bytes, Any]) -> int | None:
    """The largest immutable share a server's version dict says it accepts, if it says."""
    value = version.get(STORAGE_V1, {}).get(b"maximum-immutable-share-size")
    return value if isinstance(value, int) else None


def _same_address(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether two announcements of a server reach it the same way (FURL and NURLs)."""
    return all(old.get(key) == new.get(key)
               for key in ("anonymous-storage-FURL", "anonymous-storage-NURLs"))


class StorageServerHandle:
    """One storage server as the client sees it.

    The transport follows Tahoe 1.20's rule (``reference/storage-protocol.md``
    §7.8): HTTPS when the announcement lists ``anonymous-storage-NURLs`` and
    the client does not force Foolscap, otherwise Foolscap, with no fallback
    from one to the other.

    :ivar server_id: the announcing key, ``v0-…`` (bytes).
    :ivar furl: its ``anonymous-storage-FURL``.
    :ivar nurls: its usable NURLs (empty if none, or if Foolscap is forced).
    :ivar lease_seed: the 20-byte binary Tub ID from the FURL.
    :ivar permutation_seed: the bytes hashed with a storage index to place it on the ring.
    :ivar storage: the calls of the server, once connected (``storage_api``).
    """

    def __init__(self, server_id: bytes, announcement: Mapping[str, Any], lease_seed: bytes,
                 permutation_seed: bytes, clock: IReactorTime, prefer_https: bool = True) -> None:
        self.server_id = server_id
        self.announcement = dict(announcement)
        self.furl: str = announcement["anonymous-storage-FURL"]
        self.nickname: str = str(announcement.get("nickname", ""))
        self.lease_seed = lease_seed
        self.permutation_seed = permutation_seed
        self.nurls = usable_nurls(announcement) if prefer_https else []
        self._storage: StorageServerClient | None = None
        self.version: dict | None = None
        self.last_received: float | None = None
        self.connection_hint: str | None = None
        self._clock = clock
        self._reconnector: Any = None
        self._https: HTTPSConnector | None = None
        #: what the broker made of the announced Grid Manager certificates
        self.certificates: tuple[Finding, ...] = ()
        #: whether the client has [grid_managers], and the expiry of the
        #: certificate that lets this server store shares (None: none does)
        self.managed = False
        self.certified_until: datetime | None = None
        self._refusal_logged: str | None = None
        self._pinging = False

    @property
    def transport(self) -> str:
        """``"https"`` or ``"foolscap"``: the protocol this server is reached by."""
        return "https" if self.nurls else "foolscap"

    @property
    def storage(self) -> StorageServerClient:
        """The server's calls; while disconnected, a stand-in whose calls fail with ``ServerGone``."""
        return self._storage or DISCONNECTED

    @storage.setter
    def storage(self, client: StorageServerClient | None) -> None:
        self._storage = client

    @property
    def is_connected(self) -> bool:
        """Whether a live connection and its version are in hand."""
        return self._storage is not None and self.version is not None

    @property
    def clock(self) -> IReactorTime:
        """The reactor's clock (for timeouts of the calls made to this server)."""
        return self._clock

    @property
    def suspected(self) -> bool:
        """Whether a ping is out to this server after a call it left unanswered."""
        return self._pinging

    @property
    def available_space(self) -> int | None:
        """The space the server last reported, if known."""
        v1 = (self.version or {}).get(STORAGE_V1, {})
        value = v1.get(b"available-space", v1.get(b"maximum-immutable-share-size"))
        return value if isinstance(value, int) else None

    @property
    def maximum_immutable_share_size(self) -> int | None:
        """The largest immutable share the server says it accepts."""
        return maximum_immutable_share_size(self.version or {})

    @property
    def application_version(self) -> str | None:
        """The server software's version string."""
        value = (self.version or {}).get(b"application-version")
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else None

    def connection_status(self) -> str:
        """``Connected to tcp:HOST:PORT via tcp`` (Tahoe's Foolscap wording), ``… via HTTPS``, or why not."""
        if self._https is not None:
            return self._https.status()
        rref = getattr(self.storage, "rref", None)
        if rref is not None:
            info = rref.getConnectionInfo()
            if not self.is_connected:
                return "Connecting (asking for version)"
            if self.connection_hint:
                handler = info.connectionHandlers.get(self.connection_hint, "tcp")
                return f"Connected to {self.connection_hint} via {handler}"
            return f"Connected via listener ({info.listenerStatus[0]})"
        if self._reconnector is not None:
            info = self._reconnector.getReconnectionInfo()
            when = getattr(info, "nextAttempt", None)
            if getattr(info, "state", "") == "waiting" and when:
                return f"Reconnecting in {max(0, int(when - self._clock.seconds()))} seconds"
            return "Trying to connect"
        return "Not connected"

    def summary(self) -> ServerSummary:
        """The welcome page's view of this server."""
        until = self.certified_until
        return ServerSummary(self.server_id.decode("ascii"), self.nickname,
                             self.connection_status(), self.available_space,
                             self.application_version, self.last_received,
                             certified=(until is not None) if self.managed else None,
                             certificate_expires=until.timestamp() if until else None)

    def start(self, tub: Tub, on_change: Callable[[], None]) -> None:
        """Start (re)connecting; ``on_change`` runs on connect and disconnect."""
        if self.nurls:
            self._https = HTTPSConnector(self, self._clock, on_change)
            self._https.start()
            return

        def connected(rref: Any) -> None:
            client = FoolscapStorageClient(rref)
            self.storage = client
            info = rref.getConnectionInfo()
            self.connection_hint = info.winningHint
            rref.notifyOnDisconnect(lost)
            d = client.get_version()

            def got_version(version: dict) -> None:
                if self._storage is client:
                    self.version = version
                    self.last_received = self._clock.seconds()
                    on_change()

            def failed(failure: Any) -> None:
                log.msg(f"get_version from {self.server_id!r} failed: {failure.value!r}")
            d.addCallbacks(got_version, failed)

        def lost() -> None:
            self.storage = None
            self.version = None
            on_change()

        self._reconnector = tub.connectTo(self.furl, connected)

    def suspect(self, why: str) -> None:
        """A call to this server went unanswered too long (``why``): ask its version now,
        and drop the connection unless the answer comes within :data:`PING_TIMEOUT`
        (a server that hangs with its connection open would otherwise hold every
        upload up to the allocation timeout). One ping at a time."""
        storage = self._storage
        if storage is None or self._pinging:
            return
        self._pinging = True
        log.msg(f"storage server {self.nickname!r}: {why}; pinging it")
        d = storage.get_version()
        timer = self._clock.callLater(PING_TIMEOUT, d.cancel)

        def answered(version: dict) -> None:
            if self._storage is storage:
                self.version = version
                self.last_received = self._clock.seconds()

        def silent(failure: Failure) -> None:
            if self._storage is storage:
                self._drop(f"{why}, nor to a ping in {PING_TIMEOUT:g} s")

        def done(_: Any) -> None:
            self._pinging = False
            if timer.active():
                timer.cancel()
        d.addCallbacks(answered, silent)
        d.addBoth(done)

    def _drop(self, why: str) -> None:
        """Give up the connection (the server is hung): it is made again as after any loss."""
        log.msg(f"storage server {self.nickname!r}: dropping its connection: {why}")
        if self._https is not None:
            self._https.drop(why)
            return
        rref = getattr(self._storage, "rref", None)
        broker = getattr(getattr(rref, "tracker", None), "broker", None)
        if broker is not None:
            broker.shutdown(Failure(ConnectionLost(why)))
            abort = getattr(broker.transport, "abortConnection", None)
            if abort is not None:
                abort()

    def stop(self) -> None:
        """Stop reconnecting, and close an HTTPS connection (a Foolscap one dies with its Tub)."""
        if self._reconnector is not None:
            self._reconnector.stopConnecting()
            self._reconnector = None
        if self._https is not None:
            self._https.stop()
        self.storage = None
        self.version = None


class StorageBroker:
    """All storage servers this node knows of, keyed by server id.

    :param tub: the Tub outbound connections are made from.
    :param clock: the reactor's clock.
    :param prefer_https: use HTTPS with servers that announce NURLs (false:
        ``[client]force_foolscap``).
    :param grid_managers: ``[grid_managers]``, name → manager key; when any is
        given, only servers they certify get shares.
    """

    def __init__(self, tub: Tub, clock: IReactorTime, prefer_https: bool = True,
                 grid_managers: Mapping[str, VerifyingKey] | None = None) -> None:
        self._tub = tub
        self._clock = clock
        self._prefer_https = prefer_https
        self.grid_managers = dict(grid_managers or {})
        self.servers: dict[bytes, StorageServerHandle] = {}
        self._static: set[bytes] = set()
        self._waiters: list[tuple[Callable[[], bool], Deferred]] = []

    @property
    def clock(self) -> IReactorTime:
        """The reactor's clock (for timeouts of the calls made to servers)."""
        return self._clock

    def add_server(self, server_id: bytes, announcement: Mapping[str, Any],
                   lease_seed: bytes, permutation_seed: bytes, static: bool = False) -> None:
        """Learn of a server or of its new announcement, (re)connecting when it changed.

        An announcement for a static server (from ``servers.yaml``) is ignored.
        """
        if server_id in self._static and not static:
            return
        old = self.servers.get(server_id)
        if old is not None:
            if old.announcement == dict(announcement):
                return
            if _same_address(old.announcement, announcement) \
                    and old.permutation_seed == permutation_seed:
                # A restart of the server (new seqnum and nonce) or a client that
                # connected from its announcement cache: the connection stays, and
                # requests in flight on it are not cut off.
                old.announcement = dict(announcement)
                old.nickname = str(announcement.get("nickname", ""))
                self._check_certificates(old)
                return
            old.stop()
        handle = StorageServerHandle(server_id, announcement, lease_seed, permutation_seed,
                                     self._clock, self._prefer_https)
        self._check_certificates(handle)
        self.servers[server_id] = handle
        if static:
            self._static.add(server_id)
        handle.start(self._tub, self._changed)

    def connected_servers(self) -> list[StorageServerHandle]:
        """Servers with a live connection and a version answer, in server-id order."""
        return [s for _, s in sorted(self.servers.items()) if s.is_connected]

    def ring(self, storage_index: bytes,
             accept: Callable[["StorageServerHandle"], bool] = lambda s: True
             ) -> list["StorageServerHandle"]:
        """The connected servers ``accept`` allows, in the permuted-ring order of a
        storage index (the order every upload, download, check and servermap uses)."""
        servers = {s.server_id.decode("ascii"): s for s in self.connected_servers() if accept(s)}
        order = permuted_ring(storage_index, {sid: s.permutation_seed
                                              for sid, s in servers.items()})
        return [servers[sid] for sid in order]

    def upload_candidates(self, storage_index: bytes,
                          accept: Callable[["StorageServerHandle"], bool] = lambda s: True
                          ) -> list["StorageServerHandle"]:
        """:meth:`ring` restricted to the servers that :meth:`may_store` allows and that
        are not :attr:`~StorageServerHandle.suspected` of hanging: where immutable
        uploads and mutable publishes place shares."""
        return self.ring(storage_index,
                         lambda s: accept(s) and not s.suspected and self.may_store(s))

    def not_candidates(self, share_size: int) -> str:
        """Why the servers known but not :meth:`upload_candidates` for shares of
        ``share_size`` bytes cannot be given one, for an upload's error (``": 2 not
        connected, 1 with no room..."``, or nothing): not connected, no room,
        suspected of hanging, not certified."""
        disconnected = full = suspected = uncertified = 0
        for server in self.servers.values():
            if not server.is_connected:
                disconnected += 1
            elif (server.maximum_immutable_share_size or 0) < share_size:
                full += 1
            elif server.suspected:
                suspected += 1
            elif not self.may_store(server):
                uncertified += 1
        found = [f"{n} {reason}" for n, reason in (
            (disconnected, "not connected"),
            (full, f"with no room for a share of {share_size:,} bytes (full or read-only)"),
            (suspected, "not answering"),
            (uncertified, "without a valid Grid Manager certificate")) if n]
        return f": {', '.join(found)}" if found else ""

    def may_store(self, server: "StorageServerHandle") -> bool:
        """Whether ``server`` may be given shares now: always without
        ``[grid_managers]``; otherwise only while one of its certificates
        signed by a configured manager, for its key, has not expired. A refusal
        is logged once per reason (no certificate, all expired)."""
        if not self.grid_managers:
            return True
        now = datetime.fromtimestamp(self._clock.seconds(), timezone.utc)
        until = certified_until(server.certificates, now)
        server.certified_until = until
        if until is not None:
            server._refusal_logged = None
            return True
        signed = [f for f in server.certificates if f.status == "signed" and f.expires]
        reason = "expired" if signed else "uncertified"
        if server._refusal_logged != reason:
            server._refusal_logged = reason
            who = self._describe(server)
            if signed:
                last = max(f.expires for f in signed if f.expires)
                log.msg(f"Grid Manager: certificate of storage server {who} expired at "
                        f"{last.isoformat()}; no shares are placed on it")
            else:
                log.msg(f"Grid Manager: storage server {who} has no valid certificate from a"
                        f" configured Grid Manager ({', '.join(sorted(self.grid_managers))});"
                        " no shares are placed on it")
        return False

    @staticmethod
    def _describe(server: "StorageServerHandle") -> str:
        return f"{server.server_id.decode('ascii')} ({server.nickname!r})"

    def _check_certificates(self, server: "StorageServerHandle") -> None:
        """Check the certificates a (new) announcement carries; log each refused one."""
        if not self.grid_managers:
            return
        server.managed = True
        server.certificates = check_certificates(
            self.grid_managers, server.announcement.get(ANNOUNCEMENT_KEY),
            "pub-" + server.server_id.decode("ascii"))
        server._refusal_logged = None
        for finding in server.certificates:
            if finding.status == "signed":
                continue
            words = {"forged": "forged or signed by an unknown Grid Manager",
                     "other-server": "signed for another server",
                     "malformed": "malformed"}[finding.status]
            log.msg(f"Grid Manager: certificate of storage server {self._describe(server)} "
                    f"refused, {words}: {finding.detail}")
        self.may_store(server)

    def when(self, predicate: Callable[[], bool]) -> Deferred:
        """A Deferred that fires once ``predicate()`` holds (checked on every change)."""
        d: Deferred = Deferred()
        if predicate():
            d.callback(None)
        else:
            self._waiters.append((predicate, d))
        return d

    def when_connected(self, count: int) -> Deferred:
        """A Deferred that fires once at least ``count`` servers are connected."""
        return self.when(lambda: len(self.connected_servers()) >= count)

    def _changed(self) -> None:
        waiting, self._waiters = self._waiters, []
        for predicate, d in waiting:
            if predicate():
                d.callback(None)
            else:
                self._waiters.append((predicate, d))

    def summaries(self) -> list[ServerSummary]:
        """Every known server as the welcome page shows it."""
        for server in self.servers.values():
            self.may_store(server)  # its certificate's state now
        return [s.summary() for s in self.servers.values()]

    def stop(self) -> None:
        """Stop every connection attempt."""
        for handle in self.servers.values():
            handle.stop()


def short_id(server_id: bytes) -> str:
    """The first 8 base32 characters of a server id (Tahoe's short form)."""
    text = server_id.decode("ascii")
    return text[3:11] if text.startswith("v0-") else base32.b2a(server_id)[:8]

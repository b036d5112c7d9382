"""A running node: Tub, introducer or storage server, introducer clients, broker, web.

This is the composition root: it reads the validated node directory and
starts the services it asks for. Facts: ``reference/frontends.md`` §1 and
``reference/storage-protocol.md`` §1, §4.2, §7.
"""
from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foolscap.api import Tub
from twisted.internet.interfaces import IReactorTime
from twisted.python import log

from .._version import APPLICATION_VERSION
from ..introducer.announcement import (VerifiedAnnouncement, permutation_seed, sign_announcement,
                                       storage_announcement)
from ..introducer.errors import IntroducerError
from ..util.errors import EncodingError
from ..util.furl import parse_furl
from .config import INTRODUCER
from .fileutil import write_atomically
from .identity import (create_api_auth_token, load_or_create_permutation_seed,
                       load_or_create_signing_key, next_announcement_seqnum)
from .nodedir import NodeDirectory
from .portswitch import PortSwitch
from .tub import create_outbound_tub, create_tub, listen, register_persistent, tubid_bytes

# Each role's code is imported where the role starts (a storage server, the client side,
# an introducer), and the gateway's file and directory resources at their first request:
# a node loads what it uses (docs/performance.md, memory).
if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from twisted.python.threadpool import ThreadPool
    from twisted.web.resource import Resource

    from ..client.broker import StorageBroker
    from ..client.services import ClientServices
    from ..helper.service import Helper
    from ..introducer.client import IntroducerClient
    from ..introducer.server import IntroducerService
    from ..stats.node import NodeStatistics
    from ..storage.server import StorageServer
    from ..storage.share_scan import ScanProcesses
    from ..web.listen import LazySite


def _local_addresses() -> list[str]:
    """127.0.0.1 and the host's other IPv4 addresses (what ``AUTO`` expands to)."""
    addresses = ["127.0.0.1"]
    try:
        for address in socket.gethostbyname_ex(socket.gethostname())[2]:
            if address not in addresses and not address.startswith("127."):
                addresses.append(address)
    except OSError:
        pass
    return addresses


#: Seconds after a gateway node's start at which it loads its file code (:meth:`Node._warm_up`).
WARM_UP_DELAY = 0.2
#: What :meth:`Node._file_resources` builds: the gateway's children loaded on first use.
_FILE_RESOURCES = (b"uri", b"cap", b"file", b"named", b"operations")

#: Threads garbage collection reads, trims and deletes expired shares with, several at once.
COLLECTORS = 8


def _listening_config(nodedir: NodeDirectory) -> tuple[list[str], str]:
    """The Tub's endpoints and location, allocating and remembering a port if none is set."""
    config = nodedir.config
    ports = list(config.tub_port) if config.tub_port is not None else None
    if ports is None:
        port_file = Path(nodedir.path(f"{nodedir.node_type}.port"))
        if port_file.exists():
            ports = [port_file.read_text().strip()]
        else:
            with socket.socket() as probe:
                probe.bind(("", 0))
                number = probe.getsockname()[1]
            ports = [f"tcp:{number}"]
            write_atomically(port_file, ports[0] + "\n")
    hints: list[str] = []
    for hint in config.tub_location or ("AUTO",):
        if hint == "AUTO":
            for port in ports:
                number = _port_number(port)
                if number:
                    hints += [f"tcp:{address}:{number}" for address in _local_addresses()]
        else:
            hints.append(hint)
    return ports, ",".join(hints)


def _port_number(endpoint: str) -> int | None:
    parts = endpoint.split(":")
    if parts[0] in ("tcp", "tcp6") and len(parts) > 1 and parts[1].isdigit():
        return int(parts[1])
    return int(parts[0]) if parts[0].isdigit() else None


class Node:
    """One node directory brought to life.

    :param nodedir: the validated node directory.
    :param reactor: the Twisted reactor (clock, listening, connecting).
    """

    def __init__(self, nodedir: NodeDirectory, reactor: Any) -> None:
        self.nodedir = nodedir
        self.reactor = reactor
        self.basedir = Path(nodedir.basedir)
        self.config = nodedir.config
        self.tub: Tub | None = None
        self.introducer: IntroducerService | None = None
        self.storage_server: StorageServer | None = None
        self.broker: StorageBroker | None = None
        self.introducer_clients: list[IntroducerClient] = []
        self.storage_client_tub: Tub | None = None
        self.client: ClientServices | None = None
        self.helper: Helper | None = None
        self.web_port: Any = None
        #: The web port's factory, and the welcome page once its site was built.
        self.web_site: LazySite | None = None
        self.web_root: Any = None
        self.sftp_port: Any = None
        self.s3_gateway: Any = None
        self.stats: NodeStatistics | None = None
        self.crawlers: list[Any] = []
        self.maintenance_pool: ThreadPool | None = None
        self.scan_processes: ScanProcesses | None = None
        self.collectors: ThreadPoolExecutor | None = None
        self.nickname = "" if self.config.nickname == "<unspecified>" else self.config.nickname
        self.port_switch: PortSwitch | None = None
        self.location = ""
        self.nurls: list[str] = []

    def _serves_https(self) -> bool:
        """Whether this node's storage server also speaks HTTPS (Tahoe's default)."""
        return (self.nodedir.node_type != INTRODUCER and self.config.storage.enabled
                and not self.config.storage.force_foolscap)

    @property
    def clock(self) -> IReactorTime:
        """The reactor, as a clock."""
        return self.reactor  # type: ignore[no-any-return]

    async def start(self) -> None:
        """Start every service the configuration asks for; ``node.url`` and FURL files last."""
        config = self.config
        # Tahoe's nodes keep incident reports here; the running log itself goes to stdout.
        (self.basedir / "logs" / "incidents").mkdir(parents=True, exist_ok=True)
        tub = create_tub(self.basedir, config.timeout_keepalive, config.timeout_disconnect)
        self.tub = tub
        tub.startService()
        if self._serves_https():
            self.port_switch = PortSwitch(self.reactor)
        if config.tub_listening:
            ports, self.location = _listening_config(self.nodedir)
            listen(tub, ports, self.location, self.port_switch)
        if self.nodedir.node_type == INTRODUCER:
            await self._start_introducer()
        else:
            await self._start_client()

    async def _start_introducer(self) -> None:
        from ..introducer.server import IntroducerService
        from ..web.listen import LazySite, listen_web
        assert self.tub is not None
        introducer = self.introducer = IntroducerService()

        def site() -> Any:
            from ..web.root import IntroducerWelcomeResource
            from ..web.server import make_site
            return make_site(IntroducerWelcomeResource(introducer.summary),
                             self.nodedir.config_path(self.config.web_static))
        if self.config.web_port:
            self.web_site = LazySite(site)
            self.web_port = await listen_web(self.reactor, self.config.web_port, self.web_site,
                                             self.basedir)
        register_persistent(self.tub, self.introducer,
                            self.basedir / "private" / "introducer.furl")

    async def _start_client(self) -> None:
        from ..client.broker import StorageBroker
        from ..client.services import ClientServices
        from ..introducer.client import IntroducerClient
        from ..stats.node import NodeStatistics
        assert self.tub is not None
        tub = self.tub
        # statistics (/statistics): created first, so every service can count into it
        self.stats = NodeStatistics(self.reactor)
        self.stats.start()
        key = load_or_create_signing_key(self.basedir)
        self.signing_key = key
        # Storage servers are reached from a Tub of their own, as in Tahoe 1.20: with
        # the main Tub, a server that connected to us first (storage nodes are
        # clients too) would be shown "Connecting" for good, and our own server
        # would go through Foolscap's loopback (see create_outbound_tub).
        self.storage_client_tub = create_outbound_tub(self.config.timeout_keepalive,
                                                      self.config.timeout_disconnect)
        self.storage_client_tub.startService()
        from .grid_certificates import grid_manager_keys
        broker = StorageBroker(self.storage_client_tub, self.clock,
                               prefer_https=not self.config.client.force_foolscap,
                               grid_managers=grid_manager_keys(self.config.grid_managers))
        self.broker = broker
        assert self.nodedir.lease_secret is not None
        self.client = ClientServices(broker, self.nodedir.lease_secret,
                                     self.nodedir.convergence_secret or b"",
                                     self.config.client.encoding_parameters(), self.reactor,
                                     stats=self.stats.statistics)
        if self.config.client.helper_furl:
            self.client.use_helper(self.storage_client_tub, self.config.client.helper_furl)
        if self.config.helper_enabled:
            self._start_helper()
        for server in self.nodedir.static_servers:
            self._add_server(server.server_id, dict(server.announcement), static=True)

        for petname, furl in self.nodedir.introducers:
            cache = self.basedir / "private" / f"introducer_{petname}_cache.yaml"
            client = IntroducerClient(tub, furl, self.nickname, APPLICATION_VERSION,
                                      self._got_announcement, cache)
            client.subscribe_to("storage")
            self.introducer_clients.append(client)

        storage = self.config.storage
        signed = None
        if storage.enabled:
            signed = self._start_storage(key)
        for client in self.introducer_clients:
            if signed is not None:
                client.publish("storage", signed)
            client.start()

        # A new API token at every start, as Tahoe (tahoe status and /private read it).
        token = create_api_auth_token(self.basedir)
        if self.config.web_port:
            await self._start_web(token)
        sftpd = self.config.sftpd
        if sftpd.enabled:
            # Twisted Conch is imported only by nodes that serve SFTP.
            from ..frontends.sftp_service import start_sftp
            assert sftpd.host_pubkey_file and sftpd.host_privkey_file and sftpd.accounts_file
            self.sftp_port = await start_sftp(
                self.reactor, str(self.basedir), sftpd.port, sftpd.host_pubkey_file,
                sftpd.host_privkey_file, sftpd.accounts_file, self.client)
        if self.config.s3.enabled:
            # The S3 gateway's code is imported only by nodes that serve S3.
            from ..s3.service import start_s3
            self.s3_gateway = await start_s3(self.reactor, str(self.basedir), self.config.s3,
                                             self.client)

    def _start_helper(self) -> None:
        """The upload helper (``[helper] enabled``), at ``private/helper.furl``; its files
        in ``helper/CHK_incoming`` and ``helper/CHK_encoding`` as in Tahoe."""
        from ..helper.service import Helper
        assert self.tub is not None and self.broker is not None and self.client is not None
        assert self.stats is not None
        self.helper = Helper(self.basedir / "helper", self.broker, self.client.uploader,
                             self.stats.statistics)
        register_persistent(self.tub, self.helper, self.basedir / "private" / "helper.furl")

    async def _start_web(self, token: bytes) -> None:
        """The web port. Its site is built, and the web code imported, at the first
        connection (a storage node mostly serves no page); a gateway's just after the
        start. Even then, the file and directory resources (``/uri``, ``/cap``,
        ``/file``, ``/named``, ``/operations``) are built, and their code imported, at
        the first request for one of them: a storage node loads them at its gateway's
        first use, if ever."""
        from ..web.listen import LazySite, listen_web
        assert self.client is not None
        self.web_site = LazySite(lambda: self._web_site(token))
        self.web_port = await listen_web(self.reactor, self.config.web_port, self.web_site,
                                         self.basedir)
        if not self.config.storage.enabled:
            # A node without storage is there to be a gateway: its code is loaded just
            # after the start, not by its first upload.
            self.reactor.callLater(WARM_UP_DELAY, self._warm_up)

    def _web_site(self, token: bytes) -> Any:
        """The web site: the welcome page and the pages under it."""
        from ..web.helper_status import HelperStatusResource
        from ..web.private import PrivateResource
        from ..web.root import WelcomeResource
        from ..web.server import make_site
        from ..web.statistics import StatisticsResource
        from ..web.status import StatusResource
        from ..web.storage_status import StorageStatusResource
        assert self.client is not None and self.broker is not None and self.stats is not None
        nodeid = self.signing_key.public_key.server_id
        root = self.web_root = WelcomeResource(
            lambda: [c.status() for c in self.introducer_clients],
            self.broker.summaries, (self.nickname, nodeid), history=self.client.history,
            happy=self.config.client.encoding_parameters().happy, clock=self.clock)
        root.add_lazy_children(_FILE_RESOURCES, self._file_resources)
        root.putChild(b"statistics", StatisticsResource(self.stats.document))
        root.putChild(b"status", StatusResource(self.client.history))
        assert self.web_site is not None
        root.putChild(b"private", PrivateResource(token, self.web_site.modules_before))
        root.putChild(b"helper_status", HelperStatusResource(
            lambda: self.helper.stats_document() if self.helper is not None else None))
        crawlers = (self.crawlers[0], self.crawlers[1]) if self.crawlers else None
        root.putChild(b"storage", StorageStatusResource(
            (self.nickname, nodeid), self.stats.document, crawlers, self.clock))
        return make_site(root, self.nodedir.config_path(self.config.web_static),
                         first_write=self.client.expect_use)

    def _warm_up(self) -> None:
        if self.client is not None and self.web_site is not None and self.web_port is not None:
            self.web_site.site()
            assert self.web_root is not None
            self.web_root.build_lazy_children()
            self.client.warm_up()

    def _file_resources(self) -> dict[bytes, Resource]:
        """The gateway's file and directory resources, by name (see :meth:`_start_web`)."""
        from ..web.named import NamedFileRoot
        from ..web.operations import OperationsResource
        from ..web.unlinked import URIResource
        assert self.client is not None
        uri = URIResource(self.client, self.config.client.mutable_format)
        named = NamedFileRoot(uri.gateway)
        return {b"uri": uri, b"cap": uri, b"file": named, b"named": named,
                b"operations": OperationsResource(uri.gateway.operations)}

    def _start_storage(self, key: Any) -> tuple[bytes, bytes, bytes]:
        from concurrent.futures import ThreadPoolExecutor

        from twisted.internet.threads import deferToThreadPool
        from twisted.python.threadpool import ThreadPool

        from ..storage.crawler import BucketCountingCrawler
        from ..storage.lease_checker import LeaseCheckingCrawler
        from ..storage.leases import ExpiryPolicy
        from ..storage.rpc import StorageServerRPC
        from ..storage.server import StorageServer
        from ..storage.share_scan import ScanProcesses
        assert self.tub is not None
        storage = self.config.storage
        storage_dir = Path(self.nodedir.config_path(storage.storage_dir))
        storage_dir.mkdir(parents=True, exist_ok=True)
        seed = load_or_create_permutation_seed(self.basedir, key, self.tub.getTubID(),
                                               storage_dir / "shares")
        self.storage_server = StorageServer(
            storage_dir, tubid_bytes(self.tub), self.clock,
            application_version=APPLICATION_VERSION.encode("ascii"),
            reserved_space=storage.reserved_space, readonly=storage.readonly,
            debug_discard=storage.debug_discard, batch_index=True)
        expire = storage.expire
        policy = ExpiryPolicy(expire.mode, expire.override_lease_duration,  # type: ignore[arg-type]
                              expire.cutoff_date, expire.immutable, expire.mutable)
        # the crawlers' reading and garbage collection, off the reactor thread
        pool = self.maintenance_pool = ThreadPool(
            0, LeaseCheckingCrawler.parallel_scans + BucketCountingCrawler.parallel,
            "storage-maintenance")
        pool.start()

        def in_thread(function: Any, *args: Any) -> Any:
            return deferToThreadPool(self.reactor, pool, function, *args)

        keeper = self.storage_server.index
        self.scan_processes = ScanProcesses()
        self.collectors = ThreadPoolExecutor(COLLECTORS, thread_name_prefix="storage-collect")
        self.crawlers = [BucketCountingCrawler(storage_dir, self.clock, keeper, in_thread),
                         LeaseCheckingCrawler(storage_dir, self.clock, keeper, policy,
                                              expire.enabled, in_thread,
                                              scanner=self.scan_processes,
                                              collectors=self.collectors)]
        for crawler in self.crawlers:
            crawler.start()
        assert self.stats is not None
        self.stats.add_storage_server(self.storage_server, storage_dir,
                                      expired=lambda: self.crawlers[1].deleted_shares,
                                      index=keeper)
        furl = register_persistent(self.tub, StorageServerRPC(self.storage_server,
                                                              self.stats.statistics),
                                   self.basedir / "private" / "storage.furl")
        if self.port_switch is not None:
            self.nurls = self._serve_https(parse_furl(furl).swissnum)
        certificates = None
        if storage.grid_management:
            from .grid_certificates import load_grid_manager_certificates
            certificates = load_grid_manager_certificates(
                str(self.basedir), self.config.grid_manager_certificates)
        ann = storage_announcement(nickname=self.nickname, furl=furl,
                                   permutation_seed_base32=seed,
                                   seqnum=next_announcement_seqnum(self.basedir),
                                   nonce=os.urandom(32), nurls=self.nurls,
                                   my_version=APPLICATION_VERSION,
                                   grid_manager_certificates=certificates)
        return sign_announcement(ann, key)

    def _serve_https(self, swissnum: str) -> list[str]:
        """Serve the HTTPS storage API on the Tub's ports; return the NURLs to announce."""
        from ..httpwire.server import HTTP1ServerFactory
        from ..httpwire.tls import TLSServerFactory, certificate_spki_hash, server_context
        from ..storage.http_api import StorageHTTPApplication
        from ..util.nurl import nurls_for_location
        assert self.tub is not None and self.port_switch is not None
        assert self.storage_server is not None and self.stats is not None
        application = StorageHTTPApplication(self.storage_server, swissnum.encode("ascii"),
                                             self.stats.statistics)
        certificate = self.tub.myCertificate
        self.port_switch.serve_https(TLSServerFactory(
            server_context(certificate), HTTP1ServerFactory(application, self.reactor)))
        hints = [hint for hint in self.location.split(",") if hint]
        return [nurl.to_string() for nurl in
                nurls_for_location(hints, certificate_spki_hash(certificate), swissnum)]

    def _got_announcement(self, ann: VerifiedAnnouncement) -> None:
        self._add_server(ann.server_id, ann.announcement, static=False)

    def _add_server(self, server_id: str, announcement: dict, static: bool) -> None:
        assert self.broker is not None
        try:
            furl = parse_furl(announcement["anonymous-storage-FURL"])
            seed = permutation_seed(announcement, server_id)
        except (KeyError, TypeError, EncodingError, IntroducerError) as error:
            log.msg(f"ignoring storage server {server_id}: {error!r}")
            return
        self.broker.add_server(server_id.encode("ascii"), announcement, furl.tubid_bytes, seed,
                               static=static)

    async def stop(self) -> None:
        """Stop listening and connecting."""
        for crawler in self.crawlers:
            await crawler.stop()
        if self.scan_processes is not None:
            self.scan_processes.stop()
        if self.collectors is not None:
            self.collectors.shutdown(wait=True)
        if self.maintenance_pool is not None:
            self.maintenance_pool.stop()
        if self.storage_server is not None:
            self.storage_server.close()
        if self.stats is not None:
            self.stats.stop()
        for client in self.introducer_clients:
            client.stop()
        if self.broker is not None:
            self.broker.stop()
        if self.web_port is not None:
            await self.web_port.stopListening()
        if self.sftp_port is not None:
            await self.sftp_port.stopListening()
        if self.s3_gateway is not None:
            await self.s3_gateway.stop()
        if self.storage_client_tub is not None:
            await self.storage_client_tub.stopService()
        if self.tub is not None:
            await self.tub.stopService()
        if self.port_switch is not None:
            self.port_switch.stop()

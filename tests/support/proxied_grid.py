"""Storage servers behind test proxies, and a client that reaches them only through them.

A grid without an introducer: storage nodes are created with an empty
``--introducer``, and the client learns of them from its
``private/servers.yaml`` (``shared/reference/frontends.md`` §1.6), where each
server's ``anonymous-storage-FURL`` has its connection hint rewritten to a
:class:`tests.support.proxy.TcpProxy` on 127.0.0.1, and so has its NURL
(``anonymous-storage-NURLs``, for the HTTPS storage protocol) unless the
grid is Foolscap-only.  Both protocols authenticate the server inside TLS
(Foolscap by the Tub ID, HTTPS by the key hash of the NURL), so the TCP
proxy in between is transparent.

Like :mod:`tests.support.grid`, everything here is generic over the ``tahoe``
executable and uses only documented CLI commands and node-directory files:

* ``NODEDIR/node.pubkey``: ``pub-v0-<base32>``; the server id is ``v0-<base32>``;
* ``NODEDIR/private/storage.furl``: the storage server's FURL;
* ``NODEDIR/private/node.pem``: its certificate (the NURL's key hash);
* ``NODEDIR/permutation-seed``: its ``permutation-seed-base32``.

Processes go to the caller's :class:`~tests.support.processes.ProcessSet` and
proxies to the caller's :class:`~tests.support.proxy.ProxySet`, which stop them.
"""
from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs
import yaml
from cryptography import x509

from tahoe.util.nurl import spki_hash_of

from tests.support.grid import CONNECT_TIMEOUT, SMALL_GRID_SHARES, Gateway, in_parallel
from tests.support.nodes import (
    NODE_START_TIMEOUT,
    Shares,
    TahoeTool,
    config_for_tests,
    edit_tahoe_cfg,
)
from tests.support.ports import free_port
from tests.support.processes import ManagedProcess, ProcessSet, wait_until
from tests.support.proxy import Burst, Direction, Mark, ProxySet, TcpProxy

__all__ = [
    "ProxiedGrid",
    "ProxiedServer",
    "StorageServerInfo",
    "create_static_client",
    "proxy_storage_servers",
    "read_storage_server",
    "rewrite_furl_hint",
    "start_proxied_grid",
    "start_static_client",
    "start_storage_nodes",
    "write_servers_yaml",
]

_FURL = re.compile(r"pb://(?P<tubid>[a-z2-7]+)@(?P<hints>[^/\s]+)/(?P<swissnum>[^/\s]+)\s*")
_PUBKEY = re.compile(r"pub-v0-(?P<key>[a-z2-7]+)\s*")
_SEED = re.compile(r"[a-z2-7]+\s*")
_TCP_HINT = re.compile(r"(?:tcp:)?(?P<host>[^:,]+):(?P<port>\d+)")


@attrs.frozen
class StorageServerInfo:
    """What a client needs to know of one storage node, read from its node directory.

    :ivar basedir: the node directory.
    :ivar server_id: ``v0-<base32 Ed25519 public key>``.
    :ivar furl: the ``anonymous-storage-FURL`` as the node wrote it.
    :ivar permutation_seed: the ``permutation-seed-base32``.
    :ivar host: the host of the FURL's first TCP hint (where the server listens).
    :ivar port: the port of that hint.
    :ivar spki_hash: the NURL's key hash of the node's certificate.
    """

    basedir: Path
    server_id: str
    furl: str
    permutation_seed: str
    host: str
    port: int
    spki_hash: str

    @property
    def swissnum(self) -> str:
        """The storage FURL's swissnum (the NURL's too)."""
        return self.furl.rstrip().rsplit("/", 1)[1]

    def nurl(self, host: str, port: int) -> str:
        """The HTTPS storage NURL of this server at ``host:port``."""
        return f"pb://{self.spki_hash}@{host}:{port}/{self.swissnum}#v=1"

    @property
    def nickname(self) -> str:
        """The node directory's name (our helpers use it as the nickname)."""
        return self.basedir.name


@attrs.frozen
class ProxiedServer:
    """A storage server and the proxy in front of it.

    :ivar info: the server as read from its node directory.
    :ivar proxy: the running proxy forwarding to ``info.host:info.port``.
    :ivar furl: ``info.furl`` with its hint replaced by the proxy's address.
    :ivar nurl: the server's NURL at the proxy's address, or None for a
        Foolscap-only grid.
    """

    info: StorageServerInfo
    proxy: TcpProxy
    furl: str
    nurl: str | None = None

    @property
    def connection_status(self) -> str:
        """What our client's welcome page says of this server once connected."""
        via = "HTTPS" if self.nurl else "tcp"
        return f"Connected to tcp:127.0.0.1:{self.proxy.port} via {via}"


def _read_matching(path: Path, pattern: re.Pattern[str]) -> re.Match[str] | None:
    try:
        return pattern.fullmatch(path.read_text())
    except FileNotFoundError:
        return None


def read_storage_server(basedir: Path, timeout: float = NODE_START_TIMEOUT, *,
                        processes: Iterable[ManagedProcess] = ()) -> StorageServerInfo:
    """Read a storage node's id, FURL and seed, waiting until the node has written them.

    :param processes: processes (the node) that must stay alive meanwhile.
    :raises WaitTimeout: if a file is still missing or incomplete after ``timeout`` s.
    :raises ProcessDied: if one of ``processes`` exits first.
    :raises ValueError: if the FURL has no TCP hint.
    """
    processes = tuple(processes)
    pubkey = wait_until(lambda: _read_matching(basedir / "node.pubkey", _PUBKEY), timeout,
                        f"{basedir}/node.pubkey", processes=processes)
    furl = wait_until(lambda: _read_matching(basedir / "private" / "storage.furl", _FURL),
                      timeout, f"{basedir}/private/storage.furl", processes=processes)
    seed = wait_until(lambda: _read_matching(basedir / "permutation-seed", _SEED), timeout,
                      f"{basedir}/permutation-seed", processes=processes)
    for hint in furl["hints"].split(","):
        match = _TCP_HINT.fullmatch(hint)
        if match:
            break
    else:
        raise ValueError(f"no TCP hint in {furl[0]!r}")
    certificate = x509.load_pem_x509_certificate((basedir / "private" / "node.pem").read_bytes())
    return StorageServerInfo(basedir, "v0-" + pubkey["key"], furl[0].strip(),
                             seed[0].strip(), match["host"], int(match["port"]),
                             spki_hash_of(certificate))


def rewrite_furl_hint(furl: str, host: str, port: int) -> str:
    """``furl`` with its connection hints replaced by the single hint ``tcp:host:port``.

    :raises ValueError: if ``furl`` is not ``pb://<tubid>@<hints>/<swissnum>``.
    """
    match = _FURL.fullmatch(furl.strip())
    if match is None:
        raise ValueError(f"not a FURL: {furl!r}")
    return f"pb://{match['tubid']}@tcp:{host}:{port}/{match['swissnum']}"


def proxy_storage_servers(basedirs: Sequence[Path], proxies: ProxySet, *, delay: float = 0.0,
                          processes: Iterable[ManagedProcess] = (),
                          timeout: float = NODE_START_TIMEOUT,
                          https: bool = True) -> list[ProxiedServer]:
    """Start a proxy in front of each running storage node (in order).

    :param basedirs: the storage nodes' directories (the nodes are running or starting).
    :param proxies: receives the proxies (and stops them).
    :param delay: each proxy's one-way delay in seconds.
    :param https: whether the servers take HTTPS (then a NURL at the proxy is made).
    :param processes: the nodes' processes, which must stay alive while we wait.
    :raises WaitTimeout: if a node does not write its files in time.
    """
    processes = tuple(processes)
    servers = []
    for basedir in basedirs:
        info = read_storage_server(basedir, timeout, processes=processes)
        proxy = proxies.start(info.host, info.port, delay=delay, name=basedir.name)
        servers.append(ProxiedServer(
            info, proxy, rewrite_furl_hint(info.furl, "127.0.0.1", proxy.port),
            info.nurl("127.0.0.1", proxy.port) if https else None))
    return servers


def write_servers_yaml(client_basedir: Path, servers: Sequence[ProxiedServer]) -> Path:
    """Write ``client_basedir/private/servers.yaml`` listing ``servers`` at their proxies.

    Replaces any existing file; the client reads it when it starts.
    """
    storage = {
        server.info.server_id: {"ann": {
            "nickname": server.info.nickname,
            **({"anonymous-storage-NURLs": [server.nurl]} if server.nurl else {}),
            "anonymous-storage-FURL": server.furl,
            "permutation-seed-base32": server.info.permutation_seed,
        }}
        for server in servers
    }
    path = client_basedir / "private" / "servers.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name("servers.yaml.tmp")
    temporary.write_text(yaml.safe_dump({"storage": storage}, sort_keys=False),
                         encoding="utf-8")
    temporary.replace(path)
    return path


def _start_storage_node(tool: TahoeTool, basedir: Path, processes: ProcessSet,
                        shares: Shares, timeout: float) -> Gateway:
    tool.create_node(basedir, introducer_furl="", shares=shares, nickname=basedir.name,
                     web_port=free_port(), tub_port=free_port())
    edit_tahoe_cfg(basedir, config_for_tests(storage=True))
    node = tool.start(basedir, processes)
    return Gateway(node, node.node_url(timeout))


def start_storage_nodes(tool: TahoeTool, workdir: Path, processes: ProcessSet, *, count: int,
                        shares: Shares = SMALL_GRID_SHARES,
                        timeout: float = NODE_START_TIMEOUT) -> list[Gateway]:
    """Create and run ``count`` storage nodes without an introducer, in parallel.

    Node directories are ``workdir/storage<i>`` (also their nicknames); each
    listens on 127.0.0.1 only (Foolscap and HTTPS), ``reserved_space = 1M``.
    Returns once every gateway is up.
    """
    return in_parallel([
        functools.partial(_start_storage_node, tool, workdir / f"storage{i}", processes,
                          shares, timeout)
        for i in range(1, count + 1)
    ])


def create_static_client(tool: TahoeTool, basedir: Path, *,
                         shares: Shares = SMALL_GRID_SHARES, force_foolscap: bool = False) -> Path:
    """``tahoe create-client`` with no introducer, configured for tests.

    The nickname is the directory name; the gateway listens on a free 127.0.0.1 port.

    :param force_foolscap: ``[client]force_foolscap`` (otherwise HTTPS where servers offer it).
    """
    tool.create_client(basedir, introducer_furl="", shares=shares, nickname=basedir.name,
                       web_port=free_port())
    edit_tahoe_cfg(basedir, config_for_tests(storage=False, force_foolscap=force_foolscap))
    return basedir


def start_static_client(tool: TahoeTool, basedir: Path, processes: ProcessSet,
                        servers: Sequence[ProxiedServer], *, shares: Shares = SMALL_GRID_SHARES,
                        create: bool = True, wait_for_servers: bool = True,
                        timeout: float = CONNECT_TIMEOUT, force_foolscap: bool = False) -> Gateway:
    """Run a client that knows only ``servers`` (at their proxies), creating it first.

    :param create: whether to run :func:`create_static_client` first (False:
        ``basedir`` was created by it already).
    :param force_foolscap: for a new client, ``[client]force_foolscap``.
    :param wait_for_servers: return only once every server is connected.
    :raises WaitTimeout: if the client does not start or connect in time.
    """
    if create:
        create_static_client(tool, basedir, shares=shares, force_foolscap=force_foolscap)
    write_servers_yaml(basedir, servers)
    node = tool.start(basedir, processes)
    gateway = Gateway(node, node.node_url(timeout))
    if wait_for_servers:
        gateway.wait_for_servers(len(servers), timeout)
    return gateway


@attrs.frozen
class ProxiedGrid:
    """Storage nodes, a proxy in front of each, and a client that uses only the proxies.

    :ivar storage_nodes: the storage nodes, in order (``storage1``, ...).
    :ivar servers: the proxied servers, in the same order.
    :ivar client: the client node.
    :ivar timings: seconds spent in each setup step.
    """

    storage_nodes: tuple[Gateway, ...]
    servers: tuple[ProxiedServer, ...]
    client: Gateway
    timings: dict[str, float]

    @property
    def proxies(self) -> tuple[TcpProxy, ...]:
        """The proxies, in the order of :attr:`servers`."""
        return tuple(server.proxy for server in self.servers)

    def wait_idle(self, idle: float, timeout: float = CONNECT_TIMEOUT) -> None:
        """Wait until every proxy has passed no data for ``idle`` seconds and holds none.

        :raises TimeoutError: if one is not idle in time.
        """
        deadline = time.monotonic() + timeout
        for proxy in self.proxies:
            proxy.wait_idle(idle, max(0.0, deadline - time.monotonic()))

    def mark(self) -> tuple[Mark, ...]:
        """A :meth:`TcpProxy.mark` on every proxy, in the order of :attr:`servers`."""
        return tuple(proxy.mark() for proxy in self.proxies)

    def round_trips_while(self, action: Callable[[], object], delay: float = 0.2
                          ) -> tuple[float, list[int], list[list[Burst]]]:
        """Run ``action()`` with ``delay`` seconds each way on every proxy (the grid idle
        first). Returns its time, and per proxy the round trips it waited for there (the
        turns from client-to-server traffic to server-to-client) and the bursts counted."""
        for proxy in self.proxies:
            proxy.delay = delay
        try:
            self.wait_idle(0.3)
            marks = self.mark()
            started = time.monotonic()
            action()
            finished = time.monotonic()
        finally:
            for proxy in self.proxies:
                proxy.delay = 0.0
        turns, bursts = [], []
        for proxy, mark in zip(self.proxies, marks):
            seen = [b for c in proxy.connections() for b in c.bursts_since(mark)
                    if b.started_at < finished - delay]
            bursts.append(seen)
            turns.append(sum(1 for a, b in zip(seen, seen[1:])
                             if a.direction != b.direction and b.direction.name == "S2C"))
        return finished - started, turns, bursts

    def directions_since(self, marks: Sequence[Mark]) -> dict[str, list[list[Direction]]]:
        """Server nickname -> for each connection with traffic since the marks (from
        :meth:`mark`), the directions of its bursts, e.g. ``[[C2S, S2C, C2S, S2C]]``.

        Servers without such traffic are left out.
        """
        result: dict[str, list[list[Direction]]] = {}
        for server, mark in zip(self.servers, marks, strict=True):
            per_connection = [stats.directions(mark) for stats in server.proxy.connections()]
            per_connection = [directions for directions in per_connection if directions]
            if per_connection:
                result[server.info.nickname] = per_connection
        return result

    def server_status(self) -> dict[str, str]:
        """Server id -> the client's ``connection_status`` for it (``GET /?t=json``)."""
        return {entry["nodeid"]: entry["connection_status"]
                for entry in self.client.welcome()["servers"]}


def start_proxied_grid(tool: TahoeTool, workdir: Path, processes: ProcessSet, proxies: ProxySet,
                       *, storage_nodes: int = 3, shares: Shares = SMALL_GRID_SHARES,
                       delay: float = 0.0, timeout: float = CONNECT_TIMEOUT) -> ProxiedGrid:
    """Start storage nodes, a proxy per node, and a client connected to all of them.

    Node directories are ``workdir/storage<i>`` and ``workdir/client``.  Returns
    once the client sees every server connected (through its proxy).

    :param delay: each proxy's one-way delay in seconds (changeable later on the proxies).
    """
    timings: dict[str, float] = {}
    started = time.monotonic()
    client_dir = workdir / "client"
    with ThreadPoolExecutor(max_workers=1) as pool:  # create the client meanwhile
        creating = pool.submit(create_static_client, tool, client_dir, shares=shares)
        nodes = start_storage_nodes(tool, workdir, processes, count=storage_nodes,
                                    shares=shares)
        creating.result()
    timings["storage_nodes"] = time.monotonic() - started

    started = time.monotonic()
    servers = proxy_storage_servers([node.node.basedir for node in nodes], proxies, delay=delay,
                                    processes=[node.node.process for node in nodes])
    client = start_static_client(tool, client_dir, processes, servers, shares=shares,
                                 create=False, timeout=timeout)
    timings["client"] = time.monotonic() - started
    return ProxiedGrid(tuple(nodes), tuple(servers), client, timings)

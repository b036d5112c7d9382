"""The HTTPS storage protocol between our nodes and Tahoe-LAFS 1.20's, proven on the wire.

Each node runs at its defaults (servers announce NURLs, clients prefer
them). To prove which protocol is used, the clients reach the storage
servers only through test proxies (``servers.yaml`` at the proxies' ports)
that look at the first bytes of every connection: a TLS ClientHello is the
HTTPS storage protocol, ``GET /id/`` is Foolscap.

* A Tahoe 1.20 client stores and reads CHK files, SDMF and MDMF files and
  directories on our servers over HTTPS, and our client does the same on
  Tahoe's servers.
* A Tahoe client with ``[client]force_foolscap`` still works with our
  servers, over Foolscap.
* A mixed grid (our introducer, our servers and a Tahoe server) serves
  uploads and downloads of both kinds of client, every server holding shares.
"""
from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.support.dirapi import WebAPI
from tests.support.grid import SMALL_GRID_SHARES, Gateway, Grid, start_client, start_storage_node
from tests.support.nodes import Shares, TahoeTool, our_tahoe
from tests.support.ournodes import finished_shares, server_id, wait_for_server
from tests.support.processes import ProcessSet
from tests.support.proxied_grid import ProxiedServer, proxy_storage_servers, start_static_client
from tests.support.proxy import ProxySet

pytestmark = pytest.mark.interop


def _exercise(client: Gateway, seed: str) -> None:
    """CHK files, SDMF and MDMF files and a directory through a gateway, each read back."""
    rng = random.Random(seed)
    api = WebAPI(client.url)
    for size in (1000, 300_000):
        data = rng.randbytes(size)
        assert client.download(client.upload(data)) == data
    for fmt in ("SDMF", "MDMF"):
        first, second = rng.randbytes(2000), rng.randbytes(3000)
        cap = api.create_mutable(first, fmt)
        assert api.read(cap) == first
        api.ok("PUT", api.object_path(cap), second)
        assert api.read(cap) == second
    root = api.mkdir()
    child = rng.randbytes(5000)
    api.ok("PUT", api.object_path(root, "sub/file"), child)
    assert api.read(root, "sub/file") == child
    assert list(api.children(root)) == ["sub"]


def _protocols(servers: Sequence[ProxiedServer]) -> dict[str, set[str | None]]:
    """Server nickname -> the protocols of the connections through its proxy."""
    return {server.info.nickname: {c.protocol for c in server.proxy.connections()}
            for server in servers}


@pytest.fixture
def proxies() -> Iterator[ProxySet]:
    """Proxies for one test, stopped after it."""
    with ProxySet() as started:
        yield started


def _static_client(tool: TahoeTool, basedir: Path, servers: Sequence[ProxiedServer],
                   processes: ProcessSet, force_foolscap: bool = False) -> Gateway:
    return start_static_client(tool, basedir, processes, servers, shares=SMALL_GRID_SHARES,
                               force_foolscap=force_foolscap)


def test_tahoe_client_uses_https_with_our_servers(our_grid: Grid, tahoe120: Path,
                                                  proxies: ProxySet, tmp_path: Path) -> None:
    """A Tahoe 1.20 client at its defaults reaches our servers by TLS, never Foolscap, and
    stores and reads every kind of file and directory on them."""
    servers = proxy_storage_servers([n.node.basedir for n in our_grid.storage_nodes], proxies)
    with ProcessSet() as processes:
        client = _static_client(TahoeTool(tahoe120, tmp_path / "logs"), tmp_path / "client",
                                servers, processes)
        before = [finished_shares(n.node.basedir / "storage") for n in our_grid.storage_nodes]
        _exercise(client, "tahoe-on-ours")
        after = [finished_shares(n.node.basedir / "storage") for n in our_grid.storage_nodes]
    assert all(new - old for old, new in zip(before, after)), "every server got shares"
    assert _protocols(servers) == {s.info.nickname: {"tls"} for s in servers}


def test_our_client_uses_https_with_tahoe_servers(tahoe_grid: Grid, proxies: ProxySet,
                                                  tmp_path: Path) -> None:
    """Our client at its defaults reaches Tahoe 1.20's servers by TLS and does the same there."""
    servers = proxy_storage_servers([n.node.basedir for n in tahoe_grid.storage_nodes], proxies)
    with ProcessSet() as processes:
        client = _static_client(TahoeTool(our_tahoe(), tmp_path / "logs"), tmp_path / "client",
                                servers, processes)
        _exercise(client, "ours-on-tahoe")
        statuses = {s["nickname"]: s["connection_status"] for s in client.welcome()["servers"]}
    assert statuses == {s.info.nickname: s.connection_status for s in servers}
    assert all(status.endswith("via HTTPS") for status in statuses.values())
    assert _protocols(servers) == {s.info.nickname: {"tls"} for s in servers}


def test_tahoe_client_forcing_foolscap_uses_our_servers(our_grid: Grid, tahoe120: Path,
                                                        proxies: ProxySet, tmp_path: Path) -> None:
    """A Tahoe client with ``[client]force_foolscap`` works with our servers, over Foolscap only."""
    servers = proxy_storage_servers([n.node.basedir for n in our_grid.storage_nodes], proxies)
    with ProcessSet() as processes:
        client = _static_client(TahoeTool(tahoe120, tmp_path / "logs"), tmp_path / "client",
                                servers, processes, force_foolscap=True)
        data = random.Random("forced").randbytes(20_000)
        assert client.download(client.upload(data)) == data
        api = WebAPI(client.url)
        root = api.mkdir()
        api.ok("PUT", api.object_path(root, "f"), b"over foolscap")
        assert api.read(root, "f") == b"over foolscap"
    assert _protocols(servers) == {s.info.nickname: {"foolscap"} for s in servers}


def test_mixed_grid(our_grid: Grid, tahoe120: Path, tmp_path: Path) -> None:
    """Our introducer, our three servers and a Tahoe server: clients of both kinds, each at its
    defaults (HTTPS), spread 2-of-4 shares over all four servers and read them back."""
    shares = Shares(needed=2, happy=4, total=4)
    with ProcessSet() as processes:
        theirs = start_storage_node(TahoeTool(tahoe120, tmp_path / "logs"),
                                    tmp_path / "tahoe-storage", processes,
                                    introducer_furl=our_grid.introducer_furl, shares=shares)
        storage_dirs = [n.node.basedir for n in our_grid.storage_nodes] + [theirs.node.basedir]
        for name, executable in (("ours", our_tahoe()), ("tahoe", tahoe120)):
            client = start_client(TahoeTool(executable, tmp_path / "logs"), tmp_path / name,
                                  processes, introducer_furl=our_grid.introducer_furl,
                                  shares=shares, expected_servers=len(storage_dirs))
            for storage in storage_dirs:
                entry = wait_for_server(client.url, server_id(storage), True,
                                        processes=[client.node.process, theirs.node.process])
                status = entry["connection_status"]
                assert status.endswith("via HTTPS") if name == "ours" else status == "connected"
            before = [finished_shares(d / "storage") for d in storage_dirs]
            data = random.Random(f"mixed-{name}").randbytes(100_000)
            cap = client.upload(data)
            after = [finished_shares(d / "storage") for d in storage_dirs]
            assert [len(new - old) for old, new in zip(before, after)] == [1, 1, 1, 1]
            assert client.download(cap) == data

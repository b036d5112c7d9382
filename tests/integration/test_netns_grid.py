"""A grid across "machines": each node in its own network namespace with its own address.

An introducer (``10.213.0.1``), four storage servers (``.2``-``.5``) and a
client (``.6``, 2-of-4, happiness 3) on one switched /24
(:mod:`tests.support.netns`); the test reaches the client's gateway on the
client host's own 127.0.0.1.  Shown: the grid works as across machines; on
impaired links (rate limit and random loss, with delay where the kernel has
``sch_netem``); with a server partitioned off in the middle of an upload, two
in the middle of a download (the link goes down: no reset, silence), each
then healed; and with the introducer unreachable, a client restarted from
its announcement cache.
"""
from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.support.grid import in_parallel
from tests.support.netns import Host, Network, NsHTTPConnection
from tests.support.nodes import RunningNode, Shares, TahoeTool, edit_tahoe_cfg, our_tahoe
from tests.support.ournodes import incoming_files
from tests.support.processes import ProcessSet, wait_until
from tests.support.reliability import fault_run, long_schedule, record_limit
from tests.support.sysfaults import require_root

SHARES = Shares(needed=2, happy=3, total=4)
TUB_PORT = 3457
WEB_PORT = 3456
HTTP_TIMEOUT = 120.0
RECONNECT_TIMEOUT = 90.0
STOP_DEADLINE = 10.0  # a node stops this fast on SIGTERM, even with silent peers


@attrs.define
class NetGrid:
    """The running grid and its network."""

    network: Network
    tool: TahoeTool
    processes: ProcessSet
    introducer: RunningNode
    storage: list[RunningNode]
    client: RunningNode
    client_host: Host

    def request(self, method: str, path: str, body: bytes | None = None,
                timeout: float = HTTP_TIMEOUT) -> tuple[int, bytes]:
        """A request to the client's gateway, from inside the client's host."""
        connection = NsHTTPConnection(self.client_host, "127.0.0.1", WEB_PORT, timeout)
        try:
            connection.request(method, path, body)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def upload(self, data: bytes) -> str:
        """``PUT /uri``: the cap."""
        status, body = self.request("PUT", "/uri", data)
        assert status in (200, 201), (status, body[:500])
        return body.decode().strip()

    def download(self, cap: str) -> bytes:
        """``GET /uri/CAP``."""
        status, body = self.request("GET", "/uri/" + cap)
        assert status == 200, (status, body[:500])
        return body

    def connected(self) -> int:
        """How many storage servers the client shows connected."""
        status, body = self.request("GET", "/?t=json", timeout=10)
        servers = json.loads(body)["servers"] if status == 200 else []
        return sum(str(s.get("connection_status", "")).lower().startswith("connected")
                   and bool(s.get("version")) for s in servers)

    def wait_connected(self, count: int, timeout: float = RECONNECT_TIMEOUT) -> float:
        """Wait until the client sees ``count`` servers; return the seconds it took."""
        started = time.monotonic()
        wait_until(lambda: self.connected() == count, timeout,
                   f"{count} servers connected", ignore=(OSError, ValueError, KeyError),
                   processes=[self.client.process], interval=0.2)
        return time.monotonic() - started


def _listen_on(basedir: Path, address: str) -> None:
    edit_tahoe_cfg(basedir, {"node": {"tub.port": f"tcp:{TUB_PORT}:interface={address}",
                                      "tub.location": f"tcp:{address}:{TUB_PORT}"}})


def _node(tool: TahoeTool, basedir: Path, host: Host, processes: ProcessSet) -> RunningNode:
    (basedir / "node.url").unlink(missing_ok=True)
    return tool.start(basedir, processes, prefix=host.exec_prefix)


@pytest.fixture(scope="module")
def net_grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetGrid]:
    """The six-host grid, stopped (by PID) and its namespaces removed afterwards."""
    require_root("ip", "tc", "iptables")
    workdir = tmp_path_factory.mktemp("netns-grid")
    tool = TahoeTool(our_tahoe(), workdir / "logs")
    with Network(6, tag=f"{os.getpid() % 100}") as network, ProcessSet() as processes:
        hosts = network.hosts
        tool.create_introducer(workdir / "introducer", port=TUB_PORT)
        _listen_on(workdir / "introducer", hosts[0].address)
        introducer = _node(tool, workdir / "introducer", hosts[0], processes)
        furl = introducer.introducer_furl()

        def storage_node(n: int) -> RunningNode:
            basedir = workdir / f"storage{n}"
            tool.create_node(basedir, introducer_furl=furl, shares=SHARES,
                             nickname=basedir.name, web_port=WEB_PORT, tub_port=TUB_PORT)
            _listen_on(basedir, hosts[n].address)
            edit_tahoe_cfg(basedir, {"storage": {"reserved_space": "1M"}})
            return _node(tool, basedir, hosts[n], processes)

        storage = in_parallel([functools.partial(storage_node, n) for n in range(1, 5)])
        tool.create_client(workdir / "client", introducer_furl=furl, shares=SHARES,
                           nickname="client", web_port=WEB_PORT)
        client = _node(tool, workdir / "client", hosts[5], processes)
        for node in (*storage, client):
            node.node_url()
        grid = NetGrid(network, tool, processes, introducer, storage, client, hosts[5])
        grid.wait_connected(4)
        try:
            yield grid
        finally:
            processes.stop_all()
    assert not [n for n in Network.leftovers() if n.startswith(network.switch[:-2])]


def test_grid_across_hosts_and_impaired_links(net_grid: NetGrid) -> None:
    """Files go up and come back across hosts, then over rate-limited, lossy links."""
    grid = net_grid
    with fault_run("multi-host grid (netns), impaired links") as run:
        data = os.urandom(1_500_000)
        assert grid.download(grid.upload(data)) == data
        run.checked(data)
        applied = [host.shape(delay_ms=40, loss_percent=2.0, rate_mbit=40)
                   for host in grid.network.hosts]
        try:
            started = time.monotonic()
            data = os.urandom(1_500_000)
            assert grid.download(grid.upload(data)) == data
            run.checked(data)
            run.recovered(time.monotonic() - started)
        finally:
            for host in grid.network.hosts:
                host.unshape()
    record_limit("netns links", applied[0])


def _in_background(call: Any) -> tuple[threading.Thread, list[Any]]:
    result: list[Any] = []

    def run() -> None:
        try:
            result.append(call())
        except Exception as error:  # the test looks at it
            result.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


@long_schedule
def test_partitions_mid_upload_and_mid_download(net_grid: NetGrid) -> None:
    """One server cut off mid-upload, two mid-download: both finish with the right bytes
    (the upload after the client gives the silent server up, 60 s); healed, the client sees
    all four servers again."""
    grid = net_grid
    hosts = grid.network.hosts
    with fault_run("partition mid-upload/mid-download (netns), healed") as run:
        data = os.urandom(4_000_000)
        thread, result = _in_background(lambda: grid.upload(data))
        storage5 = Path(grid.storage[3].basedir) / "storage"
        wait_until(lambda: incoming_files(storage5) or result, 60, "the upload to reach .5",
                   ignore=(FileNotFoundError,))
        hosts[4].set_link(False)
        try:
            thread.join(HTTP_TIMEOUT)
            (cap,) = result
            assert isinstance(cap, str), cap
        finally:
            hosts[4].set_link(True)
        run.recovered(grid.wait_connected(4))
        assert grid.download(cap) == data
        run.checked(data)
        record_limit("a silent server (partitioned, no reset)", "given up after 60 s without "
                                                                "an answer")

        thread, result = _in_background(lambda: grid.download(cap))
        time.sleep(0.2)  # the download has asked every server; now two go silent
        hosts[3].set_link(False)
        hosts[4].set_link(False)
        try:
            thread.join(HTTP_TIMEOUT)
            (got,) = result
            assert got == data, got if isinstance(got, Exception) else len(got)
            run.checked(got)
        finally:
            hosts[3].set_link(True)
            hosts[4].set_link(True)
        run.recovered(grid.wait_connected(4))


def test_introducer_unreachable(net_grid: NetGrid) -> None:
    """With the introducer cut off, the client stops promptly on SIGTERM, and restarted it
    still finds the servers (from its announcement cache) and uploads."""
    grid = net_grid
    introducer_host, client_host = grid.network.hosts[0], grid.network.hosts[5]
    with fault_run("introducer unreachable (netns)") as run:
        introducer_host.set_link(False)
        try:
            started = time.monotonic()
            assert grid.client.stop() == 0  # not killed after the stop timeout
            assert time.monotonic() - started < STOP_DEADLINE
            grid.client = _node(grid.tool, Path(grid.client.basedir), client_host,
                                grid.processes)
            grid.client.node_url()
            run.recovered(grid.wait_connected(4))
            data = os.urandom(500_000)
            assert grid.download(grid.upload(data)) == data
            run.checked(data)
        finally:
            introducer_host.set_link(True)

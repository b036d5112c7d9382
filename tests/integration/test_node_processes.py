"""Our ``tahoe run`` as a separate program: crash safety, connections, bad configuration.

Every node is created with our ``tahoe create-node``/``create-client``, runs
with ``tahoe run --allow-stdin-close`` on 127.0.0.1 ports from
:func:`tests.support.ports.free_port`, and is stopped (or killed) by the PID
recorded when it was started.  Facts: ``reference/storage-protocol.md`` §2-§4
(allocate, write, close; incoming files deleted at start), §7.7 (static
servers), ``reference/frontends.md`` §1.3-1.4 (``tahoe run``, fatal
configuration errors) and §3.9 (server connection statuses).
"""
from __future__ import annotations

import functools
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from foolscap.api import Referenceable, Tub
from twisted.internet.defer import Deferred

from tahoe.storage.paths import prefix_of, storage_index_to_b32
from tests.integration.storage_fixtures import new_tub
from tests.support.grid import SMALL_GRID_SHARES, Gateway, in_parallel, start_introducer
from tests.support.nodes import TahoeTool, edit_tahoe_cfg, our_tahoe
from tests.support.ournodes import (
    create_storage_node,
    finished_shares,
    incoming_files,
    server_id,
    start_node,
    storage_furl,
    tub_port,
    wait_for_server,
    write_servers_yaml,
)
from tests.support.processes import ProcessSet, wait_until

SHARE_SIZE = 300_000
CHUNK = 100_000
RENEW = b"r" * 32
CANCEL = b"c" * 32
CONNECT_TIMEOUT = 30.0


@pytest.fixture
def tool(tmp_path: Path) -> TahoeTool:
    """Our ``tahoe``, with node logs under the test's tmp dir."""
    return TahoeTool(our_tahoe(), tmp_path / "logs")


def si_dir(storage_index: bytes) -> str:
    """``<prefix>/<SI>``: where a storage index's shares live under ``shares/`` (§4.1)."""
    b32 = storage_index_to_b32(storage_index)
    return f"{prefix_of(b32)}/{b32}"


async def connect(tub: Tub, furl: str, timeout: float = CONNECT_TIMEOUT) -> Any:
    """``getReference`` polled with a deadline (the node may still be binding its port)."""
    from twisted.internet import reactor
    from twisted.internet.task import deferLater
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await tub.getReference(furl)
        except Exception:
            if time.monotonic() >= deadline:
                raise
            await deferLater(reactor, 0.1, lambda: None)


async def disconnected(rref: Any, timeout: float = CONNECT_TIMEOUT) -> None:
    """Wait until Foolscap reports the connection behind ``rref`` lost."""
    from twisted.internet import reactor
    d: Deferred = Deferred()
    rref.notifyOnDisconnect(lambda: d.called or d.callback(None))
    d.addTimeout(timeout, reactor)
    await d


@pytest_twisted.ensureDeferred
async def test_sigkill_keeps_closed_shares_only(tool: TahoeTool, tmp_path: Path,
                                                processes: ProcessSet) -> None:
    """After SIGKILL mid-upload only closed shares exist, and after a restart they read back intact."""
    basedir = create_storage_node(tool, tmp_path / "server", reserved_space="1M")
    node = start_node(tool, basedir, processes).node
    furl = storage_furl(basedir)
    storage = basedir / "storage"
    si, partial_si = b"K" * 16, b"P" * 16
    rng = random.Random(1)
    data = {shnum: rng.randbytes(SHARE_SIZE) for shnum in range(5)}

    client = new_tub()
    try:
        rref = await connect(client, furl)
        canary = Referenceable()
        already, writers = await rref.callRemote("allocate_buckets", si, RENEW, CANCEL,
                                                 set(range(5)), SHARE_SIZE, canary)
        assert already == set() and sorted(writers) == [0, 1, 2, 3, 4]
        for shnum in (0, 1, 2):  # written in full and closed
            for offset in range(0, SHARE_SIZE, CHUNK):
                await writers[shnum].callRemote("write", offset,
                                                data[shnum][offset:offset + CHUNK])
            await writers[shnum].callRemote("close")
        await writers[3].callRemote("write", 0, data[3][:CHUNK])  # partly written
        # share 4 is allocated but never written
        _, others = await rref.callRemote("allocate_buckets", partial_si, RENEW, CANCEL,
                                          {0, 1}, SHARE_SIZE, canary)
        await others[0].callRemote("write", 0, data[0][:CHUNK])

        lost = disconnected(rref)
        os.kill(node.process.pid, signal.SIGKILL)
        wait_until(lambda: node.process.returncode is not None, 30, "the killed node to exit")
        assert node.process.returncode == -signal.SIGKILL
        await lost

        # What a crash leaves: closed shares final, the partly written ones only under
        # incoming/ (a share's file is made by its first write: the two allocated and
        # never written left none).
        assert finished_shares(storage) == {f"{si_dir(si)}/{n}" for n in (0, 1, 2)}
        assert not list((storage / "shares" / si_dir(partial_si)).glob("*"))
        assert sorted(path.name.rsplit(".", 1)[1] for path in incoming_files(storage)) \
            == ["0", "3"]

        node = start_node(tool, basedir, processes).node  # running.process is stale
        assert storage_furl(basedir) == furl
        assert incoming_files(storage) == []
        rref = await connect(client, furl)
        readers = await rref.callRemote("get_buckets", si)
        assert sorted(readers) == [0, 1, 2]
        for shnum, reader in readers.items():
            assert await reader.callRemote("read", 0, SHARE_SIZE + 1000) == data[shnum]
        assert await rref.callRemote("get_buckets", partial_si) == {}
        # The cut-off shares can be uploaded again.
        already, writers = await rref.callRemote("allocate_buckets", si, RENEW, CANCEL,
                                                 {3, 4}, SHARE_SIZE, canary)
        assert already == {0, 1, 2} and sorted(writers) == [3, 4]
        for writer in writers.values():
            await writer.callRemote("abort")
        assert node.process.is_running()
    finally:
        await client.stopService()


@pytest.mark.parametrize("transport", ["HTTPS", "tcp"])
def test_static_server_reconnects(tool: TahoeTool, tmp_path: Path, processes: ProcessSet,
                                  transport: str) -> None:
    """A client whose servers.yaml lists a storage node follows it going away and coming back,
    over HTTPS (the default) and over Foolscap (``force_foolscap``, shown "via tcp")."""
    foolscap = transport == "tcp"
    server_dir = create_storage_node(tool, tmp_path / "server", force_foolscap=foolscap)
    client_dir = tool.create_client(tmp_path / "client", introducer_furl=None,
                                    shares=SMALL_GRID_SHARES, nickname="client")
    server = start_node(tool, server_dir, processes)
    write_servers_yaml(client_dir, [server_dir])
    client = start_node(tool, client_dir, processes)
    nodeid = server_id(server_dir)
    expected = f"Connected to tcp:127.0.0.1:{tub_port(server_dir)} via {transport}"

    entry = wait_for_server(client.url, nodeid, True, processes=[client.node.process])
    assert entry["connection_status"] == expected
    listing = client.welcome()
    assert [s["nickname"] for s in listing["servers"]] == ["server"]
    assert listing["introducers"]["statuses"] == []

    assert server.node.stop() == 0
    entry = wait_for_server(client.url, nodeid, False, processes=[client.node.process])
    assert not entry["connection_status"].lower().startswith("connected")

    start_node(tool, server_dir, processes)
    entry = wait_for_server(client.url, nodeid, True, processes=[client.node.process])
    assert entry["connection_status"] == expected


def test_storage_nodes_show_every_server_connected_over_tcp(tool: TahoeTool, tmp_path: Path,
                                                           processes: ProcessSet) -> None:
    """Storage nodes sharing an introducer show each other, and themselves, connected over
    TCP (by HTTPS, their default)."""
    # As in Tahoe 1.20, which reaches storage servers from Tubs of their own: two
    # listening nodes' connections are not merged (the one kept could be the other
    # side's, which has no winning hint), and a node reaches its own server over
    # TCP rather than through Foolscap's in-process loopback.
    _, furl = start_introducer(tool, tmp_path / "introducer", processes)
    dirs = [create_storage_node(tool, tmp_path / f"storage{i}", introducer_furl=furl)
            for i in (1, 2)]
    nodes = in_parallel([functools.partial(start_node, tool, d, processes) for d in dirs])
    expected = {server_id(d): f"Connected to tcp:127.0.0.1:{tub_port(d)} via HTTPS" for d in dirs}
    for node in nodes:
        servers = wait_until(functools.partial(_all_answered, node, len(dirs)), CONNECT_TIMEOUT,
                             f"get_version answers at {node.url}", processes=[node.node.process],
                             ignore=(OSError, ValueError))
        assert {s["nodeid"]: s["connection_status"] for s in servers} == expected
    for d in dirs:  # the node directory files Tahoe's nodes have
        for name in ("my_nodeid", "node.pubkey", "permutation-seed", "private/node.pem",
                     "private/node.privkey", "private/secret", "private/convergence",
                     "private/storage.furl", "logs/incidents"):
            assert (d / name).exists(), name


def _all_answered(node: Gateway, count: int) -> list[dict[str, Any]] | None:
    """The gateway's servers once ``count`` are listed and all have answered get_version."""
    servers: list[dict[str, Any]] = node.welcome()["servers"]
    return servers if len(servers) >= count and all(s["version"] for s in servers) else None


def _misspelled_key(basedir: Path) -> None:
    edit_tahoe_cfg(basedir, {"storage": {"reserved_spce": "1M"}})


def _unknown_section(basedir: Path) -> None:
    with open(basedir / "tahoe.cfg", "a") as f:
        f.write("\n[bogus]\nkey = value\n")


def _bad_port(basedir: Path) -> None:
    edit_tahoe_cfg(basedir, {"node": {"tub.port": "tcp:notaport:interface=127.0.0.1"}})


def _unreadable(basedir: Path) -> None:
    # chmod 000 does not stop root; a directory in its place cannot be read by anyone.
    (basedir / "tahoe.cfg").unlink()
    (basedir / "tahoe.cfg").mkdir()


BAD_CONFIGS: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "misspelled-key": (_misspelled_key, ["[storage]", "reserved_spce", "unknown option"]),
    "unknown-section": (_unknown_section, ["[bogus]", "unknown section"]),
    "bad-port": (_bad_port, ["[node]tub.port", "notaport"]),
    "unreadable": (_unreadable, ["cannot be read", "directory"]),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_stops_start_up(tool: TahoeTool, tmp_path: Path, case: str) -> None:
    """``tahoe run`` on a bad tahoe.cfg exits 1 at once, naming the file, key and problem."""
    basedir = create_storage_node(tool, tmp_path / "node")
    spoil, expected = BAD_CONFIGS[case]
    spoil(basedir)
    started = time.monotonic()
    result = subprocess.run([str(tool.exe), "run", "--allow-stdin-close", str(basedir)],
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert result.returncode == 1, result
    assert time.monotonic() - started < 15
    message = result.stderr
    assert f"{basedir / 'tahoe.cfg'}" in message, message
    for text in expected:
        assert text.lower() in message.lower(), message
    assert not (basedir / "running.process").exists()
    assert not (basedir / "node.url").exists()
    assert not (basedir / "storage").exists()


def _own_announcement(basedir: Path) -> dict[str, Any] | None:
    """The storage announcement a node received back from its introducer (its cache file)."""
    import yaml
    cache = basedir / "private" / "introducer_default_cache.yaml"
    if not cache.exists():
        return None
    for entry in yaml.safe_load(cache.read_text()) or []:
        if entry.get("key_s") == server_id(basedir):
            announcement: dict[str, Any] = entry["ann"]
            return announcement
    return None


@pytest.mark.parametrize("force_foolscap", [False, True], ids=["default", "force_foolscap"])
def test_announced_nurls(tool: TahoeTool, tmp_path: Path, processes: ProcessSet,
                         force_foolscap: bool) -> None:
    """A storage node announces one NURL per tcp hint, pinning its certificate's key, with its
    storage FURL's swissnum; ``[storage]force_foolscap`` leaves them out."""
    from tahoe.util.nurl import parse_nurl
    from tests.support.proxied_grid import read_storage_server

    _, furl = start_introducer(tool, tmp_path / "introducer", processes)
    basedir = create_storage_node(tool, tmp_path / "storage", introducer_furl=furl,
                                  force_foolscap=force_foolscap)
    node = start_node(tool, basedir, processes)
    announcement = wait_until(lambda: _own_announcement(basedir), CONNECT_TIMEOUT,
                              "the node's own announcement", processes=[node.node.process])
    if force_foolscap:
        assert "anonymous-storage-NURLs" not in announcement
        return
    info = read_storage_server(basedir)
    (text,) = announcement["anonymous-storage-NURLs"]
    nurl = parse_nurl(text)
    assert (nurl.spki_hash, nurl.host, nurl.port, nurl.swissnum) == \
        (info.spki_hash, "127.0.0.1", tub_port(basedir), info.swissnum)

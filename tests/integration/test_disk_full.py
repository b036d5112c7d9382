"""A storage server whose storage directory is a small tmpfs the test mounts, filling up.

Five storage nodes behind proxies, a client 2-of-5 with happiness 4; the
first node's ``storage/`` is a 4 MiB tmpfs (``reserved_space = 0``).  When
it has too little room a new share is refused at allocation and the client
places it on the others; when the disk fills (another writer) in the middle
of an upload, its writes fail, the client carries on with the others, the
half-written share is removed, and nothing already stored there changes.
Once space is back it takes shares again.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest
import pytest_twisted
from foolscap.api import Referenceable, RemoteException

from tahoe.caps.parse import parse_cap
from tahoe.util import base32
from tests.integration.storage_fixtures import start_pair, stop_pair
from tests.integration.test_storage_protocol import error_names
from tests.support.dirapi import WebAPI
from tests.support.grid import Gateway, in_parallel
from tests.support.nodes import Shares, TahoeTool, our_tahoe
from tests.support.ournodes import create_storage_node, incoming_files, start_node
from tests.support.processes import ProcessSet, wait_until
from tests.support.proxied_grid import ProxiedServer, proxy_storage_servers, start_static_client
from tests.support.proxy import ProxySet
from tests.support.reliability import fault_run, record_limit
from tests.support.sysfaults import fill, require_root, tmpfs

SHARES = Shares(needed=2, happy=4, total=5)
TMPFS_SIZE = 4 * 1024 * 1024


@attrs.frozen
class SmallDiskGrid:
    """The grid of this module: ``full`` is the node on the tmpfs."""

    nodes: tuple[Gateway, ...]
    servers: tuple[ProxiedServer, ...]
    client: Gateway

    @property
    def storage(self) -> Path:
        """The tmpfs: the first node's storage directory."""
        return Path(self.nodes[0].node.basedir) / "storage"


@pytest.fixture(scope="module")
def small_disk_grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SmallDiskGrid]:
    """Five storage nodes (the first on a 4 MiB tmpfs), proxies, and a static client."""
    require_root("mount")
    workdir = tmp_path_factory.mktemp("disk-full")
    tool = TahoeTool(our_tahoe(), workdir / "logs")
    basedirs = [workdir / f"storage{i}" for i in range(1, 6)]
    in_parallel([functools.partial(create_storage_node, tool, basedir, shares=SHARES,
                                   reserved_space="0" if i == 0 else "1M")
                 for i, basedir in enumerate(basedirs)])
    with tmpfs(basedirs[0] / "storage", TMPFS_SIZE), ProcessSet() as processes, \
            ProxySet() as proxies:
        nodes = in_parallel([functools.partial(start_node, tool, basedir, processes)
                             for basedir in basedirs])
        servers = proxy_storage_servers(basedirs, proxies,
                                        processes=[n.node.process for n in nodes])
        client = start_static_client(tool, workdir / "client", processes, servers, shares=SHARES)
        yield SmallDiskGrid(tuple(nodes), tuple(servers), client)


def _tree(storage: Path) -> dict[str, bytes]:
    """Share files under ``storage/shares`` (not incoming) with their SHA-256."""
    return {str(p.relative_to(storage)): hashlib.sha256(p.read_bytes()).digest()
            for p in sorted((storage / "shares").glob("*/*/*"))
            if p.is_file() and p.parts[-3] != "incoming"}


def _shares_on(storage: Path, cap: str) -> list[Path]:
    si = base32.b2a(parse_cap(cap).storage_index)  # type: ignore[union-attr]
    return sorted((storage / "shares" / si[:2] / si).glob("*"))


def _upload_in_background(client: Gateway, data: bytes) -> tuple[threading.Thread, list]:
    result: list = []

    def upload() -> None:
        try:
            result.append(client.upload(data, timeout=120))
        except Exception as error:  # reported by the test
            result.append(error)

    thread = threading.Thread(target=upload, daemon=True)
    thread.start()
    return thread, result


def _ask_space_again(grid: SmallDiskGrid, at_least: int) -> None:
    """Have the client learn the small disk's space now.

    The client asks a server's version (its space) on connecting and every 60 s
    after; an answer given while the disk was full would keep it off that
    server for up to a minute. Resetting its connection makes it reconnect
    and ask at once.
    """
    server = grid.servers[0]
    server.proxy.kill()
    server.proxy.revive()

    def has_room() -> bool:
        return any(s["connection_status"] == server.connection_status
                   and (s["available_space"] or 0) >= at_least
                   for s in grid.client.welcome()["servers"])
    wait_until(has_room, 30, "the client to see the small disk's space again")


def test_full_disk_refuses_cleanly_and_keeps_what_it_has(small_disk_grid: SmallDiskGrid) -> None:
    """Refused at allocation, then ENOSPC mid-upload: uploads succeed elsewhere, the small
    disk's stored shares are unchanged, no partial share stays, and space back means shares."""
    grid = small_disk_grid
    storage, filler = grid.storage, grid.storage / "filler"
    with fault_run("disk full (tmpfs storage)") as run:
        small = os.urandom(100_000)
        small_cap = grid.client.upload(small)
        assert _shares_on(storage, small_cap), "the small disk took no share of a small file"
        kept = _tree(storage)

        fill(filler, leave=200_000)  # too little room for a 1 MB share
        big = os.urandom(2_000_000)
        big_cap = grid.client.upload(big)
        assert not _shares_on(storage, big_cap)
        assert grid.client.download(big_cap) == big
        run.checked(big)

        filler.unlink()
        _ask_space_again(grid, 2_000_000)
        proxy = grid.servers[0].proxy
        # Its share is about 1.5 MB: let the first 700 kB through, fill the disk, then the rest.
        proxy.hold_after(700_000)
        try:
            data = os.urandom(3_000_000)
            thread, result = _upload_in_background(grid.client, data)
            proxy.wait_for_hold(30)
            wait_until(lambda: incoming_files(storage), 30, "a share being written",
                       ignore=(FileNotFoundError,))
            assert not result, f"the upload ended before its share was written: {result}"
            started = time.monotonic()
            fill(filler)  # ENOSPC for the server's next write
        finally:
            proxy.disarm()
        thread.join(120)
        (cap,) = result
        assert isinstance(cap, str), cap
        assert grid.client.download(cap) == data
        run.checked(data)
        wait_until(lambda: not incoming_files(storage), 30, "the partial share to be removed")
        run.recovered(time.monotonic() - started)
        assert not _shares_on(storage, cap)
        assert {k: v for k, v in _tree(storage).items()} == kept
        assert grid.client.download(small_cap) == small
        run.checked(small)
        assert grid.nodes[0].node.process.is_running()

        filler.unlink()
        _ask_space_again(grid, 2_000_000)
        again = os.urandom(100_000)
        assert _shares_on(storage, grid.client.upload(again))
    record_limit("reserved_space", "[storage]reserved_space bytes kept free; a share that "
                                   "does not fit is refused at allocation")


@pytest_twisted.ensureDeferred
async def test_enospc_over_foolscap_is_a_storage_error(tmp_path: Path) -> None:
    """Over Foolscap, a write that finds the disk full fails with NoSpace (a storage error,
    as over HTTPS, 507), the partial share goes away on abort, closed shares stay."""
    require_root("mount")
    with tmpfs(tmp_path / "storage", 2 * 1024 * 1024) as storage:
        pair = await start_pair(storage)
        try:
            _, writers = await pair.rref.callRemote("allocate_buckets", b"K" * 16, b"r" * 32,
                                                    b"c" * 32, {0, 1}, 600_000, Referenceable())
            await writers[0].callRemote("write", 0, b"k" * 600_000)
            await writers[0].callRemote("close")
            kept = {k: v for k, v in pair.tree().items() if "incoming" not in k}
            fill(storage / "filler")
            try:
                await writers[1].callRemote("write", 0, b"x" * 600_000)
            except RemoteException as error:
                assert "NoSpace" in error_names(error), error_names(error)
            else:
                raise AssertionError("a write to a full disk succeeded")
            await writers[1].callRemote("abort")
            assert {k: v for k, v in pair.tree().items() if k != "filler"} == kept
            readers = await pair.rref.callRemote("get_buckets", b"K" * 16)
            assert await readers[0].callRemote("read", 0, 700_000) == b"k" * 600_000
        finally:
            await stop_pair(pair)


@contextlib.contextmanager
def _read_only(storage: Path) -> Iterator[None]:
    """``storage/shares`` read-only for the block: a read-only bind mount over it (a file
    system remounted read-only after errors, which ``mount`` refuses to do to the tmpfs
    while the server holds its files open for writing)."""
    shares = str(storage / "shares")
    for argv in (["mount", "--bind", shares, shares], ["mount", "-o", "remount,bind,ro", shares]):
        subprocess.run(argv, check=True, capture_output=True, timeout=30)
    try:
        yield
    finally:
        subprocess.run(["umount", shares], check=True, capture_output=True, timeout=30)


def _client_sees_space(grid: SmallDiskGrid, predicate: Callable[[int], bool], what: str) -> None:
    """Reset the client's connection to the small disk's server (so that it asks its version
    again) and wait until the space it reports satisfies ``predicate``."""
    server = grid.servers[0]
    server.proxy.kill()
    server.proxy.revive()
    wait_until(lambda: any(s["connection_status"] == server.connection_status
                           and predicate(s["available_space"] or 0)
                           for s in grid.client.welcome()["servers"]), 30, what)


def test_read_only_disk_takes_no_shares_and_serves_what_it_has(
        small_disk_grid: SmallDiskGrid) -> None:
    """A storage disk remounted read-only (as a file system does after errors) reports no
    space, so uploads and directories go to the others; its shares still serve reads; the
    node keeps running, and once writable again it takes shares."""
    grid = small_disk_grid
    storage = grid.storage
    small = os.urandom(100_000)
    small_cap = grid.client.upload(small)
    assert _shares_on(storage, small_cap)
    kept = _tree(storage)
    with _read_only(storage):
        _client_sees_space(grid, lambda space: space == 0, "the read-only disk to report 0")
        data = os.urandom(1_000_000)
        cap = grid.client.upload(data)
        assert not _shares_on(storage, cap)
        assert grid.client.download(cap) == data
        api = WebAPI(grid.client.url)
        dircap = api.mkdir()
        api.put(dircap, "child", b"c" * 1000)
        assert set(api.children(dircap)) == {"child"}
        assert grid.client.download(small_cap) == small
        assert _tree(storage) == kept
        assert grid.nodes[0].node.process.is_running()
    _client_sees_space(grid, lambda space: space > 1_000_000, "the disk's space to be back")
    assert _shares_on(storage, grid.client.upload(os.urandom(100_000)))


@pytest_twisted.ensureDeferred
async def test_read_only_disk_over_foolscap_is_a_storage_error(tmp_path: Path) -> None:
    """A write to a disk gone read-only since its allocation fails with NoSpace saying so
    (before: the clean-up's own error, a path of the server); the server then reports no
    room and refuses new allocations; its closed share still reads back."""
    require_root("mount")
    with tmpfs(tmp_path / "storage", 2 * 1024 * 1024) as storage:
        pair = await start_pair(storage)
        try:
            _, writers = await pair.rref.callRemote("allocate_buckets", b"R" * 16, b"r" * 32,
                                                    b"c" * 32, {0, 1}, 100_000, Referenceable())
            await writers[0].callRemote("write", 0, b"k" * 100_000)
            await writers[0].callRemote("close")
            with _read_only(storage):
                with pytest.raises(RemoteException) as raised:
                    await writers[1].callRemote("write", 0, b"x" * 100_000)
                assert "NoSpace" in error_names(raised.value)
                assert "read-only" in str(raised.value.failure.value)
                await writers[1].callRemote("abort")
                version = await pair.rref.callRemote("get_version")
                v1 = version[b"http://allmydata.org/tahoe/protocols/storage/v1"]
                assert v1[b"available-space"] == 0
                _, granted = await pair.rref.callRemote(
                    "allocate_buckets", b"S" * 16, b"r" * 32, b"c" * 32, {0}, 1000,
                    Referenceable())
                assert not granted
                readers = await pair.rref.callRemote("get_buckets", b"R" * 16)
                assert await readers[0].callRemote("read", 0, 200_000) == b"k" * 100_000
        finally:
            await stop_pair(pair)

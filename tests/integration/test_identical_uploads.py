"""Uploads of the same content at the same time: through one gateway, several, and with one
of them killed part way.

With convergent encryption two uploads of one content share a storage index.
Through one gateway the second waits for the first and gets its cap; through
two gateways each server holds the other upload's share in ``incoming/``
and answers neither "already have" nor "allocated" for it, so the uploader
waits for it and asks again (``client/uploader.py``). Every upload must
succeed with the one cap, and every server must end up with its share once.

The grid is the session's ten proxied servers (3-of-10, happy 7); extra
client nodes share the first one's convergence secret, over HTTPS and over
Foolscap.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs
import pytest

from tahoe.caps.parse import parse_cap
from tahoe.util import base32

from tests.integration.conftest import DEFAULT_SHARES
from tests.support import webapi
from tests.support.dirapi import cli_directory
from tests.support.grid import Gateway
from tests.support.nodes import TahoeTool, child_env, our_tahoe
from tests.support.processes import ProcessSet
from tests.support.proxied_grid import (ProxiedGrid, create_static_client,
                                        proxy_storage_servers, start_static_client)
from tests.support.proxy import ProxySet
from tests.support.reliability import fault_run
from tests.support.trees import same_trees

#: How many uploads of one content start together.
TOGETHER = 20
UPLOAD_TIMEOUT = 150.0
FAULT_CLASS = "concurrent identical uploads"


@attrs.frozen
class Twins:
    """Client nodes of the session's grid that share one convergence secret."""

    grid: ProxiedGrid
    https: tuple[Gateway, Gateway]
    foolscap: tuple[Gateway, Gateway]
    tool: TahoeTool
    workdir: Path
    processes: ProcessSet


def _twin(tool: TahoeTool, basedir: Path, processes: ProcessSet, grid: ProxiedGrid,
          secret: bytes, servers: Sequence = (), force_foolscap: bool = False) -> Gateway:
    create_static_client(tool, basedir, shares=DEFAULT_SHARES, force_foolscap=force_foolscap)
    (basedir / "private" / "convergence").write_bytes(secret)
    return start_static_client(tool, basedir, processes, servers or grid.servers,
                               shares=DEFAULT_SHARES, create=False)


@pytest.fixture(scope="module")
def twins(local_grid: ProxiedGrid, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twins]:
    """The session's client, a second HTTPS client and two Foolscap clients, one secret."""
    workdir = tmp_path_factory.mktemp("identical-uploads")
    tool = TahoeTool(our_tahoe(), workdir / "logs")
    secret = (local_grid.client.node.basedir / "private" / "convergence").read_bytes()
    with ProcessSet() as processes:
        with ThreadPoolExecutor(3) as pool:
            second, fool1, fool2 = pool.map(
                lambda args: _twin(tool, workdir / args[0], processes, local_grid, secret,
                                   force_foolscap=args[1]),
                [("twin-https", False), ("twin-foolscap1", True), ("twin-foolscap2", True)])
        yield Twins(local_grid, (local_grid.client, second), (fool1, fool2), tool, workdir,
                    processes)


def upload_together(gateways: Sequence[Gateway], data: bytes,
                    count: int = TOGETHER) -> list[str]:
    """``count`` PUTs of ``data`` started at once, dealt round-robin over ``gateways``;
    the caps, in order (an error is raised as it came)."""
    start = threading.Barrier(count)

    def one(i: int) -> str:
        start.wait(30)
        return webapi.upload(gateways[i % len(gateways)].url, data, timeout=UPLOAD_TIMEOUT)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def shares_held(grid: ProxiedGrid, cap: str) -> dict[str, list[int]]:
    """Storage node -> the share numbers it holds of ``cap`` (final shares), and checks
    that none is left in ``incoming/``."""
    si = base32.b2a(parse_cap(cap).storage_index)
    held: dict[str, list[int]] = {}
    for node in grid.storage_nodes:
        shares = Path(node.node.basedir) / "storage" / "shares"
        bucket = shares / si[:2] / si
        held[node.node.name] = sorted(int(n) for n in os.listdir(bucket)) \
            if bucket.is_dir() else []
        incoming = shares / "incoming" / si[:2] / si
        assert not incoming.exists() or not os.listdir(incoming), (node.node.name, incoming)
    return held


def check_stored_once(grid: ProxiedGrid, cap: str) -> None:
    """Every server holds one share of ``cap``, every share number is held once."""
    held = shares_held(grid, cap)
    assert all(len(shnums) == 1 for shnums in held.values()), held
    assert sorted(n for shnums in held.values() for n in shnums) == list(range(10)), held


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.05)


@pytest.mark.parametrize("size", [100_000, 1_000_000, 3_000_000])
def test_one_gateway_coalesces(twins: Twins, size: int) -> None:
    """Twenty uploads of one content through one gateway: one cap, each share stored once."""
    data = os.urandom(size)
    with fault_run(FAULT_CLASS) as run:
        caps = upload_together([twins.https[0]], data)
        assert len(set(caps)) == 1, set(caps)
        check_stored_once(twins.grid, caps[0])
        assert twins.https[0].download(caps[0]) == data
        run.bytes_checked = size


@pytest.mark.parametrize("protocol,size", [("https", 400_000), ("https", 3_000_000),
                                           ("foolscap", 1_000_000)])
def test_two_gateways_wait_for_each_other(twins: Twins, protocol: str, size: int) -> None:
    """Ten uploads of one content through each of two gateways at once: the servers busy
    with the other gateway's upload are waited for, not counted as refusing."""
    gateways = twins.https if protocol == "https" else twins.foolscap
    for _ in range(2):
        data = os.urandom(size)
        with fault_run(FAULT_CLASS) as run:
            caps = upload_together(gateways, data)
            assert len(set(caps)) == 1, set(caps)
            check_stored_once(twins.grid, caps[0])
            assert gateways[1].download(caps[0]) == data
            run.bytes_checked = size


def test_first_upload_killed_while_second_waits(twins: Twins) -> None:
    """A gateway SIGKILLed with its shares in ``incoming/`` on every server: the servers
    drop them when its connections close, and the other gateway's upload of the same
    content, waiting meanwhile, completes."""
    secret = (twins.grid.client.node.basedir / "private" / "convergence").read_bytes()
    data = os.urandom(3_000_000)
    basedir = twins.workdir / "doomed"
    with ProcessSet() as processes, ProxySet() as proxies:
        servers = proxy_storage_servers([n.node.basedir for n in twins.grid.storage_nodes],
                                        proxies)
        doomed = _twin(twins.tool, basedir, processes, twins.grid, secret, servers=servers)
        for server in servers:
            server.proxy.hold_after(200_000)
        first = ThreadPoolExecutor(1)
        first.submit(webapi.upload, doomed.url, data, UPLOAD_TIMEOUT)
        with fault_run(FAULT_CLASS) as run:
            for server in servers:
                server.proxy.wait_for_hold(30)
            si = base32.b2a(parse_cap(twins.https[1].upload(b"probe " * 20)).storage_index)
            assert si  # the grid still takes other uploads
            second = ThreadPoolExecutor(1)
            waiting = second.submit(webapi.upload, twins.https[1].url, data, UPLOAD_TIMEOUT)
            time.sleep(1.5)
            assert not waiting.done(), "the second upload did not wait for the first"
            killed_at = time.monotonic()
            os.kill(doomed.node.process.pid, signal.SIGKILL)
            for server in servers:
                server.proxy.disarm()
            cap = waiting.result(timeout=60)
            run.recover_seconds = time.monotonic() - killed_at
            check_stored_once(twins.grid, cap)
            assert twins.https[0].download(cap) == data
            run.bytes_checked = len(data)
        first.shutdown(wait=True, cancel_futures=True)
        second.shutdown(wait=True)
    shutil.rmtree(basedir, ignore_errors=True)


def duplicate_tree(root: Path, rng: random.Random) -> int:
    """A small tree whose files are copies of a few contents (as licence texts are in
    ``/usr/share/doc``), under odd names and a few levels deep; returns its file count."""
    contents = [rng.randbytes(rng.choice((2_000, 30_000, 200_000, 600_000))) for _ in range(6)]
    count = 0
    for d, directory in enumerate(("", "pkg-a", "pkg-b/doc", "pkg c/ünïcode", "deep/er/still")):
        for i, blob in enumerate(contents):
            path = root / directory / f"copy {d}-{i} (#{rng.randrange(99)}).txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(blob)
            count += 1
    return count


def test_backup_and_cp_of_duplicates_loop(twins: Twins, tmp_path: Path) -> None:
    """``tahoe backup`` and ``tahoe cp -r`` of a tree full of duplicates, new content each
    run, complete every time (20 runs), and ``cp -r`` brings the tree back intact."""
    gateway = twins.https[0]
    cli = cli_directory(tmp_path / "cli", gateway.url, "dup")
    env = child_env()

    def tahoe(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(our_tahoe()), "-d", str(cli), *map(str, args)],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=300, env=env)

    rng = random.Random(25)
    for run_number in range(20):
        tree = tmp_path / f"tree{run_number}"
        files = duplicate_tree(tree, rng)
        with fault_run(FAULT_CLASS) as run:
            backup = tahoe("backup", tree, f"dup:backup{run_number}")
            assert backup.returncode == 0, backup.stdout + backup.stderr
            assert f"{files} files uploaded" in backup.stdout, backup.stdout
            copied = tahoe("cp", "-r", tree, f"dup:cp{run_number}")
            assert copied.returncode == 0, copied.stdout + copied.stderr
            if run_number % 5 == 0:
                back = tmp_path / f"back{run_number}"
                fetched = tahoe("cp", "-r", f"dup:cp{run_number}/{tree.name}", back)
                assert fetched.returncode == 0, fetched.stderr
                assert same_trees(tree, back / tree.name if (back / tree.name).is_dir()
                                  else back)
            run.bytes_checked = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())
        shutil.rmtree(tree)

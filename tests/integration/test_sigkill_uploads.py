"""Storage servers SIGKILLed (the processes, not their proxies) at seeded points of uploads.

Five storage nodes behind proxies, a client 2-of-5 with happiness 4 (so
N - happy = 1).  In each run a seeded number of servers, 0 to 2, is killed
with SIGKILL once its proxy has passed a seeded number of upload bytes.  The
upload succeeds if at most one was killed (and reads back), fails with the
unhappiness error otherwise (a kill that lands after its server closed the share
does not count: the upload may then succeed, with the share kept), within a
bounded time.  The killed nodes are
started again and then, on every server, every final share file is complete
and consistent (``verify_share_without_cap``, the check a server can make):
no partial share is ever served as complete.  Long: ``make test-faults``.
"""
from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from tahoe.caps.parse import parse_cap
from tahoe.immutable.decoder import verify_share_without_cap
from tahoe.storage.disk import open_file
from tahoe.storage.immutable_container import ImmutableContainer
from tahoe.util import base32
from tests.support.grid import in_parallel
from tests.support.nodes import Shares, TahoeTool, our_tahoe
from tests.support.ournodes import finished_shares, incoming_files, start_node
from tests.support.processes import ProcessSet, wait_until
from tests.support.proxied_grid import ProxiedGrid, start_proxied_grid
from tests.support.proxy import ProxySet, TcpProxy
from tests.support.reliability import FaultRun, fault_run, long_schedule, record_limit, seeds
from tests.support.webapi import WebError

SHARES = Shares(needed=2, happy=4, total=5)
UPLOAD_DEADLINE = 120.0


@attrs.define
class KillingGrid:
    """A dedicated grid and what restarting its nodes needs."""

    grid: ProxiedGrid
    tool: TahoeTool
    processes: ProcessSet
    nodes: list  # the running node of each server, replaced on restart


@pytest.fixture(scope="module")
def killing_grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KillingGrid]:
    """Five proxied storage nodes and a 2-of-5 (happy 4) client."""
    workdir = tmp_path_factory.mktemp("sigkill-uploads")
    tool = TahoeTool(our_tahoe(), workdir / "logs")
    with ProcessSet() as processes, ProxySet() as proxies:
        grid = start_proxied_grid(tool, workdir, processes, proxies, storage_nodes=5,
                                  shares=SHARES)
        yield KillingGrid(grid, tool, processes, [g.node for g in grid.storage_nodes])


def _bytes_in(proxy: TcpProxy) -> int:
    return sum(c.c2s_forwarded for c in proxy.connections())


def _kill_when(grid: KillingGrid, index: int, threshold: int, killed: list[int]) -> threading.Thread:
    proxy = grid.grid.proxies[index]
    start = _bytes_in(proxy)

    def watch() -> None:
        try:
            proxy.wait_for(lambda p: _bytes_in(p) - start >= threshold, UPLOAD_DEADLINE,
                           "upload bytes")
        except TimeoutError:
            return
        os.kill(grid.nodes[index].process.pid, signal.SIGKILL)
        killed.append(index)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def _every_final_share_is_whole(grid: KillingGrid, run: FaultRun) -> None:
    for node in grid.nodes:
        storage = Path(node.basedir) / "storage"
        assert incoming_files(storage) == []
        for relative in finished_shares(storage):
            _, si_b32, shnum = relative.split("/")
            with open_file(str(storage / "shares" / relative)) as file:
                container = ImmutableContainer.open(file)
                data = container.read_share_data(0, container.data_length)
            problems = verify_share_without_cap(base32.a2b(si_b32), int(shnum), data)
            assert problems == [], (relative, problems)
            run.checked(data)


def _holders(grid: KillingGrid, cap: str) -> set[int]:
    """The servers holding a final share of ``cap``."""
    si_b32 = base32.b2a(parse_cap(cap).storage_index)  # type: ignore[union-attr]
    return {i for i, node in enumerate(grid.nodes)
            if any(p.startswith(f"{si_b32[:2]}/{si_b32}/")
                   for p in finished_shares(Path(node.basedir) / "storage"))}


@long_schedule
def test_sigkill_during_uploads(killing_grid: KillingGrid) -> None:
    """Seeded SIGKILLs of 0-2 servers mid-upload: success while happiness holds, else a clean
    error; after restarts every final share on every server is whole."""
    grid = killing_grid
    slack = SHARES.total - SHARES.happy
    for seed in seeds(2, base=1340):
        rng = random.Random(seed)
        size = rng.choice([600_000, 2_000_000])
        data = rng.randbytes(size)
        share_size = -(-size // SHARES.needed)
        dying = rng.sample(range(5), rng.randint(0, slack + 1))
        with fault_run("storage servers SIGKILLed mid-upload (processes)") as run:
            killed: list[int] = []
            watchers = [_kill_when(grid, i, rng.randint(10_000, share_size // 2), killed)
                        for i in dying]
            started = time.monotonic()
            cap: str | None = None
            try:
                cap = grid.grid.client.upload(data, timeout=UPLOAD_DEADLINE)
            except WebError as error:
                assert len(killed) > slack, (seed, killed, error.body[:300])
                assert error.status == 500 and "UploadUnhappinessError" in error.body
            else:  # a kill may land after its server closed the share: count the holders
                assert grid.grid.client.download(cap) == data
                run.checked(data)
            assert time.monotonic() - started < UPLOAD_DEADLINE
            for watcher in watchers:
                watcher.join(UPLOAD_DEADLINE)
            for i in set(killed):  # collect the exit status (a zombie still counts as running)
                process = grid.nodes[i].process
                wait_until(lambda: process.returncode is not None, 30, "the killed node")
            with run.timing_recovery():
                restarted = in_parallel([
                    lambda i=i: start_node(grid.tool, Path(grid.nodes[i].basedir),
                                           grid.processes) for i in sorted(set(killed))])
                for i, gateway in zip(sorted(set(killed)), restarted):
                    grid.nodes[i] = gateway.node
                grid.grid.client.wait_for_servers(5, 90)
            _every_final_share_is_whole(grid, run)
            if cap is not None:
                assert len(_holders(grid, cap)) >= SHARES.happy, (seed, killed)
    record_limit("SIGKILLed servers during an upload", f"up to N - happy = {slack}: "
                                                       "the upload succeeds")

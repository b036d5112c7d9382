"""Seeded fault schedules on the session's local grid (10 servers behind proxies, 3-of-10,
happy 7): servers dying mid-upload, and downloads with N - k servers dead, slow or lying.

Uploads: a seeded number of servers is cut off (their proxies reset and then
refuse connections) after a seeded number of bytes.  With at most
N - happy = 3 of them the upload succeeds and the file reads back; with more
it fails with Tahoe's unhappiness error within a bounded time, and no
incomplete share is left (none is ever listed, none stays in ``incoming``).

Downloads: seven of the ten servers misbehave, each in a seeded way: dead, so
slow it stalls, or lying (a flipped byte in a block, in the block hashes, in
the share hashes, in the UEB; a truncated share; another file's share).  The
three honest shares give the right bytes within a bounded time; with eight
misbehaving servers, the right bytes if enough of them are only slow, else a
clean error: never wrong bytes.  The same for mutable files (SDMF, MDMF) whose
shares are changed on disk.
"""
from __future__ import annotations

import http.client
import os
import random
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tahoe.immutable.layout import parse_header
from tahoe.storage.mutable_container import DATA_OFFSET as MUTABLE_DATA_OFFSET
from tahoe.storage.mutable_container import MutableContainer
from tahoe.storage.randomaccess import MemoryFile
from tests.integration.conftest import DEFAULT_SHARES
from tests.integration.test_local_grid import all_servers_back, share_files  # noqa: F401
from tests.support.dirapi import WebAPI
from tests.support.processes import wait_until
from tests.support.proxied_grid import ProxiedGrid
from tests.support.proxy import S2C
from tests.support.reliability import FaultRun, fault_run, record_limit, seeds
from tests.support.webapi import WebError

UPLOAD_DEADLINE = 90.0
DOWNLOAD_DEADLINE = 60.0
SLOW = 3.0  # seconds each way: a server this slow answers only after the honest ones
CONTAINER_HEADER = 12
LEASE_SIZE = 72
LYING = ("block", "block hashes", "share hashes", "UEB", "truncated", "another file's share")


@pytest.fixture
def grid(all_servers_back: ProxiedGrid) -> Iterator[ProxiedGrid]:  # noqa: F811
    """The local grid; afterwards every proxy is fast again (and revived, by the fixture)."""
    yield all_servers_back
    for proxy in all_servers_back.proxies:
        proxy.delay = 0.0


def _no_incoming(grid: ProxiedGrid) -> bool:
    return not [p for n in grid.storage_nodes
                for p in (Path(n.node.basedir) / "storage" / "shares" / "incoming").rglob("*")
                if p.is_file()]


def _revive(grid: ProxiedGrid, run: FaultRun) -> None:
    with run.timing_recovery():
        for proxy in grid.proxies:
            proxy.disarm()
            proxy.revive()
        grid.client.wait_for_servers(len(grid.servers), 60)


def test_servers_dying_mid_upload(grid: ProxiedGrid) -> None:
    """Seeded cuts of 0-5 servers mid-upload: success with <= N - happy dead, else a clean
    unhappiness error; never an incomplete share."""
    slack = DEFAULT_SHARES.total - DEFAULT_SHARES.happy
    for seed in seeds(3, base=1310):
        rng = random.Random(seed)
        size = rng.choice([60_000, 400_000, 1_500_000])
        data = rng.randbytes(size)
        share_size = -(-size // DEFAULT_SHARES.needed)
        dying = rng.sample(range(len(grid.proxies)), rng.randint(0, slack + 2))
        with fault_run("servers dying mid-upload (N - happy or more)") as run:
            for index in dying:
                grid.proxies[index].cut_after(rng.randint(2_000, share_size // 2), kill=True)
            started = time.monotonic()
            try:
                cap = grid.client.upload(data, timeout=UPLOAD_DEADLINE)
            except WebError as error:
                assert len(dying) > slack, (seed, dying, error.status, error.body[:500])
                assert error.status == 500 and "UploadUnhappinessError" in error.body
            else:
                assert len(dying) <= slack, (seed, dying)
                assert grid.client.download(cap) == data
                run.checked(data)
            assert time.monotonic() - started < UPLOAD_DEADLINE
            wait_until(lambda: _no_incoming(grid), 30, "incomplete shares to be removed",
                       ignore=(FileNotFoundError,))
            _revive(grid, run)
    record_limit("upload with servers dying", f"fails cleanly when more than N - happy = "
                                              f"{slack} die; within {UPLOAD_DEADLINE:g} s")


def _lie(path: Path, kind: str, rng: random.Random, other: Path) -> None:
    """Make the share file at ``path`` lie in the way ``kind`` says."""
    if kind == "another file's share":
        shutil.copyfile(other, path)
        return
    raw = bytearray(path.read_bytes())
    share = bytes(raw[CONTAINER_HEADER:])
    layout = parse_header(share)
    region = {"block": (layout.data, layout.plaintext_hash_tree),
              "block hashes": (layout.block_hashes, layout.share_hashes),
              "share hashes": (layout.share_hashes, layout.uri_extension),
              "UEB": (layout.uri_extension + 4,
                      min(layout.uri_extension + 200, len(share) - LEASE_SIZE))}.get(kind)
    if region is None:  # truncated: keep the container's lease at the end
        cut = CONTAINER_HEADER + rng.randint(layout.data, layout.uri_extension)
        path.write_bytes(bytes(raw[:cut]) + bytes(raw[-LEASE_SIZE:]))
        return
    position = CONTAINER_HEADER + rng.randrange(*region)
    raw[position] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(raw))


def _server_of(grid: ProxiedGrid, path: Path) -> int:
    return next(i for i, node in enumerate(grid.storage_nodes)
                if Path(node.node.basedir) in path.parents)


def _fetch(grid: ProxiedGrid, cap: str) -> tuple[int, bytes, bool]:
    """GET the file: status, the bytes received, and whether the body was complete."""
    port = int(grid.client.url.rstrip("/").rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=DOWNLOAD_DEADLINE)
    try:
        connection.request("GET", "/uri/" + cap)
        response = connection.getresponse()
        try:
            return response.status, response.read(), True
        except http.client.IncompleteRead as partial:
            return response.status, partial.partial, False
    finally:
        connection.close()


def _misbehave(grid: ProxiedGrid, cap: str, other_cap: str, bad: int,
               rng: random.Random) -> list[str]:
    """Make ``bad`` servers holding shares of ``cap`` misbehave; return what each does."""
    files = share_files(grid, cap)
    others = {p.name: p for p in share_files(grid, other_cap)}
    chosen = rng.sample(files, bad)
    kinds = []
    for path in chosen:
        kind = rng.choice(("dead", "slow") + LYING)
        index = _server_of(grid, path)
        if kind == "dead":
            grid.proxies[index].kill()
        elif kind == "slow":
            grid.proxies[index].delay = SLOW
        else:
            _lie(path, kind, rng, others[path.name])
        kinds.append(kind)
    return kinds


@pytest.mark.parametrize("bad", [7, 8])
def test_downloads_with_servers_dead_slow_or_lying(grid: ProxiedGrid, bad: int) -> None:
    """N - k misbehaving servers: the right bytes within a bounded time; with one more, the
    right bytes if enough of them are only slow, else a clean error. Never wrong bytes."""
    for seed in seeds(2 if bad == 7 else 1, base=1320 + bad):
        rng = random.Random(seed)
        size = rng.choice([40_000, 300_000, 1_200_000])
        data, other = rng.randbytes(size), rng.randbytes(size)
        cap, other_cap = grid.client.upload(data), grid.client.upload(other)
        kinds = _misbehave(grid, cap, other_cap, bad, rng)
        with fault_run(f"download with {bad} of 10 servers dead/slow/lying") as run:
            started = time.monotonic()
            status, body, complete = _fetch(grid, cap)
            elapsed = time.monotonic() - started
            if status == 200:
                assert body == data[:len(body)], (seed, kinds, "wrong bytes")
            assert elapsed < DOWNLOAD_DEADLINE, (seed, kinds, elapsed)
            good = DEFAULT_SHARES.total - sum(kind != "slow" for kind in kinds)
            if good >= DEFAULT_SHARES.needed:
                assert (status, complete, len(body)) == (200, True, size), (seed, kinds, status)
            if status == 200 and complete:
                run.checked(body)
            for proxy in grid.proxies:
                proxy.delay = 0.0
            _revive(grid, run)
    record_limit("download", f"right bytes from any {DEFAULT_SHARES.needed} honest shares "
                             f"within {DOWNLOAD_DEADLINE:g} s, else an error")


def _flip_mutable(path: Path, rng: random.Random) -> None:
    """Flip one bit of a mutable share file's share data (header, signature, key, blocks)."""
    raw = bytearray(path.read_bytes())
    data_length = MutableContainer.open(MemoryFile(bytes(raw))).data_length
    position = MUTABLE_DATA_OFFSET + rng.randrange(data_length)
    raw[position] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("fmt", ["SDMF", "MDMF"])
def test_mutable_reads_with_lying_servers(grid: ProxiedGrid, fmt: str) -> None:
    """A mutable file with seven of its ten shares changed on disk reads back right (the
    latest version, whole); with eight, right or a clean error, never wrong bytes."""
    api = WebAPI(grid.client.url)
    for seed in seeds(1, base=1330 if fmt == "SDMF" else 1335):
        rng = random.Random(seed)
        data = rng.randbytes(rng.choice([3_000, 200_000]))
        cap = api.create_mutable(data, fmt)
        files = share_files(grid, cap)
        with fault_run(f"mutable read with lying servers ({fmt})") as run:
            for bad, path in enumerate(rng.sample(files, 8), start=1):
                _flip_mutable(path, rng)
                if bad < 7:
                    continue
                answer = api.request("GET", api.object_path(cap))
                if bad == 7:
                    assert answer.status == 200, (seed, answer.status, answer.text[:300])
                if answer.status == 200:
                    assert answer.body == data, (seed, bad, "wrong bytes")
                    run.checked(answer.body)
                else:
                    assert 400 <= answer.status < 600 and answer.body != data


def test_a_failed_download_says_why_each_share_was_dropped(grid: ProxiedGrid) -> None:
    """Eight servers' connections reset while their blocks flow: the download fails, and its
    error names every share it dropped, its server and why (not only the corrupt ones)."""
    data = random.Random(1340).randbytes(3_000_000)  # blocks of about 350 kB: the bulk connection
    cap = grid.client.upload(data)
    cut = sorted({_server_of(grid, path) for path in share_files(grid, cap)})[:8]
    for index in cut:
        grid.proxies[index].cut_after(200_000, direction=S2C, kill=True)
    status, body, _ = _fetch(grid, cap)
    text = body.decode("utf-8", "replace")
    assert status == 410 and text.startswith("NotEnoughSharesError: "), (status, text[:500])
    reasons = re.findall(r"; share (\d) on '([^']+)': (\w+): ", text)
    assert reasons, text
    nicknames = {grid.servers[index].info.nickname for index in cut}
    assert {nickname for _, nickname, _ in reasons} <= nicknames, text
    assert {kind for _, _, kind in reasons} == {"ServerGone"}, text
    assert len(reasons) == len(set(reasons)), text  # each dropped share said once

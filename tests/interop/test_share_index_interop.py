"""Our storage server on share files Tahoe-LAFS 1.20 wrote: the share index is rebuilt from
them, and the file they hold is served and decoded from the index's answers.

The shares of the session's Tahoe grid (an immutable file and a directory, a
mutable file, uploaded by a Tahoe client, plus whatever earlier tests left)
are copied from every Tahoe storage node into one storage directory with no
index, as a node first started on a Tahoe storage directory finds it. The
real lease checker rebuilds the index (collection off); then the server
answers ``get_buckets`` from the index and a Tahoe-written share decodes.
"""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet.task import Clock

from tahoe.caps.immutable import CHKReadCap
from tahoe.caps.parse import parse_cap
from tahoe.immutable.decoder import ShareDecoder
from tahoe.storage.lease_checker import LeaseCheckingCrawler
from tahoe.storage.leases import ExpiryPolicy
from tahoe.storage.paths import storage_index_from_b32
from tahoe.storage.server import StorageServer
from tahoe.storage.share_index import IMMUTABLE, MUTABLE
from tests.integration.storage_fixtures import start_pair, stop_pair
from tests.shell.storage_support import shares_indexed, shares_on_disk
from tests.support import webapi
from tests.support.grid import ClientFactory, Grid

pytestmark = pytest.mark.interop


@pytest_twisted.ensureDeferred
async def test_index_rebuilt_from_a_tahoe_storage_directory(
        tahoe_grid: Grid, tahoe_client: ClientFactory, tmp_path: Path) -> None:
    client = tahoe_client(tahoe_grid.introducer_furl)
    data = random.Random(f"{__name__}-data").randbytes(150_000)
    cap = parse_cap(client.upload(data))
    assert isinstance(cap, CHKReadCap)
    webapi.mkdir(client.url)  # a directory: mutable shares

    storage = tmp_path / "storage"
    for node in tahoe_grid.storage_nodes:
        shutil.copytree(Path(node.node.basedir) / "storage" / "shares", storage / "shares",
                        dirs_exist_ok=True, ignore=shutil.ignore_patterns("incoming"))
    on_disk = shares_on_disk(storage)
    assert {row[0] for row in on_disk.values()} >= {IMMUTABLE, MUTABLE}

    clock = Clock()
    clock.advance(1_800_000_000)
    server = StorageServer(storage, b"\x02" * 20, clock, application_version=b"test")
    try:
        assert not server.index.fresh  # never indexed: rebuilt from the files
        checker = LeaseCheckingCrawler(storage, clock, server.index, ExpiryPolicy("age"),
                                       enabled=False, slow_start=0)
        checker.start()
        clock.advance(checker.first_delay())
        assert server.index.fresh
        assert shares_indexed(server) == on_disk
        assert server.index.index.totals.shares == len(on_disk)
        buckets = {p.name for p in (storage / "shares").glob("??/*")}
        assert server.index.index.totals.buckets == len(buckets)
        for b32 in buckets:
            si = storage_index_from_b32(b32)
            immutable = {n for (s, n), row in on_disk.items() if s == si and row[0] == IMMUTABLE}
            assert set(server.get_buckets(si)) == immutable  # (mutable shares: not buckets)
        assert checker.state["last-cycle-finished"] == 0
        examined = checker.history()["0"]["space-recovered"]["examined-shares"]
        assert examined == len(on_disk)
    finally:
        server.close()

    # a node restarted on it trusts the index, and serves the Tahoe-written shares from it
    pair = await start_pair(storage)
    try:
        assert pair.server.index.fresh
        readers = await pair.rref.callRemote("get_buckets", cap.storage_index)
        shares = {shnum: await reader.callRemote("read", 0, 2 * len(data))
                  for shnum, reader in readers.items()}
        assert len(shares) >= cap.needed
        decoder = ShareDecoder(cap, shares)
        assert b"".join(decoder.read()) == data
        assert decoder.corrupt == {}
    finally:
        await stop_pair(pair)

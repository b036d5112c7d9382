"""Our nodes and Tahoe-LAFS 1.20's in one grid: uploads, introductions both ways, share files.

* A Tahoe 1.20 client uses our introducer and our storage servers
  (``our_grid``) to upload and download, and the shares land in Tahoe's
  on-disk layout (``reference/storage-protocol.md`` §4.1, §4.3).
* Our storage node announces itself through a Tahoe introducer, and a Tahoe
  storage node through ours (§7.2-7.3).
* Our storage server serves shares written by Tahoe 1.20 servers, leases
  included (§4.4, §5).

Our storage node does not join the session's ``tahoe_grid``: a Tahoe
introducer never forgets an announcement, so the stopped node would stay in
that grid's server lists and change what other tests of the session count.
A Tahoe introducer of its own costs about 3 s.
"""
from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_twisted

from tahoe._version import APPLICATION_VERSION
from tahoe.caps.immutable import CHKReadCap
from tahoe.caps.parse import parse_cap
from tahoe.crypto.lease_secrets import ClientLeaseSecrets
from tahoe.immutable.decoder import ShareDecoder, verify_share
from tahoe.storage.containers import open_container
from tahoe.storage.disk import open_file
from tahoe.storage.immutable_container import ImmutableContainer
from tahoe.storage.leases import Lease
from tahoe.storage.paths import prefix_of, storage_index_to_b32
from tahoe.util import base32
from tests.integration.storage_fixtures import start_pair, stop_pair
from tests.support import webapi
from tests.support.grid import (
    SMALL_GRID_SHARES,
    ClientFactory,
    Grid,
    start_introducer,
    start_storage_node,
)
from tests.support.nodes import TahoeTool, our_tahoe
from tests.support.ournodes import (
    create_storage_node,
    finished_shares,
    incoming_files,
    server_id,
    start_node,
    tub_port,
    wait_for_server,
)
from tests.support.processes import ProcessSet, wait_until
from tests.support.tahoe120 import TAHOE120_VERSION

pytestmark = pytest.mark.interop


def read_container(path: Path) -> tuple[ImmutableContainer, bytes, list[Lease]]:
    """An immutable share file's container, share data and leases."""
    with open_file(str(path)) as file:
        container = open_container(file)
        assert isinstance(container, ImmutableContainer), path
        return container, container.read_share_data(0, container.data_length), container.leases()


def si_dir(cap: CHKReadCap) -> str:
    """``<prefix>/<SI base32>``, the directory of a file's shares under ``shares/``."""
    b32 = storage_index_to_b32(cap.storage_index)
    return f"{prefix_of(b32)}/{b32}"


@pytest.fixture(scope="module")
def tahoe_introducer(tahoe120: Path,
                     tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Tahoe 1.20 introducer with no servers of its own; yields its FURL."""
    workdir = tmp_path_factory.mktemp("tahoe120-introducer")
    with ProcessSet() as processes:
        _, furl = start_introducer(TahoeTool(tahoe120, workdir / "logs"),
                                   workdir / "introducer", processes)
        yield furl


def test_tahoe_client_sees_our_servers(our_grid: Grid, tahoe_client: ClientFactory) -> None:
    """A Tahoe client learns our three servers from our introducer and connects (by HTTPS, which
    Tahoe 1.20 shows as "connected")."""
    client = tahoe_client(our_grid.introducer_furl)
    assert client.welcome()["introducers"]["statuses"][0].startswith("Connected to")
    for node in our_grid.storage_nodes:
        basedir = node.node.basedir
        server = wait_for_server(client.url, server_id(basedir), True,
                                 processes=[client.node.process])
        assert server["connection_status"] == "connected"
        assert (server["nickname"], server["version"]) == (basedir.name, APPLICATION_VERSION)


@pytest.mark.parametrize("size", [1000, 3 * 1024 * 1024], ids=["1kB", "3MB"])
def test_tahoe_client_uploads_to_our_servers(our_grid: Grid, tahoe_client: ClientFactory,
                                             size: int) -> None:
    """A Tahoe client uploads to our servers and downloads intact; each holds one valid share."""
    client = tahoe_client(our_grid.introducer_furl)
    ours = {server_id(n.node.basedir) for n in our_grid.storage_nodes}
    # Only our three servers may be connected, or shares could go elsewhere. Servers other
    # tests started are stopped, but a Tahoe client notices over HTTPS only at its next poll.
    wait_until(lambda: {s["nodeid"] for s in webapi.connected_servers(client.welcome())} == ours,
               30, "only our three servers connected")
    storage_dirs = [n.node.basedir / "storage" for n in our_grid.storage_nodes]
    before = [finished_shares(d) for d in storage_dirs]
    data = random.Random(f"{__name__}-{size}").randbytes(size)
    cap_text = client.upload(data)
    cap = parse_cap(cap_text)
    assert isinstance(cap, CHKReadCap), cap_text
    assert (cap.needed, cap.total) == (SMALL_GRID_SHARES.needed, SMALL_GRID_SHARES.total)
    assert client.download(cap_text) == data

    shnums = []
    for storage, old in zip(storage_dirs, before):
        new = finished_shares(storage) - old
        assert len(new) == 1, (storage, new)  # happy = N = 3 servers: one share each
        prefix, si, shnum = new.pop().split("/")
        assert f"{prefix}/{si}" == si_dir(cap) and prefix == si[:2] and len(si) == 26
        shnums.append(int(shnum))
        _, share, leases = read_container(storage / "shares" / prefix / si / shnum)
        assert verify_share(cap, int(shnum), share) == []
        assert len(leases) == 1
        assert incoming_files(storage) == []
    assert sorted(shnums) == [0, 1, 2]


def test_our_server_joins_tahoe_introducer(tahoe_introducer: str, tahoe_client: ClientFactory,
                                           tmp_path: Path) -> None:
    """Our storage node announces through a Tahoe introducer; a Tahoe client connects to it."""
    tool = TahoeTool(our_tahoe(), tmp_path / "logs")
    with ProcessSet() as processes:
        basedir = create_storage_node(tool, tmp_path / "ours", introducer_furl=tahoe_introducer)
        ours = start_node(tool, basedir, processes)
        expected = f"Connected to tcp:127.0.0.1:{tub_port(basedir)} via HTTPS"
        client = tahoe_client(tahoe_introducer, expected_servers=1)
        server = wait_for_server(client.url, server_id(basedir), True,
                                 processes=[ours.node.process, client.node.process])
        assert server["connection_status"] == "connected"
        assert (server["nickname"], server["version"]) == ("ours", APPLICATION_VERSION)
        # Our node subscribed too: the Tahoe introducer sends it its own announcement.
        own = wait_for_server(ours.url, server_id(basedir), True, processes=[ours.node.process])
        assert own["connection_status"] == expected
        assert ours.welcome()["introducers"]["statuses"][0].startswith("Connected to")


def test_tahoe_server_joins_our_introducer(our_grid: Grid, tahoe120: Path,
                                           tmp_path: Path) -> None:
    """A Tahoe storage node announces through our introducer; our node connects to it."""
    ours = our_grid.storage_nodes[0]  # a storage node, and a client like any other
    with ProcessSet() as processes:
        theirs = start_storage_node(TahoeTool(tahoe120, tmp_path / "logs"),
                                    tmp_path / "tahoe-storage", processes,
                                    introducer_furl=our_grid.introducer_furl,
                                    shares=SMALL_GRID_SHARES)
        basedir = theirs.node.basedir
        running = [theirs.node.process, ours.node.process]
        # Both are storage nodes, so each connects to the other: each shows its own connection.
        server = wait_for_server(ours.url, server_id(basedir), True, processes=running)
        assert server["connection_status"] == \
            f"Connected to tcp:127.0.0.1:{tub_port(basedir)} via HTTPS"
        assert (server["nickname"], server["version"]) == ("tahoe-storage", TAHOE120_VERSION)
        # And the Tahoe node hears of our three servers from our introducer.
        for node in our_grid.storage_nodes:
            entry = wait_for_server(theirs.url, server_id(node.node.basedir), True,
                                    processes=running)
            assert entry["connection_status"] == "connected"
    # Stopped now: our_grid's nodes keep listing it, as not connected.


@pytest_twisted.ensureDeferred
async def test_our_server_serves_tahoe_shares(tahoe_grid: Grid, tahoe_client: ClientFactory,
                                              tmp_path: Path) -> None:
    """Shares of two Tahoe servers merged into one directory: ours serves them, leases verify."""
    client = tahoe_client(tahoe_grid.introducer_furl)
    data = random.Random(f"{__name__}-tahoe-shares").randbytes(200_000)
    cap = parse_cap(client.upload(data))
    assert isinstance(cap, CHKReadCap)
    relative = si_dir(cap)
    holders = [n.node.basedir for n in tahoe_grid.storage_nodes
               if any((n.node.basedir / "storage" / "shares" / relative).glob("[0-9]*"))]
    assert len(holders) >= 2, holders
    storage = tmp_path / "storage"
    owner = {}
    for basedir in holders[:2]:
        source = basedir / "storage" / "shares" / relative
        owner.update({int(p.name): basedir for p in source.glob("[0-9]*")})
        shutil.copytree(source, storage / "shares" / relative, dirs_exist_ok=True)
    assert len(owner) == 2  # different share numbers of one storage index
    files = {shnum: storage / "shares" / relative / str(shnum) for shnum in owner}
    assert all(read_container(f)[0].version == 2 for f in files.values())

    pair = await start_pair(storage)
    try:
        async def read_all() -> dict[int, bytes]:
            readers = await pair.rref.callRemote("get_buckets", cap.storage_index)
            assert sorted(readers) == sorted(owner)
            return {shnum: await reader.callRemote("read", 0, 2 * len(data))
                    for shnum, reader in readers.items()}

        shares = await read_all()
        decoder = ShareDecoder(cap, shares)
        assert b"".join(decoder.read()) == data
        assert decoder.corrupt == {}

        # The lease the Tahoe client made on one server's share: renewed, not added.
        lease_secret = base32.a2b((client.node.basedir / "private" / "secret").read_text().strip())
        first, second = sorted(owner)
        seed = base32.a2b((owner[first] / "my_nodeid").read_text().strip())
        right = ClientLeaseSecrets.from_lease_secret(lease_secret).for_server(cap.storage_index,
                                                                              seed)
        [original] = read_container(files[first])[2]
        await pair.rref.callRemote("add_lease", cap.storage_index, right.renew, right.cancel)
        [renewed] = read_container(files[first])[2]
        assert renewed.renew_field == original.renew_field
        assert renewed.expiration >= original.expiration
        assert len(read_container(files[second])[2]) == 2  # not that server's secret

        await pair.rref.callRemote("add_lease", cap.storage_index, b"x" * 32, b"y" * 32)
        assert len(read_container(files[first])[2]) == 2
        assert len(read_container(files[second])[2]) == 3
        assert await read_all() == shares
    finally:
        await stop_pair(pair)

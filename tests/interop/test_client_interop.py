"""Our client on a Tahoe 1.20 grid, and Tahoe 1.20's client on ours: same caps, same bytes."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.grid import SMALL_GRID_SHARES, ClientFactory, Gateway, Grid
from tests.support.nodes import TahoeTool, config_for_tests, edit_tahoe_cfg, our_tahoe
from tests.support.ports import free_port
from tests.support.processes import ProcessSet

pytestmark = pytest.mark.interop

SIZES = [1_000, 3_000_000]


@pytest.fixture(scope="module")
def our_client_on_tahoe_grid(tahoe_grid: Grid, tahoe_client: ClientFactory,
                             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """Our client node joined to the Tahoe grid, sharing the Tahoe client's convergence secret."""
    theirs = tahoe_client(tahoe_grid.introducer_furl)
    workdir = tmp_path_factory.mktemp("our-client-on-tahoe-grid")
    tool = TahoeTool(our_tahoe(), workdir / "logs")
    basedir = workdir / "client"
    tool.create_client(basedir, introducer_furl=tahoe_grid.introducer_furl,
                       shares=SMALL_GRID_SHARES, nickname="ours", web_port=free_port())
    edit_tahoe_cfg(basedir, config_for_tests(storage=False))
    secret = (Path(theirs.node.basedir) / "private" / "convergence").read_bytes()
    (basedir / "private" / "convergence").write_bytes(secret)
    with ProcessSet() as processes:
        node = tool.start(basedir, processes)
        gateway = Gateway(node, node.node_url(30))
        gateway.wait_for_servers(len(tahoe_grid.storage_nodes))
        yield gateway


@pytest.mark.parametrize("size", SIZES)
def test_our_client_on_tahoe_grid(size: int, tahoe_grid: Grid, tahoe_client: ClientFactory,
                                  our_client_on_tahoe_grid: Gateway) -> None:
    """Our upload to Tahoe's servers gives Tahoe's cap, and both clients read it back."""
    data = os.urandom(size)
    theirs = tahoe_client(tahoe_grid.introducer_furl)
    cap = our_client_on_tahoe_grid.upload(data)
    assert cap.startswith("URI:CHK:")
    assert theirs.upload(data) == cap
    assert our_client_on_tahoe_grid.download(cap) == data
    assert theirs.download(cap) == data


@pytest.mark.parametrize("size", SIZES)
def test_tahoe_reads_what_our_client_uploaded_to_our_grid(size: int, our_grid: Grid,
                                                          tahoe_client: ClientFactory) -> None:
    """A Tahoe 1.20 client downloads, intact, a file our client put on our grid."""
    data = os.urandom(size)
    theirs = tahoe_client(our_grid.introducer_furl)
    ours = our_grid.storage_nodes[0]
    cap = ours.upload(data)
    assert theirs.download(cap) == data
    assert ours.download(cap) == data

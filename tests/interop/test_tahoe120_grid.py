"""The interop harness itself, proven with Tahoe-LAFS 1.20 alone."""
from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from tests.support.grid import SMALL_GRID_SHARES, SMALL_GRID_STORAGE_NODES, ClientFactory, Grid

pytestmark = pytest.mark.interop


def test_tahoe120_version(tahoe120: Path) -> None:
    """The installed Tahoe prints tahoe-lafs/1.20.0 for --version."""
    result = subprocess.run([str(tahoe120), "--version"], stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "tahoe-lafs/1.20.0"


@pytest.mark.parametrize("force_foolscap", [False, True], ids=["https", "foolscap"])
def test_tahoe120_grid_connects(tahoe_grid: Grid, tahoe_client: ClientFactory,
                                force_foolscap: bool) -> None:
    """A Tahoe client sees the grid's three storage servers: by HTTPS at its defaults (which
    it shows as "connected"), over Foolscap with ``force_foolscap``."""
    client = tahoe_client(tahoe_grid.introducer_furl, force_foolscap=force_foolscap)
    listing = client.welcome()
    statuses = sorted(server["connection_status"] for server in listing["servers"])
    assert len(statuses) == SMALL_GRID_STORAGE_NODES
    if force_foolscap:
        assert all(s.startswith("Connected to tcp:127.0.0.1:") for s in statuses), statuses
    else:
        assert statuses == ["connected"] * SMALL_GRID_STORAGE_NODES
    nicknames = {server["nickname"] for server in listing["servers"]}
    assert nicknames == {node.node.name for node in tahoe_grid.storage_nodes}
    assert all(server["version"] == "tahoe-lafs/1.20.0" for server in listing["servers"])
    assert listing["introducers"]["statuses"][0].startswith("Connected to")


def share_files(grid: Grid) -> dict[str, set[str]]:
    """Storage node name -> its finished share files, as ``<prefix>/<SI>/<shnum>``."""
    result = {}
    for node in grid.storage_nodes:
        shares = node.node.basedir / "storage" / "shares"
        result[node.node.name] = {str(p.relative_to(shares)) for p in shares.glob("*/*/*")
                                  if p.is_file() and p.parts[-3] != "incoming"}
    return result


@pytest.mark.parametrize("size", [1000, 3 * 1024 * 1024], ids=["1kB", "3MB"])
def test_tahoe120_upload_download(tahoe_grid: Grid, tahoe_client: ClientFactory,
                                  size: int) -> None:
    """A Tahoe client uploads a file to the Tahoe grid and downloads it back intact."""
    data = random.Random(size).randbytes(size)
    client = tahoe_client(tahoe_grid.introducer_furl)
    before = share_files(tahoe_grid)
    cap = client.upload(data)
    assert cap.startswith("URI:CHK:"), cap
    assert cap.split(":")[-3:-1] == [str(SMALL_GRID_SHARES.needed), str(SMALL_GRID_SHARES.total)]
    assert client.download(cap) == data
    new = {name: files - before[name] for name, files in share_files(tahoe_grid).items()}
    # happy = N = number of servers: one new share on each server.
    assert all(len(files) == 1 for files in new.values()), new
    assert len({f.rsplit("/", 1)[0] for files in new.values() for f in files}) == 1, new

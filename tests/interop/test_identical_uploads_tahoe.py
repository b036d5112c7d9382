"""Uploads of one content at once through two of our gateways, to Tahoe 1.20's servers.

A Tahoe 1.20 server answers an allocation for a share another upload is
still writing as ours does, with neither "already have" nor "allocated";
our uploader must wait for that upload and ask again there too
(``tests/integration/test_identical_uploads.py`` has the same on our grid).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_identical_uploads import FAULT_CLASS, shares_held, upload_together
from tests.support.grid import SMALL_GRID_SHARES, Gateway, Grid
from tests.support.nodes import TahoeTool, config_for_tests, edit_tahoe_cfg, our_tahoe
from tests.support.ports import free_port
from tests.support.processes import ProcessSet
from tests.support.reliability import fault_run

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def our_pairs(tahoe_grid: Grid, our_client_on_tahoe_grid: Gateway,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[Gateway]]]:
    """Protocol -> two of our clients on the Tahoe grid with one convergence secret."""
    workdir = tmp_path_factory.mktemp("identical-uploads-tahoe")
    tool = TahoeTool(our_tahoe(), workdir / "logs")
    secret = (Path(our_client_on_tahoe_grid.node.basedir) / "private" / "convergence").read_bytes()
    with ProcessSet() as processes:
        def start(name: str, force_foolscap: bool) -> Gateway:
            basedir = workdir / name
            tool.create_client(basedir, introducer_furl=tahoe_grid.introducer_furl,
                               shares=SMALL_GRID_SHARES, nickname=name, web_port=free_port())
            edit_tahoe_cfg(basedir, config_for_tests(storage=False,
                                                     force_foolscap=force_foolscap))
            (basedir / "private" / "convergence").write_bytes(secret)
            node = tool.start(basedir, processes)
            gateway = Gateway(node, node.node_url(30))
            gateway.wait_for_servers(len(tahoe_grid.storage_nodes))
            return gateway
        yield {"https": [our_client_on_tahoe_grid, start("ours-https2", False)],
               "foolscap": [start("ours-foolscap1", True), start("ours-foolscap2", True)]}


@pytest.mark.parametrize("protocol,size", [("https", 1_000_000), ("foolscap", 400_000)])
def test_two_of_our_gateways_on_tahoe_servers(tahoe_grid: Grid, our_pairs: dict[str, list[Gateway]],
                                              protocol: str, size: int) -> None:
    """Twenty uploads through two gateways at once: one cap, each Tahoe server holds its
    share once."""
    gateways = our_pairs[protocol]
    data = os.urandom(size)
    with fault_run(FAULT_CLASS) as run:
        caps = upload_together(gateways, data)
        assert len(set(caps)) == 1, set(caps)
        held = shares_held(tahoe_grid, caps[0])  # type: ignore[arg-type]
        assert sorted(n for shnums in held.values() for n in shnums) == [0, 1, 2], held
        assert gateways[1].download(caps[0]) == data
        run.bytes_checked = size

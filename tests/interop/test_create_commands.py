"""The node-creation and run commands, as a script would use them, for both implementations.

The same sequence runs against Tahoe-LAFS 1.20's ``tahoe`` and ours:
create-introducer and run it (its FURL exists only once it runs), then
create-node three times with ``--hostname=127.0.0.1 --webport=… --introducer=…``,
create-client, ``tahoe run --allow-stdin-close`` each with stdin from
/dev/null, and check that the client sees the three storage servers.

Edits to the generated ``tahoe.cfg`` files, all made the same way for both
implementations: ``reserved_space = 1M`` (see
:func:`tests.support.nodes.config_for_tests`), and ``tub.port`` bound to
127.0.0.1 (``--hostname`` makes it listen on every interface).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import webapi
from tests.support.grid import SMALL_GRID_SHARES, in_parallel
from tests.support.nodes import (
    RunningNode,
    TahoeTool,
    bind_tub_to_loopback,
    config_for_tests,
    edit_tahoe_cfg,
    our_tahoe,
    read_tahoe_cfg,
)
from tests.support.ports import free_port
from tests.support.processes import ProcessSet

pytestmark = pytest.mark.interop

STORAGE_NODES = 3
SHARES = SMALL_GRID_SHARES
CONNECT_TIMEOUT = 60.0


@pytest.fixture(params=["tahoe120", "ours"])
def tahoe_exe(request: pytest.FixtureRequest) -> Path:
    """The ``tahoe`` under test: Tahoe-LAFS 1.20's, or this project's."""
    if request.param == "tahoe120":
        exe: Path = request.getfixturevalue("tahoe120")
        return exe
    return our_tahoe()


def test_create_and_run_small_grid(tahoe_exe: Path, tmp_path: Path,
                                   processes: ProcessSet) -> None:
    """Nodes made by create-introducer, create-node and create-client run and find each other."""
    tool = TahoeTool(tahoe_exe, tmp_path / "logs")

    introducer_dir = tmp_path / "introducer"
    tool.create_introducer(introducer_dir, port=free_port())
    assert (introducer_dir / "tahoe.cfg").is_file()
    introducer = tool.start(introducer_dir, processes)
    furl = introducer.introducer_furl()
    assert furl.startswith("pb://")

    # create-node x3 and create-client, side by side (each costs Tahoe about 1 s of start-up).
    storage_dirs = [tmp_path / f"storage{i}" for i in range(1, STORAGE_NODES + 1)]
    client_dir = tmp_path / "client"
    in_parallel([
        *((lambda d=d: tool.create_node(d, introducer_furl=furl, shares=SHARES, nickname=d.name,
                                        web_port=free_port(), hostname="127.0.0.1"))
          for d in storage_dirs),
        lambda: tool.create_client(client_dir, introducer_furl=furl, shares=SHARES,
                                   nickname="client", web_port=free_port()),
    ])

    for d in storage_dirs:
        config = read_tahoe_cfg(d)
        assert config.get("node", "tub.location").startswith("tcp:127.0.0.1:")
        assert config.get("client", "shares.happy") == str(SHARES.happy)
        assert furl in (d / "private" / "introducers.yaml").read_text()
        bind_tub_to_loopback(d)
        edit_tahoe_cfg(d, config_for_tests(storage=True))
    assert read_tahoe_cfg(client_dir).get("node", "tub.port") == "disabled"
    edit_tahoe_cfg(client_dir, config_for_tests(storage=False))

    nodes: list[RunningNode] = [tool.start(d, processes) for d in [*storage_dirs, client_dir]]
    urls = [node.node_url() for node in nodes]
    assert all(url.startswith("http://127.0.0.1:") for url in urls)

    client = nodes[-1]
    servers = webapi.wait_for_connected_servers(urls[-1], STORAGE_NODES, CONNECT_TIMEOUT,
                                                processes=[introducer.process,
                                                           *(n.process for n in nodes)])
    # Tahoe 1.20 says "connected" of an HTTPS server; we say "Connected to tcp:HOST:PORT via HTTPS".
    assert all(s["connection_status"].lower().startswith("connected") for s in servers), servers
    assert {s["nickname"] for s in servers} == {d.name for d in storage_dirs}
    listing = webapi.welcome(urls[-1])
    assert len(listing["servers"]) == STORAGE_NODES
    assert listing["introducers"]["statuses"][0].startswith("Connected to")
    assert client.process.is_running()

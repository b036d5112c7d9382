"""Fixtures for interoperability tests against the real Tahoe-LAFS 1.20.

Tahoe-LAFS 1.20.0 is installed (once per machine) under
``~/.cache/tahoe-lafs-py/tahoe-1.20.0`` by ``misc/interop/install-tahoe-1.20.sh``
and is only ever run as a separate program.  Its CLI costs about 1.4 s a call,
so the Tahoe grid is started once per session and shared.

Fixtures:

* ``tahoe120`` (session): ``Path`` of Tahoe 1.20's ``tahoe`` executable.
* ``tahoe_grid`` (session): a :class:`~tests.support.grid.Grid` of Tahoe 1.20
  nodes: an introducer and 3 storage nodes, all on 127.0.0.1, at their
  defaults (Foolscap and HTTPS on one port, NURLs announced), except that
  the storage nodes' own client sides use Foolscap (a Tahoe 1.20 HTTPS
  client asks every server's version each second: 2 % of a core per node for
  the whole session, against 0.3 %; the tests' clients are separate nodes), with
  ``reserved_space = 1M`` and shares k=2, happy=3, N=3
  (``SMALL_GRID_SHARES``): every upload puts one share on each server (a
  server that refuses shares fails the upload) and any two servers can serve
  a download.
* ``tahoe_client`` (session): a factory
  ``tahoe_client(introducer_furl, *, expected_servers=3, shares=SMALL_GRID_SHARES,
  force_foolscap=False, reuse=True) -> Gateway`` that starts a Tahoe 1.20
  client node (``create-client``) for any introducer and returns once it sees
  ``expected_servers`` connected servers.  With ``reuse`` a client already
  started with the same arguments is returned instead of a new one.  Clients
  are stopped at the end of the session.
* ``our_grid`` (session): the same kind of :class:`~tests.support.grid.Grid`
  (introducer, 3 storage nodes, ``SMALL_GRID_SHARES``), made of our nodes
  (``.venv/bin/tahoe``), for Tahoe 1.20 clients and servers to join.  Its
  servers may come to list servers that tests started and stopped (an
  introducer never forgets an announcement): count connected ones.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.grid import (
    SMALL_GRID_SHARES,
    SMALL_GRID_STORAGE_NODES,
    ClientFactory,
    Gateway,
    Grid,
    start_client,
    start_grid,
)
from tests.support.nodes import Shares, TahoeTool, config_for_tests, edit_tahoe_cfg, our_tahoe
from tests.support.ports import free_port
from tests.support.processes import ProcessSet
from tests.support.tahoe120 import ensure_tahoe120


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``interop`` marker."""
    config.addinivalue_line(
        "markers",
        "interop: runs real Tahoe-LAFS 1.20 and/or our nodes as separate programs on 127.0.0.1",
    )


@pytest.fixture(scope="session")
def tahoe120() -> Path:
    """The Tahoe-LAFS 1.20.0 ``tahoe`` executable, installed under ~/.cache if missing."""
    return ensure_tahoe120()


@pytest.fixture(scope="session")
def tahoe_grid(tahoe120: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Grid]:
    """A Tahoe 1.20 introducer and 3 storage nodes, shared by the session."""
    workdir = tmp_path_factory.mktemp("tahoe120-grid")
    with ProcessSet() as processes:
        yield start_grid(TahoeTool(tahoe120, workdir / "logs"), workdir, processes,
                         storage_nodes=SMALL_GRID_STORAGE_NODES, shares=SMALL_GRID_SHARES,
                         storage_clients_foolscap=True)


@pytest.fixture(scope="session")
def our_grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Grid]:
    """Our introducer and 3 of our storage nodes, shared by the session."""
    workdir = tmp_path_factory.mktemp("our-grid")
    with ProcessSet() as processes:
        yield start_grid(TahoeTool(our_tahoe(), workdir / "logs"), workdir, processes,
                         storage_nodes=SMALL_GRID_STORAGE_NODES, shares=SMALL_GRID_SHARES)


@pytest.fixture(scope="session")
def tahoe_client(tahoe120: Path,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClientFactory]:
    """Factory: start a Tahoe 1.20 client node joined to a given introducer."""
    workdir = tmp_path_factory.mktemp("tahoe120-clients")
    tool = TahoeTool(tahoe120, workdir / "logs")
    numbers = itertools.count(1)
    started: dict[tuple[object, ...], Gateway] = {}

    with ProcessSet() as processes:
        def start(introducer_furl: str, *, expected_servers: int = SMALL_GRID_STORAGE_NODES,
                  shares: Shares = SMALL_GRID_SHARES, force_foolscap: bool = False,
                  reuse: bool = True) -> Gateway:
            key = (introducer_furl, expected_servers, shares, force_foolscap)
            if reuse and key in started and started[key].node.process.is_running():
                return started[key]
            gateway = start_client(tool, workdir / f"client{next(numbers)}", processes,
                                   introducer_furl=introducer_furl, shares=shares,
                                   expected_servers=expected_servers,
                                   force_foolscap=force_foolscap)
            started[key] = gateway
            return gateway

        yield start


@pytest.fixture(scope="session")
def our_client_on_tahoe_grid(tahoe_grid: Grid, tahoe_client: ClientFactory,
                             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """Our client node joined to the Tahoe grid (shared by the session), with the Tahoe
    client's convergence secret, so both give a file the same cap."""
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

"""A session-wide local grid of our own nodes: 10 storage servers, each behind a test proxy.

The client (3-of-10, happy 7, the defaults) reaches every server only
through a :class:`~tests.support.proxy.TcpProxy`, so tests can delay a
server, cut its connection after a number of bytes, or make it look dead,
deterministically, and then revive it.
"""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.nodes import Shares, TahoeTool, our_tahoe
from tests.support.processes import ProcessSet
from tests.support.proxied_grid import ProxiedGrid, start_proxied_grid
from tests.support.proxy import ProxySet

DEFAULT_SHARES = Shares(3, 7, 10)


@pytest.fixture(scope="session")
def local_grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxiedGrid]:
    """Ten of our storage nodes behind proxies and one client gateway, for the whole session."""
    workdir = tmp_path_factory.mktemp("local-grid")
    with ProcessSet() as processes, ProxySet() as proxies:
        yield start_proxied_grid(TahoeTool(our_tahoe(), workdir / "logs"), workdir, processes,
                                 proxies, storage_nodes=10, shares=DEFAULT_SHARES)

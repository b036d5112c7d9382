"""Small grids of nodes on 127.0.0.1 for tests: an introducer, storage nodes, clients.

Generic over the ``tahoe`` executable (:class:`tests.support.nodes.TahoeTool`),
so the same code starts a Tahoe-LAFS 1.20 grid or one of ours, and clients of
either kind can join either grid.  Every process started is added to the
caller's :class:`tests.support.processes.ProcessSet`, which stops them by PID.
"""
from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, TypeVar

import attrs

from tests.support import webapi
from tests.support.nodes import (
    NODE_START_TIMEOUT,
    RunningNode,
    Shares,
    TahoeTool,
    config_for_tests,
    edit_tahoe_cfg,
)
from tests.support.ports import free_port
from tests.support.processes import ProcessSet

__all__ = ["ClientFactory", "Gateway", "Grid", "SMALL_GRID_SHARES", "SMALL_GRID_STORAGE_NODES",
           "in_parallel", "start_client", "start_grid", "start_introducer", "start_storage_node"]

T = TypeVar("T")

# Seconds for a new client to see every server of a small grid (about 1 s here).
CONNECT_TIMEOUT = 60.0

# The shared test grids: 3 storage servers, k=2, happy=3, N=3.  Every upload
# puts one share on each server (so a server that refuses shares fails the
# upload) and any two servers can serve a download.
SMALL_GRID_STORAGE_NODES = 3
SMALL_GRID_SHARES = Shares(needed=2, happy=3, total=3)


@attrs.frozen
class Gateway:
    """A running node with a web gateway: a client, or a storage node (which is a client too).

    :ivar node: the running node.
    :ivar url: its gateway's base URL, ``http://127.0.0.1:PORT/``.
    """

    node: RunningNode
    url: str

    def welcome(self) -> dict[str, Any]:
        """``GET /?t=json``."""
        return webapi.welcome(self.url)

    def wait_for_servers(self, count: int,
                         timeout: float = CONNECT_TIMEOUT) -> list[dict[str, Any]]:
        """Wait until ``count`` storage servers are connected; return their listings."""
        return webapi.wait_for_connected_servers(self.url, count, timeout,
                                                 processes=[self.node.process])

    def upload(self, data: bytes, timeout: float = webapi.HTTP_TIMEOUT) -> str:
        """``PUT /uri``: upload an unlinked immutable file, return its cap."""
        return webapi.upload(self.url, data, timeout)

    def download(self, cap: str, timeout: float = webapi.HTTP_TIMEOUT) -> bytes:
        """``GET /uri/<cap>``: the file's contents."""
        return webapi.download(self.url, cap, timeout)


@attrs.frozen
class Grid:
    """An introducer and storage nodes, all running.

    :ivar introducer_furl: what clients put in ``--introducer``.
    :ivar shares: the encoding settings the storage nodes' own clients use;
        suitable for clients of this grid.
    :ivar timings: seconds spent in each setup step (for reports).
    """

    tool: TahoeTool
    introducer: RunningNode
    introducer_furl: str
    storage_nodes: tuple[Gateway, ...]
    shares: Shares
    timings: dict[str, float]


class ClientFactory(Protocol):
    """Starts a client node joined to an introducer (e.g. the ``tahoe_client`` fixture)."""

    def __call__(self, introducer_furl: str, *, expected_servers: int = ...,
                 shares: Shares = ..., force_foolscap: bool = ..., reuse: bool = ...) -> Gateway:
        """Start (or, with ``reuse``, return an already started) client; return once it sees
        ``expected_servers`` connected storage servers."""


def in_parallel(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Run the calls in threads (each mostly waits on a subprocess); return their results in order.

    Re-raises the first exception.  Tahoe's CLI spends about 1.4 s starting
    Python, so three ``create-node`` calls take 2 s instead of 4 s on 2 cores.
    """
    if len(calls) <= 1:
        return [call() for call in calls]
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = [pool.submit(call) for call in calls]
        return [future.result() for future in futures]


def start_introducer(tool: TahoeTool, basedir: Path, processes: ProcessSet,
                     timeout: float = NODE_START_TIMEOUT) -> tuple[RunningNode, str]:
    """Create and run an introducer on a free 127.0.0.1 port; return it and its FURL."""
    tool.create_introducer(basedir, port=free_port())
    node = tool.start(basedir, processes)
    return node, node.introducer_furl(timeout)


def start_storage_node(tool: TahoeTool, basedir: Path, processes: ProcessSet, *,
                       introducer_furl: str, shares: Shares, force_foolscap: bool = False,
                       client_foolscap: bool = False,
                       timeout: float = NODE_START_TIMEOUT) -> Gateway:
    """Create (``create-node``, nickname = directory name), configure and run a storage node.

    Its tub and web port listen on 127.0.0.1 only; see
    :func:`tests.support.nodes.config_for_tests` for the ``tahoe.cfg`` edits.
    Returns once its ``node.url`` exists.
    """
    tool.create_node(basedir, introducer_furl=introducer_furl, shares=shares,
                     nickname=basedir.name, web_port=free_port(), tub_port=free_port())
    edit_tahoe_cfg(basedir, config_for_tests(storage=True, force_foolscap=force_foolscap,
                                             client_foolscap=client_foolscap))
    node = tool.start(basedir, processes)
    return Gateway(node, node.node_url(timeout))


def start_client(tool: TahoeTool, basedir: Path, processes: ProcessSet, *,
                 introducer_furl: str, shares: Shares, expected_servers: int,
                 force_foolscap: bool = False, timeout: float = CONNECT_TIMEOUT) -> Gateway:
    """Create (``create-client``) and run a client; return once it sees ``expected_servers``."""
    tool.create_client(basedir, introducer_furl=introducer_furl, shares=shares,
                       nickname=basedir.name, web_port=free_port())
    edit_tahoe_cfg(basedir, config_for_tests(storage=False, force_foolscap=force_foolscap))
    node = tool.start(basedir, processes)
    gateway = Gateway(node, node.node_url(timeout))
    gateway.wait_for_servers(expected_servers, timeout)
    return gateway


def start_grid(tool: TahoeTool, workdir: Path, processes: ProcessSet, *, storage_nodes: int,
               shares: Shares, force_foolscap: bool = False,
               storage_clients_foolscap: bool = False) -> Grid:
    """Start an introducer and ``storage_nodes`` storage nodes under ``workdir``.

    ``storage_clients_foolscap``: the storage nodes' own clients use Foolscap
    (``client_foolscap`` of :func:`tests.support.nodes.config_for_tests`).

    Node directories are ``workdir/introducer`` and ``workdir/storage<i>``.
    Returns once every storage node's gateway is up and sees every server,
    so a client that joins next finds them all announced.
    """
    timings: dict[str, float] = {}
    started = time.monotonic()
    introducer, furl = start_introducer(tool, workdir / "introducer", processes)
    timings["introducer"] = time.monotonic() - started

    started = time.monotonic()
    nodes = in_parallel([
        functools.partial(start_storage_node, tool, workdir / f"storage{i}", processes,
                          introducer_furl=furl, shares=shares, force_foolscap=force_foolscap,
                          client_foolscap=storage_clients_foolscap)
        for i in range(1, storage_nodes + 1)
    ])
    timings["storage_nodes"] = time.monotonic() - started

    started = time.monotonic()
    for node in nodes:
        node.wait_for_servers(storage_nodes)
    timings["connections"] = time.monotonic() - started
    return Grid(tool, introducer, furl, tuple(nodes), shares, timings)

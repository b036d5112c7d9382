"""Local grids for the benchmark, for either implementation, through the ``tahoe`` CLI.

Built on the test helpers (:mod:`tests.support.nodes`, :mod:`tests.support.grid`,
:mod:`tests.support.proxied_grid`), which drive Tahoe-LAFS 1.20 and our
``tahoe`` the same way: ``create-introducer``/``create-node``/``create-client``
and ``tahoe run --allow-stdin-close``, every port on 127.0.0.1, every
process stopped by its PID.  What the benchmark adds:

* extra ``tahoe.cfg`` settings per grid or per client (``[storage]
  debug_discard``, ``[client] shares._max_immutable_segment_size_for_testing``,
  ``force_foolscap``);
* the PIDs of the node processes, for memory and CPU;
* a client reaching the grid's storage servers through delay proxies.
"""
from __future__ import annotations

import functools
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bench_proc import node_pid, wait_quiet
from tests.support import webapi
from tests.support.grid import in_parallel, start_introducer
from tests.support.nodes import RunningNode, Shares, TahoeTool, config_for_tests, edit_tahoe_cfg
from tests.support.ports import free_port
from tests.support.processes import ProcessSet
from tests.support.proxied_grid import ProxiedServer, proxy_storage_servers, start_static_client
from tests.support.proxy import ProxySet

__all__ = ["BenchGrid", "BenchNode", "Settings", "merge_config"]

Settings = Mapping[str, Mapping[str, str | None]]

#: Seconds for a node to start, or a client to see every server (Tahoe on a loaded machine).
START_TIMEOUT = 180.0


def merge_config(*layers: Settings) -> dict[str, dict[str, str | None]]:
    """Merge ``tahoe.cfg`` changes section by section (later layers win)."""
    merged: dict[str, dict[str, str | None]] = {}
    for layer in layers:
        for section, keys in layer.items():
            merged.setdefault(section, {}).update(keys)
    return merged


@dataclass
class BenchNode:
    """A running node: its directory, its process, its gateway URL (if any)."""

    running: RunningNode
    url: str | None = None

    @property
    def basedir(self) -> Path:
        """The node directory."""
        return self.running.basedir

    @property
    def pid(self) -> int:
        """The node's PID (``running.process``, else the ``tahoe run`` process)."""
        return node_pid(self.basedir, self.running.process.pid)

    def stop(self) -> None:
        """Stop the node by its PID."""
        self.running.stop()


@dataclass
class BenchGrid:
    """An introducer and storage nodes (one implementation), and clients started on demand.

    :param tool: the ``tahoe`` executable to drive.
    :param workdir: where node directories go (``introducer``, ``storage<i>``, clients).
    :param processes: receives every process (and stops them).
    :param storage_nodes: how many storage servers.
    :param shares: k/happy/N for the clients.
    :param server_foolscap: whether the storage nodes set ``force_foolscap``
        (Tahoe's then announce Foolscap only; without it they also offer HTTPS).
    :param storage_settings: more ``tahoe.cfg`` changes for the storage nodes.
    """

    tool: TahoeTool
    workdir: Path
    processes: ProcessSet
    storage_nodes: int
    shares: Shares
    server_foolscap: bool = False
    storage_settings: Settings = field(default_factory=dict)
    introducer: RunningNode | None = None
    introducer_furl: str = ""
    servers: list[BenchNode] = field(default_factory=list)
    clients: list[BenchNode] = field(default_factory=list)

    def start(self) -> None:
        """Start the introducer, then every storage node at once; return when all serve."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.introducer, self.introducer_furl = start_introducer(
            self.tool, self.workdir / "introducer", self.processes, timeout=START_TIMEOUT)
        self.servers = in_parallel([
            functools.partial(self._start_storage, self.workdir / f"storage{i}")
            for i in range(1, self.storage_nodes + 1)])

    def _start_storage(self, basedir: Path) -> BenchNode:
        self.tool.create_node(basedir, introducer_furl=self.introducer_furl, shares=self.shares,
                              nickname=basedir.name, web_port=free_port(), tub_port=free_port())
        edit_tahoe_cfg(basedir, merge_config(
            config_for_tests(storage=True, force_foolscap=self.server_foolscap),
            self.storage_settings))
        running = self.tool.start(basedir, self.processes)
        return BenchNode(running, running.node_url(START_TIMEOUT))

    def start_client(self, name: str, *, force_foolscap: bool = False,
                     settings: Settings | None = None) -> BenchNode:
        """Create and run a client ``workdir/name``; return once it sees every storage server.

        :param force_foolscap: ``[client] force_foolscap`` (for Tahoe: False
            means its default, HTTPS storage where the servers offer it).
        :param settings: more ``tahoe.cfg`` changes.
        """
        basedir = self.workdir / name
        self.tool.create_client(basedir, introducer_furl=self.introducer_furl,
                                shares=self.shares, nickname=name, web_port=free_port())
        edit_tahoe_cfg(basedir, merge_config(
            config_for_tests(storage=False, force_foolscap=force_foolscap), settings or {}))
        running = self.tool.start(basedir, self.processes)
        node = BenchNode(running, running.node_url(START_TIMEOUT))
        self.clients.append(node)
        webapi.wait_for_connected_servers(node.url or "", self.storage_nodes, START_TIMEOUT,
                                          processes=[running.process])
        return node

    def start_proxied_client(self, name: str, proxies: ProxySet,
                             delay: float) -> tuple[BenchNode, list[ProxiedServer]]:
        """A client that knows the storage servers only through delay proxies (``servers.yaml``).

        The client has no introducer. Its ``servers.yaml`` lists the servers'
        FURLs, and their NURLs too unless the servers are Foolscap-only, all
        pointing at the proxies.
        """
        servers = proxy_storage_servers([node.basedir for node in self.servers], proxies,
                                        delay=delay,
                                        processes=[n.running.process for n in self.servers],
                                        https=not self.server_foolscap)
        gateway = start_static_client(self.tool, self.workdir / name, self.processes, servers,
                                      shares=self.shares, timeout=START_TIMEOUT)
        node = BenchNode(gateway.node, gateway.url)
        self.clients.append(node)
        return node, servers

    def pids(self) -> list[int]:
        """PIDs of the introducer and the storage nodes."""
        pids = [node.pid for node in self.servers]
        if self.introducer is not None:
            pids.insert(0, node_pid(self.introducer.basedir, self.introducer.process.pid))
        return pids

    def process_roots(self) -> dict[str, list[int]]:
        """Every running node of the grid by name (``introducer``, ``storage3``, ``client``...):
        its ``tahoe run`` process and the PID in its ``running.process``, the roots of its
        process tree (for CPU accounting and freezing)."""
        roots: dict[str, list[int]] = {}
        if self.introducer is not None and self.introducer.process.is_running():
            process = self.introducer.process
            roots["introducer"] = sorted({process.pid,
                                          node_pid(self.introducer.basedir, process.pid)})
        for node in self.servers + self.clients:
            if node.running.process.is_running():
                roots[node.basedir.name] = sorted({node.running.process.pid, node.pid})
        return roots

    def settle(self, timeout: float = 20.0) -> float:
        """Wait (with a deadline) until every node of the grid is nearly idle; seconds waited."""
        clients = [c.pid for c in self.clients if c.running.process.is_running()]
        return wait_quiet(self.pids() + clients, timeout=timeout)

    def stop(self, remove: bool = True) -> None:
        """Stop every node of this grid, clients first, by PID (and remove its directory)."""
        for node in reversed(self.clients + self.servers):
            node.stop()
        if self.introducer is not None:
            self.introducer.stop()
        if remove:
            shutil.rmtree(self.workdir, ignore_errors=True)

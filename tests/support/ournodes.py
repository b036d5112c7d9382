"""Helpers for tests that run nodes as separate programs and look inside their directories.

Generic over the ``tahoe`` executable like :mod:`tests.support.nodes` (most
helpers are used on our nodes, some on Tahoe 1.20's): create a storage node
with or without an introducer, (re)start a node and wait until it serves
again, read its identity files (``node.pubkey``, ``permutation-seed``,
``private/storage.furl``), write a client's ``private/servers.yaml``, list the
share files of a storage directory, and follow a server's connection status
on a gateway's ``GET /?t=json``.  Facts: ``reference/frontends.md`` §1.1,
§1.6 and ``reference/storage-protocol.md`` §4.1-4.2, §7.3, §7.7.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from tests.support import webapi
from tests.support.grid import SMALL_GRID_SHARES, Gateway
from tests.support.nodes import (
    NODE_START_TIMEOUT,
    Shares,
    TahoeTool,
    config_for_tests,
    edit_tahoe_cfg,
    read_tahoe_cfg,
)
from tests.support.ports import free_port
from tests.support.processes import ManagedProcess, ProcessSet, wait_until
from tests.support.proxied_grid import read_storage_server

__all__ = [
    "create_storage_node",
    "finished_shares",
    "incoming_files",
    "server_entry",
    "server_id",
    "start_node",
    "static_server_entry",
    "storage_furl",
    "tub_port",
    "wait_for_server",
    "write_servers_yaml",
]

# Seconds a client may take to notice that a server went away or came back.
# Foolscap's reconnector retries 1 s after a loss, then after 2.7 s, 7.4 s, …
STATUS_TIMEOUT = 60.0


def create_storage_node(tool: TahoeTool, basedir: Path, *, introducer_furl: str | None = None,
                        shares: Shares = SMALL_GRID_SHARES, reserved_space: str = "1M",
                        force_foolscap: bool = False) -> Path:
    """``tahoe create-node`` listening on 127.0.0.1 only, with the test ``tahoe.cfg`` edits.

    The Tub port is a free one below the ephemeral range (``--port``/``--location``
    rather than ``--hostname``, whose port the kernel might hand out to someone
    else while the node is down between a stop and a restart).

    :param introducer_furl: None for a node without an introducer.
    :param reserved_space: ``[storage]reserved_space``.
    """
    tool.create_node(basedir, introducer_furl=introducer_furl, shares=shares,
                     nickname=basedir.name, web_port=free_port(), tub_port=free_port())
    edit_tahoe_cfg(basedir, config_for_tests(storage=True, force_foolscap=force_foolscap,
                                             reserved_space=reserved_space))
    return basedir


def start_node(tool: TahoeTool, basedir: Path, processes: ProcessSet,
               timeout: float = NODE_START_TIMEOUT) -> Gateway:
    """Run (or run again) a node with a gateway; return once it serves.

    ``node.url`` is removed first: a node writes it only once its Tub listens
    and its services are registered, but a stopped node leaves the old file
    behind, so waiting for the file means something only if it was gone.
    """
    (basedir / "node.url").unlink(missing_ok=True)
    node = tool.start(basedir, processes)
    return Gateway(node, node.node_url(timeout))


def storage_furl(basedir: Path) -> str:
    """The storage server's FURL, from ``private/storage.furl`` (written at first start)."""
    return (basedir / "private" / "storage.furl").read_text().strip()


def tub_port(basedir: Path) -> int:
    """The TCP port of ``[node]tub.port`` (``tcp:N`` or ``tcp:N:interface=…``)."""
    value = read_tahoe_cfg(basedir).get("node", "tub.port")
    return int(value.split(":")[1])


def server_id(basedir: Path) -> str:
    """The node's server id, ``v0-`` + the base32 key of ``node.pubkey`` (``pub-v0-…``)."""
    text = (basedir / "node.pubkey").read_text().strip()
    assert text.startswith("pub-v0-"), text
    return "v0-" + text[len("pub-v0-"):]


def static_server_entry(basedir: Path) -> dict[str, Any]:
    """The ``servers.yaml`` entry for a storage node that has run once (§7.7), with its
    NURL unless the node is Foolscap-only (``[storage]force_foolscap``)."""
    info = read_storage_server(basedir)
    https = read_tahoe_cfg(basedir).get("storage", "force_foolscap", fallback="false") != "true"
    return {"ann": {
        "nickname": basedir.name,
        **({"anonymous-storage-NURLs": [info.nurl(info.host, info.port)]} if https else {}),
        "anonymous-storage-FURL": info.furl,
        "permutation-seed-base32": info.permutation_seed,
    }}


def write_servers_yaml(client_dir: Path, storage_dirs: Iterable[Path]) -> None:
    """Write ``client_dir/private/servers.yaml`` listing the given storage nodes."""
    servers = {server_id(d): static_server_entry(d) for d in storage_dirs}
    (client_dir / "private" / "servers.yaml").write_text(
        yaml.safe_dump({"storage": servers}, default_flow_style=False))


def finished_shares(storage_dir: Path) -> set[str]:
    """Final share files under ``storage_dir/shares`` as ``<prefix>/<SI>/<shnum>``."""
    shares = storage_dir / "shares"
    return {str(p.relative_to(shares)) for p in shares.glob("*/*/*")
            if p.is_file() and p.parts[-3] != "incoming"}


def incoming_files(storage_dir: Path) -> list[Path]:
    """Every file (partial share) under ``storage_dir/shares/incoming``."""
    return sorted(p for p in (storage_dir / "shares" / "incoming").rglob("*") if p.is_file())


def server_entry(node_url: str, nodeid: str) -> dict[str, Any] | None:
    """A gateway's ``GET /?t=json`` entry for one server, or None if not listed."""
    for server in webapi.welcome(node_url, timeout=10.0).get("servers", []):
        if server.get("nodeid") == nodeid:
            return dict(server)
    return None


def wait_for_server(node_url: str, nodeid: str, connected: bool, *,
                    processes: Iterable[ManagedProcess] = (),
                    timeout: float = STATUS_TIMEOUT) -> dict[str, Any]:
    """Poll the gateway until it lists the server as connected (or as not connected).

    "Connected" also waits for the server's ``get_version`` answer (its
    ``version`` is not null): Tahoe 1.20 shows a server connected a moment
    before it has asked.

    :returns: the server's entry at that moment.
    """
    def check() -> dict[str, Any] | None:
        entry = server_entry(node_url, nodeid)
        if entry is None:
            return None
        is_connected = str(entry.get("connection_status", "")).lower().startswith("connected")
        if connected:
            return entry if is_connected and entry.get("version") else None
        return entry if not is_connected else None

    state = "connected" if connected else "not connected"
    return wait_until(check, timeout, f"{nodeid[:11]} {state} at {node_url}",
                      processes=processes, ignore=(OSError, ValueError))

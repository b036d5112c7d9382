"""Nodes for upload-helper tests: a helper node, a client using one, the helper's counters."""
from __future__ import annotations

import json
import re
import time
import urllib.request
from pathlib import Path

from tests.support.grid import SMALL_GRID_SHARES, Gateway, Grid
from tests.support.nodes import TahoeTool, config_for_tests, edit_tahoe_cfg
from tests.support.ports import free_port
from tests.support.processes import ProcessSet

DEADLINE = 30.0


def wait_for_file(path: Path, timeout: float = DEADLINE) -> str:
    """The stripped text of a file some node writes, once it is there."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.1)
    raise AssertionError(f"{path} was not written within {timeout} s")


def helper_counters(gateway: Gateway) -> dict[str, int]:
    """A helper's ``/helper_status?t=json``."""
    with urllib.request.urlopen(gateway.url + "helper_status?t=json", timeout=30) as answer:
        return json.loads(answer.read())  # type: ignore[no-any-return]


def wait_connected_to_helper(gateway: Gateway, timeout: float = DEADLINE) -> None:
    """Wait until a Tahoe 1.20 client's welcome page shows its helper connected."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with urllib.request.urlopen(gateway.url, timeout=30) as answer:
            page = answer.read()
        # The helper's heading says "Helper not connected" until it is; other parts of the
        # page (the introducer, the servers) use the same status images.
        if b"Helper not connected" not in page and b"[censored]" in page:
            return
        time.sleep(0.2)
    raise AssertionError("the Tahoe client did not connect to the helper")


def start_helper(tool: TahoeTool, basedir: Path, processes: ProcessSet, grid: Grid) -> Gateway:
    """A node with a helper and no storage, joined to ``grid``."""
    tool.create_node(basedir, introducer_furl=grid.introducer_furl, shares=SMALL_GRID_SHARES,
                     nickname=basedir.name, web_port=free_port(), tub_port=free_port())
    edit_tahoe_cfg(basedir, {**config_for_tests(storage=False),
                             "storage": {"enabled": "false"}, "helper": {"enabled": "true"}})
    node = tool.start(basedir, processes)
    gateway = Gateway(node, node.node_url(DEADLINE))
    gateway.wait_for_servers(len(grid.storage_nodes))
    return gateway


def start_client(tool: TahoeTool, basedir: Path, processes: ProcessSet, grid: Grid,
                 helper_furl: str) -> Gateway:
    """A client with ``[client] helper.furl``, joined to ``grid``."""
    tool.create_client(basedir, introducer_furl=grid.introducer_furl, shares=SMALL_GRID_SHARES,
                       nickname=basedir.name, web_port=free_port())
    edit_tahoe_cfg(basedir, {**config_for_tests(storage=False),
                             "client": {"helper.furl": helper_furl}})
    node = tool.start(basedir, processes)
    gateway = Gateway(node, node.node_url(DEADLINE))
    gateway.wait_for_servers(len(grid.storage_nodes))
    return gateway


def furl_port(furl: str) -> int:
    """The port of a FURL's first ``tcp:HOST:PORT`` location hint."""
    match = re.search(r"@tcp:[^:,/]+:(\d+)", furl)
    if match is None:
        raise ValueError(f"no tcp location hint in {furl[:40]}…")
    return int(match.group(1))


def furl_via(furl: str, port: int) -> str:
    """The same FURL with one location hint, ``tcp:127.0.0.1:port`` (a proxy in front)."""
    match = re.fullmatch(r"pb://([^@]+)@[^/]+/(.+)", furl)
    if match is None:
        raise ValueError(f"not a FURL: {furl[:40]}…")
    return f"pb://{match.group(1)}@tcp:127.0.0.1:{port}/{match.group(2)}"

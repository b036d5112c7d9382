"""A small ``tahoe grid`` (three storage nodes, one client) for the statistics and munin
tests, and reading ``/statistics?t=json`` from its nodes."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from attrs import frozen

from tests.integration.grid_support import kill_leftovers, tahoe
from tests.support.processes import wait_until
from tests.support.webapi import get_json

STORAGE_NODES = ("storage1", "storage2", "storage3")


@frozen
class StatsGrid:
    """A running grid: its directory and every node's web URL."""

    directory: Path
    urls: dict[str, str]

    @property
    def client(self) -> str:
        """The client's gateway URL."""
        return self.urls["client"]

    def statistics(self, node: str) -> dict[str, Any]:
        """The node's ``/statistics?t=json`` document."""
        document: dict[str, Any] = get_json(self.urls[node] + "statistics?t=json", timeout=30)
        return document

    def storage_total(self, key: str, section: str = "counters") -> float:
        """``key`` summed over the storage nodes (0 where absent)."""
        return sum(self.statistics(node)[section].get(key) or 0 for node in STORAGE_NODES)

    def wait_for(self, predicate: Any, what: str, timeout: float = 30.0) -> Any:
        """Poll ``predicate`` with a deadline (nodes answer asynchronously)."""
        return wait_until(predicate, timeout, what, ignore=(OSError,))


def start_stats_grid(directory: Path) -> Iterator[StatsGrid]:
    """Start ``tahoe grid start DIR --storage-nodes=3`` and stop it (by PID if need be) after."""
    try:
        started = tahoe("grid", "start", directory, "--storage-nodes=3")
        assert started.returncode == 0, started.stderr.decode()
        urls = {node: (directory / node / "node.url").read_text().strip()
                for node in (*STORAGE_NODES, "client")}
        yield StatsGrid(directory, urls)
    finally:
        if (directory / "grid.json").exists():
            tahoe("grid", "stop", directory, "--timeout=10")
            kill_leftovers(directory)

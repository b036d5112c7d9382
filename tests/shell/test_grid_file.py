"""``grid.json`` updated by several ``tahoe grid restart`` processes at once: each one's
record is kept (``update_node_record`` reads and writes under a lock on the directory).

Real processes (``multiprocessing`` with fork), real files."""
from __future__ import annotations

import multiprocessing
from pathlib import Path

from tahoe.cli.grid_processes import (GRID_FILE_FORMAT, NodeRecord, read_grid_file,
                                      update_node_record, write_grid_file)

NODES = 8
ROUNDS = 40


def _restart_many_times(grid_dir: str, name: str) -> None:
    settings, _ = read_grid_file(grid_dir)
    for pid in range(1, ROUNDS + 1):
        update_node_record(grid_dir, settings, NodeRecord(name, "storage", None, 1, pid, str(pid)))


def test_concurrent_updates_keep_every_nodes_record(tmp_path: Path) -> None:
    names = [f"storage{i}" for i in range(1, NODES + 1)]
    write_grid_file(str(tmp_path), {"format": GRID_FILE_FORMAT, "storage_nodes": NODES},
                    [NodeRecord(name, "storage", None, 1) for name in names])
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_restart_many_times, args=(str(tmp_path), name))
               for name in names]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    _, nodes = read_grid_file(str(tmp_path))
    assert {node.name: node.pid for node in nodes} == {name: ROUNDS for name in names}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.json"]

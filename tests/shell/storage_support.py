"""Helpers shared by the storage-server shell tests: a server on a temporary directory, tree snapshots."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from twisted.internet.task import Clock

from tahoe.storage.server import StorageServer

NODEID = bytes.fromhex("e988ec25f3cd039be740901cfe34a9295838ff2f")
APP_VERSION = b"tahoe-lafs-py/0.1.0"
PLENTY = 10 ** 12


def fixed_free_space(free: int | None) -> Callable[[str], int | None]:
    """A disk-stats function that always reports ``free`` bytes."""
    def stats(path: str) -> int | None:
        assert os.path.isdir(path)
        return free
    return stats


def make_server(root: Path, clock: Clock, free: int | None = PLENTY, **kwargs: Any) -> StorageServer:
    """A server on ``root`` with a fixed amount of free disk space."""
    kwargs.setdefault("disk_stats", fixed_free_space(free))
    return StorageServer(root, NODEID, clock, application_version=APP_VERSION, **kwargs)


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every directory (None) and file (its bytes) under ``root``, by relative path."""
    tree: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            tree[os.path.relpath(os.path.join(dirpath, name), root)] = None
        for name in filenames:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                tree[os.path.relpath(path, root)] = f.read()
    return tree

"""Helpers shared by the storage-server shell tests: a server on a temporary directory, tree
snapshots, and the check that a server's share index says what its files say."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from twisted.internet.task import Clock

from tahoe.storage.paths import SHARES_DIR, all_prefixes
from tahoe.storage.server import StorageServer
from tahoe.storage.share_index import IndexedShare
from tahoe.storage.share_scan import scan_prefix_for_walk

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
    server = StorageServer(root, NODEID, clock, application_version=APP_VERSION, **kwargs)
    SERVERS.append(server)
    return server


def clock_at(seconds: float) -> Clock:
    """A test clock showing ``seconds``."""
    clock = Clock()
    clock.advance(seconds)
    return clock


def numbered_si(n: int, first: int, second: int) -> bytes:
    """Storage index number ``n`` (0-255) of a test: its first two bytes ``n × first`` and
    ``n × second`` (mod 256) spread the numbers over prefixes."""
    return bytes([n * first % 256, n * second % 256]) + bytes(13) + bytes([n])


#: Every server :func:`make_server` made (the tests' fixtures check their indexes at the end).
SERVERS: list[StorageServer] = []


def shares_on_disk(root: Path) -> dict[tuple[bytes, int], tuple]:
    """What the share index should hold for the files under ``root``, read from them."""
    rows = {}
    for prefix in all_prefixes():
        scan = scan_prefix_for_walk(str(root / SHARES_DIR), prefix, False, None, 0.0, None, False)
        for share in map(IndexedShare.from_row, scan.rows):
            rows[(share.storage_index, share.shnum)] = _comparable(share)
    return rows


def shares_indexed(server: StorageServer) -> dict[tuple[bytes, int], tuple]:
    """What a server's share index holds."""
    return {(share.storage_index, share.shnum): _comparable(share)
            for share in server.index.index.all_shares()}


def _comparable(share: Any) -> tuple:
    # a bucket directory's own size may change while a share's file does not
    return (share.kind, share.size, share.disk_bytes, share.data_length, share.expirations)


def assert_index_in_step(server: StorageServer) -> None:
    """The server's index holds exactly what its files hold (a fresh index is trusted), and
    its running totals are those of its rows (once the reactor turn has ended: rows of
    shares closed in it written)."""
    server.index.flush_closed()
    if server.index.fresh:
        on_disk = shares_on_disk(Path(server.index.storage_dir))
        assert shares_indexed(server) == on_disk
        totals = server.index.index.totals
        assert (totals.buckets, totals.shares, totals.bytes) == (
            len({si for si, _ in on_disk}), len(on_disk), sum(row[1] for row in on_disk.values()))


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every directory (None) and file (its bytes) under ``root``, by relative path."""
    tree: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            tree[os.path.relpath(os.path.join(dirpath, name), root)] = None
        for name in filenames:
            if name.startswith("share-index.sqlite"):
                continue  # the index, not shares (checked by assert_index_in_step)
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                tree[os.path.relpath(path, root)] = f.read()
    return tree

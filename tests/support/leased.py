"""Share files with leases granted at a chosen time, written by our storage server code.

For tests of lease expiry (the lease crawler, ours or Tahoe's) that need
shares older or younger than some date without waiting for it.
"""
from __future__ import annotations

from pathlib import Path

from twisted.internet.task import Clock

from tahoe.storage import paths
from tahoe.storage.server import StorageServer

__all__ = ["leased_bucket"]


def leased_bucket(storage: Path, storage_index: bytes, granted: float,
                  shnums: tuple[int, ...] = (0, 1), data: bytes = b"data") -> list[Path]:
    """Write immutable shares of ``storage_index`` under ``storage`` (a storage directory)
    whose one lease (renew secret ``b"r" * 32``) was granted at ``granted``; their paths."""
    clock = Clock()
    clock.advance(granted)
    server = StorageServer(storage, b"\x01" * 20, clock, application_version=b"test")
    _, writers = server.allocate_buckets(storage_index, b"r" * 32, b"c" * 32, set(shnums),
                                         len(data))
    for writer in writers.values():
        writer.write(0, data)
        writer.close()
    server.close()
    return [storage / paths.share_path(storage_index, shnum) for shnum in shnums]

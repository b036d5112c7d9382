"""A storage server that dies at a chosen point: ``python -m tests.support.storage_crash``.

Run by ``tests/shell/test_share_index_crashes.py`` in a child process. It opens
the real :class:`StorageServer` on a storage directory, arms one crash point
(a function of ours replaced by one that does the real work up to the point,
then ends the process with ``os._exit``, as a power cut or SIGKILL would: no
``finally``, no clean stop), and performs one operation. Exit status
:data:`CRASHED` says the crash point was reached; 0 that the operation ended
without reaching it.

Arguments: ``STORAGE_DIR NOW OPERATION CRASH_POINT SI_HEX``. Operations ending in
``-batch`` run a server that writes the index rows of closes together (``batch_index``).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from twisted.internet.task import Clock

from tahoe.storage import bucket, collector, disk, share_index
from tahoe.storage.lease_checker import LeaseCheckingCrawler
from tahoe.storage.immutable_container import ImmutableContainer
from tahoe.storage.indexing import IndexKeeper
from tahoe.storage.leases import ExpiryPolicy
from tahoe.storage.server import INDEX_BATCH_DELAY, StorageServer
from tests.shell.storage_support import make_server

#: The exit status of a child that reached its crash point.
CRASHED = 77

RENEW, CANCEL = b"N" * 32, b"C" * 32
WRITE_ENABLER = b"w" * 32


def _die() -> None:
    sys.stdout.flush()
    os._exit(CRASHED)


def _before(owner: Any, name: str, calls: int = 1) -> None:
    """Crash at the ``calls``-th call of ``owner.name``, before it runs."""
    original = getattr(owner, name)
    seen = [0]

    def crashing(*args: Any, **kwargs: Any) -> Any:
        seen[0] += 1
        if seen[0] >= calls:
            _die()
        return original(*args, **kwargs)
    setattr(owner, name, crashing)


def _after(owner: Any, name: str) -> None:
    """Crash just after the first call of ``owner.name`` has done its work."""
    original = getattr(owner, name)

    def crashing(*args: Any, **kwargs: Any) -> Any:
        original(*args, **kwargs)
        _die()
    setattr(owner, name, crashing)


def _mid_put_many() -> None:
    original = share_index.ShareIndex._put_many

    def crashing(self: share_index.ShareIndex, db: Any, shares: Any, known: Any = None) -> None:
        def first_then_die() -> Any:
            for number, share in enumerate(shares):
                if number == 1:
                    _die()
                yield share
        original(self, db, first_then_die(), known)
    share_index.ShareIndex._put_many = crashing  # type: ignore[method-assign]


#: Crash points: where the process dies.
CRASH_POINTS: dict[str, Callable[[], None]] = {
    # the share files changed; the index was not told
    "before-index-update": lambda: _before(share_index.ShareIndex, "update"),
    # inside the index's transaction, after the first of several rows was written
    "mid-index-transaction": lambda: _mid_put_many(),
    # garbage collection deleted one share (file and emptied bucket directory), and
    # nothing more: the index was not told
    "after-first-delete": lambda: _after(collector, "delete_share_file"),
    # garbage collection removed a share file, not yet its emptied bucket directory
    "after-unlink-before-rmdir": lambda: _before(collector.disk, "remove_empty_dirs"),
    # garbage collection removed one expired lease of a share that keeps another
    "after-lease-trim": lambda: _after(ImmutableContainer, "remove_leases"),
    # garbage collection was trimming a share's expired lease: the process dies before
    # the trim's last step, the file's cut (at the first trim, or at the second)
    "mid-lease-trim": lambda: _before(disk.DiskFile, "truncate"),
    "mid-second-lease-trim": lambda: _before(disk.DiskFile, "truncate", calls=2),
    # an upload's share written whole into incoming/, not yet renamed into its bucket; or
    # its new bucket's directory just made for it, still empty
    "before-share-rename": lambda: _before(bucket.os, "rename"),
    "after-bucket-mkdir": lambda: _after(bucket.disk, "make_directory"),
    # a rebuild from the files has written part of the index
    "mid-rebuild": lambda: _before(IndexKeeper, "scanned", calls=300),
}


def _gc_cycle(server: StorageServer, clock: Clock) -> None:
    checker = LeaseCheckingCrawler(server.index.storage_dir, clock, server.index,
                                   ExpiryPolicy("age"), True, slow_start=0)
    checker.start()
    clock.advance(checker.first_delay())


#: Operations, each given the server, its clock and the storage index it acts on.
OPERATIONS: dict[str, Callable[[StorageServer, Clock, bytes], Any]] = {
    "upload": lambda server, clock, si: _upload(server, si),
    "renew": lambda server, clock, si: server.add_lease(si, RENEW, CANCEL),
    "slot-write": lambda server, clock, si: server.slot_testv_and_readv_and_writev(
        si, (WRITE_ENABLER, RENEW, CANCEL), {0: ([], [(0, b"new version")], None)}, []),
    "slot-delete": lambda server, clock, si: server.slot_testv_and_readv_and_writev(
        si, (WRITE_ENABLER, RENEW, CANCEL), {0: ([], [], 0)}, []),
    "gc": lambda server, clock, si: _gc_cycle(server, clock),
    # three shares closed within one batch's time, their rows written together when it is up
    "upload-batch": lambda server, clock, si: _upload_batch(server, clock, si),
}


def _upload_batch(server: StorageServer, clock: Clock, si: bytes) -> None:
    _, writers = server.allocate_buckets(si, RENEW, CANCEL, {0, 1, 2}, 8)
    for writer in writers.values():
        writer.write(0, b"abcdefgh")
        writer.close()
    clock.advance(INDEX_BATCH_DELAY)  # the batch's time is up: it is written


def _upload(server: StorageServer, si: bytes) -> None:
    _, writers = server.allocate_buckets(si, RENEW, CANCEL, {0, 1}, 8)
    for writer in writers.values():
        writer.write(0, b"abcdefgh")
        writer.close()


def main(argv: list[str]) -> int:
    storage_dir, now, operation, crash_point, si_hex = argv
    clock = Clock()
    clock.advance(float(now))
    server = make_server(Path(storage_dir), clock, batch_index=operation.endswith("-batch"))
    CRASH_POINTS[crash_point]()
    OPERATIONS[operation](server, clock, bytes.fromhex(si_hex))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Locks for changing a bucket's share files, held across the node and its scanning processes.

Every change to a final share file (a close, a lease added, renewed or
trimmed, a mutable write, a deletion) happens under the lock of its bucket.
The storage indexes fall on :data:`STRIPES` stripes; a stripe's lock is a
thread lock (the threads of one process) and a record lock on the stripe's
byte of one lock file beside the share index (other processes: the node's
scanning processes collect garbage under the same locks). A process that
dies gives its record locks back.

The record locks are Linux's open-file-description locks: owned by the
descriptor each process opens here, not by the process. Classic POSIX
record locks are owned by the process, so the kernel's deadlock detection
sees two processes whose threads wait on each other's stripes as a deadlock
(``EDEADLK``) where there is none; and closing any descriptor of the file
would drop them. Where there are no such locks, classic ones are used and a
refusal for a deadlock is waited out.
"""
from __future__ import annotations

import errno
import fcntl
import os
import struct
import threading
import time
import zlib
from types import TracebackType

__all__ = ["LOCK_NAME", "STRIPES", "BucketLocks", "StripeLock"]

#: The lock file, in the storage directory.
LOCK_NAME = "share-index.lock"
#: Stripes: changes to one bucket are one after the other, to different buckets mostly
#: in parallel.
STRIPES = 4096


class _Stripe:
    """A stripe's thread lock, in the table while some thread holds or waits for it."""

    __slots__ = ("fd", "lock", "users")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        #: The lock file's descriptor whose record lock the holder took (``None``: none).
        self.fd: int | None = None


class StripeLock:
    """The lock of one stripe (a context manager; not re-entrant).

    A handle only: the stripe's thread lock lives in its :class:`BucketLocks`'s
    table while it is held or waited for, so the locks of idle stripes take no
    memory.
    """

    __slots__ = ("_owner", "_stripe")

    def __init__(self, owner: BucketLocks, stripe: int) -> None:
        self._owner = owner
        self._stripe = stripe

    def __enter__(self) -> None:
        stripe = self._owner._take(self._stripe)
        stripe.lock.acquire()
        fd = self._owner._fd
        if fd is not None:
            try:
                _record_lock(fd, self._stripe, True)
            except BaseException:
                stripe.lock.release()
                self._owner._give(self._stripe)
                raise
        stripe.fd = fd

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        stripe = self._owner._held(self._stripe)
        try:
            if stripe.fd is not None:
                _record_lock(stripe.fd, self._stripe, False)
        finally:
            stripe.fd = None
            stripe.lock.release()
            self._owner._give(self._stripe)


#: ``struct flock`` (Linux, 64-bit ``off_t``): type, whence, start, length, pid (0).
_FLOCK = struct.Struct("@hhqqi4x")
_OFD_SETLKW = getattr(fcntl, "F_OFD_SETLKW", None)


def _record_lock(fd: int, byte: int, take: bool) -> None:
    """Take (waiting for it) or let go of the record lock on one byte of the file."""
    if _OFD_SETLKW is not None:
        kind = fcntl.F_WRLCK if take else fcntl.F_UNLCK
        fcntl.fcntl(fd, _OFD_SETLKW, _FLOCK.pack(kind, os.SEEK_SET, byte, 1, 0))
        return
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX if take else fcntl.LOCK_UN, 1, byte, os.SEEK_SET)
            return
        except OSError as error:
            if error.errno != errno.EDEADLK:
                raise
            time.sleep(0.001)  # threads of two processes, seen as the processes: wait


class BucketLocks:
    """The bucket locks of one storage directory, in this process.

    :param path: the lock file (created if missing); ``None``: thread locks only (a
        process that no other process shares its storage directory with).
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = None if path is None else os.fspath(path)
        self._fd = None if path is None else os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        #: The stripes held or waited for, and the lock of that table.
        self._stripes: dict[int, _Stripe] = {}
        self._table = threading.Lock()

    @staticmethod
    def stripe(storage_index: bytes) -> int:
        """The stripe of a storage index: the same in every process."""
        return zlib.crc32(storage_index) % STRIPES

    def lock(self, storage_index: bytes) -> StripeLock:
        """The lock to hold while changing a share file of ``storage_index``."""
        return StripeLock(self, self.stripe(storage_index))

    def _take(self, number: int) -> _Stripe:
        """The stripe's entry, counting one more user (who will acquire its lock)."""
        with self._table:
            stripe = self._stripes.get(number)
            if stripe is None:
                stripe = self._stripes[number] = _Stripe()
            stripe.users += 1
            return stripe

    def _held(self, number: int) -> _Stripe:
        """The entry of a stripe whose lock the caller holds (it stays in the table while
        held, so it is read without the table's lock)."""
        return self._stripes[number]

    def _give(self, number: int) -> None:
        """One user fewer; an entry without users leaves the table."""
        with self._table:
            stripe = self._stripes[number]
            stripe.users -= 1
            if not stripe.users:
                del self._stripes[number]

    def in_use(self) -> int:
        """How many stripes are held or waited for now."""
        return len(self._stripes)

    def close(self) -> None:
        """Close the lock file (no lock may be held any more); the thread locks go on."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

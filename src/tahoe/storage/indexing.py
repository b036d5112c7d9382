"""Keeping the share index in step with the files, and knowing when it can be trusted.

:class:`IndexKeeper` owns the :class:`~tahoe.storage.share_index.ShareIndex` of a
storage directory. The storage server tells it about every share it changed
(after the file changed: the index may run late, never ahead), garbage
collection goes through it, and it decides whether the index is **fresh**:

* it was built completely (``complete``),
* the node stopped cleanly last time (``clean``; a crash may have left a
  change in a file but not in the index),
* ``shares/incoming`` is the directory it was (Tahoe 1.20 deletes and
  re-creates it at every start; we only empty it): so no other server ran
  on the directory since;
* and no prefix directory changed since the stop (their modification times
  are kept): buckets copied in or removed by hand show there. Shares copied
  into a bucket that already existed do not: after such surgery, delete
  ``share-index.sqlite`` (``docs/formats/share-index.md``).

A stale index is emptied and rebuilt from the files by the lease checker's
first walk (:mod:`.crawler`), prefix by prefix in worker threads, while the
server answers requests from the files. Changes the server makes to a
prefix while it is being scanned are read again once its rows are in.

Rows are written after the files were read again (or, for a share just
closed, from what its writer wrote, without reading it back), under the
index's write lock (:meth:`~.share_index.ShareIndex.update`): by the reactor thread for the
server's own changes, and by the lease checker's worker threads for what
garbage collection deleted or trimmed, so the reactor thread does not wait
for the disk while a cycle collects (unless it changes a share meanwhile).

Mutating a share file takes the lock of its bucket (:meth:`IndexKeeper.lock`,
:mod:`.bucket_locks`): the server's operations (on the reactor thread) and
garbage collection (in worker threads, or in the node's scanning processes)
never change the same share at once.
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from twisted.logger import Logger

from . import paths
from .bucket_locks import LOCK_NAME, BucketLocks, StripeLock
from .share_index import INDEX_NAME, IndexedShare, ShareIndex, prefix_number
from .share_scan import disk_bytes, scan_share

PREFIXES = 1024
#: With batching, rows waiting are written once this many are (one transaction's worth).
BATCH_ROWS = 256


class IndexKeeper:
    """The share index of one storage directory (see the module docstring).

    :param storage_dir: ``NODEDIR/storage``.
    :param index_path: where the database lives (default ``storage/share-index.sqlite``).
    """

    _log = Logger()

    def __init__(self, storage_dir: str | os.PathLike[str],
                 index_path: str | os.PathLike[str] | None = None) -> None:
        self.storage_dir = Path(storage_dir)
        self._root = os.fspath(storage_dir)
        self.shares_dir = self.storage_dir / paths.SHARES_DIR
        self.index = _open_index(Path(index_path or self.storage_dir / INDEX_NAME))
        #: Called (no arguments) when the index stops being trusted while running.
        self.stale_listeners: list[Callable[[], None]] = []
        #: The bucket locks, shared with the scanning processes through their lock file.
        self.locks = BucketLocks(self.storage_dir / LOCK_NAME)
        self._scanned: set[int] = set()
        self._touched: dict[int, set[tuple[bytes, int]]] = {}
        self.fresh = self._was_left_fresh()
        if not self.fresh:
            self.index.clear()
            self.index.set_meta("complete", 0)
            if not self._has_prefix_directories():
                self.rebuilt()  # nothing to read: the empty index is complete
        self.index.set_meta("clean", 0)
        self.index.forget_saved_totals()
        # On disk before any change: after a crash of the machine (the rows are written
        # without waiting for the disk), the index must not be found clean.
        self.index.sync()
        #: Shares garbage collection deleted since start.
        self.deleted = 0
        self.closed = False
        #: With a clock (:meth:`batch_closes`), the shares closed whose rows are still to
        #: be written, together, in one transaction.
        self._batch_clock: Any = None
        self._batch_delay = 0.0
        self._closed_pending: dict[tuple[bytes, int], IndexedShare | None] = {}
        self._pending_indexes: set[bytes] = set()  # (their storage indexes)
        self._flush_call: Any = None

    # -- freshness

    def _incoming_identity(self) -> str:
        try:
            stat = os.stat(self.shares_dir / paths.INCOMING_DIR)
        except OSError:
            return ""
        # the inode number alone may come back at once for a new directory (ext4)
        return f"{stat.st_dev}:{stat.st_ino}:{stat.st_ctime_ns}"

    def _was_left_fresh(self) -> bool:
        index = self.index
        reasons = []
        if index.get_meta("complete") != 1:
            reasons.append("never built completely")
        if index.get_meta("clean") != 1:
            reasons.append("the node did not stop cleanly")
        if index.get_meta("incoming") != self._incoming_identity():
            reasons.append("shares/incoming changed (another server ran here?)")
        elif index.get_meta("prefixes") != self._prefixes_signature():
            reasons.append("prefix directories changed since the last stop")
        if reasons:
            self._log.info("share index will be rebuilt: {why}", why="; ".join(reasons))
        return not reasons

    def _has_prefix_directories(self) -> bool:
        try:
            return any(len(entry.name) == 2 for entry in os.scandir(self.shares_dir))
        except OSError:
            return False

    def _prefixes_signature(self) -> str:
        """A digest of every prefix directory's name and modification time."""
        digest = hashlib.sha256()
        try:
            entries = sorted(os.scandir(self.shares_dir), key=lambda e: e.name)
        except OSError:
            return ""
        for entry in entries:
            if len(entry.name) == 2:
                try:
                    digest.update(f"{entry.name}:{entry.stat().st_mtime_ns};".encode())
                except OSError:
                    continue
        return digest.hexdigest()

    def prefix_indexed(self, prefix: int) -> bool:
        """Whether the rows of a prefix (:func:`~.share_index.prefix_value`) are in."""
        return self.fresh or prefix in self._scanned

    def write_scanned(self, prefix: int, rows: list[tuple[Any, ...]]) -> bool:
        """In the worker thread that read a prefix's files for a rebuild: put its rows in,
        so the reactor thread does not wait for the index's disk; whether done. The prefix
        counts as indexed only once :meth:`scanned` (on the reactor thread) has read again
        the shares the server changed meanwhile."""
        if self.fresh:
            return False
        try:
            self.index.replace_prefix(prefix, rows)
        except sqlite3.Error:
            return False  # (scanned tries again, and says why it cannot)
        return True

    def scanned(self, prefix: int, rows: list[tuple[Any, ...]], written: bool = False) -> None:
        """The rows a rebuild read from one prefix's files: put them in (unless ``written``
        already, by :meth:`write_scanned`), then read again the shares the server changed
        meanwhile."""
        if self.fresh:
            return  # indexed meanwhile (it can only have been by this walk)
        try:
            if not written:
                self.index.replace_prefix(prefix, rows)
        except sqlite3.Error as error:
            self._log.warn("share index: cannot write prefix {prefix}: {error}",
                           prefix=prefix, error=str(error))
            return
        touched = self._touched.pop(prefix, set())
        self._scanned.add(prefix)
        self.refresh(sorted(touched))
        if len(self._scanned) == PREFIXES:
            self.rebuilt()

    def rebuilt(self) -> None:
        """Every prefix was scanned: the index is complete and may be trusted."""
        if self.fresh:
            return
        try:
            self.index.set_meta("complete", 1)  # (the totals were kept prefix by prefix)
        except sqlite3.Error as error:
            self._log.warn("share index: cannot finish the rebuild: {error}", error=str(error))
            return
        self.fresh = True
        self._scanned.clear()
        self._touched.clear()
        self._log.info("share index rebuilt: {n} shares in {b} buckets",
                       n=self.index.totals.shares, b=self.index.totals.buckets)

    def close(self) -> None:
        """A clean stop: keep the totals and mark the index trustworthy for the next start.
        Once only (later calls do nothing)."""
        if self.closed:
            return
        self.flush_closed()
        self.closed = True
        index = self.index
        if self.fresh:
            try:
                index.save_totals()
                index.set_meta("incoming", self._incoming_identity())
                index.set_meta("prefixes", self._prefixes_signature())
                index.sync()  # every row on disk before the mark that trusts them
                index.set_meta("clean", 1)
                index.sync()
            except sqlite3.Error as error:
                self._log.warn("share index not saved ({error}): rebuilt at the next start",
                               error=str(error))
        index.close()
        self.locks.close()

    # -- changes

    def lock(self, storage_index: bytes) -> StripeLock:
        """The lock to hold while changing a share file of ``storage_index``."""
        return self.locks.lock(storage_index)

    def bucket_dir(self, storage_index: bytes) -> str:
        """The directory of a storage index's final shares."""
        return f"{self._root}/{paths.share_dir(storage_index)}"

    def share_path(self, storage_index: bytes, shnum: int) -> str:
        """Where a final share lives."""
        return f"{self.bucket_dir(storage_index)}/{shnum}"

    def share_changed(self, storage_index: bytes, shnum: int) -> None:
        """A share file was created, changed or deleted: bring its row in step."""
        self.refresh([(storage_index, shnum)])

    def batch_closes(self, clock: Any, delay: float = 0.0) -> None:
        """From now on, write the rows of shares closed within ``delay`` seconds together
        (0: in one reactor turn, at its end), in one transaction (:meth:`share_closed`);
        sooner when :data:`BATCH_ROWS` are waiting, or when the totals are asked for."""
        self._batch_clock = clock
        self._batch_delay = delay
        self.index.before_totals = self.flush_closed

    def share_closed(self, storage_index: bytes, shnum: int,
                     share: IndexedShare | None = None) -> None:
        """A new immutable share moved into its bucket. Its row is written at once, or, when
        batching (:meth:`batch_closes`), with the other shares closed in the batch's time,
        after them all; sooner if the server asks the index about that storage index
        meanwhile. The index runs late, never ahead: a crash before the write leaves a
        share without its row, which a crash makes the index rebuild anyway. No lock of the
        bucket is needed: garbage collection never touches a share with a new lease.

        :param share: its row, from the writer that made the file (then the file is not
            read again; its bucket directory's disk use is looked up when the row is
            written), or None to read it.
        """
        if self._batch_clock is None:
            self._write_closed({(storage_index, shnum): share})
            return
        self._closed_pending[(storage_index, shnum)] = share
        self._pending_indexes.add(storage_index)
        if len(self._closed_pending) >= BATCH_ROWS:
            self.flush_closed()
        elif self._flush_call is None:
            self._flush_call = self._batch_clock.callLater(self._batch_delay, self.flush_closed)

    def flush_closed(self) -> None:
        """Write the rows of the shares closed and not yet indexed (:meth:`share_closed`)."""
        call, self._flush_call = self._flush_call, None
        if call is not None and call.active():
            call.cancel()
        if self._closed_pending:
            pending, self._closed_pending = self._closed_pending, {}
            self._pending_indexes = set()
            self._write_closed(pending)

    def _write_closed(self, shares: dict[tuple[bytes, int], IndexedShare | None]) -> None:
        """:meth:`refresh` these closed shares, taking the rows given instead of reading
        their files (one ``stat`` of each bucket directory for its disk use)."""
        buckets: dict[bytes, int] = {}

        def read(storage_index: bytes, shnum: int) -> IndexedShare | None:
            share = shares[(storage_index, shnum)]
            if share is None:
                return self._read_share(storage_index, shnum)
            if storage_index not in buckets:
                buckets[storage_index] = disk_bytes(self.bucket_dir(storage_index))
            return IndexedShare(storage_index, shnum, share.kind, share.size, share.disk_bytes,
                                buckets[storage_index], share.data_length, share.expirations)
        self.refresh(list(shares), read)

    def shares_changed(self, storage_index: bytes, shnums: Iterable[int]) -> None:
        """Several shares of one storage index changed (none: nothing to do)."""
        keys = [(storage_index, shnum) for shnum in shnums]
        if keys:
            self.refresh(keys)

    def refresh(self, keys: Iterable[tuple[bytes, int]],
                read: Callable[[bytes, int], IndexedShare | None] | None = None) -> None:
        """Read these shares' files again and write what they hold now (on the reactor
        thread, after the files changed): a row for each file, none for a file gone.

        :param read: gives a share's row (None: its file is gone); by default its file's.
        """
        keys = list(keys)
        for storage_index, shnum in keys:
            prefix = prefix_number(storage_index)
            if not self.prefix_indexed(prefix):
                self._touched.setdefault(prefix, set()).add((storage_index, shnum))
        try:
            self.index.update(keys, read or self._read_share)
        except sqlite3.Error as error:
            # The files changed and the index could not follow (a full disk?): from now on
            # it is not trusted; the files answer until the lease checker has rebuilt it.
            self._lose_step(error)

    def refresh_collected(self, keys: list[tuple[bytes, int]]) -> bool:
        """:meth:`refresh`, in a worker thread, for shares garbage collection changed under
        prefixes the index holds: whether done (if not, :meth:`refresh` them on the reactor
        thread, which also sees to an index that cannot be written). The reactor thread
        waits for the disk only if it changes a share meanwhile."""
        if not all(self.prefix_indexed(prefix_number(si)) for si, _ in keys):
            return False
        try:
            self.index.update(keys, self._read_share)
        except sqlite3.Error:
            return False
        return True

    def _read_share(self, storage_index: bytes, shnum: int) -> IndexedShare | None:
        return scan_share(self.share_path(storage_index, shnum), storage_index, shnum)

    def _lose_step(self, error: Exception) -> None:
        self._log.warn("share index out of step with the shares ({error}); rebuilding it",
                       error=str(error))
        was_fresh, self.fresh = self.fresh, False
        self._scanned.clear()
        self._touched.clear()
        try:
            self.index.set_meta("complete", 0)
        except sqlite3.Error:
            pass
        if was_fresh:
            for listener in self.stale_listeners:
                listener()

    def present_shares(self, storage_index: bytes
                       ) -> dict[int, tuple[str, IndexedShare]] | None:
        """:meth:`indexed_shares` with each file's path, less any whose file is gone
        (removed by hand: the index learns it here, and the listing is the files', as
        Tahoe's). A ``stat`` per share held; nothing on disk for a storage index the
        index does not know."""
        shares = self.indexed_shares(storage_index)
        if not shares:
            return shares
        bucket = self.bucket_dir(storage_index)
        present: dict[int, tuple[str, IndexedShare]] = {}
        gone = []
        for shnum, share in shares.items():
            path = f"{bucket}/{shnum}"
            try:
                os.stat(path)
            except FileNotFoundError:
                gone.append(shnum)
            else:
                present[shnum] = (path, share)
        if gone:
            self.files_gone(storage_index, gone)
        return present

    def files_gone(self, storage_index: bytes, shnums: Iterable[int]) -> None:
        """Share files the index lists were found missing (removed behind the server's
        back): log it and drop their rows."""
        keys = [(storage_index, shnum) for shnum in shnums]
        self._log.warn("share files found missing (removed by hand, or collected): {shares}",
                       shares=", ".join(f"{si.hex()}/{n}" for si, n in keys))
        self.refresh(keys)

    def indexed_shares(self, storage_index: bytes) -> dict[int, IndexedShare] | None:
        """The shares of a storage index according to the index; None while it is not
        trustworthy for that storage index's prefix (ask the files)."""
        if not self.prefix_indexed(prefix_number(storage_index)):
            return None
        if storage_index in self._pending_indexes:
            self.flush_closed()
        return self.index.shares(storage_index)


def _open_index(path: Path) -> ShareIndex:
    """The index at ``path``; a file that is not one (damaged, or of another schema) is
    moved aside to ``<name>.unreadable`` and a new, empty one made (it is only a hint)."""
    try:
        return ShareIndex(path)
    except (sqlite3.DatabaseError, ValueError) as error:
        IndexKeeper._log.warn("share index {path} unreadable ({error}); starting a new one",
                              path=str(path), error=str(error))
        for suffix in ("", "-wal", "-shm"):
            try:
                os.replace(f"{path}{suffix}", f"{path}.unreadable{suffix}")
            except OSError:
                pass
        return ShareIndex(path)


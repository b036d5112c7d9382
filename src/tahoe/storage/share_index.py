"""An index of every share and lease under one storage directory: SQLite, beside the shares.

The share files stay the truth (Tahoe's containers, leases inside; Tahoe 1.20
runs on the same directory). The index is a hint for what is expensive to
find out from files at a million shares: which shares a storage index has,
which leases have expired, how many buckets and bytes there are. It is
written after the file, so it may run late but never ahead: whatever acts on
it (garbage collection) reads the file again first.

One row per share: storage index, share number, kind, file size, disk use
(the file's and its bucket directory's), data length, and the lease
expiration times packed as ``>L`` each, with their minimum and maximum
(indexed: the shares with an expired lease are found by a range query).
Running totals (buckets, shares, bytes) are kept in memory and saved with
the index. ``docs/formats/share-index.md`` has the schema.

Each thread that uses a :class:`ShareIndex` does so through a connection of
its own (the reactor thread's is the one it was opened with), so one that
waits for the disk holds up no other, and WAL lets its reads run beside a
write: the lease checker's worker threads read rows and bring the rows of
what they collected in step themselves. Writes are taken one at a time
under a lock, which also keeps the running totals. (Other processes read
through :func:`open_reader`.)
"""
from __future__ import annotations

import os
import sqlite3
import struct
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from attrs import frozen

from ..util import base32

SCHEMA_VERSION = 1
INDEX_NAME = "share-index.sqlite"
IMMUTABLE, MUTABLE, CORRUPT = 0, 1, 2
KIND_NAMES = {IMMUTABLE: "immutable", MUTABLE: "mutable", CORRUPT: "corrupt"}

# (Index files written before 2026-11-27 had an index on min_expiration, for a query by
# expiration that garbage collection never made: it plans prefix by prefix from the
# primary key. Dropped: a third of the file, and a second B-tree written with every row.)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS shares (
    si BLOB NOT NULL,
    shnum INTEGER NOT NULL,
    kind INTEGER NOT NULL,
    size INTEGER NOT NULL,
    disk_bytes INTEGER NOT NULL,
    bucket_disk_bytes INTEGER NOT NULL,
    data_length INTEGER NOT NULL,
    leases BLOB NOT NULL,
    min_expiration INTEGER NOT NULL,
    max_expiration INTEGER NOT NULL,
    PRIMARY KEY (si, shnum)
) WITHOUT ROWID;
DROP INDEX IF EXISTS shares_by_min_expiration;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
"""
#: Leases beyond this many in one share are not indexed (their share is still, by its min/max).
MAX_INDEXED_LEASES = 64
#: The smallest and largest expiration of a share without leases (such a share is kept).
NO_LEASE = -1


@frozen
class IndexedShare:
    """What the index knows of one share (see the module docstring)."""

    storage_index: bytes
    shnum: int
    kind: int
    size: int
    disk_bytes: int
    bucket_disk_bytes: int
    data_length: int
    expirations: tuple[int, ...]

    @property
    def kind_name(self) -> str:
        """``immutable``, ``mutable`` or ``corrupt``."""
        return KIND_NAMES[self.kind]

    def row(self) -> tuple[Any, ...]:
        """The table row."""
        leases = self.expirations[:MAX_INDEXED_LEASES]
        return (self.storage_index, self.shnum, self.kind, self.size, self.disk_bytes,
                self.bucket_disk_bytes, self.data_length,
                struct.pack(f">{len(leases)}L", *leases),
                min(self.expirations, default=NO_LEASE), max(self.expirations, default=NO_LEASE))

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> "IndexedShare":
        """A share from a table row (its first eight columns)."""
        si, shnum, kind, size, disk_bytes, bucket_disk_bytes, data_length, leases = row[:8]
        expirations = struct.unpack(f">{len(leases) // 4}L", leases)
        return cls(bytes(si), shnum, kind, size, disk_bytes, bucket_disk_bytes, data_length,
                   expirations)


@frozen
class Totals:
    """Buckets (storage indexes with a share), shares, and their file bytes."""

    buckets: int = 0
    shares: int = 0
    bytes: int = 0


def _next_prefix(prefix: int) -> bytes:
    """The smallest storage index after every one under ``prefix``."""
    if prefix >= 1023:
        return b"\xff" * 17
    following = prefix + 1
    return bytes([following >> 2, (following & 3) << 6])


def prefix_number(storage_index: bytes) -> int:
    """The prefix directory number of a storage index: its first 10 bits (0..1023)."""
    return (storage_index[0] << 2) | (storage_index[1] >> 6)


def prefix_value(prefix: str) -> int:
    """The number of a prefix directory's name (two base32 characters): the same 10 bits."""
    return base32.ALPHABET.index(prefix[0]) * 32 + base32.ALPHABET.index(prefix[1])


def _prefix_range(prefix: int) -> tuple[bytes, bytes]:
    """The storage indexes under a prefix directory: ``low <= si < high``."""
    return bytes([prefix >> 2, (prefix & 3) << 6]), _next_prefix(prefix)


def _shares(connection: sqlite3.Connection, storage_index: bytes) -> dict[int, IndexedShare]:
    rows = connection.execute(f"SELECT {_COLUMNS} FROM shares WHERE si = ? ORDER BY shnum",
                              (storage_index,)).fetchall()
    return {row[1]: IndexedShare.from_row(row) for row in rows}


_COLUMNS = ("si, shnum, kind, size, disk_bytes, bucket_disk_bytes, data_length, leases, "
            "min_expiration, max_expiration")
#: Storage indexes asked about in one query (SQLite allows 32766 parameters).
_QUERY_INDEXES = 500


def _shares_of(connection: sqlite3.Connection, storage_indexes: set[bytes]
               ) -> dict[bytes, dict[int, IndexedShare]]:
    """Every indexed share of each of these storage indexes (``{}`` for one without), in
    one query per :data:`_QUERY_INDEXES` of them (a batch of closes asks about many)."""
    if len(storage_indexes) == 1:
        (storage_index,) = storage_indexes
        return {storage_index: _shares(connection, storage_index)}
    found: dict[bytes, dict[int, IndexedShare]] = {si: {} for si in storage_indexes}
    wanted = list(storage_indexes)
    for start in range(0, len(wanted), _QUERY_INDEXES):
        part = wanted[start:start + _QUERY_INDEXES]
        for row in connection.execute(f"SELECT {_COLUMNS} FROM shares WHERE si IN "
                                      f"({', '.join('?' * len(part))})", part):
            found[bytes(row[0])][row[1]] = IndexedShare.from_row(row)
    return found


class IndexReader:
    """Queries on one connection (:func:`open_reader`; a :class:`ShareIndex` runs them on the
    calling thread's own)."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    @property
    def connection(self) -> sqlite3.Connection:
        """The connection the queries run on."""
        return self._connection

    def shares(self, storage_index: bytes) -> dict[int, IndexedShare]:
        """Every indexed share of a storage index."""
        return _shares(self.connection, storage_index)

    def all_shares(self, batch: int = 10000) -> Iterator[IndexedShare]:
        """Every share, in (storage index, share number) order, read in batches."""
        last: tuple[bytes, int] = (b"", -1)
        while True:
            rows = self.connection.execute(
                f"SELECT {_COLUMNS} FROM shares WHERE (si, shnum) > (?, ?) "
                "ORDER BY si, shnum LIMIT ?", (*last, batch)).fetchall()
            if not rows:
                return
            for row in rows:
                yield IndexedShare.from_row(row)
            last = (rows[-1][0], rows[-1][1])

    def shares_in_prefix(self, prefix: int) -> list[IndexedShare]:
        """Every share under one prefix directory (its :func:`prefix_value`, 0..1023: the
        storage index's first 10 bits), in (storage index, share number) order."""
        return [IndexedShare.from_row(row) for row in self.rows_in_prefix(prefix)]

    def rows_in_prefix(self, prefix: int) -> list[tuple[Any, ...]]:
        """:meth:`shares_in_prefix` as table rows (:meth:`IndexedShare.row`'s shape)."""
        return self.connection.execute(
            f"SELECT {_COLUMNS} FROM shares WHERE si >= ? AND si < ? ORDER BY si, shnum",
            _prefix_range(prefix)).fetchall()

    def bucket_count_and_first(self, prefix: int) -> tuple[int, bytes | None]:
        """How many storage indexes have a share under one prefix directory, and the
        smallest of them (None if none)."""
        count, first = self.connection.execute(
            "SELECT count(DISTINCT si), min(si) FROM shares WHERE si >= ? AND si < ?",
            _prefix_range(prefix)).fetchone()
        return count, None if first is None else bytes(first)


def open_reader(path: str | os.PathLike[str]) -> IndexReader:
    """Read-only queries on an index file (its own connection: one thread, or another
    process, reads beside the writer, as WAL allows)."""
    return IndexReader(sqlite3.connect(f"file:{os.fspath(path)}?mode=ro", uri=True,
                                       isolation_level=None, check_same_thread=False))


class ShareIndex(IndexReader):
    """The index of one storage directory (``storage/share-index.sqlite``), and its writer.

    Its queries (:class:`IndexReader`) and writes run on the calling thread's own
    connection, opened at its first use (the module docstring).

    :param path: the database file (created if missing).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._db = self._connect()
        super().__init__(self._db)
        self._owner = threading.get_ident()
        #: The other threads' connections (each thread's in ``connection``), closed with
        #: the index.
        self._threads = threading.local()
        self._thread_connections: list[sqlite3.Connection] = []
        self._thread_connections_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)
        version = self.get_meta("schema-version")
        if version not in (None, SCHEMA_VERSION):
            raise ValueError(f"{self.path}: unknown index schema {version!r}")
        self.set_meta("schema-version", SCHEMA_VERSION)
        self._totals = self._load_totals()
        #: Called (on the opening thread) before the totals are read: a writer that holds
        #: rows back (``IndexKeeper.batch_closes``) writes them.
        self.before_totals: Callable[[], None] | None = None

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        # No waiting for the disk while running: after a crash the index is rebuilt anyway
        # (it is trusted only after a clean stop, and :meth:`close` makes that durable).
        connection.execute("PRAGMA synchronous=OFF")
        return connection

    @property
    def connection(self) -> sqlite3.Connection:
        """The calling thread's connection (the first thread's is the one opened with the
        index; another's opened at its first use and closed with the index)."""
        if threading.get_ident() == self._owner:
            return self._db
        connection = getattr(self._threads, "connection", None)
        if connection is None:
            connection = self._threads.connection = self._connect()
            with self._thread_connections_lock:
                self._thread_connections.append(connection)
        return connection

    # -- meta

    def get_meta(self, key: str) -> Any:
        """A value kept beside the rows (None if unset)."""
        row = self.connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: Any) -> None:
        """Keep ``value`` (int, float, text or None) under ``key``."""
        with self._write_lock:
            self.connection.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                                    (key, value))

    # -- totals

    def _load_totals(self) -> Totals:
        saved = self.get_meta("totals")
        if isinstance(saved, str) and saved.count(",") == 2:
            buckets, shares, size = (int(x) for x in saved.split(","))
            return Totals(buckets, shares, size)
        return self.count_totals()

    def count_totals(self) -> Totals:
        """Count the totals from the rows (slow at a million shares: only when an index
        opened without saved totals; every write keeps them after that)."""
        with self._write_lock:
            db = self.connection
            shares, size = db.execute(
                "SELECT count(*), coalesce(sum(size), 0) FROM shares").fetchone()
            buckets = db.execute("SELECT count(DISTINCT si) FROM shares").fetchone()[0]
            self._totals = Totals(buckets, shares, size)
            return self._totals

    @property
    def totals(self) -> Totals:
        """The running totals (no query). Asked on the thread that opened the index, rows
        waiting to be written are written first (:attr:`before_totals`)."""
        if self.before_totals is not None and threading.get_ident() == self._owner:
            self.before_totals()
        return self._totals

    def save_totals(self) -> None:
        """Keep the totals with the index (at a clean stop), so the next start needs no count."""
        t = self._totals
        self.set_meta("totals", f"{t.buckets},{t.shares},{t.bytes}")

    def forget_saved_totals(self) -> None:
        """While running, saved totals would go stale: a crash must not trust them."""
        self.set_meta("totals", None)

    # -- writing

    def put(self, share: IndexedShare) -> None:
        """Add or replace one share's row (after its file changed), keeping the totals."""
        self.put_many([share])

    def put_many(self, shares: Iterable[IndexedShare]) -> None:
        """Add or replace several rows in one transaction."""
        with self._write_lock:
            self._put_many(self.connection, shares)

    def _put_many(self, db: sqlite3.Connection, shares: Iterable[IndexedShare],
                  known: dict[bytes, dict[int, IndexedShare]] | None = None) -> None:
        """Write rows, keeping the totals. ``known``: every row the index holds for the
        storage indexes written, read in this hold of the write lock (:meth:`update`), so
        neither a share's old size nor whether its bucket is new need a query."""
        buckets, count, size = self._totals.buckets, self._totals.shares, self._totals.bytes
        # one row (a list of one) is one statement, atomic by itself: no BEGIN and COMMIT
        single = isinstance(shares, list) and len(shares) == 1
        if not single:
            db.execute("BEGIN")
        try:
            for share in shares:
                si = share.storage_index
                rows = known.get(si) if known is not None else None
                if rows is not None:
                    was = rows.get(share.shnum)
                    old = None if was is None else (was.size,)
                    new_bucket = not rows
                    rows[share.shnum] = share
                else:
                    old = db.execute("SELECT size FROM shares WHERE si = ? AND shnum = ?",
                                     (si, share.shnum)).fetchone()
                    new_bucket = old is None and db.execute(
                        "SELECT 1 FROM shares WHERE si = ? LIMIT 1", (si,)).fetchone() is None
                if old is None:
                    buckets += new_bucket
                    count += 1
                    size += share.size
                else:
                    size += share.size - old[0]
                db.execute(f"INSERT OR REPLACE INTO shares ({_COLUMNS}) VALUES "
                           "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", share.row())
            if not single:
                db.execute("COMMIT")
        except BaseException:
            if not single:
                db.execute("ROLLBACK")
            raise
        self._totals = Totals(buckets, count, size)

    def update(self, keys: Iterable[tuple[bytes, int]],
               read: Callable[[bytes, int], IndexedShare | None]) -> None:
        """Bring these shares' rows in step with their files: ``read`` each (None: the file
        is gone) and write what changed, in one hold of the write lock, so that no other
        thread's reading of a file can be written between this one's reading and writing.
        (A row that is not there is not looked up for a file gone, which matters for the
        thousands garbage collection hands over.)"""
        with self._write_lock:
            db = self.connection
            present, gone = [], []
            found = []
            for storage_index, shnum in keys:
                share = read(storage_index, shnum)
                if share is None:
                    gone.append((storage_index, shnum))
                else:
                    found.append(share)
            known = _shares_of(db, {share.storage_index for share in found})
            for share in found:
                was = known[share.storage_index].get(share.shnum)
                # only what changed is written: a refused or empty change leaves the file
                if was is None or was.row() != share.row():
                    present.append(share)
            if present:
                self._put_many(db, present, known)
            if gone:
                self._remove_many(db, gone)

    def remove(self, storage_index: bytes, shnum: int) -> None:
        """Forget one share (after its file was deleted)."""
        self.remove_many([(storage_index, shnum)])

    def remove_many(self, keys: Iterable[tuple[bytes, int]]) -> None:
        """Forget several shares in one transaction (those not indexed are skipped)."""
        with self._write_lock:
            self._remove_many(self.connection, keys)

    def _remove_many(self, db: sqlite3.Connection, keys: Iterable[tuple[bytes, int]]) -> None:
        buckets, count, size = self._totals.buckets, self._totals.shares, self._totals.bytes
        db.execute("BEGIN")
        try:
            for key in keys:
                old = db.execute("DELETE FROM shares WHERE si = ? AND shnum = ? RETURNING size",
                                 key).fetchone()
                if old is None:
                    continue  # not indexed: nothing written
                count -= 1
                size -= old[0]
                if db.execute("SELECT 1 FROM shares WHERE si = ? LIMIT 1",
                              (key[0],)).fetchone() is None:
                    buckets -= 1
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._totals = Totals(buckets, count, size)

    def replace_prefix(self, prefix: int, rows: Iterable[tuple[Any, ...]]) -> None:
        """Make ``rows`` (:meth:`IndexedShare.row`) those of one prefix directory (a rebuild
        read them from the files; one row per share), keeping the running totals."""
        rows = list(rows)
        with self._write_lock:
            db = self.connection
            db.execute("BEGIN")
            try:
                gone = db.execute("DELETE FROM shares WHERE si >= ? AND si < ? RETURNING si, size",
                                  _prefix_range(prefix)).fetchall()
                db.executemany(f"INSERT OR REPLACE INTO shares ({_COLUMNS}) VALUES "
                               "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            # (the buckets of different prefixes are different storage indexes)
            was = self._totals
            self._totals = Totals(
                was.buckets - len({bytes(si) for si, _ in gone}) + len({row[0] for row in rows}),
                was.shares - len(gone) + len(rows),
                was.bytes - sum(size for _, size in gone) + sum(row[3] for row in rows))

    def clear(self) -> None:
        """Forget every share (before a rebuild)."""
        with self._write_lock:
            self.connection.execute("DELETE FROM shares")
            self._totals = Totals()

    def sync(self) -> None:
        """Make everything written so far durable (before a clean stop is recorded)."""
        with self._write_lock:
            db = self.connection
            db.execute("PRAGMA synchronous=FULL")
            try:
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                db.execute("PRAGMA synchronous=OFF")

    def close(self) -> None:
        """Close the database (and the other threads' connections)."""
        with self._thread_connections_lock:
            for connection in self._thread_connections:
                connection.close()
            self._thread_connections.clear()
        self._db.close()

    def size_on_disk(self) -> int:
        """Bytes the index takes (the database and its write-ahead log)."""
        total = 0
        for suffix in ("", "-wal", "-shm"):
            try:
                total += os.path.getsize(self.path + suffix)
            except OSError:
                pass
        return total

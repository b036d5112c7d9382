"""The backup database of ``tahoe backup``: ``NODEDIR/private/backupdb.sqlite``.

Tahoe-LAFS 1.20's schema, version 2 (``scripts/backupdb.py``), kept byte for
byte so that a user can switch between Tahoe's ``tahoe backup`` and ours
without uploading anything again:

* ``version(version)``: one row, 2 (a version-1 database gets the
  ``directories`` table and is raised to 2, as Tahoe does);
* ``local_files(path PRIMARY KEY, size, mtime, ctime, fileid)``: the absolute
  path as text, the size and the whole seconds of ``st_mtime`` and
  ``st_ctime`` (what ``os.stat(path)[ST_MTIME]`` gives);
* ``caps(fileid INTEGER PRIMARY KEY AUTOINCREMENT, filecap UNIQUE)`` and
  ``last_upload(fileid PRIMARY KEY, last_uploaded, last_checked)``;
* ``directories(dirhash PRIMARY KEY, dircap, last_uploaded, last_checked)``:
  a directory's hash over its sorted ``netstring(name) netstring(cap)`` pairs,
  in base32, tagged ``allmydata_backupdb_dirhash_v1``.

Caps and directory hashes are stored as SQLite BLOBs (Tahoe writes Python
bytes); they are read back in either storage class. Times are floats.

The rules are Tahoe's: a file is unchanged if its size, mtime and ctime equal
the row's (``--ignore-timestamps`` trusts nothing); an unchanged file or a
known directory is re-checked on the grid with a probability growing from 0
at one month after its last check to 1 at two months. Unlike Tahoe, which
commits after every row, changes are committed every
:data:`COMMIT_EVERY` rows and at the end: a backup that breaks off keeps what
it recorded up to the last commit (files uploaded after it are simply
uploaded again next time). Standard library only.
"""
from __future__ import annotations

import os
import random
import sqlite3
import time
from stat import ST_CTIME, ST_MTIME
from collections.abc import Callable, Mapping
from typing import Any

from attrs import frozen

from ..util import base32
from ..util.hashutil import backupdb_dirhash
from ..util.netstring import netstring
from .errors import CLIError

__all__ = ["SCHEMA_VERSION", "BackupDB", "BackupDBError", "FileRecord", "DirectoryRecord",
           "open_backupdb", "directory_hash"]

SCHEMA_VERSION = 2
DAY = 24 * 60 * 60
MONTH = 30 * DAY
#: No re-check of an entry checked more recently than this (seconds)...
NO_CHECK_BEFORE = MONTH
#: ...and always one once it is this old; in between, the probability grows linearly.
ALWAYS_CHECK_AFTER = 2 * MONTH
#: Rows changed between two commits.
COMMIT_EVERY = 500

_TABLES_V1 = """
CREATE TABLE version (version INTEGER);
CREATE TABLE local_files (path VARCHAR(1024) PRIMARY KEY, size INTEGER, mtime NUMBER,
                          ctime NUMBER, fileid INTEGER);
CREATE TABLE caps (fileid INTEGER PRIMARY KEY AUTOINCREMENT, filecap VARCHAR(256) UNIQUE);
CREATE TABLE last_upload (fileid INTEGER PRIMARY KEY, last_uploaded TIMESTAMP,
                          last_checked TIMESTAMP);
"""
_TABLE_DIRECTORIES = """
CREATE TABLE directories (dirhash varchar(256) PRIMARY KEY, dircap varchar(256),
                          last_uploaded TIMESTAMP, last_checked TIMESTAMP);
"""


class BackupDBError(CLIError):
    """The backup database cannot be opened, created or understood."""


@frozen
class FileRecord:
    """What the database says about a local file.

    :ivar path: the absolute path.
    :ivar size: ``st_size``; :ivar mtime:, :ivar ctime: whole seconds, as stored.
    :ivar filecap: the cap of the earlier upload when the file is unchanged, else None.
    :ivar should_check: the earlier upload is to be checked on the grid before reuse.
    """

    path: str
    size: int
    mtime: int
    ctime: int
    filecap: str | None
    should_check: bool


@frozen
class DirectoryRecord:
    """What the database says about a directory of given contents.

    :ivar dirhash: the contents' hash (base32), the key of the row.
    :ivar dircap: an immutable directory made earlier with these contents, or None.
    :ivar should_check: it is to be checked on the grid before reuse.
    """

    dirhash: str
    dircap: str | None
    should_check: bool


def directory_hash(contents: Mapping[str, str]) -> str:
    """The base32 hash Tahoe files a directory under: child name -> child cap."""
    entries = sorted((name.encode("utf-8"), cap.encode("ascii")) for name, cap in contents.items())
    return base32.b2a(backupdb_dirhash(b"".join(netstring(n) + netstring(c) for n, c in entries)))


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def open_backupdb(path: str, now: Callable[[], float] = time.time,
                  rng: Callable[[], float] = random.random) -> "BackupDB":
    """Open the database at ``path`` (its directory must exist), creating it if missing.

    :param now: the clock (seconds since the epoch); :param rng: uniform in [0, 1).
    :raises BackupDBError: if it cannot be opened or is not a backup database of
        version 1 or 2.
    """
    creating = not os.path.exists(path)
    if creating:  # it holds caps: owner only (sqlite3 would create it with the umask)
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except OSError as error:
            raise BackupDBError(f"Unable to create/open backupdb file {path}: {error}") from None
    try:
        connection = sqlite3.connect(path)
    except sqlite3.Error as error:
        raise BackupDBError(f"Unable to create/open backupdb file {path}: {error}") from None
    try:
        connection.execute("PRAGMA foreign_keys = ON")
        if creating:
            connection.executescript(_TABLES_V1 + _TABLE_DIRECTORIES)
            connection.execute("INSERT INTO version (version) VALUES (?)", (SCHEMA_VERSION,))
            connection.commit()
        version = connection.execute("SELECT version FROM version").fetchone()[0]
        if version == 1:
            connection.executescript(_TABLE_DIRECTORIES + "UPDATE version SET version=2;")
            connection.commit()
            version = 2
    except (sqlite3.Error, TypeError) as error:
        connection.close()
        raise BackupDBError(f"backupdb file is unusable: {error}") from None
    if version != SCHEMA_VERSION:
        connection.close()
        raise BackupDBError(f"Unable to handle backupdb version {version}")
    return BackupDB(connection, now, rng)


class BackupDB:
    """A backup database in Tahoe's schema (see the module's description).

    Use one thread only (SQLite connections belong to their thread).
    """

    def __init__(self, connection: sqlite3.Connection, now: Callable[[], float],
                 rng: Callable[[], float]) -> None:
        self._db = connection
        self._now = now
        self._rng = rng
        self._pending = 0
        #: Why the database could not be written (the disk full...), once it could not:
        #: what was not committed is rolled back and nothing more is recorded. The backup
        #: goes on; the next one checks those files again (they are a cache of its work).
        self.write_error: str | None = None

    def _should_check(self, last_checked: float | None) -> bool:
        age = self._now() - (last_checked or 0.0)
        chance = (age - NO_CHECK_BEFORE) / (ALWAYS_CHECK_AFTER - NO_CHECK_BEFORE)
        return self._rng() < min(max(chance, 0.0), 1.0)

    def _write(self, work: Callable[[], object]) -> None:
        """Run ``work`` (statements that change the database), unless it can no longer be
        written; a failure is kept in :attr:`write_error` and what waited is rolled back."""
        if self.write_error is not None:
            return
        try:
            work()
        except sqlite3.Error as error:
            self._failed(error)
            return
        self._pending += 1
        if self._pending >= COMMIT_EVERY:
            self.commit()

    def _failed(self, error: sqlite3.Error) -> None:
        self.write_error = str(error)
        try:
            self._db.rollback()
        except sqlite3.Error:
            pass

    def commit(self) -> None:
        """Make the changes so far permanent (if the database can still be written)."""
        if self.write_error is not None:
            return
        try:
            self._db.commit()
        except sqlite3.Error as error:
            self._failed(error)
        self._pending = 0

    def close(self) -> None:
        """Commit and close."""
        self.commit()
        self._db.close()

    # -- files

    def check_file(self, path: str, stat: os.stat_result, use_timestamps: bool = True
                   ) -> FileRecord:
        """The record of the file at ``path`` (absolute) whose ``os.stat`` is ``stat``.

        A changed file loses its row (it is to be uploaded, then recorded with
        :meth:`did_upload_file`).
        """
        # Whole seconds as the stat tuple gives them (a float could round up).
        size, mtime, ctime = stat.st_size, stat[ST_MTIME], stat[ST_CTIME]
        row = self._db.execute(
            "SELECT l.size, l.mtime, l.ctime, c.filecap, u.last_checked FROM local_files AS l"
            " LEFT JOIN caps AS c ON c.fileid = l.fileid"
            " LEFT JOIN last_upload AS u ON u.fileid = l.fileid WHERE l.path = ?",
            (path,)).fetchone()
        if row is None:
            return FileRecord(path, size, mtime, ctime, None, False)
        old_size, old_mtime, old_ctime, filecap, last_checked = row
        if (old_size != size or not use_timestamps or old_mtime != mtime or old_ctime != ctime
                or filecap is None or last_checked is None):
            self._write(lambda: self._db.execute("DELETE FROM local_files WHERE path = ?",
                                                 (path,)))
            return FileRecord(path, size, mtime, ctime, None, False)
        return FileRecord(path, size, mtime, ctime, _text(filecap),
                          self._should_check(last_checked))

    def _fileid(self, filecap: str) -> int:
        blob = filecap.encode("utf-8")
        self._db.execute("INSERT OR IGNORE INTO caps (filecap) VALUES (?)", (blob,))
        row = self._db.execute("SELECT fileid FROM caps WHERE filecap IN (?, ?)",
                               (blob, filecap)).fetchone()
        return int(row[0])

    def did_upload_file(self, record: FileRecord, filecap: str) -> None:
        """Record that the file of ``record`` was uploaded (now) as ``filecap``."""
        def record_it() -> None:
            now = self._now()
            fileid = self._fileid(filecap)
            self._db.execute("INSERT OR REPLACE INTO last_upload VALUES (?, ?, ?)",
                             (fileid, now, now))
            self._db.execute("INSERT OR REPLACE INTO local_files VALUES (?, ?, ?, ?, ?)",
                             (record.path, record.size, record.mtime, record.ctime, fileid))
        self._write(record_it)

    def did_check_file_healthy(self, filecap: str) -> None:
        """Record that the file ``filecap`` was found healthy (now)."""
        self._write(lambda: self._db.execute(
            "UPDATE last_upload SET last_checked = ? WHERE fileid = ?",
            (self._now(), self._fileid(filecap))))

    # -- directories

    def check_directory(self, contents: Mapping[str, str]) -> DirectoryRecord:
        """The record of a directory with ``contents`` (child name -> immutable cap)."""
        dirhash = directory_hash(contents)
        row = self._db.execute("SELECT dircap, last_checked FROM directories"
                               " WHERE dirhash IN (?, ?)",
                               (dirhash.encode("ascii"), dirhash)).fetchone()
        if row is None or row[0] is None:
            return DirectoryRecord(dirhash, None, False)
        return DirectoryRecord(dirhash, _text(row[0]), self._should_check(row[1]))

    def did_create_directory(self, record: DirectoryRecord, dircap: str) -> None:
        """Record that a directory with the contents of ``record`` was made as ``dircap``."""
        def record_it() -> None:
            now = self._now()
            self._db.execute("DELETE FROM directories WHERE dirhash = ?", (record.dirhash,))
            self._db.execute("REPLACE INTO directories VALUES (?, ?, ?, ?)",
                             (record.dirhash.encode("ascii"), dircap.encode("utf-8"), now,
                              now))
        self._write(record_it)

    def did_check_directory_healthy(self, dircap: str) -> None:
        """Record that the directory ``dircap`` was found healthy (now)."""
        self._write(lambda: self._db.execute(
            "UPDATE directories SET last_checked = ? WHERE dircap IN (?, ?)",
            (self._now(), dircap.encode("utf-8"), dircap)))

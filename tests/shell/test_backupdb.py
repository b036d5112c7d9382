"""The backup database of ``tahoe backup``: Tahoe's schema, its skip and re-check rules."""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from tahoe.cli.backup import archive_name
from tahoe.cli.backup_walk import (DIRECTORY, FILE, SPECIAL, SYMLINK, VCS_PATTERNS,
                                   collect_targets, exclusion, read_exclude_file)
from tahoe.cli.backupdb import MONTH, BackupDBError, directory_hash, open_backupdb
from tahoe.cli.errors import UsageError

#: Tahoe 1.20's tables and columns (scripts/backupdb.py, SCHEMA_v2).
TAHOE_COLUMNS = {
    "version": ["version"],
    "local_files": ["path", "size", "mtime", "ctime", "fileid"],
    "caps": ["fileid", "filecap"],
    "last_upload": ["fileid", "last_uploaded", "last_checked"],
    "directories": ["dirhash", "dircap", "last_uploaded", "last_checked"],
}
CAP = "URI:CHK:" + "a" * 26 + ":" + "b" * 52 + ":3:10:1000"


class Clock:
    """A settable clock and random source."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0
        self.draw = 0.5

    def time(self) -> float:
        return self.now

    def random(self) -> float:
        return self.draw


def test_new_database_has_tahoes_schema(tmp_path: Path) -> None:
    """A new database has Tahoe's tables, columns, primary keys and version 2."""
    open_backupdb(str(tmp_path / "db.sqlite")).close()
    db = sqlite3.connect(tmp_path / "db.sqlite")
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables - {"sqlite_sequence"} == set(TAHOE_COLUMNS)
    for table, columns in TAHOE_COLUMNS.items():
        assert [row[1] for row in db.execute(f"PRAGMA table_info({table})")] == columns
    assert db.execute("SELECT version FROM version").fetchall() == [(2,)]


def test_files_are_skipped_by_size_mtime_and_ctime(tmp_path: Path) -> None:
    """An unchanged file reuses its cap; a changed size or time, or --ignore-timestamps,
    means an upload; rows hold whole seconds and caps as BLOBs, as Tahoe writes them."""
    clock = Clock()
    db = open_backupdb(str(tmp_path / "db.sqlite"), clock.time, clock.random)
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    first = db.check_file(str(path), os.stat(path))
    assert first.filecap is None
    db.did_upload_file(first, CAP)
    again = db.check_file(str(path), os.stat(path))
    assert (again.filecap, again.should_check) == (CAP, False)
    assert db.check_file(str(path), os.stat(path), use_timestamps=False).filecap is None
    db.did_upload_file(first, CAP)
    path.write_bytes(b"y" * 11)
    assert db.check_file(str(path), os.stat(path)).filecap is None
    db.close()
    raw = sqlite3.connect(tmp_path / "db.sqlite")
    assert raw.execute("SELECT typeof(filecap) FROM caps").fetchall() == [("blob",)]
    assert raw.execute("SELECT count(*) FROM local_files").fetchone() == (0,)


def test_a_database_that_cannot_grow_stops_recording_only(tmp_path: Path) -> None:
    """SQLite's "database or disk is full" (here its page limit reached) while recording:
    no exception, the reason kept in ``write_error``, what was not committed rolled back,
    nothing more written, lookups still answered; what was committed before stays.
    Before, the error ended ``tahoe backup`` with a traceback."""
    clock = Clock()
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    db = open_backupdb(str(tmp_path / "db.sqlite"), clock.time, clock.random)
    db.did_upload_file(db.check_file(str(path), os.stat(path)), CAP)
    db.commit()
    pages = db._db.execute("PRAGMA page_count").fetchone()[0]  # noqa: SLF001
    db._db.execute(f"PRAGMA max_page_count = {pages}")  # noqa: SLF001
    for n in range(2000):  # rows enough to need a new page
        other = tmp_path / "other"
        record = db.check_file(f"{other}-{n}-{'p' * 200}", os.stat(path))
        db.did_upload_file(record, CAP.replace("1000", str(2000 + n)))
        if db.write_error is not None:
            break
    assert db.write_error == "database or disk is full"
    db.did_create_directory(db.check_directory({"f": CAP}), "URI:DIR2-CHK:x:y:1:1:1")
    assert db.check_file(str(path), os.stat(path)).filecap == CAP
    db.close()
    again = open_backupdb(str(tmp_path / "db.sqlite"), clock.time, clock.random)
    assert again.check_file(str(path), os.stat(path)).filecap == CAP
    assert again.check_directory({"f": CAP}).dircap is None
    again.close()


def test_old_entries_are_rechecked_with_tahoes_probability(tmp_path: Path) -> None:
    """Under a month since the last check: never; at 1.5 months: half the time; past two
    months: always; a healthy check restarts the count."""
    clock = Clock()
    db = open_backupdb(str(tmp_path / "db.sqlite"), clock.time, clock.random)
    path = tmp_path / "f"
    path.write_bytes(b"data")
    db.did_upload_file(db.check_file(str(path), os.stat(path)), CAP)
    contents = {"f": CAP}
    dirrecord = db.check_directory(contents)
    db.did_create_directory(dirrecord, "URI:DIR2-CHK:x")
    for age, draw, expected in ((0.9 * MONTH, 0.0, False), (1.5 * MONTH, 0.49, True),
                                (1.5 * MONTH, 0.51, False), (2.1 * MONTH, 0.999, True)):
        clock.now = 1_700_000_000.0 + age
        clock.draw = draw
        assert db.check_file(str(path), os.stat(path)).should_check is expected, age
        assert db.check_directory(contents).should_check is expected, age
    db.did_check_file_healthy(CAP)
    db.did_check_directory_healthy("URI:DIR2-CHK:x")
    assert db.check_file(str(path), os.stat(path)).should_check is False
    assert db.check_directory(contents).dircap == "URI:DIR2-CHK:x"
    assert db.check_directory({"g": CAP}).dircap is None


def test_directory_hash_depends_on_names_and_caps_only() -> None:
    """The directory hash is over sorted names and caps: order-free, content-sensitive."""
    one = directory_hash({"b": "URI:LIT:aa", "a": CAP})
    assert one == directory_hash({"a": CAP, "b": "URI:LIT:aa"})
    assert one != directory_hash({"a": CAP, "c": "URI:LIT:aa"})
    assert len(one) == 52


def test_version_one_is_upgraded_and_junk_refused(tmp_path: Path) -> None:
    """A version-1 database gets its directories table; a junk file is an error."""
    old = sqlite3.connect(tmp_path / "v1.sqlite")
    old.executescript("CREATE TABLE version (version INTEGER); INSERT INTO version VALUES (1);"
                      "CREATE TABLE local_files (path PRIMARY KEY, size, mtime, ctime, fileid);"
                      "CREATE TABLE caps (fileid INTEGER PRIMARY KEY AUTOINCREMENT,"
                      " filecap UNIQUE);"
                      "CREATE TABLE last_upload (fileid PRIMARY KEY, last_uploaded,"
                      " last_checked);")
    old.close()
    open_backupdb(str(tmp_path / "v1.sqlite")).close()
    upgraded = sqlite3.connect(tmp_path / "v1.sqlite")
    assert upgraded.execute("SELECT version FROM version").fetchall() == [(2,)]
    (tmp_path / "junk.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(BackupDBError, match="unusable"):
        open_backupdb(str(tmp_path / "junk.sqlite"))


def test_walk_order_excludes_and_skips(tmp_path: Path) -> None:
    """Directories come after their children (deepest first); excludes match names at
    every depth; symlinks and FIFOs are targets to skip."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "deep.txt").write_text("d")
    (tmp_path / "a" / "keep.txt").write_text("k")
    (tmp_path / "a" / "skip.tmp").write_text("s")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("h")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    os.mkfifo(tmp_path / "fifo")
    targets = collect_targets(str(tmp_path), exclusion(["*.tmp", *VCS_PATTERNS]))
    names = [(t.kind, os.path.relpath(t.path, tmp_path), t.depth) for t in targets]
    assert names == [(FILE, "a/b/deep.txt", 3), (DIRECTORY, "a/b", 2), (FILE, "a/keep.txt", 2),
                     (DIRECTORY, "a", 1), (SPECIAL, "fifo", 1), (SYMLINK, "link", 1),
                     (DIRECTORY, ".", 0)]
    (tmp_path / "excludes").write_text("*.txt\n\n  fifo  \n", encoding="utf-8")
    assert read_exclude_file(str(tmp_path / "excludes")) == ["*.txt", "fifo"]
    with pytest.raises(UsageError, match="Error opening exclude file"):
        read_exclude_file(str(tmp_path / "missing"))
    with pytest.raises(UsageError, match="is not a directory"):
        collect_targets(str(tmp_path / "a" / "keep.txt"), exclusion([]))


def test_archive_names_are_tahoes() -> None:
    """Snapshots are named by the UTC time in Tahoe's form."""
    assert archive_name(0) == "1970-01-01_00:00:00Z"
    assert archive_name(1_700_000_000.7) == "2023-11-14_22:13:20Z"


class _Answer:
    """A canned gateway answer (what ``remote.call`` reads)."""

    status, reason = 200, "OK"

    def __init__(self, body: bytes) -> None:
        self.body = body

    def __enter__(self) -> "_Answer":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def read(self, limit: int | None = None) -> bytes:
        return self.body


class _MkdirOnlyGateway:
    """Answers mkdir-immutable with a fixed cap and records the children it was sent."""

    def __init__(self) -> None:
        self.sent: list[dict] = []

    def request(self, method: str, relative: str, **kwargs: object) -> _Answer:
        assert (method, relative) == ("POST", "uri?t=mkdir-immutable"), relative
        body = kwargs["body"]
        self.sent.append(__import__("json").loads(body.data))  # type: ignore[attr-defined]
        return _Answer(b"URI:DIR2-LIT:\n")


def test_unreadable_file_is_skipped_with_a_warning(tmp_path: Path) -> None:
    """A file that cannot be opened when its turn comes is skipped with Tahoe's 'permission
    denied' warning and left out of its directory; the rest goes on."""
    import argparse
    import io

    from tahoe.cli.backup import _Backup
    from tahoe.cli.backup_walk import Target
    root = tmp_path / "tree"
    root.mkdir()
    (root / "gone.txt").write_text("here at walk time")
    targets = collect_targets(str(root), exclusion([]))
    (root / "gone.txt").unlink()  # unreadable by the time it is uploaded
    gateway = _MkdirOnlyGateway()
    args = argparse.Namespace(ignore_timestamps=False, quiet=False, verbose=False)
    stdout, stderr = io.StringIO(), io.StringIO()
    backup = _Backup(gateway, open_backupdb(str(tmp_path / "db")), args,  # type: ignore[arg-type]
                     stdout, stderr, workers=2)
    assert backup.run(targets) == "URI:DIR2-LIT:"
    assert stderr.getvalue() == f"WARNING: permission denied on file '{root / 'gone.txt'}'\n"
    assert gateway.sent == [{}]
    assert backup.counts["files_skipped"] == 1 and backup.counts["directories_created"] == 1
    assert isinstance(targets[-1], Target)

"""The share index beside the share files: kept in step, trusted only when fresh, rebuilt
from the files while the server serves, and never the reason a live share goes.

Real share files under a temporary directory, the real :class:`StorageServer`
and lease checker, SQLite on disk; a ``task.Clock`` gives the time. (The
fixture in ``conftest.py`` also checks, after every storage-server test, that
the index says what the files say.)
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.internet import defer
from twisted.internet.task import Clock

from tahoe.storage import paths
from tahoe.storage.lease_checker import LeaseCheckingCrawler
from tahoe.storage.leases import LEASE_DURATION, ExpiryPolicy
from tahoe.storage.indexing import BATCH_ROWS
from tahoe.storage.server import INDEX_BATCH_DELAY, StorageServer
from tahoe.storage.share_index import IMMUTABLE, MUTABLE, ShareIndex
from tests.shell.storage_support import (assert_index_in_step, clock_at, make_server,
                                         numbered_si, shares_indexed, shares_on_disk)

START = 1_760_000_000.0
DAY = 86400
RENEW, CANCEL = b"r" * 32, b"c" * 32


@pytest.fixture
def clock() -> Clock:
    return clock_at(START)


def _si(n: int) -> bytes:
    return numbered_si(n, 53, 7)


def _upload(server: StorageServer, n: int, shnums: set[int] = frozenset({0, 3}),
            renew: bytes = RENEW) -> bytes:
    si = _si(n)
    _, writers = server.allocate_buckets(si, renew, CANCEL, set(shnums), 8)
    for writer in writers.values():
        writer.write(0, b"abcdefgh")
        writer.close()
    return si


def _slot(server: StorageServer, n: int, data: bytes = b"slot data", shnum: int = 0) -> bytes:
    si = _si(n)
    ok, _ = server.slot_testv_and_readv_and_writev(
        si, (b"w" * 32, RENEW, CANCEL), {shnum: ([], [(0, data)], None)}, [])
    assert ok
    return si


# -- freshness


def test_an_empty_storage_directory_is_indexed_at_once(root: Path, clock: Clock) -> None:
    server = make_server(root, clock)
    assert server.index.fresh


def test_a_clean_stop_leaves_the_index_fresh(root: Path, clock: Clock) -> None:
    """Kept totals and rows: the next start trusts them without reading a share."""
    server = make_server(root, clock)
    for n in range(5):
        _upload(server, n)
    _slot(server, 9)
    server.close()
    again = make_server(root, clock)
    assert again.index.fresh
    assert again.index.index.totals.buckets == 6 and again.index.index.totals.shares == 11
    assert set(again.get_buckets(_si(2))) == {0, 3}


def test_a_crash_leaves_it_stale(root: Path, clock: Clock) -> None:
    """A server that never closed (a crash) may have changed a file without its row."""
    _upload(make_server(root, clock), 1)
    assert not make_server(root, clock).index.fresh


def test_another_server_on_the_directory_makes_it_stale(root: Path, clock: Clock) -> None:
    """Tahoe 1.20 re-creates shares/incoming at each start; we notice."""
    server = make_server(root, clock)
    _upload(server, 1)
    server.close()
    incoming = root / "shares" / "incoming"
    os.rmdir(incoming)
    incoming.mkdir()
    assert not make_server(root, clock).index.fresh


def test_buckets_copied_in_by_hand_make_it_stale(root: Path, clock: Clock) -> None:
    server = make_server(root, clock)
    si = _upload(server, 1)
    server.close()
    bucket = root / paths.share_dir(si)
    copied = bucket.parent.parent / "aa" / ("aa" + bucket.name[2:])
    copied.mkdir(parents=True)
    (copied / "0").write_bytes((bucket / "0").read_bytes())
    assert not make_server(root, clock).index.fresh


def test_an_unreadable_index_is_set_aside(root: Path, clock: Clock) -> None:
    server = make_server(root, clock)
    _upload(server, 1)
    server.close()
    (root / "share-index.sqlite").write_bytes(b"this is no database" * 100)
    for suffix in ("-wal", "-shm"):
        (root / f"share-index.sqlite{suffix}").unlink(missing_ok=True)
    again = make_server(root, clock)
    assert not again.index.fresh
    assert (root / "share-index.sqlite.unreadable").exists()
    assert set(again.get_buckets(_si(1))) == {0, 3}  # from the files meanwhile


# -- kept in step


OPERATIONS = st.lists(st.tuples(
    st.sampled_from(["upload", "abort", "add_lease", "renew", "slot", "slot_grow",
                     "slot_delete", "advise", "time"]),
    st.integers(0, 3), st.integers(0, 2)), max_size=25)


@given(OPERATIONS)
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_index_follows_every_operation(tmp_path: Path, operations: list) -> None:
    """After every storage call, in any order: what the index holds is what the files hold."""
    clock = clock_at(START)
    root = tmp_path / f"s{len(os.listdir(tmp_path))}"
    server = make_server(root, clock)
    for op, n, shnum in operations:
        si = _si(n)
        if op == "upload":
            try:
                _upload(server, n, {shnum, shnum + 1})
            except Exception:  # noqa: BLE001 - a mutable slot at this SI: refused, nothing changed
                pass
        elif op == "abort":
            _, writers = server.allocate_buckets(si, RENEW, CANCEL, {shnum}, 8) \
                if not server.mutable_share_lengths(si) else (None, {})
            for writer in writers.values():
                writer.abort()
        elif op in ("add_lease", "renew"):
            secret = bytes([n + 65]) * 32 if op == "add_lease" else RENEW
            try:
                server.add_lease(si, secret, CANCEL)
            except Exception:  # noqa: BLE001
                pass
        elif op.startswith("slot"):
            if server.get_buckets(si):
                continue  # an immutable SI: slot writes are refused
            new_length = 0 if op == "slot_delete" else None
            data = b"x" * (shnum * 300 + 1) if op == "slot_grow" else b"y"
            server.slot_testv_and_readv_and_writev(
                si, (b"w" * 32, RENEW, CANCEL), {shnum: ([], [(0, data)], new_length)}, [])
        elif op == "advise":
            server.advise_corrupt_share(b"immutable", si, shnum, b"looks odd")
        elif op == "time":
            clock.advance(DAY * (shnum + 1))
        assert shares_indexed(server) == shares_on_disk(root), (op, n, shnum)
    server.close()


def test_rows_hold_kinds_sizes_and_lease_times(root: Path, clock: Clock) -> None:
    server = make_server(root, clock)
    si = _upload(server, 1, {0})
    clock.advance(DAY)
    server.add_lease(si, b"R" * 32, CANCEL)
    slot = _slot(server, 2, b"z" * 100)
    (row,) = server.index.index.shares(si).values()
    assert row.kind == IMMUTABLE and row.data_length == 8
    assert row.expirations == (int(START) + LEASE_DURATION, int(START) + DAY + LEASE_DURATION)
    assert row.size == os.path.getsize(root / paths.share_path(si, 0))
    (mutable,) = server.index.index.shares(slot).values()
    assert mutable.kind == MUTABLE and mutable.data_length == 100


# -- rebuilding while serving


class _Held:
    """A ``run_in_thread`` that holds every job until the test lets it run."""

    def __init__(self) -> None:
        self.jobs: list[tuple[defer.Deferred, object, tuple]] = []

    def __call__(self, function: object, *args: object) -> defer.Deferred:
        d: defer.Deferred = defer.Deferred()
        self.jobs.append((d, function, args))
        return d

    def run_one(self) -> None:
        d, function, args = self.jobs.pop(0)
        d.callback(function(*args))  # type: ignore[operator]

    def run_all(self) -> None:
        while self.jobs:
            self.run_one()


def _stale_server(root: Path, clock: Clock, count: int) -> StorageServer:
    first = make_server(root, clock)
    for n in range(count):
        _upload(first, n)
    first.close()
    (root / "share-index.sqlite").unlink()
    server = make_server(root, clock)
    assert not server.index.fresh
    return server


def test_the_server_answers_from_the_files_while_rebuilding(root: Path, clock: Clock) -> None:
    """Requests during the rebuild see every share; changes made to prefixes read already,
    and to those not read yet, are in the index once it is complete."""
    server = _stale_server(root, clock, 40)
    held = _Held()
    checker = LeaseCheckingCrawler(root, clock, server.index, ExpiryPolicy("age"), False,
                                   held, slow_start=0)
    checker.start()
    clock.advance(0)
    for _ in range(300):  # part of the walk
        held.run_one()
    assert not server.index.fresh
    for n in range(40):
        assert set(server.get_buckets(_si(n))) == {0, 3}
    # changes in the middle of the walk, in prefixes before and after where it stands
    for n in range(40, 60):
        _upload(server, n, {1})
    server.add_lease(_si(3), b"N" * 32, CANCEL)
    _slot(server, 70)
    held.run_all()
    assert server.index.fresh
    assert_index_in_step(server)
    assert server.index.index.totals.buckets == 61
    checker.stop()


def test_a_failed_index_write_loses_no_share(root: Path, clock: Clock,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The file changed, the index could not follow (here: a write error): the call still
    succeeds, the server answers from the files, and the lease checker's next walk rebuilds
    the index; a lease renewed then is honoured by garbage collection."""
    server = make_server(root, clock)
    old = _upload(server, 1)
    clock.advance(LEASE_DURATION + DAY)  # its lease has expired
    checker = LeaseCheckingCrawler(root, clock, server.index, ExpiryPolicy("age"), True,
                                   slow_start=10 ** 6)
    checker.start()

    def failing(*args: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")
    with monkeypatch.context() as m:
        m.setattr(ShareIndex, "_put_many", failing)
        server.add_lease(old, b"N" * 32, CANCEL)  # renewed in the file only
    assert not server.index.fresh
    assert set(server.get_buckets(old)) == {0, 3}
    clock.advance(0)  # the checker was woken: its walk rebuilds (and collects)
    assert server.index.fresh
    assert set(server.get_buckets(old)) == {0, 3}  # the renewed lease kept it
    assert_index_in_step(server)
    checker.stop()


def test_collection_reads_the_file_before_deleting(root: Path, clock: Clock,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A row that says "expired" while the file holds a live lease (the index ran late)
    deletes nothing: the file decides."""
    server = make_server(root, clock)
    si = _upload(server, 1)
    clock.advance(LEASE_DURATION + DAY)
    with monkeypatch.context() as m:
        m.setattr(server.index, "refresh", lambda keys: None)  # the index misses the renewal
        server.add_lease(si, b"N" * 32, CANCEL)
    (row,) = [r for r in server.index.index.shares(si).values() if r.shnum == 0]
    assert max(row.expirations) < clock.seconds()  # the index thinks it expired
    checker = LeaseCheckingCrawler(root, clock, server.index, ExpiryPolicy("age"), True,
                                   slow_start=0)
    checker.start()
    clock.advance(0)
    assert set(server.get_buckets(si)) == {0, 3}
    assert (root / paths.share_path(si, 0)).exists()
    assert_index_in_step(server)  # and the index learnt the truth from the file
    checker.stop()


def test_an_update_reads_and_writes_in_one_hold_of_the_lock(tmp_path: Path) -> None:
    """Two threads bring the same share's row in step: the second reads the file only once
    the first has written what it read, so an older reading is never written over a newer
    one (each thread on its own connection)."""
    import threading

    from tahoe.storage.share_index import IndexedShare

    index = ShareIndex(tmp_path / "share-index.sqlite")
    si = _si(1)
    old = IndexedShare(si, 0, IMMUTABLE, 100, 4096, 4096, 10, (1,))
    new = IndexedShare(si, 0, IMMUTABLE, 100, 4096, 4096, 10, (1, 2))
    first_reading, second_read = threading.Event(), threading.Event()
    release_first = threading.Event()
    events: list[str] = []

    def slow_old_read(storage_index: bytes, shnum: int) -> IndexedShare:
        events.append("first reads")
        first_reading.set()
        assert release_first.wait(10)
        return old

    def new_read(storage_index: bytes, shnum: int) -> IndexedShare:
        events.append("second reads")
        second_read.set()
        return new

    first = threading.Thread(target=index.update, args=([(si, 0)], slow_old_read))
    first.start()
    assert first_reading.wait(10)
    second = threading.Thread(target=index.update, args=([(si, 0)], new_read))
    second.start()
    assert not second_read.wait(0.3)  # held back while the first has read but not written
    release_first.set()
    first.join(10)
    second.join(10)
    assert events == ["first reads", "second reads"]
    assert index.shares(si) == {0: new}
    assert index.totals.shares == 1 and index.totals.buckets == 1
    index.close()


def test_an_older_index_file_loses_its_unused_expiration_index(tmp_path: Path) -> None:
    """Index files written before 2026-11-27 carry an index on min_expiration that no
    query uses (a third of the file): opening one drops it, and its rows stay."""
    path = tmp_path / "share-index.sqlite"
    index = ShareIndex(path)
    index.replace_prefix(0, [(bytes(16), 0, IMMUTABLE, 100, 4096, 4096, 88, b"", -1, -1)])
    index.close()
    with sqlite3.connect(path) as db:
        db.execute("CREATE INDEX shares_by_min_expiration ON shares (min_expiration)")
    db.close()
    index = ShareIndex(path)
    names = [row[0] for row in index.connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'shares'")]
    assert "shares_by_min_expiration" not in names
    assert [share.shnum for share in index.all_shares()] == [0]
    index.close()


def test_the_rows_of_closes_are_written_together(root: Path, clock: Clock,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """With batching (a node's server), the shares closed within INDEX_BATCH_DELAY get
    their rows in one transaction (their storage indexes looked up in one query); the index
    runs late, never ahead, and a question to it about one of their storage indexes, or
    about the totals, meanwhile writes them first; BATCH_ROWS waiting are written at once."""
    server = make_server(root, clock, batch_index=True)
    transactions: list[int] = []
    original = ShareIndex._put_many

    def counting(self: ShareIndex, db: sqlite3.Connection, shares: object,
                 known: object = None) -> None:
        shares = list(shares)  # type: ignore[call-overload]
        transactions.append(len(shares))
        original(self, db, shares, known)
    monkeypatch.setattr(ShareIndex, "_put_many", counting)
    statements: list[str] = []
    server.index.index.connection.set_trace_callback(statements.append)
    _upload(server, 1, {0, 1, 2})
    clock.advance(INDEX_BATCH_DELAY / 2)
    _upload(server, 2, {5})
    assert transactions == []  # late
    clock.advance(INDEX_BATCH_DELAY / 2)
    assert transactions == [4]
    assert len([s for s in statements if s.startswith("SELECT") and " IN " in s]) == 1
    assert server.index.index.totals.shares == 4 and server.index.index.totals.buckets == 2
    _upload(server, 3, {0})
    assert set(server.get_buckets(_si(3))) == {0}  # a question writes the pending rows first
    assert transactions == [4, 1]
    _upload(server, 4, {0, 1})
    assert server.index.index.totals.shares == 7  # and so does a look at the totals
    assert transactions == [4, 1, 2]
    clock.advance(INDEX_BATCH_DELAY)
    assert transactions == [4, 1, 2]  # nothing left when the time is up
    for number in range(BATCH_ROWS):
        _, writers = server.allocate_buckets(number.to_bytes(2, "big") + b"batch-of-rows-",
                                             RENEW, CANCEL, {0}, 8)
        writers[0].write(0, b"abcdefgh")
        writers[0].close()
    assert transactions == [4, 1, 2, BATCH_ROWS]
    server.index.index.connection.set_trace_callback(None)
    assert_index_in_step(server)

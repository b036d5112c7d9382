"""Crashes between a share file's change and the share index's: no live share is ever
deleted, no expired share is kept, and the index comes back in step.

Each case writes a small population with the real :class:`StorageServer`
(leases expired and live, immutable and mutable, one share with an expired and
a live lease), stops it cleanly, then runs one operation in a child process
(``tests/support/storage_crash.py``) that dies with ``os._exit`` at a chosen
point: after the files changed and before the index heard of it, inside the
index's transaction (also of a batch: the rows of the shares closed in one reactor
turn, written together), between a garbage-collection unlink and its ``rmdir``,
after a lease trim, half way through a rebuild. The test then starts a server
on the directory, as a node restarting would, and runs the lease checker with
garbage collection on.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from twisted.internet.task import Clock

from tahoe.storage import paths
from tahoe.storage.containers import open_container
from tahoe.storage.lease_checker import LeaseCheckingCrawler
from tahoe.storage.disk import open_file
from tahoe.storage.leases import LEASE_DURATION, ExpiryPolicy
from tahoe.storage.server import StorageServer
from tahoe.storage.share_scan import ScanProcesses
from tests.shell.storage_support import assert_index_in_step, make_server, shares_on_disk
from tests.support.storage_crash import CRASHED, WRITE_ENABLER

REPOSITORY = Path(__file__).resolve().parents[2]
START = 1_770_000_000.0
DAY = 86400
NOW = START + LEASE_DURATION + DAY  # leases taken at START have expired, a day ago
POLICY = ExpiryPolicy("age")
OLD_RENEW, YOUNG_RENEW, CANCEL = b"o" * 32, b"y" * 32, b"c" * 32


def _si(name: str, n: int = 0) -> bytes:
    return (name.encode() + bytes([n]) + b"-storage-index!!")[:16]


OLD, YOUNG, OLD_SLOT, YOUNG_SLOT, MIXED, RENEWED, NEW = (
    _si("old"), _si("young"), _si("oslot"), _si("yslot"), _si("mixed"), _si("renewed"),
    _si("new"))


def _upload(server: StorageServer, si: bytes, renew: bytes, shnums: set[int]) -> None:
    _, writers = server.allocate_buckets(si, renew, CANCEL, shnums, 8)
    for writer in writers.values():
        writer.write(0, b"abcdefgh")
        writer.close()


def _slot(server: StorageServer, si: bytes, renew: bytes) -> None:
    ok, _ = server.slot_testv_and_readv_and_writev(
        si, (WRITE_ENABLER, renew, CANCEL), {0: ([], [(0, b"old version")], None)}, [])
    assert ok


def _population(root: Path) -> None:
    """Expired and live shares of both kinds (and filler in many prefixes), left by a
    clean stop."""
    clock = Clock()
    clock.advance(START)
    server = make_server(root, clock)
    _upload(server, OLD, OLD_RENEW, {0, 1, 2})
    _slot(server, OLD_SLOT, OLD_RENEW)
    _upload(server, MIXED, OLD_RENEW, {0})
    _upload(server, RENEWED, OLD_RENEW, {0})
    server.add_lease(RENEWED, YOUNG_RENEW, CANCEL)
    for n in range(20):
        _upload(server, _si("filler-old", n), OLD_RENEW, {n % 3})
    clock.advance(NOW - DAY - START)
    _upload(server, YOUNG, YOUNG_RENEW, {0, 1})
    _slot(server, YOUNG_SLOT, YOUNG_RENEW)
    server.add_lease(MIXED, YOUNG_RENEW, CANCEL)  # MIXED: an expired lease, then a live one
    server.add_lease(RENEWED, OLD_RENEW, CANCEL)  # RENEWED: a live lease, then an expired one
    for n in range(20):
        _upload(server, _si("filler-young", n), YOUNG_RENEW, {n % 3})
    server.close()


def _live(expirations: tuple[int, ...]) -> bool:
    return any(not POLICY.expired(expiration, NOW) for expiration in expirations)


def _crash(root: Path, operation: str, crash_point: str, si: bytes = OLD) -> None:
    child = subprocess.run(
        [sys.executable, "-m", "tests.support.storage_crash", str(root), repr(NOW), operation,
         crash_point, si.hex()],
        cwd=REPOSITORY, capture_output=True, timeout=120)
    assert child.returncode == CRASHED, child.stderr.decode(errors="replace")


def _recover(root: Path) -> tuple[StorageServer, set[tuple[bytes, int]]]:
    """Start a server after the crash; run a lease-checker cycle with garbage collection.
    Returns the server and the shares whose files held a live lease before the cycle."""
    clock = Clock()
    clock.advance(NOW)
    server = make_server(root, clock)
    assert not server.index.fresh  # a crash is never taken for a clean stop
    live_before = {key for key, row in shares_on_disk(root).items() if _live(row[-1])}
    checker = LeaseCheckingCrawler(root, clock, server.index, POLICY, True, slow_start=0)
    checker.start()
    clock.advance(checker.first_delay())
    assert checker.state["last-cycle-finished"] is not None
    assert server.index.fresh
    return server, live_before


def _leases(root: Path, si: bytes, shnum: int) -> int:
    with open_file(str(root / paths.share_path(si, shnum))) as file:
        return len(open_container(file).leases())


# (operation, crash point, the storage index it acts on, index deleted first)
CASES = {
    "upload, then crash before the index": ("upload", "before-index-update", NEW, False),
    # a batch of rows (the shares closed within INDEX_BATCH_DELAY) cut short: never begun,
    # or after its first row
    "batch of closes, crash before it is written":
        ("upload-batch", "before-index-update", NEW, False),
    "batch of closes, crash inside its transaction":
        ("upload-batch", "mid-index-transaction", NEW, False),
    # the share file is made whole by its one write; the close's rename never came
    "upload, crash before the share's rename": ("upload", "before-share-rename", NEW, False),
    "upload, crash after its bucket directory was made": ("upload", "after-bucket-mkdir", NEW,
                                                          False),
    "lease renewal, then crash before the index": ("renew", "before-index-update", OLD, False),
    "lease renewal, crash inside the index transaction":
        ("renew", "mid-index-transaction", OLD, False),
    "mutable write, then crash before the index":
        ("slot-write", "before-index-update", OLD_SLOT, False),
    "mutable delete, then crash before the index":
        ("slot-delete", "before-index-update", YOUNG_SLOT, False),
    "collection by index, crash after a delete": ("gc", "before-index-update", OLD, False),
    "collection from files, crash after a delete": ("gc", "before-index-update", OLD, True),
    "collection, crash between unlink and rmdir": ("gc", "after-unlink-before-rmdir", OLD, False),
    "collection, crash after trimming a lease": ("gc", "after-lease-trim", OLD, False),
    "collection, crash inside the first lease trim": ("gc", "mid-lease-trim", OLD, False),
    "collection, crash inside the second lease trim":
        ("gc", "mid-second-lease-trim", OLD, False),
    "collection from files, crash inside the second lease trim":
        ("gc", "mid-second-lease-trim", OLD, True),
    "rebuild, crash half way": ("gc", "mid-rebuild", OLD, True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_crash_between_file_and_index_loses_no_live_share(tmp_path: Path, case: str) -> None:
    operation, crash_point, si, unindexed = CASES[case]
    root = tmp_path / "storage"
    _population(root)
    if unindexed:
        (root / "share-index.sqlite").unlink()
    _crash(root, operation, crash_point, si)

    server, live_before = _recover(root)
    after = set(shares_on_disk(root))
    # exactly Tahoe's rule: every share with a live lease stays, every other one goes
    assert after == live_before
    assert_index_in_step(server)
    # what the interrupted operation wrote to the files holds
    young = {(YOUNG, 0), (YOUNG, 1), (YOUNG_SLOT, 0), (MIXED, 0), (RENEWED, 0)}
    if operation == "upload":
        # share 0 was closed (then the crash) unless the crash came inside its close; share 1
        # never was; what was not closed is gone with incoming/
        closed = crash_point == "before-index-update"
        assert ((NEW, 0) in after) == closed and (NEW, 1) not in after
        assert not list((root / paths.SHARES_DIR / paths.INCOMING_DIR).rglob("*"))
    elif operation == "upload-batch":
        assert {(NEW, 0), (NEW, 1), (NEW, 2)} <= after  # every close answered is kept
    elif operation == "renew":
        assert {(OLD, 0), (OLD, 1), (OLD, 2)} <= after
    elif operation == "slot-write":
        assert (OLD_SLOT, 0) in after
        assert server.slot_readv(OLD_SLOT, [0], [(0, 11)]) == {0: [b"new version"]}
    elif operation == "slot-delete":
        young.discard((YOUNG_SLOT, 0))
        assert (YOUNG_SLOT, 0) not in after
    else:
        assert not {key for key in after if key[0] == OLD}
    assert young <= after
    # the expired lease trimmed, the live one kept, whichever came first
    assert _leases(root, MIXED, 0) == _leases(root, RENEWED, 0) == 1
    # no bucket directory emptied by the collection is left behind
    buckets = {p.name for p in (root / paths.SHARES_DIR).glob("??/*") if p.name != "incoming"}
    assert buckets == {paths.storage_index_to_b32(si) for si, _ in after}

    # a clean restart trusts the index; the next cycle, from it, finds nothing more to do
    server.close()
    clock = Clock()
    clock.advance(NOW + DAY)
    again = make_server(root, clock)
    assert again.index.fresh
    checker = LeaseCheckingCrawler(root, clock, again.index, POLICY, True, slow_start=0)
    checker.start()
    clock.advance(checker.first_delay())
    assert checker.deleted_shares == 0
    assert set(shares_on_disk(root)) == after


@pytest.mark.parametrize("crash_point", ["after-first-delete", "after-unlink-before-rmdir",
                                         "after-lease-trim", "mid-lease-trim"])
def test_a_scanning_process_dying_mid_collection_loses_no_live_share(
        tmp_path: Path, crash_point: str) -> None:
    """Garbage collection from a fresh index runs in the scanning processes: one that dies
    part way through a collection (the node not told what it deleted) leaves no live share
    deleted; the node collects the rest itself and brings the index in step."""
    root = tmp_path / "storage"
    _population(root)
    clock = Clock()
    clock.advance(NOW)
    server = make_server(root, clock)
    assert server.index.fresh
    live_before = {key for key, row in shares_on_disk(root).items() if _live(row[-1])}
    scanners = ScanProcesses(processes=1, command=[
        sys.executable, str(REPOSITORY / "tests" / "support" / "scan_worker_crash.py"),
        crash_point], small_prefix=0)
    try:
        checker = LeaseCheckingCrawler(root, clock, server.index, POLICY, True, slow_start=0,
                                       scanner=scanners)
        checker.start()
        clock.advance(checker.first_delay())
        assert checker.state["last-cycle-finished"] == 0
        assert scanners._broken  # the child did die
    finally:
        scanners.stop()
    assert set(shares_on_disk(root)) == live_before
    assert_index_in_step(server)
    assert _leases(root, MIXED, 0) == _leases(root, RENEWED, 0) == 1
    buckets = {p.name for p in (root / paths.SHARES_DIR).glob("??/*") if p.name != "incoming"}
    assert buckets == {paths.storage_index_to_b32(si) for si, _ in live_before}

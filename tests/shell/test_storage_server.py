"""The storage server on a real directory: immutable shares, leases, space, errors, crash safety."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet.task import Clock

from tahoe.immutable.encoder import encode_bytes
from tahoe.immutable.params import EncodingParameters
from tahoe.storage import paths
from tahoe.storage.bucket import INACTIVITY_TIMEOUT, BucketWriter, WriterState, WriterTimeouts
from tahoe.storage.errors import (BadAllocatedSize, BadOffset, BadRequest, BadSecret,
                                  BadShareNumber, BadShareType, BadStorageIndex,
                                  BucketWriterClosed, ConflictingWriteError, DataTooLargeError,
                                  NoSpace, WrongShareKind)
from tahoe.storage.server import StorageServer
from tests.shell.storage_support import APP_VERSION, assert_index_in_step, make_server, snapshot
from tests.vectors import load

VECTOR = load("storage-immutable-container.json")
INPUTS = VECTOR["inputs"]
DISKSHARE = load("immutable-diskshare.json")
T0 = INPUTS["allocate_time"]
DAY = 86400
SI = bytes.fromhex(INPUTS["storage_index_hex"])
DATA = bytes.fromhex(INPUTS["share_data_hex"])
RENEW1 = bytes.fromhex(INPUTS["lease_secret_chain"]["bucket_renewal"])
CANCEL1 = bytes.fromhex(INPUTS["lease_secret_chain"]["bucket_cancel"])
RENEW2 = bytes.fromhex(VECTOR["steps"][2]["other_client_chain"]["bucket_renewal"])
CANCEL2 = bytes.fromhex(VECTOR["steps"][2]["other_client_chain"]["bucket_cancel"])
SECRETS = (RENEW1, CANCEL1)


@pytest.fixture
def clock() -> Clock:
    """A clock standing at the vectors' allocation time."""
    c = Clock()
    c.advance(T0)
    return c


@pytest.fixture
def server(root: Path, clock: Clock) -> StorageServer:
    """A writable server with plenty of space."""
    return make_server(root, clock)


def read_file(root: Path, parts: tuple[str, ...]) -> bytes:
    """The bytes of a file under the storage directory."""
    return root.joinpath(*parts).read_bytes()


def upload(server: StorageServer, si: bytes, shnum: int, data: bytes,
           secrets: tuple[bytes, bytes] = SECRETS) -> None:
    """Allocate, write and close one share."""
    _, writers = server.allocate_buckets(si, *secrets, {shnum}, len(data))
    writers[shnum].write(0, data)
    writers[shnum].close()


def test_layout_created_and_incoming_wiped(root: Path, clock: Clock) -> None:
    """A new server makes shares/, incoming/ and corruption-advisories/ and empties incoming/."""
    stale = root / "shares" / "incoming" / "hd" / "hdis5iaveku6lnlaiccydyid7q"
    stale.mkdir(parents=True)
    (stale / "0").write_bytes(b"partial")
    make_server(root, clock)
    assert (root / "shares").is_dir() and (root / "corruption-advisories").is_dir()
    assert list((root / "shares" / "incoming").iterdir()) == []


def test_get_version(server: StorageServer) -> None:
    """The version dict has Tahoe's bytes keys and values."""
    assert server.get_version() == {
        b"http://allmydata.org/tahoe/protocols/storage/v1": {
            b"maximum-immutable-share-size": 10 ** 12,
            b"maximum-mutable-share-size": 69105000000000000,
            b"available-space": 10 ** 12,
            b"tolerates-immutable-read-overrun": True,
            b"delete-mutable-shares-with-zero-length-writev": True,
            b"fills-holes-with-zero-bytes": True,
            b"prevents-read-past-end-of-share-data": True,
        },
        b"application-version": APP_VERSION,
    }


def _failing_stats(path: str) -> int:
    raise OSError("no disk")


@pytest.mark.parametrize("kwargs,expected", [
    (dict(free=5000, reserved_space=1000), 4000),
    (dict(free=500, reserved_space=1000), 0),
    (dict(free=5000, readonly=True), 0),
    (dict(free=None), 2 ** 64),
    (dict(disk_stats=_failing_stats), 0),
])
def test_reported_space(root: Path, clock: Clock, kwargs: dict, expected: int) -> None:
    """Available space is free minus reserve, 0 read-only or on failure, 2**64 without stats."""
    server = make_server(root, clock, **kwargs)
    v1 = server.get_version()[b"http://allmydata.org/tahoe/protocols/storage/v1"]
    assert v1[b"maximum-immutable-share-size"] == v1[b"available-space"] == expected


def test_default_disk_stats(root: Path, clock: Clock) -> None:
    """Without an injected function the server asks statvfs about its shares directory."""
    server = StorageServer(root, b"n" * 20, clock, application_version=APP_VERSION)
    st_ = os.statvfs(root / "shares")
    assert 0 <= (server.available_space() or 0) <= st_.f_bavail * st_.f_frsize + 10 ** 9


def test_constructor_checks(root: Path, clock: Clock) -> None:
    """The node id must be 20 bytes and the reserve not negative."""
    with pytest.raises(ValueError):
        StorageServer(root, b"n" * 32, clock, application_version=APP_VERSION)
    with pytest.raises(ValueError):
        make_server(root, clock, reserved_space=-1)


def test_immutable_steps_match_tahoe(server: StorageServer, root: Path, clock: Clock) -> None:
    """allocate/write/close/abort/add_lease/re-allocate leave Tahoe's exact files and directories."""
    steps = VECTOR["steps"]
    alreadygot, writers = server.allocate_buckets(SI, RENEW1, CANCEL1, {0, 1}, 64)
    assert alreadygot == set() and isinstance(alreadygot, set)
    assert sorted(writers) == steps[0]["returned_writer_shnums"]
    # Nothing on disk until the first write (Tahoe makes its incoming file at allocation)...
    incoming = paths.incoming_path(SI, 0)
    assert steps[0]["incoming_path"].endswith(f"/{paths.share_dir(SI).split('/')[-1]}/0")
    assert not (root / incoming).exists() and not (root / paths.share_dir(SI)).exists()
    assert server.get_buckets(SI) == {}

    # ...which makes Tahoe's incoming file, with its data in, at our (flat) incoming path.
    writers[0].write(0, DATA[:40])
    tahoe_incoming = bytearray.fromhex(steps[0]["incoming_file_hex_right_after_allocate"])
    tahoe_incoming[12:52] = DATA[:40]
    assert (root / incoming).read_bytes() == tahoe_incoming
    assert server.get_buckets(SI) == {}
    writers[0].write(40, DATA[40:64])
    writers[0].close()
    writers[1].abort()
    final = steps[1]["final_path"].removeprefix("storage/")
    assert (root / final).read_bytes().hex() == steps[1]["final_file_hex"]
    assert not (root / paths.incoming_path(SI, 1)).exists()
    assert list((root / "shares" / "incoming").iterdir()) == []

    clock.advance(DAY)
    assert server.add_lease(SI, RENEW2, CANCEL2) is None
    assert (root / final).read_bytes().hex() == steps[2]["final_file_hex"]
    clock.advance(DAY)
    server.add_lease(SI, RENEW1, CANCEL1)
    assert (root / final).read_bytes().hex() == steps[3]["final_file_hex"]
    clock.advance(DAY)
    alreadygot, writers = server.allocate_buckets(SI, RENEW2, CANCEL2, {0, 2}, 64)
    assert sorted(alreadygot) == steps[4]["returned_alreadygot"]
    assert sorted(writers) == steps[4]["returned_writer_shnums"]
    assert (root / final).read_bytes().hex() == steps[4]["final_file_hex_share0"]
    writers[2].abort()

    readers = server.get_buckets(SI)
    assert sorted(readers) == VECTOR["get_buckets_shnums"]
    for case in VECTOR["reads"]:
        assert readers[0].read(case["offset"], case["length"]).hex() == case["result_hex"]


def test_disk_share_matches_tahoe(root: Path) -> None:
    """Share 0 of the 56-byte upload, stored at clock 1700000000, is Tahoe's exact file."""
    clock = Clock()
    clock.advance(DISKSHARE["clock_seconds"])
    server = make_server(root, clock)
    encoded = encode_bytes(bytes(i % 251 for i in range(56)), bytes(range(32)),
                           EncodingParameters(3, 7, 10, 131072))
    si = encoded.cap.storage_index
    assert paths.storage_index_to_b32(si) == DISKSHARE["storage_index_base32"]
    renew = bytes.fromhex(DISKSHARE["lease_renew_secret_hex"])
    cancel = bytes.fromhex(DISKSHARE["lease_cancel_secret_hex"])
    upload(server, si, 0, encoded.shares[0], (renew, cancel))
    data = (root.parent / DISKSHARE["relative_path"]).read_bytes()
    assert len(data) == DISKSHARE["file_length"]
    assert data.hex() == DISKSHARE["file_hex"]


def test_tahoe_written_immutable_shares_are_served(root: Path, clock: Clock) -> None:
    """v1 and v2 containers written by Tahoe are read, renewed and extended in their own format."""
    for shnum, name in [(0, "legacy_v1_container"), (1, "small_v2_container")]:
        path = root / paths.share_path(SI, shnum)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes.fromhex(VECTOR[name]["file_hex"]))
    server = make_server(root, clock)
    readers = server.get_buckets(SI)
    assert sorted(readers) == [0, 1]
    assert readers[0].read(0, 100) == readers[1].read(0, 100) == b"ABCDEFGH"
    alreadygot, writers = server.allocate_buckets(SI, b"R" * 32, b"C" * 32, {0, 1, 2}, 8)
    assert alreadygot == {0, 1} and sorted(writers) == [2]
    server.add_lease(SI, b"S" * 32, b"D" * 32)
    v1 = read_file(root, paths.share_path_parts(SI, 0))
    assert v1[8:12] == b"\x00\x00\x00\x02" and v1[-72:-40] == b"\x00\x00\x00\x01" + b"S" * 28


def test_writer_semantics(server: StorageServer) -> None:
    """Overlaps must agree, writes stay inside the allocation, and a closed writer refuses more."""
    _, writers = server.allocate_buckets(SI, *SECRETS, {0}, 10)
    writer = writers[0]
    writer.write(0, b"abcdef")
    writer.write(4, b"efgh")
    writer.write(0, b"")
    with pytest.raises(ConflictingWriteError) as conflict:
        writer.write(2, b"cdXf")
    assert str(conflict.value) == "Chunk 2-6 doesn't match already written data."
    with pytest.raises(DataTooLargeError) as too_large:
        writer.write(8, b"1234")
    assert too_large.value.args == (10, 8, 4)
    writer.close()
    assert writer.state is WriterState.CLOSED and writer.closed
    with pytest.raises(BucketWriterClosed):
        writer.write(8, b"ij")
    with pytest.raises(BucketWriterClosed):
        writer.close()
    assert writer.abort() is None
    assert server.get_buckets(SI)[0].read(0, 100) == b"abcdefgh\x00\x00"


def test_abort_frees_space_and_is_idempotent(root: Path, clock: Clock) -> None:
    """An aborted writer's file is gone, its space is free again, and abort can repeat."""
    server = make_server(root, clock, free=1000)
    _, writers = server.allocate_buckets(SI, *SECRETS, {0, 1, 2}, 400)
    assert sorted(writers) == [0, 1] and server.allocated_size() == 800
    writers[0].abort()
    writers[0].abort()
    with pytest.raises(BucketWriterClosed):
        writers[0].write(0, b"x")
    with pytest.raises(BucketWriterClosed):
        writers[0].close()
    assert not (root / paths.incoming_path(SI, 0)).exists()
    assert server.allocated_size() == 400
    _, more = server.allocate_buckets(SI, *SECRETS, {0, 2}, 400)
    assert sorted(more) == [0]
    stats = server.stats()
    assert (stats.allocated, stats.open_buckets, stats.available) == (800, 2, 1000)
    assert stats.accepting_immutable_shares


def test_inactive_writer_times_out(server: StorageServer, clock: Clock, root: Path) -> None:
    """Thirty minutes without a call aborts the writer; each write restarts the timer."""
    _, writers = server.allocate_buckets(SI, *SECRETS, {0}, 10)
    clock.advance(INACTIVITY_TIMEOUT - 1)
    writers[0].write(0, b"x")
    clock.advance(INACTIVITY_TIMEOUT - 1)
    assert writers[0].state is WriterState.OPEN
    clock.advance(1)
    assert writers[0].state is WriterState.ABORTED
    assert not (root / paths.incoming_path(SI, 0)).exists()
    assert server.allocated_size() == 0 and clock.getDelayedCalls() == []


def test_closed_writers_are_not_timed_out(server: StorageServer, clock: Clock) -> None:
    """Closing or aborting leaves nothing to time out: the writers' one timer, if it fires
    after them, finds nothing to do and stops."""
    _, writers = server.allocate_buckets(SI, *SECRETS, {0, 1}, 10)
    writers[0].close()
    writers[1].abort()
    clock.advance(INACTIVITY_TIMEOUT)
    assert (writers[0].state, writers[1].state) == (WriterState.CLOSED, WriterState.ABORTED)
    assert clock.getDelayedCalls() == []


def test_writers_share_one_timer(server: StorageServer, clock: Clock) -> None:
    """However many writers are open, one timer runs, due when the oldest falls idle."""
    _, first = server.allocate_buckets(SI, *SECRETS, {0, 1}, 10)
    clock.advance(60)
    _, later = server.allocate_buckets(b"S" * 16, *SECRETS, {0}, 10)
    assert len(clock.getDelayedCalls()) == 1
    clock.advance(INACTIVITY_TIMEOUT - 60)
    assert [w.state for w in first.values()] == [WriterState.ABORTED] * 2
    assert later[0].state is WriterState.OPEN and len(clock.getDelayedCalls()) == 1
    clock.advance(60)
    assert later[0].state is WriterState.ABORTED and clock.getDelayedCalls() == []


def test_upload_in_progress_is_skipped(server: StorageServer) -> None:
    """A share being uploaded is in neither list of a second allocation."""
    _, first = server.allocate_buckets(SI, *SECRETS, {0}, 10)
    alreadygot, second = server.allocate_buckets(SI, RENEW2, CANCEL2, {0, 1}, 10)
    assert alreadygot == set() and sorted(second) == [1]
    first[0].close()
    alreadygot, third = server.allocate_buckets(SI, RENEW2, CANCEL2, {0, 3}, 10)
    assert alreadygot == {0} and sorted(third) == [3]


def test_unclosed_share_is_never_visible(root: Path, clock: Clock) -> None:
    """A share whose writer never closed stays in incoming/ and is removed by the next server."""
    server = make_server(root, clock)
    _, writers = server.allocate_buckets(SI, *SECRETS, {0}, 64)
    writers[0].write(0, DATA)
    assert server.get_buckets(SI) == {}
    assert not (root / paths.share_path(SI, 0)).exists()
    restarted = make_server(root, clock)
    assert list((root / "shares" / "incoming").iterdir()) == []
    assert restarted.get_buckets(SI) == {}
    alreadygot, writers = restarted.allocate_buckets(SI, *SECRETS, {0}, 64)
    assert alreadygot == set() and sorted(writers) == [0]


def test_readonly_server(root: Path, clock: Clock) -> None:
    """A read-only server makes no writers but renews matching leases; new leases are NoSpace."""
    upload(make_server(root, clock), SI, 0, DATA)
    clock.advance(DAY)
    server = make_server(root, clock, readonly=True)
    alreadygot, writers = server.allocate_buckets(SI, *SECRETS, {0, 1}, 0)
    assert alreadygot == {0} and writers == {}
    assert server.get_buckets(SI)[0].read(0, 64) == DATA
    before = snapshot(root)
    with pytest.raises(NoSpace):
        server.allocate_buckets(SI, RENEW2, CANCEL2, {1}, 64)
    with pytest.raises(NoSpace):
        server.add_lease(SI, RENEW2, CANCEL2)
    assert snapshot(root) == before
    assert not server.stats().accepting_immutable_shares


def test_full_server_skips_shares_but_renews(root: Path, clock: Clock) -> None:
    """Shares that do not fit get no writer, and the call still renews existing leases."""
    upload(make_server(root, clock), SI, 0, DATA)
    server = make_server(root, clock, free=100, reserved_space=50)
    clock.advance(DAY)
    alreadygot, writers = server.allocate_buckets(SI, *SECRETS, {0, 1}, 64)
    assert alreadygot == {0} and writers == {}
    data = read_file(root, paths.share_path_parts(SI, 0))
    assert int.from_bytes(data[-4:], "big") == T0 + DAY + 31 * DAY


def test_debug_discard(root: Path, clock: Clock) -> None:
    """With debug_discard the protocol works but the data reads back as zeros."""
    server = make_server(root, clock, debug_discard=True)
    upload(server, SI, 0, DATA)
    assert server.get_buckets(SI)[0].read(0, 100) == bytes(64)


def test_non_digit_names_are_ignored(server: StorageServer, root: Path) -> None:
    """Entries that are not all digits are not shares."""
    upload(server, SI, 3, DATA)
    share_dir = root / paths.share_dir(SI)
    (share_dir / "README").write_bytes(b"hello")
    (share_dir / "3.tmp").write_bytes(b"x")
    assert sorted(server.get_buckets(SI)) == [3]
    assert server.allocate_buckets(SI, *SECRETS, set(), 1)[0] == {3}


def test_unknown_and_short_storage_indexes(server: StorageServer) -> None:
    """Unknown or short storage indexes find nothing and are not errors for reads."""
    assert server.get_buckets(b"\x01" * 16) == {}
    assert server.get_buckets(SI[:15]) == {}
    assert server.add_lease(SI[:15], *SECRETS) is None
    assert server.add_lease(b"\x01" * 16, *SECRETS) is None


def test_advise_corrupt_share(server: StorageServer, root: Path) -> None:
    """A report about a held share is written as Tahoe names and words it; others are dropped."""
    upload(server, SI, 2, DATA)
    reader = server.get_buckets(SI)[2]
    assert reader.advise_corrupt_share(b"corruption in share[0-64): bad") is None
    assert server.advise_corrupt_share(b"immutable", SI, 5, b"not held") is None
    assert server.advise_corrupt_share(b"mutable", SI[:15], 2, b"short si") is None
    reports = list((root / "corruption-advisories").iterdir())
    assert [p.name for p in reports] == ["2023-11-14T221320--hdis5iaveku6lnlaiccydyid7q-2"]
    assert reports[0].read_bytes() == (
        b"report: Share Corruption\ntype: immutable\nstorage_index: hdis5iaveku6lnlaiccydyid7q\n"
        b"share_number: 2\n\ncorruption in share[0-64): bad\n")


def test_advisory_moves_a_share_aside_only_if_it_is_corrupt(server: StorageServer,
                                                            root: Path) -> None:
    """An advisory about an intact share leaves it; one about a share that fails a check
    against its own UEB moves it to corrupt-shares/, after which the share number can be
    uploaded again (what a repair does); bytes of an unknown share version are kept."""
    encoded = encode_bytes(os.urandom(20_000), b"c" * 32, EncodingParameters(2, 3, 3))
    si = encoded.cap.storage_index
    for shnum in (0, 1):
        upload(server, si, shnum, encoded.shares[shnum])
    server.advise_corrupt_share(b"immutable", si, 0, b"says the client")
    assert set(server.get_buckets(si)) == {0, 1}
    share_file = root / paths.share_path(si, 1)
    damaged = bytearray(share_file.read_bytes())
    damaged[12 + 100] ^= 0x10  # a byte of the first block
    share_file.write_bytes(bytes(damaged))
    server.get_buckets(si)[1].advise_corrupt_share(b"block hash mismatch")
    assert set(server.get_buckets(si)) == {0}
    (moved,) = (root / "corrupt-shares").iterdir()
    assert moved.name.startswith(f"{paths.storage_index_to_b32(si)}.1.")
    assert moved.read_bytes() == bytes(damaged)
    already, writers = server.allocate_buckets(si, *SECRETS, {1}, len(encoded.shares[1]))
    assert (already, set(writers)) == ({0}, {1})
    upload(server, si, 2, b"\x00\x00\x00\x09" + os.urandom(200))  # version 9: unknown
    server.advise_corrupt_share(b"immutable", si, 2, b"cannot parse it")
    assert 2 in server.get_buckets(si)  # perhaps a newer format: not ours to judge


def test_advisory_skipped_without_space(root: Path, clock: Clock) -> None:
    """A report larger than the available space is not written."""
    first = make_server(root, clock)
    upload(first, SI, 0, DATA)
    first.close()  # a restart with less space
    server = make_server(root, clock, free=10)
    server.advise_corrupt_share(b"immutable", SI, 0, b"x" * 100)
    assert list((root / "corruption-advisories").iterdir()) == []


def test_allocate_refuses_mutable_storage_index(server: StorageServer, root: Path) -> None:
    """allocate_buckets on a storage index holding mutable shares raises and changes nothing."""
    server.slot_testv_and_readv_and_writev(SI, (b"w" * 32, *SECRETS), {0: ([], [(0, b"m")], None)}, [])
    before = snapshot(root)
    with pytest.raises(WrongShareKind):
        server.allocate_buckets(SI, RENEW2, CANCEL2, {1}, 10)
    assert snapshot(root) == before
    assert server.get_buckets(SI) == {}


W = (b"w" * 32, RENEW1, CANCEL1)
BAD_CALLS: list[tuple[str, Callable[[StorageServer], Any], type]] = [
    ("alloc-short-si", lambda s: s.allocate_buckets(SI[:15], *SECRETS, {0}, 10), BadStorageIndex),
    ("alloc-long-si", lambda s: s.allocate_buckets(SI + b"x", *SECRETS, {0}, 10), BadStorageIndex),
    ("alloc-str-si", lambda s: s.allocate_buckets("x" * 16, *SECRETS, {0}, 10), BadStorageIndex),
    ("alloc-short-renew", lambda s: s.allocate_buckets(SI, b"r" * 31, CANCEL1, {0}, 10), BadSecret),
    ("alloc-long-cancel", lambda s: s.allocate_buckets(SI, RENEW1, b"c" * 33, {0}, 10), BadSecret),
    ("alloc-shnum-256", lambda s: s.allocate_buckets(SI, *SECRETS, {0, 256}, 10), BadShareNumber),
    ("alloc-shnum-neg", lambda s: s.allocate_buckets(SI, *SECRETS, {-1}, 10), BadShareNumber),
    ("alloc-shnum-list", lambda s: s.allocate_buckets(SI, *SECRETS, [0], 10), BadShareNumber),
    ("alloc-shnum-str", lambda s: s.allocate_buckets(SI, *SECRETS, {"0"}, 10), BadShareNumber),
    ("alloc-size-neg", lambda s: s.allocate_buckets(SI, *SECRETS, {0}, -1), BadAllocatedSize),
    ("alloc-size-huge", lambda s: s.allocate_buckets(SI, *SECRETS, {0}, 2 ** 64), BadAllocatedSize),
    ("alloc-size-str", lambda s: s.allocate_buckets(SI, *SECRETS, {0}, "10"), BadAllocatedSize),
    ("lease-bad-secret", lambda s: s.add_lease(SI, b"r", CANCEL1), BadSecret),
    ("lease-long-si", lambda s: s.add_lease(SI + b"x", *SECRETS), BadStorageIndex),
    ("buckets-long-si", lambda s: s.get_buckets(SI + b"x"), BadStorageIndex),
    ("advise-type", lambda s: s.advise_corrupt_share(b"other", SI, 0, b"r"), BadShareType),
    ("advise-shnum", lambda s: s.advise_corrupt_share(b"immutable", SI, 256, b"r"), BadShareNumber),
    ("advise-reason", lambda s: s.advise_corrupt_share(b"immutable", SI, 0, "r"), BadRequest),
    ("slot-short-si", lambda s: s.slot_testv_and_readv_and_writev(SI[:15], W, {}, []), BadStorageIndex),
    ("slot-bad-we", lambda s: s.slot_testv_and_readv_and_writev(SI, (b"w", RENEW1, CANCEL1), {}, []), BadSecret),
    ("slot-bad-op", lambda s: s.slot_testv_and_readv_and_writev(
        SI, W, {1: ([(0, 1, b"lt", b"")], [(0, b"x")], None)}, []), BadRequest),
    ("slot-neg-offset", lambda s: s.slot_testv_and_readv_and_writev(
        SI, W, {1: ([], [(-1, b"x")], None)}, []), BadRequest),
    ("slot-bad-shnum", lambda s: s.slot_testv_and_readv_and_writev(
        SI, W, {300: ([], [(0, b"x")], None)}, []), BadShareNumber),
    ("slot-bad-readv", lambda s: s.slot_testv_and_readv_and_writev(
        SI, W, {1: ([], [(0, b"x")], None)}, [(0, -1)]), BadRequest),
    ("slot-too-large", lambda s: s.slot_testv_and_readv_and_writev(
        SI, W, {1: ([], [(0, b"x"), (69105000000000000, b"y")], None)}, []), DataTooLargeError),
    ("readv-bad-shares", lambda s: s.slot_readv(SI, [256], [(0, 1)]), BadShareNumber),
    ("readv-bad-readv", lambda s: s.slot_readv(SI, [], [(0, 1, 2)]), BadRequest),
]


@pytest.mark.parametrize("call,error", [(c, e) for _, c, e in BAD_CALLS], ids=[n for n, _, _ in BAD_CALLS])
def test_bad_calls_change_nothing(root: Path, clock: Clock, call: Callable[[StorageServer], Any],
                                  error: type) -> None:
    """Every malformed call raises its error and leaves the directory byte-identical."""
    server = make_server(root, clock)
    upload(server, SI, 0, DATA)
    server.slot_testv_and_readv_and_writev(b"\x02" * 16, W, {0: ([], [(0, b"m")], None)}, [])
    before = snapshot(root)
    with pytest.raises(error):
        call(server)
    assert snapshot(root) == before


BAD_WRITES: list[tuple[int, Any, type]] = [(-1, b"x", BadOffset), (2 ** 64, b"x", BadOffset),
                                           ("0", b"x", BadOffset), (0, "text", BadRequest),
                                           (60, b"12345", DataTooLargeError),
                                           (0, b"different", ConflictingWriteError)]


@pytest.mark.parametrize("offset,data,error", BAD_WRITES)
def test_bad_writes_change_nothing(server: StorageServer, root: Path, offset: Any, data: Any,
                                   error: type) -> None:
    """A refused write leaves the directory byte-identical."""
    _, writers = server.allocate_buckets(SI, *SECRETS, {0}, 64)
    writers[0].write(0, DATA[:20])
    before = snapshot(root)
    with pytest.raises(error):
        writers[0].write(offset, data)
    assert snapshot(root) == before


def test_bad_reads(server: StorageServer) -> None:
    """A reader refuses negative offsets and lengths but never overruns."""
    upload(server, SI, 0, DATA)
    reader = server.get_buckets(SI)[0]
    for offset, length in [(-1, 5), (0, -1), ("0", 5)]:
        with pytest.raises(BadOffset):
            reader.read(offset, length)
    assert reader.read(2 ** 64 - 1, 2 ** 64 - 1) == b""


def test_large_sequential_writes(server: StorageServer) -> None:
    """Several-megabyte writes, overlapping rewrites included, read back intact."""
    size = 6 * 1024 * 1024 + 17
    data = os.urandom(size)
    _, writers = server.allocate_buckets(SI, *SECRETS, {0}, size)
    step = 1_000_000
    for offset in range(0, size, step):
        writers[0].write(offset, data[offset:offset + step])
    writers[0].write(500_000, data[500_000:2_500_000])
    writers[0].close()
    reader = server.get_buckets(SI)[0]
    assert reader.read(0, size + 100) == data
    assert reader.read(size - 10, 1000) == data[-10:]


@given(st.integers(1, 200), st.lists(st.tuples(st.integers(0, 220), st.binary(max_size=50)),
                                     max_size=15))
@settings(deadline=None, max_examples=60)
def test_random_immutable_writes_read_back(size: int, writes: list[tuple[int, bytes]]) -> None:
    """Accepted writes read back as a model with gaps as zeros; refused ones raise the right error."""
    clock = Clock()
    with tempfile.TemporaryDirectory() as tmp:
        server = make_server(Path(tmp) / "storage", clock)
        _, writers = server.allocate_buckets(SI, *SECRETS, {0}, size)
        model: list[int | None] = [None] * size
        for offset, data in writes:
            end = offset + len(data)
            if end > size:
                with pytest.raises(DataTooLargeError):
                    writers[0].write(offset, data)
            elif any(model[i] is not None and model[i] != data[i - offset] for i in range(offset, end)):
                with pytest.raises(ConflictingWriteError):
                    writers[0].write(offset, data)
            else:
                writers[0].write(offset, data)
                model[offset:end] = list(data)
        writers[0].close()
        expected = bytes(0 if b is None else b for b in model)
        assert server.get_buckets(SI)[0].read(0, size + 5) == expected
        assert_index_in_step(server)


def test_writer_is_made_through_create(tmp_path: Path, clock: Clock) -> None:
    """A writer made directly makes its incoming file, container and lease, at the first
    write, or at the close if nothing was written."""
    from tahoe.storage.leases import Lease
    lease = Lease(0, bytes(32), bytes(32), 5)
    finished: list[BucketWriter] = []
    incoming = str(tmp_path / "in" / "0")
    timeouts = WriterTimeouts(clock)
    writer = BucketWriter.create(SI, 0, 8, lease, incoming,
                                 str(tmp_path / "out" / "0"), timeouts, False, finished.append)
    assert not os.path.exists(incoming)
    writer.write(2, b"ab")
    assert os.path.getsize(incoming) == 12 + 8 + 72
    writer.close()
    assert finished == [writer] and (tmp_path / "out" / "0").exists()
    empty = BucketWriter.create(SI, 1, 8, lease, str(tmp_path / "in" / "1"),
                                str(tmp_path / "out" / "1"), timeouts, False, finished.append)
    empty.close()
    assert (tmp_path / "out" / "1").read_bytes()[12:] == bytes(8) + (
        tmp_path / "out" / "0").read_bytes()[20:]


def test_failed_writer_creation_leaves_nothing(root: Path, clock: Clock) -> None:
    """If a share cannot be created (here: a size the platform cannot address), no file or directory is left."""
    server = make_server(root, clock, free=None)
    before = snapshot(root)
    with pytest.raises((OverflowError, OSError)):
        server.allocate_buckets(SI, *SECRETS, {0, 1}, 2 ** 64 - 1)
    assert snapshot(root) == before
    assert server.allocated_size() == 0 and clock.getDelayedCalls() == []


def test_writer_follows_its_transition_table(server: StorageServer) -> None:
    """Every event in every state does what BucketWriter.TRANSITIONS says, and raises otherwise."""
    actions: dict[str, Callable[[BucketWriter], Any]] = {
        "write": lambda w: w.write(0, b"x"), "close": lambda w: w.close(),
        "abort": lambda w: w.abort()}
    for start, path in [(WriterState.OPEN, []), (WriterState.CLOSED, ["close"]),
                        (WriterState.ABORTED, ["abort"])]:
        for event, action in actions.items():
            _, writers = server.allocate_buckets(os.urandom(16), *SECRETS, {0}, 4)
            writer = writers[0]
            for step in path:
                actions[step](writer)
            assert writer.state is start
            expected = BucketWriter.TRANSITIONS.get((start, event))
            if expected is None:
                with pytest.raises(BucketWriterClosed):
                    action(writer)
            else:
                action(writer)
                assert writer.state is expected


def test_reading_shares_leaves_their_access_times(root: Path, clock: Clock) -> None:
    """Serving a share, indexing it and checking its leases for collection never write its
    inode back for an access time (``O_NOATIME``): a cycle over a million shares would
    otherwise write a million inodes."""
    if not hasattr(os, "O_NOATIME"):
        pytest.skip("no O_NOATIME on this system")
    from tahoe.storage.collector import collect_share
    from tahoe.storage.leases import ExpiryPolicy
    from tahoe.storage.share_scan import scan_share

    server = make_server(root, clock)
    upload(server, SI, 0, DATA)
    path = str(root / paths.share_path(SI, 0))
    old = os.stat(path).st_mtime_ns - 10 * DAY * 10**9

    def age() -> None:
        os.utime(path, ns=(old, os.stat(path).st_mtime_ns))

    age()
    with open(path, "rb") as f:  # the control: a plain read on this file system does update it
        f.read()
    if os.stat(path).st_atime_ns == old:
        pytest.skip("this file system does not update access times (noatime)")
    age()
    assert server.get_buckets(SI)[0].read(0, len(DATA)) == DATA
    row = scan_share(path, SI, 0)
    assert row is not None and row.data_length == len(DATA)
    outcome = collect_share(contextlib.nullcontext(), path, (SI, 0),
                            ExpiryPolicy("age"), clock.seconds(), True)
    assert outcome.action == "kept"  # its lease is live
    assert os.stat(path).st_atime_ns == old

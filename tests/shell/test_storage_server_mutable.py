"""The storage server's mutable-share calls on a real directory, against Tahoe 1.20's bytes."""
from __future__ import annotations

import errno
from pathlib import Path

import pytest
from twisted.internet.task import Clock

from tahoe.storage import paths
from tahoe.storage.errors import BadWriteEnablerError, NoSpace, WrongShareKind
from tahoe.storage.server import StorageServer
from tahoe.util import base32
from tests.shell.storage_support import NODEID, make_server, snapshot
from tests.support.sysfaults import fill, require_root, tmpfs
from tests.vectors import load

VECTOR = load("storage-mutable-container.json")
INPUTS = VECTOR["inputs"]
SI = bytes.fromhex(INPUTS["storage_index_hex"])
WE = bytes.fromhex(INPUTS["write_enabler_hex"])
RENEW = bytes.fromhex(INPUTS["bucket_renewal_secret_hex"])
CANCEL = bytes.fromhex(INPUTS["bucket_cancel_secret_hex"])
SECRETS = (WE, RENEW, CANCEL)
T = INPUTS["time_of_first_write"]
HOUR = 3600


@pytest.fixture
def clock() -> Clock:
    """A clock standing at the vector's first write."""
    c = Clock()
    c.advance(T)
    return c


@pytest.fixture
def server(root: Path, clock: Clock) -> StorageServer:
    """A writable server with plenty of space, whose node id is the vector's."""
    return make_server(root, clock)


def share_bytes(root: Path, shnum: int = 0) -> str:
    """A share file's bytes in hex."""
    return (root / paths.share_path(SI, shnum)).read_bytes().hex()


def replay_to_truncation(server: StorageServer, clock: Clock, root: Path) -> None:
    """Run the vector's steps 0-4 through the server, checking results and bytes."""
    steps = VECTOR["steps"]
    write = server.slot_testv_and_readv_and_writev
    result = write(SI, SECRETS, {0: ([(0, 1, b"eq", b"")], [(0, b"mutable share data v1")], None)},
                   [(0, 5)])
    assert result == (True, {}) and isinstance(result, tuple)
    assert share_bytes(root) == steps[0]["file_hex"]

    clock.advance(HOUR)
    result = write(SI, SECRETS, {0: ([(0, 7, b"eq", b"mutable")], [(30, b"XYZ")], None)},
                   [(0, 7), (28, 10)])
    assert result == (True, {0: [b"mutable", b""]})
    assert share_bytes(root) == steps[1]["file_hex"]

    result = write(SI, SECRETS, {0: ([(0, 1, b"eq", b"")], [(0, b"SHOULD NOT BE WRITTEN")], None)},
                   [(0, 7)])
    assert result == (False, {0: [b"mutable"]})
    assert share_bytes(root) == steps[2]["file_hex"]

    clock.advance(HOUR)
    assert server.add_lease(SI, bytes.fromhex(steps[3]["second_client_bucket_renewal_hex"]),
                            bytes.fromhex(steps[3]["second_client_bucket_cancel_hex"])) is None
    assert share_bytes(root) == steps[3]["file_hex"]

    clock.advance(HOUR)
    assert write(SI, SECRETS, {0: ([], [], 10)}, []) == (True, {0: []})
    assert share_bytes(root) == steps[4]["file_hex"]


def test_mutable_steps_match_tahoe(server: StorageServer, clock: Clock, root: Path) -> None:
    """Create, zero-filling extension, failed test, second lease and truncation give Tahoe's bytes."""
    replay_to_truncation(server, clock, root)


def test_slot_readv_vectors(server: StorageServer, clock: Clock) -> None:
    """slot_readv cuts reads short and leaves absent shares out."""
    server.slot_testv_and_readv_and_writev(
        SI, SECRETS, {0: ([], [(0, b"mutable share data v1"), (30, b"XYZ")], None)}, [])
    expected = {int(k): [bytes.fromhex(h) for h in v]
                for k, v in VECTOR["slot_readv_all_shares"]["result"].items()}
    assert server.slot_readv(SI, [], [(0, 100), (31, 2), (200, 5)]) == expected
    assert server.slot_readv(SI, [7], [(0, 100)]) == {}
    assert server.slot_readv(b"\x03" * 16, [], [(0, 100)]) == {}
    assert server.slot_readv(SI[:15], [], [(0, 100)]) == {}


def test_delete_with_zero_length(server: StorageServer, clock: Clock, root: Path) -> None:
    """new_length 0 deletes the share and its then empty directory."""
    replay_to_truncation(server, clock, root)
    assert server.slot_testv_and_readv_and_writev(SI, SECRETS, {0: ([], [], 0)}, []) == (True, {0: []})
    assert not (root / paths.share_path(SI, 0)).exists()
    assert not (root / paths.share_dir(SI)).exists()
    assert server.slot_readv(SI, [], [(0, 10)]) == {}


def test_delete_keeps_other_shares(server: StorageServer, root: Path) -> None:
    """Deleting one share leaves its siblings and their directory alone."""
    server.slot_testv_and_readv_and_writev(
        SI, SECRETS, {0: ([], [(0, b"a")], None), 1: ([], [(0, b"b")], None)}, [])
    server.slot_testv_and_readv_and_writev(SI, SECRETS, {0: ([], [], 0), 5: ([], [], 0)}, [])
    assert server.slot_readv(SI, [], [(0, 10)]) == {1: [b"b"]}


def test_bad_write_enabler(server: StorageServer, root: Path) -> None:
    """A wrong write enabler is refused with Tahoe's message, before anything, even with no vectors."""
    server.slot_testv_and_readv_and_writev(SI, SECRETS, {0: ([], [(0, b"data")], None)}, [])
    before = snapshot(root)
    bad = (bytes(32), RENEW, CANCEL)
    for tw in ({}, {1: ([], [(0, b"new share")], None)}, {0: ([], [], 0)}):
        with pytest.raises(BadWriteEnablerError) as info:
            server.slot_testv_and_readv_and_writev(SI, bad, tw, [(0, 4)])
        assert str(info.value) == VECTOR["bad_write_enabler"]["raised"]["message"]
    assert snapshot(root) == before


def test_write_enabler_names_the_recording_node(root: Path, clock: Clock) -> None:
    """The error names the node id stored in the share, not the current server's."""
    server = StorageServer(root, b"\x01" * 20, clock, application_version=b"x",
                           disk_stats=lambda p: 10 ** 9)
    server.slot_testv_and_readv_and_writev(SI, SECRETS, {0: ([], [(0, b"data")], None)}, [])
    other = make_server(root, clock)
    with pytest.raises(BadWriteEnablerError, match=base32.b2a(b"\x01" * 20)):
        other.slot_testv_and_readv_and_writev(SI, (bytes(32), RENEW, CANCEL), {}, [])
    assert (root / paths.share_path(SI, 0)).read_bytes()[32:52] == b"\x01" * 20


def test_lease_only_write_and_empty_call(server: StorageServer, root: Path, clock: Clock) -> None:
    """Empty test and write vectors create or renew a lease; empty tw_vectors only read."""
    assert server.slot_testv_and_readv_and_writev(SI, SECRETS, {0: ([], [], None)}, []) == (True, {})
    created = bytes.fromhex(share_bytes(root))
    fresh = bytes.fromhex(VECTOR["fresh_container"]["file_hex"])
    assert len(created) == len(fresh) == 472
    assert created[:100] == fresh[:100] and created[100:104] == b"\x00\x00\x00\x01"
    assert created[192:] == fresh[192:]
    before = snapshot(root)
    assert server.slot_testv_and_readv_and_writev(SI, SECRETS, {}, [(0, 1)]) == (True, {0: [b""]})
    assert snapshot(root) == before


def test_failed_test_changes_nothing(server: StorageServer, root: Path) -> None:
    """When any test fails, no share is written, created or deleted and no lease changes."""
    server.slot_testv_and_readv_and_writev(SI, SECRETS, {0: ([], [(0, b"data")], None)}, [])
    before = snapshot(root)
    result = server.slot_testv_and_readv_and_writev(
        SI, (WE, b"n" * 32, CANCEL),
        {0: ([], [], 0), 1: ([], [(0, b"new")], None), 2: ([(0, 4, b"eq", b"nope")], [], None)},
        [(0, 2)])
    assert result == (False, {0: [b"da"]})
    assert snapshot(root) == before


def test_readonly_still_takes_mutable_writes(root: Path, clock: Clock) -> None:
    """As in Tahoe 1.20, [storage]readonly does not stop mutable writes."""
    server = make_server(root, clock, readonly=True)
    assert server.slot_testv_and_readv_and_writev(SI, SECRETS, {0: ([], [(0, b"x")], None)}, [])[0]
    assert server.slot_readv(SI, [0], [(0, 5)]) == {0: [b"x"]}


def test_extra_lease_needs_space(root: Path, clock: Clock) -> None:
    """With four slots taken, a fifth lease needs 92 bytes: NoSpace changes nothing, writes included.
    (The disk has room; the reserve takes it all.)"""
    server = make_server(root, clock, free=100_000, reserved_space=100_000)
    server.slot_testv_and_readv_and_writev(SI, SECRETS, {0: ([], [(0, b"x")], None)}, [])
    for i in range(3):
        server.add_lease(SI, bytes([i + 1]) * 32, CANCEL)
    before = snapshot(root)
    with pytest.raises(NoSpace):
        server.add_lease(SI, b"\x09" * 32, CANCEL)
    with pytest.raises(NoSpace):
        server.slot_testv_and_readv_and_writev(SI, (WE, b"\x09" * 32, CANCEL),
                                               {0: ([], [(0, b"changed")], None)}, [])
    assert snapshot(root) == before
    server.add_lease(SI, RENEW, CANCEL)


def test_mutable_leases_carry_the_node_id(server: StorageServer, root: Path) -> None:
    """New mutable leases record this server's node id, owner number 1."""
    server.slot_testv_and_readv_and_writev(SI, SECRETS, {0: ([], [(0, b"x")], None)}, [])
    data = (root / paths.share_path(SI, 0)).read_bytes()
    assert data[100:104] == b"\x00\x00\x00\x01" and data[172:192] == NODEID


def test_slot_calls_refuse_immutable_shares(server: StorageServer, root: Path) -> None:
    """A slot write on an immutable storage index raises and changes nothing; reads skip them."""
    _, writers = server.allocate_buckets(SI, RENEW, CANCEL, {0}, 4)
    writers[0].write(0, b"immu")
    writers[0].close()
    before = snapshot(root)
    with pytest.raises(WrongShareKind):
        server.slot_testv_and_readv_and_writev(SI, SECRETS, {1: ([], [(0, b"x")], None)}, [])
    assert snapshot(root) == before
    assert server.slot_readv(SI, [], [(0, 4)]) == {}
    assert server.get_buckets(SI)[0].read(0, 4) == b"immu"


def test_tahoe_written_mutable_share_is_served(root: Path, clock: Clock) -> None:
    """A container written by Tahoe is read, tested and extended like one of ours."""
    path = root / paths.share_path(SI, 0)
    path.parent.mkdir(parents=True)
    path.write_bytes(bytes.fromhex(VECTOR["steps"][5]["file_hex"]))
    server = make_server(root, clock)
    assert server.slot_readv(SI, [0], [(0, 100)]) == {0: [b"mutable sh"]}
    ok, read = server.slot_testv_and_readv_and_writev(
        SI, SECRETS, {0: ([(0, 7, b"eq", b"mutable")], [(10, b"!")], None)}, [(0, 20)])
    assert ok and read == {0: [b"mutable sh"]}
    assert server.slot_readv(SI, [], [(0, 100)]) == {0: [b"mutable sh!"]}
    assert server.get_buckets(SI) == {}


def test_a_new_share_the_full_disk_refuses_is_not_left_behind(tmp_path: Path) -> None:
    """On a full disk (a tmpfs this test fills), creating a new mutable share fails with
    ENOSPC and leaves no file: a share left headerless would refuse every later write to
    its storage index, one left without a lease would be kept for ever. Once there is
    room again the same write succeeds."""
    require_root("mount")
    storage_index, secrets = b"F" * 16, (b"w" * 32, b"r" * 32, b"c" * 32)
    write = {0: ([], [(0, b"new mutable data" * 300)], None)}
    clock = Clock()
    clock.advance(1_790_000_000)
    with tmpfs(tmp_path / "disk", 1024 * 1024) as disk:
        server = make_server(disk / "storage", clock)
        try:
            fill(disk / "filler")
            with pytest.raises(OSError) as refused:
                server.slot_testv_and_readv_and_writev(storage_index, secrets, write, [])
            assert refused.value.errno == errno.ENOSPC
            assert not (disk / "storage" / paths.share_dir(storage_index)).exists()
            (disk / "filler").unlink()
            assert server.slot_testv_and_readv_and_writev(
                storage_index, secrets, write, [(0, 16)]) == (True, {})
            assert server.slot_readv(storage_index, [0], [(0, 16)]) == {
                0: [b"new mutable data"]}
        finally:
            server.close()


def test_a_disk_without_room_for_the_growth_refuses_the_whole_write(root: Path,
                                                                     clock: Clock) -> None:
    """A mutable write that would grow its shares past what the disk has free is NoSpace
    before anything is written (before, the disk refused it part way, leaving a share half
    old, half new); one that does not grow them (rewrites, shrinking) goes through; the
    reserve and read-only still do not stop mutable writes (as in Tahoe 1.20)."""
    disk = {"free": 10_000}
    server = make_server(root, clock, disk_stats=lambda path: disk["free"],
                         reserved_space=10_000)
    assert server.slot_testv_and_readv_and_writev(SI, SECRETS, {0: ([], [(0, b"a" * 4000)],
                                                                     None)}, [])[0]
    before = snapshot(root)
    for writes in ({0: ([], [(0, b"b" * 4000), (4000, b"c" * 12000)], None)},
                   {0: ([], [(0, b"b" * 10)], None), 1: ([], [(0, b"new" * 4000)], None)}):
        with pytest.raises(NoSpace, match="the disk has 10000 bytes free"):
            server.slot_testv_and_readv_and_writev(SI, SECRETS, writes, [])
        assert snapshot(root) == before
    assert server.slot_testv_and_readv_and_writev(SI, SECRETS, {0: ([], [(0, b"d" * 4000)],
                                                                     3000)}, [])[0]
    assert server.slot_readv(SI, [0], [(0, 5000)]) == {0: [b"d" * 3000]}
    disk["free"] = 0  # no growth: still written
    assert server.slot_testv_and_readv_and_writev(SI, SECRETS, {0: ([], [(0, b"e")], None)},
                                                  [])[0]

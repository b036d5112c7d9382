"""Container changes made of several writes, interrupted after each of them.

A process can die between any two of the writes (and cuts) a container change
makes; a single write is whole or absent. Each change here runs once on a file
that records its writes; then, for every point at which it could have been
interrupted, the writes made so far are replayed on a copy of the file as it was,
and the copy is read back as a container. At every point each lease the change
keeps must be readable, nothing but real lease records may read as leases (share
data taken for a lease would give it an expiration from arbitrary bytes), and
the share data must be intact. (Garbage collection's lease trims and a mutable
share's growth past its extra leases are such changes: the share's leases decide
whether the next collection deletes it.)
"""
from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from tahoe.storage.containers import open_container
from tahoe.storage.immutable_container import ImmutableContainer
from tahoe.storage.leases import Lease, new_lease
from tahoe.storage.mutable_container import MutableContainer
from tahoe.storage.randomaccess import MemoryFile

NODEID = b"n" * 20
WRITE_ENABLER = b"w" * 32


class RecordingFile(MemoryFile):
    """A :class:`MemoryFile` that also keeps each change made to it, in order."""

    def __init__(self, initial: bytes) -> None:
        super().__init__(initial)
        self.changes: list[tuple[str, int, bytes]] = []

    def write_at(self, offset: int, data: bytes | memoryview) -> None:
        self.changes.append(("write", offset, bytes(data)))
        super().write_at(offset, data)

    def truncate(self, size: int) -> None:
        self.changes.append(("truncate", size, b""))
        super().truncate(size)


def states_after_each_change(before: bytes, change: Callable[[RecordingFile], None]
                             ) -> list[bytes]:
    """The file's content at every point ``change`` could be interrupted: before its
    first write, after each one, and at its end."""
    recording = RecordingFile(before)
    change(recording)
    states = [before]
    for count in range(1, len(recording.changes) + 1):
        replay = MemoryFile(before)
        for kind, where, data in recording.changes[:count]:
            if kind == "write":
                replay.write_at(where, data)
            else:
                replay.truncate(where)
        states.append(replay.getvalue())
    return states


def _lease(number: int, nodeid: bytes = bytes(20)) -> Lease:
    """A distinct lease (immutable records keep no node id: zeros)."""
    return new_lease(1, bytes([number]) * 32, bytes([100 + number]) * 32,
                     1_800_000_000 + number, hashed=True, nodeid=nodeid)


def _immutable(data: bytes, leases: list[Lease]) -> bytes:
    file = MemoryFile()
    container = ImmutableContainer.create(file, len(data), leases[0])
    container.write_share_data(0, data)
    for lease in leases[1:]:
        container.append_lease(lease)
    return file.getvalue()


# every way of removing some of 1 to 4 leases (the first lease, the last, several, all)
REMOVALS = [(count, gone) for count in range(1, 5)
            for size in range(1, count + 1)
            for gone in itertools.combinations(range(count), size)]


@pytest.mark.parametrize("count,gone", REMOVALS)
def test_a_lease_trim_interrupted_anywhere_keeps_the_other_leases(
        count: int, gone: tuple[int, ...]) -> None:
    data = bytes(range(256)) * 2  # share data that parses as lease records of its own
    leases = [_lease(n) for n in range(count)]
    kept = [lease for n, lease in enumerate(leases) if n not in gone]
    before = _immutable(data, leases)

    def trim(file: RecordingFile) -> None:
        ImmutableContainer.open(file).remove_leases(list(gone))
    states = states_after_each_change(before, trim)
    for point, state in enumerate(states):
        container = ImmutableContainer.open(MemoryFile(state))
        readable = container.leases()
        assert all(lease in readable for lease in kept), f"interrupted after {point} writes"
        assert all(lease in leases for lease in readable), f"interrupted after {point} writes"
        assert container.read_share_data(0, len(data) + 1) == data
    assert ImmutableContainer.open(MemoryFile(states[-1])).leases() == kept
    assert states[-1] == _immutable(data, kept) if kept else len(states[-1]) == 12 + len(data)


def _mutable(data_length: int, lease_count: int) -> tuple[bytes, list[Lease]]:
    file = MemoryFile()
    container = MutableContainer.create(file, NODEID, WRITE_ENABLER)
    container.write_share_data(0, bytes(range(256)) * (data_length // 256) +
                               bytes(data_length % 256))
    leases = [_lease(n, NODEID) for n in range(lease_count)]
    for lease in leases:
        container.add_lease(lease, None)
    return file.getvalue(), leases


# (data length, leases: 4 fill the header's slots, more go to the extra-lease block,
#  where the write starts, how many bytes it writes): growth by less than the block
#  (the new place overlaps the old), by more, by a write past a gap
GROWTHS = [(data, leases, start, length)
           for data in (0, 300)
           for leases in (1, 5, 7)
           for start, length in ((data, 3), (data, 200), (data + 500, 10), (0, data + 1))]


@pytest.mark.parametrize("data_length,lease_count,start,length", GROWTHS)
def test_a_mutable_share_growing_interrupted_anywhere_keeps_its_leases(
        data_length: int, lease_count: int, start: int, length: int) -> None:
    before, leases = _mutable(data_length, lease_count)
    old_data = MutableContainer.open(MemoryFile(before)).read_share_data(0, data_length)
    new_data = bytes([0xAB]) * length

    def grow(file: RecordingFile) -> None:
        MutableContainer.open(file).write_share_data(start, new_data)
    states = states_after_each_change(before, grow)
    for point, state in enumerate(states):
        container = open_container(MemoryFile(state))
        assert isinstance(container, MutableContainer)
        assert container.leases() == leases, f"interrupted after {point} writes"
    final = MutableContainer.open(MemoryFile(states[-1]))
    expected = bytearray(old_data.ljust(start + length, b"\0"))
    expected[start:start + length] = new_data
    assert final.read_share_data(0, len(expected) + 10) == bytes(expected)
    assert final.extra_lease_offset == 468 + max(data_length, start + length)
    assert len(states[-1]) == final.extra_lease_offset + 4 + 92 * max(0, lease_count - 4)


def test_a_growth_leaves_tahoes_layout() -> None:
    """However its writes are ordered, a growth leaves Tahoe's layout byte for byte: the
    header's data length and extra-lease offset, the data, then the extra-lease block
    right after it, nothing beyond."""
    before, _ = _mutable(300, 6)
    old_offset = MutableContainer.open(MemoryFile(before)).extra_lease_offset
    file = MemoryFile(before)
    MutableContainer.open(file).write_share_data(300, b"xyz")
    assert file.getvalue() == (before[:84] + (303).to_bytes(8, "big")
                               + (468 + 303).to_bytes(8, "big") + before[100:468 + 300]
                               + b"xyz" + before[old_offset:])


class FullDiskFile(MemoryFile):
    """A :class:`MemoryFile` on a disk that fills up: past ``room`` more bytes, a write
    stores what fits and fails, as a real one does (a short write, then ENOSPC)."""

    def __init__(self, initial: bytes, room: int) -> None:
        super().__init__(initial)
        self.room = room

    def write_at(self, offset: int, data: bytes | memoryview) -> None:
        grows = max(0, offset + len(data) - self.size())
        if grows > self.room:
            fits = len(data) - (grows - self.room)
            super().write_at(offset, bytes(data)[:max(0, fits)])
            self.room = 0
            raise OSError(28, "No space left on device")
        self.room -= grows
        super().write_at(offset, data)


@pytest.mark.parametrize("room", [0, 4, 71])
def test_a_lease_append_the_disk_cuts_short_leaves_the_share_as_it_was(room: int) -> None:
    """A full disk that takes only part of a new lease record: the file is left as it was
    (the part kept would shift where every lease is read, and the share would look
    expired), and the error is raised."""
    data = bytes(range(256)) * 2
    before = _immutable(data, [_lease(0), _lease(1)])
    file = FullDiskFile(before, room)
    with pytest.raises(OSError):
        ImmutableContainer.open(file).append_lease(_lease(2))
    assert file.getvalue() == before


@pytest.mark.parametrize("count", [0, 1, 2, 4])
def test_a_lease_append_interrupted_anywhere_keeps_every_lease(count: int) -> None:
    """Adding a lease (``add_lease``, an allocation of a share already held): at every
    point the old leases are all readable, nothing else reads as a lease, and the share
    data reads back exactly, even past its end (found by SIGKILLed servers: appended,
    then counted, the first lease read as share data, and a read one byte past the data
    got that record's first byte)."""
    data = bytes(range(256)) * 2
    leases = [_lease(n) for n in range(max(count, 1))]
    before = _immutable(data, leases)
    if count == 0:
        before = before[:12 + len(data)]
        before = before[:8] + (0).to_bytes(4, "big") + before[12:]
        leases = []
    added = _lease(50)

    def append(file: RecordingFile) -> None:
        ImmutableContainer.open(file).append_lease(added)
    states = states_after_each_change(before, append)
    for point, state in enumerate(states):
        container = ImmutableContainer.open(MemoryFile(state))
        readable = container.leases()
        assert all(lease in readable for lease in leases), f"interrupted after {point} writes"
        assert all(lease in leases + [added] for lease in readable), f"after {point} writes"
        assert container.read_share_data(0, len(data) + 1) == data, f"after {point} writes"
    assert states[-1] == _immutable(data, leases + [added]) if leases else True
    assert ImmutableContainer.open(MemoryFile(states[-1])).leases() == leases + [added]

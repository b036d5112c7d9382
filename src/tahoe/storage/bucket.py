"""Bucket writers and readers: one immutable share being uploaded, or one being read.

Follows ``storage-protocol.md`` §3 and §4.3. A writer's file lives under
``shares/incoming/`` and is renamed into ``shares/`` by
:meth:`BucketWriter.close`; until then no reader can see it, and a crash
leaves it where the next server start deletes it.

The file is made by the first write, not by the allocation (Tahoe 1.20 makes
it at allocation): header, that write's data and the first lease together,
at the file's final size. A share whose data comes in one write, as every
small share over HTTPS does, is then one ``open``, one ``pwrite`` and one
``rename`` on disk, and its file holds Tahoe's bytes from the start. A share
closed without any write (Foolscap allows it) gets its file at the close.
"""
from __future__ import annotations

import contextlib
import enum
import os
from typing import Any, Callable, ContextManager

from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from ..httpwire.deadline import Deadlines
from . import disk
from .arguments import check_offset
from .errors import (BadRequest, BucketWriterClosed, ConflictingWriteError, DataTooLargeError,
                     ShareGone)
from .immutable_container import (CURRENT_VERSION, HEADER_SIZE, ImmutableContainer,
                                  new_container_writes)
from .leases import IMMUTABLE_LEASE_SIZE, Lease, pack_immutable_lease
from .ranges import RangeSet

#: A writer that sees no call for this long aborts itself (seconds).
INACTIVITY_TIMEOUT = 30 * 60
#: The largest file offset the system can address (``off_t``).
MAX_FILE_SIZE = 2 ** 63 - 1
DATA_OFFSET_AND_LEASE = HEADER_SIZE + IMMUTABLE_LEASE_SIZE


class WriterState(enum.Enum):
    """The life of a bucket writer."""

    OPEN = "open"
    CLOSED = "closed"
    ABORTED = "aborted"


class WriterTimeouts(Deadlines["BucketWriter"]):
    """Aborts every writer that saw no call for :data:`INACTIVITY_TIMEOUT`, with one timer
    for them all: a writer only notes the time of each call (``last_call``).

    :param clock: gives the time and runs the timer.
    """

    def __init__(self, clock: IReactorTime) -> None:
        super().__init__(clock, lambda writer: writer.last_call + INACTIVITY_TIMEOUT,
                         lambda writer: writer.time_out())


class BucketWriter:
    """Accepts the share data of one immutable share (``RIBucketWriter``).

    Made by ``StorageServer.allocate_buckets``; the transport calls
    :meth:`write`, :meth:`close` and :meth:`abort`, and calls :meth:`abort`
    when the uploader's canary disconnects.
    """

    _log = Logger()

    def __init__(self, storage_index: bytes, shnum: int, allocated_size: int,
                 lease_record: bytes, expiration: int, incoming_path: str, final_path: str,
                 timeouts: WriterTimeouts, discard: bool,
                 on_finish: Callable[["BucketWriter"], None],
                 lock: ContextManager[Any] | None = None, new_bucket: bool = False) -> None:
        """Use :meth:`create`, which checks the size first."""
        self.storage_index = storage_index
        self.shnum = shnum
        self.allocated_size = allocated_size
        #: The expiration of the lease the share is made with.
        self.expiration = expiration
        #: Disk bytes of the share file (``st_blocks`` × 512) after its last change.
        self.disk_bytes = 0
        self._lease_record = lease_record
        self._made = False
        self._new_bucket = new_bucket
        self._incoming = incoming_path
        self._final = final_path
        self._discard = discard
        self._on_finish = on_finish
        self._lock = lock or contextlib.nullcontext()
        self._written = RangeSet()
        self._state = WriterState.OPEN
        self._timeouts = timeouts
        #: When it was made or last written (the clock's seconds).
        self.last_call = timeouts.clock.seconds()
        timeouts.watch(self)

    @classmethod
    def create(cls, storage_index: bytes, shnum: int, allocated_size: int,
               first_lease: Lease | tuple[bytes, int], incoming_path: str, final_path: str,
               timeouts: WriterTimeouts, discard: bool,
               on_finish: Callable[["BucketWriter"], None],
               lock: ContextManager[Any] | None = None,
               new_bucket: bool = False) -> "BucketWriter":
        """A writer for a new share (its incoming file is made by the first write).

        :param first_lease: in stored (hashed, version 2) form, or as its packed record
            and expiration (:func:`~.leases.immutable_lease_record`).
        :param on_finish: called once, with the writer, when it closes or aborts.
        :param lock: held while the share moves into its bucket (garbage collection,
            in another thread, may be removing that directory).
        :param new_bucket: the storage index had no share here at allocation: the close
            makes the bucket directory first, where it would otherwise find it missing.
        :raises OverflowError: for a size no file can have.
        """
        if DATA_OFFSET_AND_LEASE + allocated_size > MAX_FILE_SIZE:
            raise OverflowError(f"a share of {allocated_size} bytes is larger than a file can be")
        record, expiration = (first_lease if isinstance(first_lease, tuple) else
                              (pack_immutable_lease(first_lease), first_lease.expiration))
        return cls(storage_index, shnum, allocated_size, record, expiration, incoming_path,
                   final_path, timeouts, discard, on_finish, lock, new_bucket)

    @property
    def state(self) -> WriterState:
        """Open, closed or aborted."""
        return self._state

    @property
    def closed(self) -> bool:
        """True once the writer has closed or aborted."""
        return self._state is not WriterState.OPEN

    def write(self, offset: int, data: bytes) -> None:
        """Store ``data`` at share-data ``offset`` (file offset ``12 + offset``).

        Writes may come in any order and may overlap earlier ones if the
        overlapping bytes are equal; only overlapping bytes are read back.

        :raises BucketWriterClosed: after close, abort or timeout.
        :raises BadOffset: for an offset that is not an int in 0..2**64-1.
        :raises BadRequest: if ``data`` is not bytes.
        :raises DataTooLargeError: ``(allocated_size, offset, len(data))`` if
            the write ends past the allocated size.
        :raises ConflictingWriteError: if it overlaps different bytes already written.
        """
        self._require(WriterState.OPEN, "write")
        check_offset(offset)
        if not isinstance(data, bytes):
            raise BadRequest("share data must be bytes")
        end = offset + len(data)
        if end > self.allocated_size:
            raise DataTooLargeError(self.allocated_size, offset, len(data))
        self.last_call = self._timeouts.clock.seconds()
        if not data:
            return
        if self._discard:
            # Nothing is kept, but what was sent is recorded: the HTTP protocol needs
            # to tell when a share is complete (Tahoe 1.20 forgets, and its uploads hang).
            self._written.add(offset, end)
            return
        if not self._made:
            self._make_file(offset, data)
            self._written.add(offset, end)
            return
        overlaps = self._written.overlaps(offset, end)
        with disk.open_file(self._incoming, writable=True) as file:
            container = ImmutableContainer(file, CURRENT_VERSION, 1, self.allocated_size)
            if overlaps:
                view = memoryview(data)
                for start, stop in overlaps:
                    if container.read_share_data(start, stop - start) != view[start - offset:stop - offset]:
                        raise ConflictingWriteError(start, stop)
            container.write_share_data(offset, data)
            self.disk_bytes = file.disk_bytes()
        self._written.add(offset, end)

    def _make_file(self, offset: int, data: bytes) -> None:
        """Create the incoming file: header, ``data`` at ``offset`` and the lease, each
        contiguous run in one ``pwrite`` (the whole share in one, when ``data`` is all of
        it). A file the disk refuses part way goes again."""
        try:
            self.disk_bytes = disk.create_with(self._incoming, new_container_writes(
                self.allocated_size, self._lease_record, offset, data))
        except FileExistsError:
            raise
        except BaseException:
            # The file may be there in part; a disk that refused the write (read-only)
            # may refuse this too, and the write's error is the one to answer with.
            with contextlib.suppress(OSError):
                disk.remove_quietly(self._incoming)
            raise
        self._made = True

    def missing(self) -> list[tuple[int, int]]:
        """The half-open ranges of the share data not written yet, in order."""
        missing, position = [], 0
        for start, stop in self._written.ranges():
            if start > position:
                missing.append((position, start))
            position = stop
        if position < self.allocated_size:
            missing.append((position, self.allocated_size))
        return missing

    def close(self) -> None:
        """Move the share to ``shares/<prefix>/<SI>/<shnum>``, making it visible.

        Bytes never written read as zeros; nothing checks that all were written.

        :raises BucketWriterClosed: if already closed, aborted or timed out.
        """
        self._require(WriterState.OPEN, "close")
        if not self._made:  # never written (or discarding): the empty container now
            self._make_file(0, b"")
        with self._lock:
            if self._new_bucket:
                disk.make_directory(os.path.dirname(self._final))
            try:
                os.rename(self._incoming, self._final)
            except FileNotFoundError:  # the bucket's first share: make its directory
                if not os.path.exists(self._incoming):
                    raise
                os.makedirs(os.path.dirname(self._final), exist_ok=True)
                os.rename(self._incoming, self._final)
        self._finish(WriterState.CLOSED)

    def abort(self) -> None:
        """Delete the incoming file and give back its space; a no-op once finished."""
        if self._state is not WriterState.OPEN:
            return
        if self._made:
            disk.remove_quietly(self._incoming)
        self._finish(WriterState.ABORTED)

    def time_out(self) -> None:
        """No call came for too long (:class:`WriterTimeouts`): abort."""
        self._log.info("bucket writer {si}/{shnum} timed out; aborting",
                       si=self.storage_index.hex(), shnum=self.shnum)
        self.abort()

    def _require(self, state: WriterState, action: str) -> None:
        if self._state is not state:
            raise BucketWriterClosed(f"cannot {action}: bucket writer is {self._state.value}")

    def _finish(self, state: WriterState) -> None:
        self._state = state
        self._timeouts.forget(self)
        self._on_finish(self)

    #: The transitions, (state, event) -> next state; events missing here raise
    #: ``BucketWriterClosed``.
    TRANSITIONS = {
        (WriterState.OPEN, "write"): WriterState.OPEN,
        (WriterState.OPEN, "close"): WriterState.CLOSED,
        (WriterState.OPEN, "abort"): WriterState.ABORTED,
        (WriterState.OPEN, "timeout"): WriterState.ABORTED,
        (WriterState.CLOSED, "abort"): WriterState.CLOSED,
        (WriterState.ABORTED, "abort"): WriterState.ABORTED,
    }


class BucketReader:
    """Reads one final immutable share (``RIBucketReader``)."""

    def __init__(self, path: str, storage_index: bytes, shnum: int, data_length: int,
                 advise: Callable[[bytes, bytes, int, bytes], None],
                 gone: Callable[[bytes, list[int]], None] | None = None) -> None:
        """Made by ``StorageServer.get_buckets``.

        :param data_length: the share's data length, from its container.
        :param advise: ``StorageServer.advise_corrupt_share``.
        :param gone: called ``(storage_index, [shnum])`` when the file is found missing
            (``IndexKeeper.files_gone``).
        """
        self.storage_index = storage_index
        self.shnum = shnum
        self.data_length = data_length
        self._path = path
        self._advise = advise
        self._gone = gone

    def read(self, offset: int, length: int) -> bytes:
        """Share-data bytes ``[offset, offset+length)``, cut short at the end of the data.

        Never raises for a read past the end: it gives fewer bytes, or ``b""``.

        :raises BadOffset: for an offset or length that is not an int in 0..2**64-1.
        :raises ShareGone: if the file is not there any more.
        """
        check_offset(offset)
        check_offset(length, "length")
        length = max(0, min(length, self.data_length - offset))
        if length == 0:
            return b""
        with contextlib.ExitStack() as stack:
            try:
                file = stack.enter_context(disk.open_file(self._path))
            except FileNotFoundError:
                raise self._found_gone() from None
            return ImmutableContainer(file, CURRENT_VERSION, 0, self.data_length).read_share_data(
                offset, length)

    def _found_gone(self) -> ShareGone:
        if self._gone is not None:
            self._gone(self.storage_index, [self.shnum])
        return ShareGone(f"share {self.shnum} of storage index {self.storage_index.hex()} "
                         "is gone")

    def advise_corrupt_share(self, reason: bytes) -> None:
        """Report this share as corrupt, as ``advise_corrupt_share(b"immutable", ...)`` does."""
        self._advise(b"immutable", self.storage_index, self.shnum, reason)

"""Open files of the SFTP frontend: reading from the grid, writing through a local spool.

* A file opened for reading only is read from the grid as the client asks:
  a CHK file through one streaming download that moves on with sequential
  requests (a client such as OpenSSH's ``sftp`` has many reads in flight, at
  increasing offsets) and starts again only on a seek; a literal file from
  its cap; a mutable file whole, once.
* A file opened for writing collects the client's writes in a spool (memory
  up to :data:`SPOOL_MEMORY`, then a temporary file), starting from the old
  contents unless it is truncated; on close the spool is handed to the
  ``commit`` callback, which uploads it and links it, and the close is
  answered only then: a client whose ``put`` succeeded knows its file is on
  the grid. The byte ranges written are kept (:attr:`WriteHandle.written`).
  An existing MDMF file's old contents are fetched only when something needs
  them (a read, a truncation, a whole publish: :meth:`WriteHandle.whole`), so
  a write into it, updated in place on close, reads no more of it than the
  update does.

Requests on one handle are answered in the order they arrive.
"""
from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, BinaryIO

from twisted.conch.interfaces import ISFTPFile
from twisted.conch.ssh.filetransfer import FX_FAILURE, SFTPError
from twisted.internet.defer import Deferred, DeferredLock
from zope.interface import implementer

__all__ = ["SPOOL_MEMORY", "Listing", "OldContents", "PendingReader", "ReadHandle", "WriteHandle",
           "merge_range", "new_spool"]

#: Bytes of a file being written that stay in memory; beyond, a temporary file.
SPOOL_MEMORY = 1024 * 1024
#: What :class:`ReadHandle` is given to read: ``(offset, length) -> chunks`` of the file.
Reader = Callable[[int, int], AsyncIterator[bytes]]


def new_spool() -> BinaryIO:
    """An empty spool for a file being written."""
    return tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY)  # type: ignore[return-value]


def _in_order(lock: DeferredLock, work: Callable[[], Awaitable[Any]]) -> Deferred:
    async def run() -> Any:
        await lock.acquire()
        try:
            return await work()
        finally:
            lock.release()
    return Deferred.fromCoroutine(run())


@implementer(ISFTPFile)
class ReadHandle:
    """A file of ``size`` bytes opened for reading.

    :param reader: starts a read of the file at an offset (length -1: to the end).
    :param attrs: the attributes shown for the open file.
    """

    def __init__(self, size: int, reader: Reader, attrs: dict[str, Any]) -> None:
        self.size = size
        self._reader = reader
        self._attrs = attrs
        self._lock = DeferredLock()
        self._chunks: AsyncIterator[bytes] | None = None
        self._buffer = b""
        self._position = 0  # file offset of the start of _buffer

    def readChunk(self, offset: int, length: int) -> Deferred:  # noqa: N802 (Conch)
        """``length`` bytes at ``offset`` (fewer at the end); EOFError past the end."""
        return _in_order(self._lock, lambda: self._read(offset, length))

    async def _read(self, offset: int, length: int) -> bytes:
        if offset >= self.size:
            raise EOFError()
        if self._chunks is None or offset != self._position:
            await self._stop_stream()
            self._chunks = self._reader(offset, -1)
            self._buffer, self._position = b"", offset
        while len(self._buffer) < length:
            try:
                self._buffer += await self._chunks.__anext__()
            except StopAsyncIteration:
                break
        data, self._buffer = self._buffer[:length], self._buffer[length:]
        self._position += len(data)
        return data

    async def _stop_stream(self) -> None:
        if self._chunks is not None:
            close = getattr(self._chunks, "aclose", None)
            if close is not None:
                await close()
            self._chunks = None

    def writeChunk(self, offset: int, data: bytes) -> None:  # noqa: N802 (Conch)
        """Not open for writing."""
        raise PermissionError("this file was opened for reading only")

    def getAttrs(self) -> dict[str, Any]:  # noqa: N802 (Conch)
        """The file's attributes."""
        return dict(self._attrs)

    def setAttrs(self, attrs: dict[str, Any]) -> None:  # noqa: N802 (Conch)
        """Attributes cannot be changed on the grid; accepted and ignored."""

    def close(self) -> Deferred:
        """Stop any download in progress."""
        return _in_order(self._lock, self._stop_stream)


@implementer(ISFTPFile)
class WriteHandle:
    """A file being written (and perhaps read back) through a spool.

    :param spool: holds the file's contents so far (the old ones unless truncated).
    :param append: every write goes to the end (``FXF_APPEND``).
    :param commit: ``commit(spool, size)`` stores the result on the grid.
    :param attrs: the attributes shown for the open file (its size is kept current).
    """

    def __init__(self, spool: BinaryIO, append: bool,
                 commit: Callable[[BinaryIO, int], Awaitable[None]],
                 attrs: dict[str, Any], old: "OldContents | None" = None) -> None:
        self._spool = spool
        #: Contents the spool does not hold yet (fetched by :meth:`whole`).
        self._old = old
        #: Byte ranges written, (start, end), sorted, overlapping ones merged.
        self.written: list[tuple[int, int]] = []
        #: The file was made shorter than its old contents.
        self.truncated = False
        self._append = append
        self._commit = commit
        self._attrs = attrs
        self._lock = DeferredLock()
        self._closed = False
        self._done = False
        #: Readers of this file still open (:class:`PendingReader`): the spool outlives the
        #: close until the last of them is closed.
        self._readers = 0
        #: The client asked to close: its contents are on their way to the grid.
        self.closing = False
        #: The connection ended before the client closed the file: it is dropped.
        self.abandoned = False
        #: Why a write into the spool failed (the disk full...): the spool no longer holds
        #: what the client sent, so the file is not stored at its close.
        self.failed: OSError | None = None
        self._when_closed: list[Deferred] = []
        spool.seek(0, 2)
        self.size = spool.tell() if old is None else old.size
        #: The length of the contents the file was opened with.
        self.old_size = self.size

    @property
    def spool(self) -> BinaryIO:
        """The spool as it is: the ranges written (and the old contents once fetched)."""
        return self._spool

    def writeChunk(self, offset: int, data: bytes) -> Deferred:  # noqa: N802 (Conch)
        """Write ``data`` at ``offset`` (at the end in append mode)."""
        async def write() -> None:
            self._check()
            start = self.size if self._append else offset
            try:
                self._spool.seek(start)
                self._spool.write(data)
            except OSError as error:
                self.failed = error
                raise
            self.size = max(self.size, self._spool.tell())
            if data:
                self.written = merge_range(self.written, start, start + len(data))
        return _in_order(self._lock, write)

    def _check(self) -> None:
        """Refuse to go on with a file whose spool failed.

        :raises SFTPError: ``FX_FAILURE``, naming the first failure.
        """
        if self.failed is not None:
            raise SFTPError(FX_FAILURE, "This file was not stored: the node could not keep"
                            f" what was written ({self.failed.strerror or self.failed}).")

    def readChunk(self, offset: int, length: int) -> Deferred:  # noqa: N802 (Conch)
        """Read back what is written so far."""
        async def read() -> bytes:
            self._check()
            if offset >= self.size:
                raise EOFError()
            await self.whole()
            self._spool.seek(offset)
            return self._spool.read(length)  # type: ignore[no-any-return]
        return _in_order(self._lock, read)

    async def whole(self) -> BinaryIO:
        """The spool with the whole contents: the old ones fetched first if they are not
        there yet, the ranges written laid over them."""
        if self._old is not None:
            contents = await self._old.fetch()
            merged = new_spool()
            try:
                merged.write(contents[:self.size])
                for start, end in self.written:
                    self._spool.seek(start)
                    merged.seek(start)
                    merged.write(self._spool.read(end - start))
                merged.seek(0, 2)
                if merged.tell() < self.size:
                    merged.write(bytes(self.size - merged.tell()))
            except OSError as error:
                merged.close()
                self.failed = error
                raise
            self._old = None
            self._spool.close()
            self._spool = merged
        return self._spool

    def getAttrs(self) -> dict[str, Any]:  # noqa: N802 (Conch)
        """The file's attributes, with its size so far."""
        return {**self._attrs, "size": self.size}

    def setAttrs(self, attrs: dict[str, Any]) -> None:  # noqa: N802 (Conch)
        """Truncation through ``size`` is applied; other attributes are ignored."""
        if "size" in attrs and attrs["size"] is not None and attrs["size"] < self.size:
            self._spool.truncate(attrs["size"])
            self.size = attrs["size"]
            self.truncated = True
            self.written = [(a, min(b, self.size)) for a, b in self.written if a < self.size]

    def abandon(self) -> None:
        """The connection is gone with the file still open: whatever was written is
        dropped at the close that follows (half a file never replaces a whole one)."""
        if not self.closing:
            self.abandoned = True

    def close(self) -> Deferred:
        """Store the file on the grid (once; not if abandoned), then answer."""
        self.closing = True

        async def close() -> None:
            if self._closed:
                return
            self._closed = True
            try:
                if not self.abandoned:
                    self._check()
                    try:
                        self._spool.flush()
                    except OSError as error:
                        self.failed = error
                        self._check()
                    await self._commit(self._spool, self.size)
            finally:
                self._done = True
                self._release()
                waiting, self._when_closed = self._when_closed, []
                for d in waiting:
                    d.callback(None)
        return _in_order(self._lock, close)

    def add_reader(self) -> None:
        """A :class:`PendingReader` opened: keep the spool until it closes."""
        self._readers += 1

    def reader_closed(self) -> None:
        """A :class:`PendingReader` closed."""
        self._readers -= 1
        self._release()

    def _release(self) -> None:
        if self._done and not self._readers:
            self._spool.close()

    async def closed(self) -> None:
        """Wait until a close asked for is done (the file is on the grid, or failed)."""
        if self.closing and not self._done:
            d: Deferred = Deferred()
            self._when_closed.append(d)
            await d


class OldContents:
    """An existing file's contents, not yet fetched.

    :param size: its length.
    :param fetch: gets them (all ``size`` bytes).
    """

    def __init__(self, size: int, fetch: Callable[[], Awaitable[bytes]]) -> None:
        self.size = size
        self.fetch = fetch


def merge_range(ranges: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """``ranges`` (sorted, disjoint, not touching) with [start, end) added, merged."""
    merged: list[tuple[int, int]] = []
    for a, b in ranges:
        if b < start or a > end:
            merged.append((a, b))
        else:
            start, end = min(a, start), max(b, end)
    merged.append((start, end))
    return sorted(merged)


@implementer(ISFTPFile)
class PendingReader:
    """A second opening, for reading, of a file still open for writing: reads what is
    written so far (a file system client such as sshfs may do this), and still after the
    writing handle closed (sshfs does not wait for that close's answer before reading)."""

    def __init__(self, handle: WriteHandle) -> None:
        self._handle = handle
        self._open = True
        handle.add_reader()

    def readChunk(self, offset: int, length: int) -> Deferred:  # noqa: N802 (Conch)
        """As the writing handle reads."""
        return self._handle.readChunk(offset, length)

    def writeChunk(self, offset: int, data: bytes) -> None:  # noqa: N802 (Conch)
        """Opened for reading only."""
        raise PermissionError("this file was opened for reading only")

    def getAttrs(self) -> dict[str, Any]:  # noqa: N802 (Conch)
        """As the writing handle's."""
        return self._handle.getAttrs()

    def setAttrs(self, attrs: dict[str, Any]) -> None:  # noqa: N802 (Conch)
        """Ignored."""

    def close(self) -> None:
        """The writing handle stays open; the spool is let go if it closed already."""
        if self._open:
            self._open = False
            self._handle.reader_closed()


class Listing:
    """An open directory: its entries, handed out once."""

    def __init__(self, entries: list[tuple[bytes, bytes, dict[str, Any]]]) -> None:
        self._entries = iter(entries)

    def __iter__(self) -> "Listing":
        return self

    def __next__(self) -> tuple[bytes, bytes, dict[str, Any]]:
        return next(self._entries)

    def close(self) -> None:
        """Nothing to release."""

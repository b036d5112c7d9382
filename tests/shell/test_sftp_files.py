"""The SFTP frontend's open files: a file still being written, read through a second opening."""
from __future__ import annotations

from typing import BinaryIO

import pytest_twisted

from tahoe.frontends.sftp_files import PendingReader, WriteHandle, new_spool


@pytest_twisted.ensureDeferred
async def test_a_second_opening_reads_on_after_the_writer_closed() -> None:
    """sshfs writes a file, opens it again to read, and closes the writing handle without
    waiting for the answer: the reads that follow get the stored bytes (they failed with
    "seek of closed file"), and the spool is let go when the reader closes."""
    stored: list[bytes] = []

    async def commit(spool: BinaryIO, size: int) -> None:
        spool.seek(0)
        stored.append(spool.read(size))

    spool = new_spool()
    writer = WriteHandle(spool, False, commit, {})
    await writer.writeChunk(0, b"hello, grid\n")
    reader = PendingReader(writer)
    await writer.close()
    await writer.closed()
    assert stored == [b"hello, grid\n"]
    assert await reader.readChunk(0, 100) == b"hello, grid\n"
    assert not spool.closed
    reader.close()
    assert spool.closed


@pytest_twisted.ensureDeferred
async def test_the_spool_goes_at_the_close_when_no_reader_is_open() -> None:
    """A reader closed (twice) before the writer: the writer's close lets the spool go."""
    async def commit(spool: BinaryIO, size: int) -> None:
        pass

    spool = new_spool()
    writer = WriteHandle(spool, False, commit, {})
    reader = PendingReader(writer)
    reader.close()
    reader.close()  # (once only)
    await writer.close()
    assert spool.closed

"""The random-access file the share containers are written against, and an in-memory one.

The container modules never open files: the shell hands them an object with
this protocol over a real file (``disk.DiskFile``); tests use :class:`MemoryFile`.
"""
from __future__ import annotations

from typing import Protocol

#: Zero-filling is done in pieces of at most this many bytes.
ZERO_CHUNK = 1 << 20


class RandomAccessFile(Protocol):
    """Positioned reads and writes on one file; all offsets and sizes in bytes."""

    def read_at(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset``; fewer at the end of the file."""

    def write_at(self, offset: int, data: bytes | memoryview) -> None:
        """Write ``data`` at ``offset``; a gap after the old end reads as zeros."""

    def size(self) -> int:
        """The file's current length."""

    def truncate(self, size: int) -> None:
        """Cut the file to ``size`` bytes (or extend it with zeros)."""


def write_zeros(file: RandomAccessFile, offset: int, length: int) -> None:
    """Write ``length`` zero bytes at ``offset``, a bounded piece at a time."""
    end = offset + length
    while offset < end:
        step = min(ZERO_CHUNK, end - offset)
        file.write_at(offset, bytes(step))
        offset += step


class MemoryFile:
    """A :class:`RandomAccessFile` held in a ``bytearray``."""

    def __init__(self, initial: bytes = b"") -> None:
        self.data = bytearray(initial)

    def read_at(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset``."""
        return bytes(self.data[offset:offset + length])

    def write_at(self, offset: int, data: bytes | memoryview) -> None:
        """Write ``data`` at ``offset``, zero-filling any gap after the end."""
        if offset > len(self.data):
            self.data.extend(bytes(offset - len(self.data)))
        self.data[offset:offset + len(data)] = data

    def size(self) -> int:
        """The current length."""
        return len(self.data)

    def truncate(self, size: int) -> None:
        """Cut to (or zero-extend to) ``size`` bytes."""
        if size < len(self.data):
            del self.data[size:]
        else:
            self.data.extend(bytes(size - len(self.data)))

    def getvalue(self) -> bytes:
        """The whole content."""
        return bytes(self.data)

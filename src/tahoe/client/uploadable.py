"""What an upload reads its plaintext from: bytes in memory or a (spooled) file.

Both passes of a CHK upload (the convergent key, then the encoding) read the
source in order; a file source is read in chunks, so memory stays bounded. A
source whose key was hashed while its plaintext arrived says so in
``known_key`` (a :class:`~tahoe.immutable.keys.KnownKey`, optional): the
uploader then skips the first pass when the key fits the file's geometry.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, BinaryIO, Protocol

if TYPE_CHECKING:
    from ..immutable.keys import KnownKey


class Uploadable(Protocol):
    """A plaintext of known size that can be read at any offset."""

    size: int

    def read(self, offset: int, length: int) -> bytes:
        """Return ``length`` bytes at ``offset`` (fewer only at the end)."""

    def close(self) -> None:
        """Release the underlying resources."""


class BytesUploadable:
    """A plaintext held in memory."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self.size = len(data)

    def read(self, offset: int, length: int) -> bytes:
        """A slice of the data."""
        return self._data[offset:offset + length]

    def close(self) -> None:
        """Nothing to release."""


class FileUploadable:
    """A plaintext in an open, seekable file (e.g. an HTTP body spooled to disk)."""

    def __init__(self, handle: BinaryIO, size: int | None = None,
                 known_key: KnownKey | None = None) -> None:
        self._handle = handle
        self.known_key = known_key
        self._fd = handle.fileno() if hasattr(handle, "fileno") and _has_fd(handle) else None
        if size is None:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
        self.size = size

    def read(self, offset: int, length: int) -> bytes:
        """Read with ``pread`` where possible (no shared file position)."""
        if self._fd is not None:
            return os.pread(self._fd, length, offset)
        self._handle.seek(offset)
        return self._handle.read(length)

    def close(self) -> None:
        """Close the file."""
        self._handle.close()


def _has_fd(handle: BinaryIO) -> bool:
    try:
        handle.fileno()
    except (OSError, ValueError, AttributeError):
        return False
    return True

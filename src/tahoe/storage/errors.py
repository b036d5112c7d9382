"""Errors of the storage server.

Where a Tahoe-LAFS client sees an error's class name in a remote failure, the
class keeps Tahoe's name (``DataTooLargeError``, ``ConflictingWriteError``,
``BadWriteEnablerError``, ``NoSpace``). Bad input from a client is a
:class:`BadRequest` (also a ``ValueError``); bad bytes found on disk are a
:class:`ContainerError`.
"""
from __future__ import annotations


class StorageError(Exception):
    """Root of every error raised by the storage server and its formats."""


class DataTooLargeError(StorageError):
    """A write would go past the end of the space allocated for a share.

    For an immutable share the args are ``(allocated_size, offset, length)``,
    as in Tahoe (``storage-protocol.md`` §3.1). For a mutable share they are
    ``(maximum container size, offset, length)``.
    """

    def __init__(self, max_size: int, offset: int, length: int) -> None:
        super().__init__(max_size, offset, length)
        self.max_size = max_size
        self.offset = offset
        self.length = length


class ConflictingWriteError(StorageError):
    """An immutable write overlaps bytes already written with different bytes."""

    def __init__(self, start: int, stop: int) -> None:
        super().__init__(f"Chunk {start}-{stop} doesn't match already written data.")
        self.start = start
        self.stop = stop


class BadWriteEnablerError(StorageError):
    """The write enabler presented for a mutable share is not the stored one.

    The message names the node that recorded the stored write enabler, in
    Tahoe's exact words (``storage-protocol.md`` §2.7).
    """

    def __init__(self, recorded_nodeid_b32: str) -> None:
        super().__init__(f"The write enabler was recorded by nodeid '{recorded_nodeid_b32}'.")
        self.recorded_nodeid_b32 = recorded_nodeid_b32


class NoSpace(StorageError):
    """A new lease record is needed but there is no space for it (§5.4, §6.5)."""


class BucketWriterClosed(StorageError):
    """A bucket writer was used after ``close()``, ``abort()`` or its timeout."""


class ShareGone(StorageError):
    """A share listed a moment ago has no file any more (collected, or removed by hand)."""


class ContainerError(StorageError):
    """Root of the errors about share files found on disk."""


class UnknownContainer(ContainerError):
    """A file's first bytes are neither an immutable version nor a mutable magic."""


class CorruptContainer(ContainerError):
    """A share container's header or lease area is inconsistent with its size."""


class WrongShareKind(ContainerError):
    """A mutable operation met an immutable share of the same storage index, or the reverse."""


class BadRequest(StorageError, ValueError):
    """Root of the errors about malformed arguments from a client; nothing was changed."""


class BadStorageIndex(BadRequest):
    """A storage index is not bytes, longer than 16 bytes, or not 16 bytes for a write."""


class BadSecret(BadRequest):
    """A lease secret or write enabler is not exactly 32 bytes."""


class BadShareNumber(BadRequest):
    """A share number is not an int in 0..255, or a set of them is malformed."""


class BadOffset(BadRequest):
    """An offset or length is not an int in 0..2**64-1."""


class BadAllocatedSize(BadRequest):
    """An ``allocated_size`` is not an int in 0..2**64-1."""


class MalformedVector(BadRequest):
    """A test, read or write vector has the wrong types or shape, or a negative field."""


class UnknownTestOperator(MalformedVector):
    """A test vector uses an operator other than ``b"eq"``."""


class BadShareType(BadRequest):
    """A corruption advisory names a share type other than ``b"immutable"`` or ``b"mutable"``."""


class BadSizeString(StorageError, ValueError):
    """A size such as ``reserved_space`` is not a number with an optional unit (§6.1)."""

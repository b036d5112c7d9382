"""Foolscap adapters: the remote storage interfaces over the domain :class:`StorageServer`.

The ``remote_*`` methods only delegate; the one thing they add is the
canary of ``allocate_buckets``: when the uploader's connection drops before
a writer is closed, the writer is aborted (``reference/storage-protocol.md`` §2.3).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from foolscap.api import Referenceable
from zope.interface import implementer

from ..stats.registry import Statistics, storage_operation
from . import disk
from .bucket import BucketReader, BucketWriter
from .errors import NoSpace
from .immutable_container import HEADER_SIZE
from .interfaces import RIBucketReader, RIBucketWriter, RIStorageServer
from .leases import IMMUTABLE_LEASE_SIZE
from .server import StorageServer


@contextlib.contextmanager
def _full_disk_is_no_space() -> Iterator[None]:
    """A disk (or quota) found full, or read-only, while writing is :class:`NoSpace`, as
    over HTTPS (507), not an ``OSError`` carrying the server's file path to the client."""
    try:
        yield
    except OSError as error:
        reason = disk.no_room(error)
        if reason:
            raise NoSpace(reason) from None
        raise


@implementer(RIBucketWriter)
class BucketWriterRPC(Referenceable):  # type: ignore[misc]
    """One bucket writer, aborted if its uploader disconnects before ``close``."""

    def __init__(self, writer: BucketWriter, canary: Any,
                 stats: Statistics | None = None) -> None:
        self._writer = writer
        self._canary = canary
        self._stats = stats
        self._marker = canary.notifyOnDisconnect(self._disconnected)

    def remote_write(self, offset: int, data: bytes) -> None:
        """Store share data at ``offset``."""
        with storage_operation(self._stats, "write"), _full_disk_is_no_space():
            self._writer.write(offset, data)

    def remote_close(self) -> None:
        """Make the share visible."""
        with storage_operation(self._stats, "close"):
            self._writer.close()
        if self._stats is not None:
            # The share file's size: header, data, and the lease made at allocation.
            self._stats.count("storage_server.bytes_added",
                              HEADER_SIZE + self._writer.allocated_size + IMMUTABLE_LEASE_SIZE)
        self._forget_canary()

    def remote_abort(self) -> None:
        """Discard the share."""
        with storage_operation(self._stats, "abort"):
            self._writer.abort()
        self._forget_canary()

    def _disconnected(self) -> None:
        self._marker = None
        self._writer.abort()

    def _forget_canary(self) -> None:
        if self._marker is not None:
            self._canary.dontNotifyOnDisconnect(self._marker)
            self._marker = None


@implementer(RIBucketReader)
class BucketReaderRPC(Referenceable):  # type: ignore[misc]
    """Reads one finished share."""

    def __init__(self, reader: BucketReader, stats: Statistics | None = None) -> None:
        self._reader = reader
        self._stats = stats

    def remote_read(self, offset: int, length: int) -> bytes:
        """Share bytes, cut short at the end."""
        with storage_operation(self._stats, "read"):
            return self._reader.read(offset, length)

    def remote_advise_corrupt_share(self, reason: bytes) -> None:
        """Record a client's corruption report."""
        self._reader.advise_corrupt_share(reason)


@implementer(RIStorageServer)
class StorageServerRPC(Referenceable):  # type: ignore[misc]
    """The object behind ``private/storage.furl``.

    :param stats: where operations are counted and timed (``storage_server.*``).
    """

    def __init__(self, server: StorageServer, stats: Statistics | None = None) -> None:
        self._server = server
        self._stats = stats

    def remote_get_version(self) -> dict:
        """Tahoe's version dict (bytes keys)."""
        return self._server.get_version()

    def remote_allocate_buckets(self, storage_index: bytes, renew_secret: bytes,
                                cancel_secret: bytes, sharenums: set[int], allocated_size: int,
                                canary: Any) -> tuple[set[int], dict[int, BucketWriterRPC]]:
        """Renew leases on shares held, and create writers for the new ones that fit."""
        with storage_operation(self._stats, "allocate"):
            alreadygot, writers = self._server.allocate_buckets(
                storage_index, renew_secret, cancel_secret, sharenums, allocated_size)
        return set(alreadygot), {shnum: BucketWriterRPC(writer, canary, self._stats)
                                 for shnum, writer in writers.items()}

    def remote_add_lease(self, storage_index: bytes, renew_secret: bytes,
                         cancel_secret: bytes) -> None:
        """Renew or add a lease on every share of the storage index."""
        with storage_operation(self._stats, "add-lease"), _full_disk_is_no_space():
            self._server.add_lease(storage_index, renew_secret, cancel_secret)

    def remote_get_buckets(self, storage_index: bytes) -> dict[int, BucketReaderRPC]:
        """Readers for every finished share of the storage index."""
        with storage_operation(self._stats, "get"):
            readers = self._server.get_buckets(storage_index)
        return {shnum: BucketReaderRPC(reader, self._stats) for shnum, reader in readers.items()}

    def remote_slot_readv(self, storage_index: bytes, shares: list[int],
                          readv: list[tuple[int, int]]) -> dict[int, list[bytes]]:
        """Read vectors from mutable shares."""
        with storage_operation(self._stats, "readv"):
            return self._server.slot_readv(storage_index, shares, readv)

    def remote_slot_testv_and_readv_and_writev(self, storage_index: bytes, secrets: tuple,
                                               tw_vectors: dict, r_vector: list
                                               ) -> tuple[bool, dict[int, list[bytes]]]:
        """The one mutable write: test, read, then write if every test passed."""
        with storage_operation(self._stats, "writev"), _full_disk_is_no_space():
            return self._server.slot_testv_and_readv_and_writev(storage_index, secrets,
                                                                tw_vectors, r_vector)

    def remote_advise_corrupt_share(self, share_type: bytes, storage_index: bytes, shnum: int,
                                    reason: bytes) -> None:
        """Record a client's corruption report."""
        self._server.advise_corrupt_share(share_type, storage_index, shnum, reason)

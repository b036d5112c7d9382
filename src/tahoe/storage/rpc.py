"""Foolscap adapters: the remote storage interfaces over the domain :class:`StorageServer`.

The ``remote_*`` methods only delegate; the one thing they add is the
canary of ``allocate_buckets``: when the uploader's connection drops before
a writer is closed, the writer is aborted (``reference/storage-protocol.md`` §2.3).
"""
from __future__ import annotations

from typing import Any

from foolscap.api import Referenceable
from zope.interface import implementer

from .bucket import BucketReader, BucketWriter
from .interfaces import RIBucketReader, RIBucketWriter, RIStorageServer
from .server import StorageServer


@implementer(RIBucketWriter)
class BucketWriterRPC(Referenceable):  # type: ignore[misc]
    """One bucket writer, aborted if its uploader disconnects before ``close``."""

    def __init__(self, writer: BucketWriter, canary: Any) -> None:
        self._writer = writer
        self._canary = canary
        self._marker = canary.notifyOnDisconnect(self._disconnected)

    def remote_write(self, offset: int, data: bytes) -> None:
        """Store share data at ``offset``."""
        self._writer.write(offset, data)

    def remote_close(self) -> None:
        """Make the share visible."""
        self._writer.close()
        self._forget_canary()

    def remote_abort(self) -> None:
        """Discard the share."""
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

    def __init__(self, reader: BucketReader) -> None:
        self._reader = reader

    def remote_read(self, offset: int, length: int) -> bytes:
        """Share bytes, cut short at the end."""
        return self._reader.read(offset, length)

    def remote_advise_corrupt_share(self, reason: bytes) -> None:
        """Record a client's corruption report."""
        self._reader.advise_corrupt_share(reason)


@implementer(RIStorageServer)
class StorageServerRPC(Referenceable):  # type: ignore[misc]
    """The object behind ``private/storage.furl``."""

    def __init__(self, server: StorageServer) -> None:
        self._server = server

    def remote_get_version(self) -> dict:
        """Tahoe's version dict (bytes keys)."""
        return self._server.get_version()

    def remote_allocate_buckets(self, storage_index: bytes, renew_secret: bytes,
                                cancel_secret: bytes, sharenums: set[int], allocated_size: int,
                                canary: Any) -> tuple[set[int], dict[int, BucketWriterRPC]]:
        """Renew leases on shares held, and create writers for the new ones that fit."""
        alreadygot, writers = self._server.allocate_buckets(
            storage_index, renew_secret, cancel_secret, sharenums, allocated_size)
        return set(alreadygot), {shnum: BucketWriterRPC(writer, canary)
                                 for shnum, writer in writers.items()}

    def remote_add_lease(self, storage_index: bytes, renew_secret: bytes,
                         cancel_secret: bytes) -> None:
        """Renew or add a lease on every share of the storage index."""
        self._server.add_lease(storage_index, renew_secret, cancel_secret)

    def remote_get_buckets(self, storage_index: bytes) -> dict[int, BucketReaderRPC]:
        """Readers for every finished share of the storage index."""
        return {shnum: BucketReaderRPC(reader)
                for shnum, reader in self._server.get_buckets(storage_index).items()}

    def remote_slot_readv(self, storage_index: bytes, shares: list[int],
                          readv: list[tuple[int, int]]) -> dict[int, list[bytes]]:
        """Read vectors from mutable shares."""
        return self._server.slot_readv(storage_index, shares, readv)

    def remote_slot_testv_and_readv_and_writev(self, storage_index: bytes, secrets: tuple,
                                               tw_vectors: dict, r_vector: list
                                               ) -> tuple[bool, dict[int, list[bytes]]]:
        """The one mutable write: test, read, then write if every test passed."""
        return self._server.slot_testv_and_readv_and_writev(storage_index, secrets, tw_vectors,
                                                            r_vector)

    def remote_advise_corrupt_share(self, share_type: bytes, storage_index: bytes, shnum: int,
                                    reason: bytes) -> None:
        """Record a client's corruption report."""
        self._server.advise_corrupt_share(share_type, storage_index, shnum, reason)

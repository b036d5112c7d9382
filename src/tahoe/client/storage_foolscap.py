"""The storage-client interface over Foolscap (``RIStorageServer``, ``reference/storage-protocol.md`` §2–3).

Writers handed out by :meth:`FoolscapStorageClient.allocate_buckets` queue
their calls until the allocation answers (Foolscap has no way to name a
bucket writer before the server made it); then the queue goes out in order
to the remote writer, or fails with ``ShareNotAllocated``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foolscap.api import DeadReferenceError, Referenceable, RemoteException
from twisted.internet.defer import Deferred, succeed
from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.python.failure import Failure

from .storage_api import (Allocation, ReadVector, ServerGone, ServerRefused, ShareNotAllocated,
                          TestWriteVectors, WriteEnablerRefused, allocate_and_write, first_line)

_GONE = (DeadReferenceError, ConnectionLost, ConnectionDone)


def _translate(failure: Failure) -> Failure:
    """A remote failure as one of the interface's errors."""
    if failure.check(*_GONE):
        return Failure(ServerGone(f"connection lost: {failure.getErrorMessage()}"))
    if failure.check(RemoteException):
        parents = getattr(failure.value.failure, "parents", None) or [""]
        kind = parents[0].rsplit(".", 1)[-1]
        message = f"{kind}: {first_line(failure.value.failure.getErrorMessage())}"
        if kind == "BadWriteEnablerError":
            return Failure(WriteEnablerRefused(message, kind))
        return Failure(ServerRefused(message, kind))
    return failure


def _call(remote: Any, method: str, *args: Any) -> Deferred:
    d: Deferred = remote.callRemote(method, *args)
    d.addErrback(_translate)
    return d


class _QueuedWriter:
    """A bucket writer that waits for its allocation's answer."""

    def __init__(self, shnum: int) -> None:
        self.shnum = shnum
        self._remote: Any = None
        self._refusal: Failure | None = None
        self._queue: list[tuple[str, tuple[Any, ...], Deferred]] = []

    def write(self, offset: int, data: bytes) -> Deferred:
        return self._call("write", offset, data)

    def close(self) -> Deferred:
        return self._call("close")

    def abort(self) -> Deferred:
        if self._refusal is not None:
            return succeed(None)
        return self._call("abort")

    def _call(self, method: str, *args: Any) -> Deferred:
        if self._remote is not None:
            return _call(self._remote, method, *args)
        d: Deferred = Deferred()
        if self._refusal is not None:
            d.errback(self._refusal)
        else:
            self._queue.append((method, args, d))
        return d

    def attach(self, remote: Any) -> None:
        """The server made this writer: send what waited, in order."""
        self._remote = remote
        queue, self._queue = self._queue, []
        for method, args, d in queue:
            _call(remote, method, *args).chainDeferred(d)

    def refuse(self, reason: Failure) -> None:
        """No writer for this share: every call fails with ``reason`` (abort succeeds)."""
        self._refusal = reason
        queue, self._queue = self._queue, []
        for method, _, d in queue:
            if method == "abort":
                d.callback(None)
            else:
                d.errback(reason)


class _Reader:
    def __init__(self, remote: Any) -> None:
        self._remote = remote

    def read(self, offset: int, length: int) -> Deferred:
        return _call(self._remote, "read", offset, length)

    def advise_corrupt_share(self, reason: bytes) -> Deferred:
        return _call(self._remote, "advise_corrupt_share", reason)


class FoolscapStorageClient:
    """A :class:`~tahoe.client.storage_api.StorageServerClient` over a Foolscap reference.

    :param rref: the ``RIStorageServer`` remote reference.
    """

    transport = "foolscap"

    def __init__(self, rref: Any) -> None:
        self.rref = rref

    def get_version(self) -> Deferred:
        return _call(self.rref, "get_version")

    def allocate_buckets(self, storage_index: bytes, renew_secret: bytes, cancel_secret: bytes,
                         sharenums: set[int], allocated_size: int) -> Allocation:
        writers = {shnum: _QueuedWriter(shnum) for shnum in sorted(sharenums)}
        d = _call(self.rref, "allocate_buckets", storage_index, renew_secret, cancel_secret,
                  set(sharenums), allocated_size, Referenceable())

        def answered(answer: tuple[set[int], dict[int, Any]]) -> tuple[frozenset[int],
                                                                        frozenset[int]]:
            already, remotes = answer
            for shnum, writer in writers.items():
                if shnum in remotes:
                    writer.attach(remotes[shnum])
                else:
                    writer.refuse(Failure(ShareNotAllocated(f"share {shnum} was not allocated")))
            return frozenset(already), frozenset(remotes)

        def failed(failure: Failure) -> Failure:
            for writer in writers.values():
                writer.refuse(failure)
            return failure
        d.addCallbacks(answered, failed)
        return Allocation(d, dict(writers))

    def allocate_and_write(self, storage_index: bytes, renew_secret: bytes, cancel_secret: bytes,
                           shares: Mapping[int, bytes], allocated_size: int) -> Deferred:
        return allocate_and_write(self, storage_index, renew_secret, cancel_secret, shares,
                                  allocated_size)

    def add_lease(self, storage_index: bytes, renew_secret: bytes,
                  cancel_secret: bytes) -> Deferred:
        return _call(self.rref, "add_lease", storage_index, renew_secret, cancel_secret)

    def get_buckets(self, storage_index: bytes) -> Deferred:
        d = _call(self.rref, "get_buckets", storage_index)
        d.addCallback(lambda buckets: {shnum: _Reader(remote)
                                       for shnum, remote in buckets.items()})
        return d

    def slot_readv(self, storage_index: bytes, shares: list[int], readv: ReadVector) -> Deferred:
        return _call(self.rref, "slot_readv", storage_index, list(shares), list(readv))

    def slot_testv_and_readv_and_writev(self, storage_index: bytes,
                                        secrets: tuple[bytes, bytes, bytes],
                                        tw_vectors: TestWriteVectors,
                                        r_vector: ReadVector) -> Deferred:
        return _call(self.rref, "slot_testv_and_readv_and_writev", storage_index, secrets,
                     tw_vectors, list(r_vector))

    def advise_corrupt_share(self, share_type: bytes, storage_index: bytes, shnum: int,
                             reason: bytes) -> Deferred:
        return _call(self.rref, "advise_corrupt_share", share_type, storage_index, shnum, reason)

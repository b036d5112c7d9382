"""The storage-client interface: one storage server, whatever the transport.

Every layer above (upload, download, mutable files, check, verify, repair,
lease renewal) talks to a server through :class:`StorageServerClient`;
``storage_foolscap`` and ``storage_https`` implement it over Foolscap and
over the HTTPS storage protocol. The calls are those of Tahoe's
``RIStorageServer`` (``reference/storage-protocol.md`` §2–3), with one
change that lets a transport pipeline: :meth:`StorageServerClient.allocate_buckets`
hands back a writer for every share asked for at once, before the answer.

Errors a caller may see: :class:`ServerGone` (no connection, or it was lost
before the answer), :class:`ServerRefused` (the server answered with an
error), :class:`ShareNotAllocated` (a write to a share the allocation did
not grant).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from attrs import frozen
from twisted.internet.defer import Deferred, DeferredList, fail, succeed

from .errors import ClientError

#: Mutable-share test-and-write vectors as the Foolscap interface takes them.
TestWriteVectors = dict[int, tuple[list[tuple[int, int, bytes, bytes]],
                                   list[tuple[int, bytes]], "int | None"]]
ReadVector = list[tuple[int, int]]


class StorageClientError(ClientError):
    """Root of the failures of calls to a storage server."""


class ServerGone(StorageClientError):
    """The server could not be reached, or the connection was lost before its answer."""


class ServerRefused(StorageClientError):
    """The server answered with an error.

    :ivar kind: what the server said it was (an HTTP status, or a remote exception's class name).
    """

    def __init__(self, message: str, kind: str = "") -> None:
        super().__init__(message)
        self.kind = kind


class ShareNotAllocated(StorageClientError):
    """A write or close for a share the allocation did not grant (held already, or refused)."""


class WriteEnablerRefused(ServerRefused):
    """A mutable write presented a write enabler other than the one the share records."""


class BucketWriter(Protocol):
    """Writes one immutable share (made by :meth:`StorageServerClient.allocate_buckets`)."""

    def write(self, offset: int, data: bytes) -> Deferred:
        """Store share data at ``offset``; fires with None once the server has it."""

    def close(self) -> Deferred:
        """Fires once the share is complete and visible on the server."""

    def abort(self) -> Deferred:
        """Discard the share; fires once the server has (failures need no handling)."""


class BucketReader(Protocol):
    """Reads one immutable share (made by :meth:`StorageServerClient.get_buckets`)."""

    def read(self, offset: int, length: int) -> Deferred:
        """Share data ``[offset, offset+length)``, cut short at the end."""

    def advise_corrupt_share(self, reason: bytes) -> Deferred:
        """Tell the server this share is corrupt (best effort)."""


@frozen
class Allocation:
    """An ``allocate_buckets`` under way.

    :ivar answer: fires with ``(already_have, allocated)`` share-number sets.
    :ivar writers: a writer for every share asked for, usable at once; writes
        to a share that is not in ``allocated`` fail with :class:`ShareNotAllocated`.
    """

    answer: Deferred
    writers: dict[int, BucketWriter]


class StorageServerClient(Protocol):
    """One storage server's calls (see the module docstring)."""

    #: ``"foolscap"`` or ``"https"``.
    transport: str

    def get_version(self) -> Deferred:
        """The server's version dict (bytes keys, as Foolscap's ``get_version``)."""

    def allocate_buckets(self, storage_index: bytes, renew_secret: bytes, cancel_secret: bytes,
                         sharenums: set[int], allocated_size: int) -> Allocation:
        """Ask for new immutable shares (and renew leases on those held)."""

    def allocate_and_write(self, storage_index: bytes, renew_secret: bytes, cancel_secret: bytes,
                           shares: Mapping[int, bytes], allocated_size: int) -> Deferred:
        """Ask for new immutable shares whose bytes are all known (each exactly
        ``allocated_size`` long), write every one the server grants and complete it.

        Fires with ``(already_have, written)``: a share in neither was refused. Fails
        (:class:`ServerGone`, :class:`ServerRefused`) if the allocation or a granted
        share's write failed; the granted shares not complete are then aborted. Over
        HTTPS to a server that takes pipelined requests this is one write and one round
        trip; elsewhere it is :func:`allocate_and_write`.
        """

    def add_lease(self, storage_index: bytes, renew_secret: bytes,
                  cancel_secret: bytes) -> Deferred:
        """Add or renew a lease on every share of a storage index (nothing if none)."""

    def get_buckets(self, storage_index: bytes) -> Deferred:
        """``{shnum: BucketReader}`` for the final immutable shares of a storage index."""

    def slot_readv(self, storage_index: bytes, shares: list[int],
                   readv: ReadVector) -> Deferred:
        """``{shnum: [data per read vector]}`` of mutable shares (all of them if ``shares`` is empty)."""

    def slot_testv_and_readv_and_writev(self, storage_index: bytes,
                                        secrets: tuple[bytes, bytes, bytes],
                                        tw_vectors: TestWriteVectors,
                                        r_vector: ReadVector) -> Deferred:
        """``(all tests passed, {shnum: [data read before writing]})``."""

    def advise_corrupt_share(self, share_type: bytes, storage_index: bytes, shnum: int,
                             reason: bytes) -> Deferred:
        """Report a corrupt share (best effort; unknown shares are ignored)."""


def allocate_and_write(client: StorageServerClient, storage_index: bytes, renew_secret: bytes,
                       cancel_secret: bytes, shares: Mapping[int, bytes],
                       allocated_size: int) -> Deferred:
    """:meth:`StorageServerClient.allocate_and_write` through ``allocate_buckets`` and its
    writers: each share's write handed over at once (the writers hold it until the
    allocation answers, if they must), its close as soon as the allocation answered (over
    Foolscap, whose server completes a share on close without checking it for holes, a
    share whose write failed may so be complete); if a write or close fails, the granted
    shares are aborted."""
    allocation = client.allocate_buckets(storage_index, renew_secret, cancel_secret,
                                         set(shares), allocated_size)
    writes = {shnum: allocation.writers[shnum].write(0, data)
              for shnum, data in sorted(shares.items())}
    return Deferred.fromCoroutine(_write_granted(allocation, writes))


async def _write_granted(allocation: Allocation, writes: dict[int, Deferred]) -> tuple[
        frozenset[int], frozenset[int]]:
    try:
        already, granted = await allocation.answer
    except Exception:
        for d in writes.values():
            quietly(d)
        raise
    waits = []
    for shnum, d in writes.items():
        if shnum in granted:
            waits += [d, allocation.writers[shnum].close()]
        else:
            quietly(d)  # refused (ShareNotAllocated), as the answer says
    for ok, value in await DeferredList(waits, consumeErrors=True):
        if not ok:
            for shnum in granted:
                quietly(allocation.writers[shnum].abort())
            value.raiseException()
    return frozenset(already), frozenset(granted)


def quietly(d: Deferred) -> Deferred:
    """Consume the failure of a call nobody waits for (an abort, a report)."""
    d.addErrback(lambda failure: None)
    return d


def first_line(value: Any, limit: int = 200) -> str:
    """A short one-line rendering of an error body or message."""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return (text.strip().splitlines() or [""])[0][:limit]


class _GoneWriter:
    def write(self, offset: int, data: bytes) -> Deferred:
        return fail(ServerGone("not connected"))

    def close(self) -> Deferred:
        return fail(ServerGone("not connected"))

    def abort(self) -> Deferred:
        return succeed(None)


class DisconnectedServer:
    """Stands in for a server that is not connected: every call fails with :class:`ServerGone`."""

    transport = "none"

    def get_version(self) -> Deferred:
        return fail(ServerGone("not connected"))

    def allocate_buckets(self, storage_index: bytes, renew_secret: bytes, cancel_secret: bytes,
                         sharenums: set[int], allocated_size: int) -> Allocation:
        return Allocation(fail(ServerGone("not connected")),
                          {shnum: _GoneWriter() for shnum in sharenums})

    def allocate_and_write(self, *args: Any) -> Deferred:
        return fail(ServerGone("not connected"))

    def add_lease(self, *args: Any) -> Deferred:
        return fail(ServerGone("not connected"))

    def get_buckets(self, storage_index: bytes) -> Deferred:
        return fail(ServerGone("not connected"))

    def slot_readv(self, *args: Any) -> Deferred:
        return fail(ServerGone("not connected"))

    def slot_testv_and_readv_and_writev(self, *args: Any) -> Deferred:
        return fail(ServerGone("not connected"))

    def advise_corrupt_share(self, *args: Any) -> Deferred:
        return fail(ServerGone("not connected"))


DISCONNECTED = DisconnectedServer()

"""The storage-client interface over the HTTPS storage protocol (``docs/formats/http-storage.md``).

Every request to one server goes on its one kept-open connection
(``httpwire.client.PersistentConnection``), written at once and answered in
order. So an allocation and its shares' writes go back to back and an
upload of a small file costs one round trip; when the shares' bytes are all
known (:meth:`~HTTPSStorageClient.allocate_and_write`), the allocation and
the writes are built as one byte string, written at once, and answered
through one Deferred. When the server is one that
cannot be trusted to take pipelined requests (``pipelining=False``: any
but ours, Tahoe 1.20's among them), writes wait for the allocation's answer
and every request, on either connection, waits for the answer before it.

An immutable share needs no ``close`` over HTTP: the server closes it when
its last byte arrives (that write is answered 201), so a writer's
:meth:`~_Writer.close` only waits for that answer.
"""
from __future__ import annotations

import functools
import os
from binascii import b2a_base64
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from twisted.internet.defer import Deferred, DeferredList, fail, succeed
from twisted.python.failure import Failure

from ..httpwire.client import HTTPClientError, HTTPResponse, PersistentConnection, resend_if_stale
from ..httpwire.threaded import ThreadedConnection
from ..storage import http_messages as messages
from ..storage.http_messages import MessageError, Secret
from ..util import base32
from .storage_api import (Allocation, ReadVector, ServerGone, ServerRefused, ShareNotAllocated,
                          TestWriteVectors, WriteEnablerRefused, allocate_and_write, first_line,
                          quietly)

#: Random bytes in an upload secret (as Tahoe 1.20's client).
UPLOAD_SECRET_SIZE = 20
#: Largest CBOR answer accepted (a read-test-write answer carries read data).
MAX_CBOR_ANSWER = 64 * 1024 * 1024
#: Mutable storage indexes whose share numbers are remembered, per server.
KNOWN_SLOTS = 4096
#: Share data of at least this many bytes goes on the bulk connection.
BULK_BYTES = 128 * 1024
#: Largest answer accepted to a share write (or to an allocation: two sets of share numbers).
MAX_ANSWER_OF_WRITE = 64 * 1024
_CBOR = messages.CBOR.encode("ascii")
#: ``X-Tahoe-Authorization`` values up to the base64 secret (``messages.secret_header``),
#: made once: an upload of a small file sends three a server.
_RENEW, _CANCEL, _UPLOAD = (messages.secret_header(kind, b"")
                            for kind in (Secret.LEASE_RENEW, Secret.LEASE_CANCEL, Secret.UPLOAD))


@functools.lru_cache(maxsize=16)
def _immutable_path(storage_index: bytes) -> bytes:
    """``/storage/v1/immutable/<SI in base32>``: made once for the ten servers of an upload."""
    return f"/storage/v1/immutable/{base32.b2a(storage_index)}".encode("ascii")


@functools.lru_cache(maxsize=256)
def _allocate_body(shnums: frozenset[int], allocated_size: int) -> bytes:
    """An allocation's CBOR body; uploads of files of one size ask each server for the
    same few share sets."""
    return messages.AllocateRequest(shnums, allocated_size).to_cbor()


def _decode_allocation(body: bytes) -> tuple[frozenset[int], frozenset[int]]:
    """``messages.decode_allocation``, remembered for the usual short answers (every new
    share granted, none held: the same few bodies over and over)."""
    if len(body) > 64:
        return messages.decode_allocation(body)
    return _decode_short_allocation(body)


@functools.lru_cache(maxsize=256)
def _decode_short_allocation(body: bytes) -> tuple[frozenset[int], frozenset[int]]:
    return messages.decode_allocation(body)


def _gone(failure: Failure) -> Failure:
    if failure.check(HTTPClientError):
        return Failure(ServerGone(failure.getErrorMessage()))
    return failure


def _refused(response: HTTPResponse, what: str) -> ServerRefused:
    return ServerRefused(f"{what}: HTTP {response.status}: {first_line(response.body)}",
                         str(response.status))


class HTTPSStorageClient:
    """A :class:`~tahoe.client.storage_api.StorageServerClient` over HTTPS.

    :param connection: the kept-open connection to the server.
    :param swissnum: the storage service's secret name (from the NURL).
    :param pipelining: whether the server takes pipelined requests: writes may follow an
        allocation before its answer, and any request may be written before the answers to
        those before it on the same connection (else each waits; Tahoe 1.20's server drops
        connections when pipelined answers fill its send buffer: ``httpwire.client``).
    :param bulk: makes a second connection, run by a thread of its own
        (``httpwire.threaded``), for share data of at least :data:`BULK_BYTES`:
        writes once their allocation has answered, and reads. None: everything
        goes on ``connection``.
    """

    transport = "https"

    def __init__(self, connection: PersistentConnection, swissnum: bytes,
                 pipelining: bool = True,
                 bulk: Callable[[], ThreadedConnection] | None = None) -> None:
        self.connection = connection
        self._make_bulk = bulk
        self._bulk: ThreadedConnection | None = None
        connection.pipelining = pipelining
        self._authorization = (b"authorization", messages.authorization(swissnum))
        #: Share numbers of mutable storage indexes seen lately (most recent last).
        self._known_slots: dict[str, frozenset[int]] = {}

    # -- plumbing

    @property
    def pipelining(self) -> bool:
        """Whether the server takes pipelined requests (see the class's docstring); kept by
        the connections."""
        return self.connection.pipelining

    @pipelining.setter
    def pipelining(self, value: bool) -> None:
        self.connection.pipelining = value
        if self._bulk is not None:
            self._bulk.pipelining = value

    def request(self, method: bytes, path: str, headers: list[tuple[bytes, bytes]] | None = None,
                body: bytes = b"", max_body: int = MAX_CBOR_ANSWER, *,
                bulk: bool = False) -> Deferred:
        """Send one request; fires with the :class:`HTTPResponse` (transport errors: ``ServerGone``).

        :param bulk: send it on the bulk connection, if there is one.
        """
        all_headers = [self._authorization, *(headers or [])]
        if bulk and self._make_bulk is not None:
            def send() -> Deferred:
                return self._bulk_request(method, path, all_headers, body, max_body)
            # as the kept-open connection does, on a new bulk connection (httpwire.client)
            d = resend_if_stale(send(), method, send)
        else:
            d = self.connection.request(method, path.encode("ascii"), all_headers, body,
                                        max_body)
        d.addErrback(_gone)
        return d

    def _bulk_request(self, method: bytes, path: str, headers: list[tuple[bytes, bytes]],
                      body: bytes, max_body: int) -> Deferred:
        if self._make_bulk is None:
            return fail(ServerGone("connection stopped"))
        if self._bulk is None or self._bulk.failed is not None:
            self._bulk = self._make_bulk()
            self._bulk.pipelining = self.pipelining
        return self._bulk.request(method, path.encode("ascii"), headers, body, max_body)

    def _cbor(self, method: bytes, path: str, secrets: list[tuple[Secret, bytes]],
              body: bytes | None = None) -> Deferred:
        headers = [(b"x-tahoe-authorization", messages.secret_header(kind, value))
                   for kind, value in secrets]
        headers.append((b"accept", _CBOR))
        if body is not None:
            headers.append((b"content-type", _CBOR))
        return self.request(method, path, headers, body or b"")

    @staticmethod
    def _decoded(response: HTTPResponse, decode: Any, what: str) -> Any:
        if response.status != 200:
            raise _refused(response, what)
        if messages.media_type(response.header(b"content-type")) != messages.CBOR:
            raise ServerRefused(f"{what}: the answer is not CBOR")
        try:
            return decode(response.body)
        except MessageError as error:
            raise ServerRefused(f"{what}: malformed answer: {error}") from None

    def stop(self) -> None:
        """Close both connections; later requests fail (no new bulk connection is made:
        one would reach a restarted server in the middle of an upload to the old one)."""
        self.connection.stop()
        self._make_bulk = None
        if self._bulk is not None:
            self._bulk.stop()
            self._bulk = None

    # -- general

    def get_version(self) -> Deferred:
        d = self._cbor(b"GET", "/storage/v1/version", [])
        d.addCallback(self._decoded, messages.decode_version, "version")
        return d

    def add_lease(self, storage_index: bytes, renew_secret: bytes,
                  cancel_secret: bytes) -> Deferred:
        d = self._cbor(b"PUT", f"/storage/v1/lease/{base32.b2a(storage_index)}",
                       [(Secret.LEASE_RENEW, renew_secret), (Secret.LEASE_CANCEL, cancel_secret)])

        def answered(response: HTTPResponse) -> None:
            if response.status not in (204, 404):  # 404: no shares, as Foolscap's silent no-op
                raise _refused(response, "add_lease")
        d.addCallback(answered)
        return d

    def advise_corrupt_share(self, share_type: bytes, storage_index: bytes, shnum: int,
                             reason: bytes) -> Deferred:
        kind = share_type.decode("ascii", "replace")
        if kind not in ("immutable", "mutable"):
            return succeed(None)
        report = messages.CorruptionReport(reason.decode("utf-8", "backslashreplace") or "?")
        d = self._cbor(b"POST", f"/storage/v1/{kind}/{base32.b2a(storage_index)}/{shnum}/corrupt",
                       [], report.to_cbor())

        def answered(response: HTTPResponse) -> None:
            if response.status not in (200, 404):
                raise _refused(response, "advise_corrupt_share")
        d.addCallback(answered)
        return d

    # -- immutable

    def allocate_buckets(self, storage_index: bytes, renew_secret: bytes, cancel_secret: bytes,
                         sharenums: set[int], allocated_size: int) -> Allocation:
        upload_secret = os.urandom(UPLOAD_SECRET_SIZE)
        si = base32.b2a(storage_index)
        request = messages.AllocateRequest(frozenset(sharenums), allocated_size)
        d = self._cbor(b"POST", f"/storage/v1/immutable/{si}",
                       [(Secret.LEASE_RENEW, renew_secret), (Secret.LEASE_CANCEL, cancel_secret),
                        (Secret.UPLOAD, upload_secret)], request.to_cbor())
        d.addCallback(self._decoded, messages.decode_allocation, "allocate_buckets")
        writers = {shnum: _Writer(self, si, shnum, upload_secret) for shnum in sorted(sharenums)}

        def answered(answer: tuple[frozenset[int], frozenset[int]]) -> tuple[frozenset[int],
                                                                            frozenset[int]]:
            for shnum, writer in writers.items():
                writer.answered(shnum in answer[1], None)
            return answer

        def failed(failure: Failure) -> Failure:
            for writer in writers.values():
                writer.answered(False, failure)
            return failure
        d.addCallbacks(answered, failed)
        return Allocation(d, dict(writers))

    def allocate_and_write(self, storage_index: bytes, renew_secret: bytes, cancel_secret: bytes,
                           shares: Mapping[int, bytes], allocated_size: int) -> Deferred:
        """The allocation and every share's one write, pipelined in one write to the
        connection; one Deferred for all their answers. To a server that does not take
        pipelined requests: :func:`~tahoe.client.storage_api.allocate_and_write`."""
        if not self.pipelining:
            return allocate_and_write(self, storage_index, renew_secret, cancel_secret, shares,
                                      allocated_size)
        upload = (b"x-tahoe-authorization",
                  _UPLOAD + b2a_base64(os.urandom(UPLOAD_SECRET_SIZE), newline=False))
        authorization = self._authorization
        path = _immutable_path(storage_index)
        shnums = sorted(shares)
        requests = [(b"POST", path, [
            authorization,
            (b"x-tahoe-authorization", _RENEW + b2a_base64(renew_secret, newline=False)),
            (b"x-tahoe-authorization", _CANCEL + b2a_base64(cancel_secret, newline=False)),
            upload, (b"accept", _CBOR), (b"content-type", _CBOR)],
            _allocate_body(frozenset(shnums), allocated_size))]
        for shnum in shnums:
            data = shares[shnum]
            requests.append((b"PATCH", b"%s/%d" % (path, shnum), [
                authorization, upload, (b"accept", _CBOR),
                (b"content-range", messages.format_content_range(0, len(data), None))], data))
        d = self.connection.request_many(requests, max_body=MAX_ANSWER_OF_WRITE)
        d.addCallbacks(self._whole_written, _gone, callbackArgs=(path, shnums, upload))
        return d

    def _whole_written(self, answers: list[HTTPResponse], path: bytes, shnums: list[int],
                       upload: tuple[bytes, bytes]) -> tuple[frozenset[int], frozenset[int]]:
        already, granted = self._decoded(answers[0], _decode_allocation, "allocate_buckets")
        written = set()
        failure: ServerRefused | None = None
        for shnum, answer in zip(shnums, answers[1:]):
            if shnum not in granted:
                continue  # refused (or held): its write was refused as well
            if answer.status == 201:
                written.add(shnum)
            elif failure is None:
                failure = (_refused(answer, f"write to {path.decode()}/{shnum}")
                           if answer.status != 200
                           else ServerRefused(f"{path.decode()}/{shnum}: the share is incomplete"))
        if failure is not None:
            for shnum in granted - written:
                quietly(self.request(b"PUT", f"{path.decode()}/{shnum}/abort", [upload]))
            raise failure
        return already, frozenset(written)

    def get_buckets(self, storage_index: bytes) -> Deferred:
        si = base32.b2a(storage_index)
        d = self._cbor(b"GET", f"/storage/v1/immutable/{si}/shares", [])
        d.addCallback(self._decoded, messages.decode_share_numbers, "get_buckets")
        d.addCallback(lambda shnums: {shnum: _Reader(self, "immutable", si, shnum)
                                      for shnum in sorted(shnums)})
        return d

    def read_share(self, kind: str, si: str, shnum: int, offset: int, length: int) -> Deferred:
        """Share data ``[offset, offset+length)`` of an immutable or mutable share, cut at its end."""
        if length <= 0:
            return succeed(b"")
        d = self.request(b"GET", f"/storage/v1/{kind}/{si}/{shnum}",
                         [(b"range", messages.format_range(offset, offset + length))],
                         max_body=max(length, 65536),  # room for an error's text too
                         bulk=length >= BULK_BYTES)

        def answered(response: HTTPResponse) -> bytes:
            if response.status == 204:
                return b""
            if response.status == 206:
                return response.body[:length]
            raise _refused(response, f"read of {kind} share {shnum}")
        d.addCallback(answered)
        return d

    # -- mutable

    def slot_readv(self, storage_index: bytes, shares: list[int], readv: ReadVector) -> Deferred:
        """Over HTTP, reading "every share" needs the list of shares first: two round trips.
        When this server's share numbers for the index are known from an earlier call, their
        reads are sent right behind the list, and only shares that appeared since cost a
        second round trip."""
        si = base32.b2a(storage_index)
        if shares:
            return self._read_slots(si, sorted(set(shares)), readv)
        guessed = self._known_slots.get(si)
        early = self._read_slots(si, sorted(guessed), readv) if guessed else None
        d = self._cbor(b"GET", f"/storage/v1/mutable/{si}/shares", [])
        d.addCallback(self._decoded, messages.decode_share_numbers, "slot_readv")

        def listed(shnums: frozenset[int]) -> Any:
            self._remember_slots(si, shnums)
            if early is None:
                return self._read_slots(si, sorted(shnums), readv)
            return early.addCallback(self._complete_reads, si, shnums, readv)

        def unlisted(failure: Failure) -> Failure:
            if early is not None:
                early.addErrback(lambda _: None)  # the list's failure is the one reported
            return failure
        d.addCallbacks(listed, unlisted)
        return d

    def _complete_reads(self, found: dict[int, list[bytes]], si: str, shnums: frozenset[int],
                        readv: ReadVector) -> Any:
        """The early reads, trimmed to the listed shares, plus reads of shares not guessed."""
        found = {shnum: pieces for shnum, pieces in found.items() if shnum in shnums}
        missing = sorted(shnums - set(found))
        if not missing:
            return found
        d = self._read_slots(si, missing, readv)
        d.addCallback(lambda more: {**found, **more})
        return d

    def _remember_slots(self, si: str, shnums: Iterable[int]) -> None:
        known = self._known_slots
        known.pop(si, None)
        if shnums:
            known[si] = frozenset(shnums)
            while len(known) > KNOWN_SLOTS:
                known.pop(next(iter(known)))

    def _read_slots(self, si: str, shnums: list[int], readv: ReadVector) -> Deferred:
        reads = [(shnum, self.read_share("mutable", si, shnum, offset, size))
                 for shnum in shnums for offset, size in readv]
        d = DeferredList([read for _, read in reads], consumeErrors=True)

        def gathered(results: list[tuple[bool, Any]]) -> dict[int, list[bytes]]:
            found: dict[int, list[bytes]] = {}
            missing: set[int] = set()
            for (shnum, _), (ok, value) in zip(reads, results):
                if not ok:
                    if value.check(ServerRefused) and value.value.kind == "404":
                        missing.add(shnum)  # gone since it was listed
                        continue
                    value.raiseException()
                found.setdefault(shnum, []).append(value)
            return {shnum: pieces for shnum, pieces in found.items() if shnum not in missing}
        d.addCallback(gathered)
        return d

    def slot_testv_and_readv_and_writev(self, storage_index: bytes,
                                        secrets: tuple[bytes, bytes, bytes],
                                        tw_vectors: TestWriteVectors,
                                        r_vector: ReadVector) -> Deferred:
        write_enabler, renew, cancel = secrets
        try:
            body = messages.ReadTestWrite.from_foolscap(tw_vectors, r_vector).to_cbor()
        except MessageError as error:
            return fail(ServerRefused(str(error)))
        si = base32.b2a(storage_index)
        d = self._cbor(b"POST", f"/storage/v1/mutable/{si}/read-test-write",
                       [(Secret.WRITE_ENABLER, write_enabler), (Secret.LEASE_RENEW, renew),
                        (Secret.LEASE_CANCEL, cancel)], body)

        def answered(response: HTTPResponse) -> tuple[bool, dict[int, list[bytes]]]:
            if response.status == 401:
                raise WriteEnablerRefused(
                    f"write enabler refused: {first_line(response.body)}", "401")
            result: tuple[bool, dict[int, list[bytes]]] = self._decoded(
                response, messages.decode_read_test_write_result, "read-test-write")
            # The answer's reads name every share held before; the writes may have added some.
            held = set(result[1])
            if result[0]:
                for shnum, (_, writes, new_length) in tw_vectors.items():
                    if new_length == 0:
                        held.discard(shnum)  # a length of 0 deletes the share
                    elif writes:
                        held.add(shnum)
            self._remember_slots(si, held)
            return result
        d.addCallback(answered)
        return d


class _Reader:
    """One immutable share over HTTPS."""

    def __init__(self, client: HTTPSStorageClient, kind: str, si: str, shnum: int) -> None:
        self._client = client
        self._kind = kind
        self._si = si
        self._shnum = shnum

    def read(self, offset: int, length: int) -> Deferred:
        return self._client.read_share(self._kind, self._si, self._shnum, offset, length)

    def advise_corrupt_share(self, reason: bytes) -> Deferred:
        return self._client.advise_corrupt_share(self._kind.encode("ascii"),
                                                 base32.a2b(self._si), self._shnum, reason)


class _Writer:
    """One immutable share being uploaded over HTTPS (see the module docstring)."""

    def __init__(self, client: HTTPSStorageClient, si: str, shnum: int, secret: bytes) -> None:
        self._client = client
        self._path = f"/storage/v1/immutable/{si}/{shnum}"
        self._secret_header = (b"x-tahoe-authorization",
                               messages.secret_header(Secret.UPLOAD, secret))
        self._allocated: bool | None = None
        self._refusal: Failure | None = None
        self._waiting: list[tuple[int, bytes, Deferred]] = []
        self._outstanding = 0
        self._complete = False
        self._close_waiters: list[Deferred] = []

    def answered(self, allocated: bool, failure: Failure | None) -> None:
        """The allocation's answer for this share."""
        self._allocated = allocated
        if not allocated:
            self._refusal = failure or Failure(ShareNotAllocated(
                f"share {self._path.rsplit('/', 1)[-1]} was not allocated"))
        waiting, self._waiting = self._waiting, []
        for offset, data, d in waiting:
            self._send(offset, data).chainDeferred(d)
        self._check_closed()

    def write(self, offset: int, data: bytes) -> Deferred:
        if self._allocated is None and not self._client.pipelining:
            d: Deferred = Deferred()
            self._waiting.append((offset, data, d))
            return d
        return self._send(offset, data)

    def _send(self, offset: int, data: bytes) -> Deferred:
        if self._refusal is not None:
            return fail(self._refusal)
        self._outstanding += 1
        # Bulk data goes on the thread's connection, but only once the allocation answered:
        # before that it must follow the allocation on the same connection.
        d = self._client.request(b"PATCH", self._path, [
            self._secret_header, (b"accept", _CBOR),
            (b"content-range", messages.format_content_range(offset, offset + len(data), None))],
            data, max_body=MAX_ANSWER_OF_WRITE,
            bulk=len(data) >= BULK_BYTES and self._allocated is True)

        def answered(response: HTTPResponse) -> None:
            if response.status == 201:
                self._complete = True
            elif response.status != 200:
                if self._allocated is False:
                    raise ShareNotAllocated(f"{self._path}: not allocated")
                raise _refused(response, f"write to {self._path}")

        def done(result: Any) -> Any:
            self._outstanding -= 1
            self._check_closed()
            return result
        d.addCallback(answered)
        d.addBoth(done)
        return d

    def _check_closed(self) -> None:
        if not self._close_waiters or self._outstanding or self._waiting \
                or self._allocated is None:
            return
        waiters, self._close_waiters = self._close_waiters, []
        for d in waiters:
            if self._complete:
                d.callback(None)
            elif self._refusal is not None:
                d.errback(self._refusal)
            else:
                d.errback(ServerRefused(f"{self._path}: the share is incomplete"))

    def close(self) -> Deferred:
        d: Deferred = Deferred()
        self._close_waiters.append(d)
        self._check_closed()
        return d

    def abort(self) -> Deferred:
        if self._allocated is False or self._complete:
            return succeed(None)
        d = self._client.request(b"PUT", self._path + "/abort", [self._secret_header])
        d.addCallback(lambda response: None)
        return d

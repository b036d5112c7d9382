"""The HTTPS storage protocol over the domain :class:`~tahoe.storage.server.StorageServer`.

Follows ``docs/formats/http-storage.md``. Each request is checked in
Tahoe 1.20's order: the route (404, or 405 for a known path with another
method), ``Authorization`` (401), the ``X-Tahoe-Authorization`` secrets
(400), then the endpoint's own checks: media types (415, 406), body size
(413), body shape (400), ranges (416). The domain object then does the
work; its errors become statuses through one table (:data:`ERROR_STATUS`).

Pipelined requests are answered in order (``httpwire.server``), so a client
may send an allocation and the share's writes without waiting. A write's
body goes to the share file as it arrives; the write that completes a
share closes it (201), and only then can it be listed or read.

An upload is tied to the connections its requests came over, as Foolscap
ties it to the uploader's canary: once every one of them has closed before
the share is complete, the share is aborted. (A client may use several
connections, ours one for requests and one for bulk data, Tahoe's a pool.)
Tahoe 1.20 leaves such shares until the 30-minute inactivity timeout.
"""
from __future__ import annotations

import functools
import hmac
import re
from collections.abc import Callable
from typing import Any, TypeVar

from attrs import define
from twisted.logger import Logger
from twisted.python.failure import Failure

from ..httpwire.server import ConnectionScope, HTTPError, Request, Response
from ..stats.registry import TIMED_STORAGE_OPERATIONS, Statistics
from ..util import base32
from . import disk
from . import http_messages as messages
from .bucket import BucketWriter
from .errors import (BadRequest, BadWriteEnablerError, BucketWriterClosed, ConflictingWriteError,
                     ContainerError, DataTooLargeError, NoSpace, ShareGone, StorageError,
                     WrongShareKind)
from .http_messages import MessageError, Secret
from .immutable_container import HEADER_SIZE
from .leases import IMMUTABLE_LEASE_SIZE
from .server import StorageServer

T = TypeVar("T")

#: Body limits, bytes (as Tahoe 1.20 for the first two).
ALLOCATE_BODY = 8192
ADVICE_BODY = 32768
#: A read-test-write carries whole mutable shares; this bounds one request's memory.
READ_TEST_WRITE_BODY = 256 * 1024 * 1024
#: Immutable write data is written to disk in pieces of at least this size.
WRITE_PIECE = 256 * 1024
#: A read answer up to this size is sent in one piece; larger ones are streamed.
INLINE_READ = 1024 * 1024

#: Domain errors -> HTTP status (the most specific class listed first wins).
ERROR_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (MessageError, 400),
    (BadWriteEnablerError, 401),
    (BucketWriterClosed, 404),
    (ShareGone, 404),
    (ConflictingWriteError, 409),
    (WrongShareKind, 409),
    (DataTooLargeError, 413),
    (BadRequest, 400),
    (NoSpace, 507),
    (ContainerError, 500),
)

#: The statistics operation each endpoint counts as.
_OPERATIONS = {
    "_allocate": "allocate", "_write": "write", "_abort": "abort", "_list_immutable": "get",
    "_read_immutable": "read", "_add_lease": "add-lease", "_read_test_write": "writev",
    "_list_mutable": "readv", "_read_mutable": "readv",
}
#: Where a route has a storage index (base32 text) or a share number (decimal digits).
_SI, _SHNUM = b"<si>", b"<shnum>"
_SI_TEXT = re.compile(rb"[a-z2-7]{26}")
_ROUTE_PREFIX = [b"", b"storage", b"v1"]
CBOR_HEADERS = [(b"content-type", messages.CBOR.encode("ascii"))]
OCTET_HEADERS = [(b"content-type", messages.OCTET_STREAM.encode("ascii"))]


def error_status(error: Exception) -> int:
    """The status a domain error is answered with (500 for anything unexpected)."""
    if disk.no_room(error):
        return 507
    for kind, status in ERROR_STATUS:
        if isinstance(error, kind):
            return status
    return 500


def http_error(error: Exception) -> HTTPError:
    """The answer to a domain error: its status and message (a generic one for a 500, logged)."""
    status = error_status(error)
    if status == 500:
        Logger().failure("storage request failed", Failure(error))
        return HTTPError(500, "internal error")
    if isinstance(error, OSError):
        return HTTPError(status, "no space left on the storage server")
    return HTTPError(status, str(error) or type(error).__name__)


#: Tahoe's base32 digits as the digits of ``int(text, 32)``.
_BASE32_AS_DIGITS = bytes.maketrans(base32.ALPHABET.encode("ascii"),
                                    b"0123456789abcdefghijklmnopqrstuv")


@functools.lru_cache(maxsize=1024)
def _decode_si(text: bytes) -> bytes | None:
    """The storage index a path names: 26 base32 characters (``[a-z2-7]``, checked by the
    route), 130 bits whose last two must be zero (canonical), else None. One ``int``
    conversion, where ``base64.b32decode`` loops in Python; an upload names it twice."""
    value = int(text.translate(_BASE32_AS_DIGITS), 32)
    if value & 3:
        return None
    return (value >> 2).to_bytes(16, "big")


class _Buffered:
    """Collects a body of at most ``limit`` bytes, then calls ``answer(body)``."""

    def __init__(self, limit: int, answer: Callable[[bytes], Response]) -> None:
        self._limit = limit
        self._answer = answer
        self._pieces: list[bytes] = []
        self._size = 0

    def body_received(self, data: bytes) -> None:
        self._size += len(data)
        if self._size > self._limit:
            raise HTTPError(413, f"request body larger than {self._limit} bytes")
        self._pieces.append(data)

    def body_complete(self) -> Response:
        try:
            return self._answer(b"".join(self._pieces))
        except (StorageError, MessageError, OSError) as error:
            raise http_error(error) from None


#: Each operation's counter and latency window (None: not timed), as ``storage_operation``
#: names them.
_STATISTICS = {operation: (f"storage_server.{operation}",
                           f"storage_server.latencies.{operation}"
                           if operation in TIMED_STORAGE_OPERATIONS else None)
               for operation in [*_OPERATIONS.values(), "close"]}


def _counted(stats: Statistics | None, operation: str, answer: Callable[[], T]) -> T:
    """``answer()``, counted and, if it ends without raising and the operation is a timed
    one, timed (as ``storage_operation`` does, without a context manager)."""
    if stats is None:
        return answer()
    counter, latency = _STATISTICS[operation]
    stats.count(counter)
    started = stats.now()
    response = answer()
    if latency is not None:
        stats.add_sample(latency, max(0.0, stats.now() - started))
    return response


#: A write's answer when the share is complete (written, closed).
_COMPLETE = messages.encode_required([])


@functools.lru_cache(maxsize=256)
def _allocation_answer(already: frozenset[int], allocated: frozenset[int]) -> bytes:
    """The allocate answer's body (the same few, share number sets, again and again)."""
    return messages.encode_allocation(already, allocated)


class _Counted:
    """A handler whose answer is counted and timed as a storage operation."""

    def __init__(self, handler: Any, stats: Statistics, operation: str) -> None:
        self._handler = handler
        self._stats = stats
        self._operation = operation

    def body_received(self, data: bytes) -> None:
        self._handler.body_received(data)

    def body_complete(self) -> Response:
        return _counted(self._stats, self._operation, self._handler.body_complete)


def _bodyless(answer: Callable[[], Response]) -> _Buffered:
    """A handler for requests whose body (if any) is ignored (read, list, lease, abort)."""
    return _Buffered(64 * 1024, lambda body: answer())


class _ShareWrite:
    """Streams one ``PATCH`` body into a bucket writer, in pieces of :data:`WRITE_PIECE`.

    A body that does not match its ``Content-Range`` is answered 400, after
    the bytes that fit the range were written (as Tahoe 1.20 keeps them).
    """

    def __init__(self, writer: BucketWriter, start: int, stop: int,
                 finished: Callable[[BucketWriter], Response]) -> None:
        self._writer = writer
        self._offset = start
        self._stop = stop
        self._finished = finished
        self._pieces: list[bytes] = []
        self._buffered = 0

    def body_received(self, data: bytes) -> None:
        room = self._stop - self._offset - self._buffered
        if len(data) > room:
            self._pieces.append(data[:room])
            self._buffered += room
            self._flush()
            raise HTTPError(400, "the body is longer than its Content-Range")
        self._pieces.append(data)
        self._buffered += len(data)
        if self._buffered >= WRITE_PIECE:
            self._flush()

    def _flush(self) -> None:
        if not self._pieces:
            return
        data = self._pieces[0] if len(self._pieces) == 1 else b"".join(self._pieces)
        self._pieces, self._buffered = [], 0
        try:
            self._writer.write(self._offset, data)
        except (StorageError, OSError) as error:
            raise http_error(error) from None
        self._offset += len(data)

    def body_complete(self) -> Response:
        self._flush()
        if self._offset != self._stop:
            raise HTTPError(400, "the body is shorter than its Content-Range")
        return self._finished(self._writer)


@define
class _Upload:
    """A share being uploaded, its upload secret, and the connections that carried its
    requests (while one of them is open, the client is taken to be there)."""

    writer: BucketWriter
    secret: bytes
    connections: set[ConnectionScope]

    def uses(self, connection: ConnectionScope) -> None:
        """A request for this upload came over ``connection``."""
        if connection not in self.connections:
            self.connections.add(connection)
            connection.on_close(self.writer, lambda: self.closed(connection))

    def closed(self, connection: ConnectionScope) -> None:
        """One of its connections closed: once none is left, abort (as Foolscap's canary)."""
        self.connections.discard(connection)
        if not self.connections:
            self.writer.abort()

    def forget(self) -> None:
        """The upload ended: its connections need not tell."""
        for connection in self.connections:
            connection.forget(self.writer)
        self.connections.clear()


class StorageHTTPApplication:
    """Routes HTTP storage requests to a :class:`StorageServer` (an ``httpwire`` application).

    :param server: the domain object.
    :param swissnum: the storage service's secret name (from its FURL).
    :param stats: where operations are counted and timed (``storage_server.*``),
        as the Foolscap adapters count them.
    """

    _log = Logger()

    def __init__(self, server: StorageServer, swissnum: bytes,
                 stats: Statistics | None = None) -> None:
        self._server = server
        self._stats = stats
        self._authorization = messages.authorization(swissnum)
        self._uploads: dict[tuple[bytes, int], _Upload] = {}
        server.add_writer_listener(self._writer_finished)
        none: frozenset[Secret] = frozenset()
        lease = frozenset({Secret.LEASE_RENEW, Secret.LEASE_CANCEL})
        upload = frozenset({Secret.UPLOAD})
        table: list[tuple[tuple[bytes, ...],
                          dict[bytes, tuple[frozenset[Secret], Callable[..., Any]]]]] = [
            ((b"version",), {b"GET": (none, self._version)}),
            ((b"immutable", _SI), {b"POST": (lease | upload, self._allocate)}),
            ((b"immutable", _SI, b"shares"), {b"GET": (none, self._list_immutable)}),
            ((b"immutable", _SI, _SHNUM), {
                b"PATCH": (upload, self._write), b"GET": (none, self._read_immutable)}),
            ((b"immutable", _SI, _SHNUM, b"abort"), {b"PUT": (upload, self._abort)}),
            ((b"immutable", _SI, _SHNUM, b"corrupt"), {b"POST": (none, self._advise_immutable)}),
            ((b"lease", _SI), {b"PUT": (lease, self._add_lease)}),
            ((b"mutable", _SI, b"read-test-write"), {
                b"POST": (lease | frozenset({Secret.WRITE_ENABLER}), self._read_test_write)}),
            ((b"mutable", _SI, b"shares"), {b"GET": (none, self._list_mutable)}),
            ((b"mutable", _SI, _SHNUM), {b"GET": (none, self._read_mutable)}),
            ((b"mutable", _SI, _SHNUM, b"corrupt"), {b"POST": (none, self._advise_mutable)}),
        ]
        #: ``/storage/v1/<segments>``: segments (``_SI``, ``_SHNUM`` where those go) ->
        #: method -> (secrets required, endpoint, statistics operation or None).
        self._routes = {shape: {method: (required, endpoint, _OPERATIONS.get(endpoint.__name__))
                                for method, (required, endpoint) in methods.items()}
                        for shape, methods in table}

    # -- dispatch

    def __call__(self, request: Request) -> Any:
        """The handler for one request (called once its headers are in).

        :raises HTTPError: for an unknown route, a bad authorization or bad secrets.
        """
        route = self._route(request.path)
        if route is None:
            raise HTTPError(404, "not found")
        methods, arguments = route
        method = b"GET" if request.method == b"HEAD" else request.method
        if method not in methods:
            raise HTTPError(405, "method not allowed")
        required, endpoint, operation = methods[method]
        self._check_authorization(request)
        try:
            secrets = messages.parse_secrets(request.header_values(b"x-tahoe-authorization"),
                                             required)
        except MessageError as error:
            raise HTTPError(400, str(error)) from None
        handler = endpoint(request, secrets, *arguments)
        if self._stats is None or operation is None:
            return handler
        return _Counted(handler, self._stats, operation)

    def _route(self, path: bytes) -> tuple[dict[bytes, Any], list[Any]] | None:
        """The methods of the route ``path`` names and its arguments (storage index, share
        number), or None: the path's segments looked up at once, with the storage index
        and share number put in their places (no pattern tried after another)."""
        segments = path.split(b"/")
        if segments[:3] != _ROUTE_PREFIX:
            return None
        shape = segments[3:]
        arguments: list[Any] = []
        if len(shape) > 1:
            storage_index = _decode_si(shape[1]) if _SI_TEXT.fullmatch(shape[1]) else None
            if storage_index is None:
                return None
            arguments.append(storage_index)
            shape[1] = _SI
        if len(shape) > 2 and shape[2].isdigit():
            arguments.append(int(shape[2]))
            shape[2] = _SHNUM
        methods = self._routes.get(tuple(shape))
        return None if methods is None else (methods, arguments)

    def _check_authorization(self, request: Request) -> None:
        value = request.header(b"authorization") or b""
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            raise HTTPError(400, "bad Authorization header") from None
        if not hmac.compare_digest(value, self._authorization):
            raise HTTPError(401, "wrong Authorization header")

    @staticmethod
    def _check_accept(request: Request) -> None:
        if not messages.accepts_cbor(request.header_values(b"accept")):
            raise HTTPError(406, "answers are only sent as application/cbor")

    @staticmethod
    def _check_content_type(request: Request) -> None:
        kind = messages.media_type(request.header(b"content-type"))
        if kind is not None and kind != messages.CBOR:
            raise HTTPError(415, "request bodies must be application/cbor")

    def _cbor_body(self, request: Request, limit: int,
                   answer: Callable[[bytes], Response]) -> _Buffered:
        """A CBOR request body: checked for media types and size, then ``answer(body)``."""
        self._check_content_type(request)
        self._check_accept(request)
        if request.content_length is not None and request.content_length > limit:
            raise HTTPError(413, f"request body larger than {limit} bytes")
        return _Buffered(limit, answer)

    # -- general

    def _version(self, request: Request, secrets: dict) -> _Buffered:
        self._check_accept(request)
        return _bodyless(lambda: Response(200, CBOR_HEADERS,
                                          messages.encode_version(self._server.get_version())))

    def _add_lease(self, request: Request, secrets: dict, storage_index: bytes) -> _Buffered:
        def answer() -> Response:
            if not self._server.share_numbers(storage_index):
                raise HTTPError(404, "no shares of this storage index")
            self._server.add_lease(storage_index, secrets[Secret.LEASE_RENEW],
                                   secrets[Secret.LEASE_CANCEL])
            return Response(204)
        return _bodyless(answer)

    # -- immutable

    def _allocate(self, request: Request, secrets: dict, storage_index: bytes) -> _Buffered:
        def answer(body: bytes) -> Response:
            wanted = messages.AllocateRequest.from_cbor(body)
            already, writers = self._server.allocate_buckets(
                storage_index, secrets[Secret.LEASE_RENEW], secrets[Secret.LEASE_CANCEL],
                set(wanted.share_numbers), wanted.allocated_size)
            for shnum, writer in writers.items():
                upload = _Upload(writer, secrets[Secret.UPLOAD], set())
                upload.uses(request.connection)
                self._uploads[(storage_index, shnum)] = upload
            return Response(200, CBOR_HEADERS,
                            _allocation_answer(frozenset(already), frozenset(writers)))
        return self._cbor_body(request, ALLOCATE_BODY, answer)

    def _upload(self, storage_index: bytes, shnum: int, secret: bytes) -> _Upload | None:
        """The open upload of a share; 401 if it was opened with another upload secret."""
        upload = self._uploads.get((storage_index, shnum))
        if upload is None:
            return None
        if not hmac.compare_digest(upload.secret, secret):
            raise HTTPError(401, "wrong upload secret")
        return upload

    def _write(self, request: Request, secrets: dict, storage_index: bytes,
               shnum: int) -> _ShareWrite:
        try:
            start, stop, _ = messages.parse_content_range(request.header(b"content-range") or b"")
        except MessageError as error:
            raise HTTPError(416, str(error)) from None
        upload = self._upload(storage_index, shnum, secrets[Secret.UPLOAD])
        if upload is None:
            raise HTTPError(404, "no upload in progress for this share")
        upload.uses(request.connection)
        if stop > upload.writer.allocated_size:
            raise HTTPError(413, f"the write ends past the allocated size "
                                 f"({upload.writer.allocated_size})")
        self._check_accept(request)
        return _ShareWrite(upload.writer, start, stop, self._written)

    def _written(self, writer: BucketWriter) -> Response:
        missing = writer.missing()
        if missing:
            return Response(200, CBOR_HEADERS, messages.encode_required(missing))
        try:
            _counted(self._stats, "close", writer.close)
        except (StorageError, OSError) as error:
            raise http_error(error) from None
        if self._stats is not None:
            # The share file's size: header, data, and the lease made at allocation.
            self._stats.count("storage_server.bytes_added",
                              HEADER_SIZE + writer.allocated_size + IMMUTABLE_LEASE_SIZE)
        return Response(201, CBOR_HEADERS, _COMPLETE)

    def _abort(self, request: Request, secrets: dict, storage_index: bytes,
               shnum: int) -> _Buffered:
        def answer() -> Response:
            upload = self._upload(storage_index, shnum, secrets[Secret.UPLOAD])
            if upload is None:
                if shnum in self._server.get_buckets(storage_index):
                    raise HTTPError(405, "the share is complete; it cannot be aborted")
                raise HTTPError(404, "no upload in progress for this share")
            upload.writer.abort()
            return Response(200)
        return _bodyless(answer)

    def _writer_finished(self, writer: BucketWriter) -> None:
        key = (writer.storage_index, writer.shnum)
        upload = self._uploads.get(key)
        if upload is not None and upload.writer is writer:
            del self._uploads[key]
            upload.forget()

    def _list_immutable(self, request: Request, secrets: dict, storage_index: bytes) -> _Buffered:
        self._check_accept(request)
        return _bodyless(lambda: Response(200, CBOR_HEADERS, messages.encode_share_numbers(
            self._server.get_buckets(storage_index))))

    def _read_immutable(self, request: Request, secrets: dict, storage_index: bytes,
                        shnum: int) -> _Buffered:
        def answer() -> Response:
            reader = self._server.get_buckets(storage_index).get(shnum)
            if reader is None:
                raise HTTPError(404, "no such share")
            return _read_answer(request, reader.data_length, reader.read)
        return _bodyless(answer)

    def _advise_immutable(self, request: Request, secrets: dict, storage_index: bytes,
                          shnum: int) -> _Buffered:
        reader = self._server.get_buckets(storage_index).get(shnum)
        if reader is None:
            raise HTTPError(404, "no such share")
        return self._cbor_body(request, ADVICE_BODY, lambda body: self._advised(
            body, lambda reason: reader.advise_corrupt_share(reason)))

    # -- mutable

    def _read_test_write(self, request: Request, secrets: dict, storage_index: bytes) -> _Buffered:
        def answer(body: bytes) -> Response:
            wanted = messages.ReadTestWrite.from_cbor(body)
            success, reads = self._server.slot_testv_and_readv_and_writev(
                storage_index,
                (secrets[Secret.WRITE_ENABLER], secrets[Secret.LEASE_RENEW],
                 secrets[Secret.LEASE_CANCEL]),
                {shnum: vectors.to_foolscap() for shnum, vectors in wanted.vectors.items()},
                [(r.offset, r.size) for r in wanted.reads])
            return Response(200, CBOR_HEADERS,
                            messages.encode_read_test_write_result(success, reads))
        return self._cbor_body(request, READ_TEST_WRITE_BODY, answer)

    def _list_mutable(self, request: Request, secrets: dict, storage_index: bytes) -> _Buffered:
        self._check_accept(request)
        return _bodyless(lambda: Response(200, CBOR_HEADERS, messages.encode_share_numbers(
            self._server.mutable_share_lengths(storage_index))))

    def _read_mutable(self, request: Request, secrets: dict, storage_index: bytes,
                      shnum: int) -> _Buffered:
        def answer() -> Response:
            length = self._server.mutable_share_lengths(storage_index).get(shnum)
            if length is None:
                raise HTTPError(404, "no such share")

            def read(offset: int, size: int) -> bytes:
                found = self._server.slot_readv(storage_index, [shnum], [(offset, size)])
                return found[shnum][0] if shnum in found else b""
            return _read_answer(request, length, read)
        return _bodyless(answer)

    def _advise_mutable(self, request: Request, secrets: dict, storage_index: bytes,
                        shnum: int) -> _Buffered:
        if shnum not in self._server.share_numbers(storage_index):
            raise HTTPError(404, "no such share")
        return self._cbor_body(request, ADVICE_BODY, lambda body: self._advised(
            body, lambda reason: self._server.advise_corrupt_share(
                b"mutable", storage_index, shnum, reason)))

    @staticmethod
    def _advised(body: bytes, advise: Callable[[bytes], None]) -> Response:
        report = messages.CorruptionReport.from_cbor(body)
        advise(report.reason.encode("utf-8", "backslashreplace"))
        return Response(200)


@define
class _ShareRange:
    """A :class:`~tahoe.httpwire.server.StreamBody` over part of a share."""

    start: int
    length: int
    read_share: Callable[[int, int], bytes]

    def read(self, offset: int, length: int) -> bytes:
        return self.read_share(self.start + offset, length)


def _read_answer(request: Request, share_length: int,
                 read: Callable[[int, int], bytes]) -> Response:
    """A share read: the whole share (200), or one closed range (206, cut at the end; 204 if empty).

    :raises HTTPError: 416 for a range the protocol does not allow.
    """
    header = request.header(b"range")
    if header is None:
        start, stop, status, headers = 0, share_length, 200, list(OCTET_HEADERS)
    else:
        try:
            start, stop = messages.parse_range(header)
        except MessageError as error:
            raise HTTPError(416, str(error)) from None
        stop = min(stop, share_length)
        if start >= stop:
            return Response(204, list(OCTET_HEADERS))
        status = 206
        headers = OCTET_HEADERS + [(b"content-range",
                                    messages.format_content_range(start, stop, None))]
    if stop - start <= INLINE_READ:
        return Response(status, headers, read(start, stop - start))
    return Response(status, headers, stream=_ShareRange(start, stop - start, read))


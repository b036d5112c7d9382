"""An HTTPS client connection run by a thread of its own: for bulk transfers.

Measured here (``docs/performance.md``, "TLS off the reactor"), sending share
data through Twisted's TLS (pyOpenSSL over a memory BIO, on the reactor
thread) costs about three times the CPU per byte of the standard library's
``ssl`` writing straight to a socket, and all of it on the reactor thread.
:class:`ThreadedConnection` runs one TLS connection in a thread: the
standard library releases the GIL while it encrypts, decrypts and moves the
bytes, so the reactor thread is free meanwhile and a second core can do the
work.

It has the interface of :class:`~tahoe.httpwire.client.PersistentConnection`
(``request`` returns a Deferred fired on the reactor thread), writes
requests in the order they were made, and matches answers in order, so it
pipelines like the reactor's connections (unless ``pipelining`` is off, for a
server that cannot take it). When the server ends the connection,
requests with no answer begun fail with
``StaleConnection`` (the caller may send a GET again on a new connection, as
``storage_https`` does) and the next request makes a new connection. The
thread owns the socket (one
``select`` loop, non-blocking, reading and writing): no SSL object is used
from two threads. The server's key is pinned: after the handshake the
certificate's SPKI hash must be the NURL's, and its self-signature must hold.
"""
from __future__ import annotations

import hmac
import selectors
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import httptools
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from ..util.nurl import spki_hash_of
from .client import (MAX_BODY, RESPONSE_TIMEOUT, ConnectionGone, HTTPResponse, ProtocolViolation,
                     ResponseTimeout, StaleConnection)
from .tls import client_context

#: Bytes handed to one ``send``, and asked of one ``recv``.
SEND_PIECE = 1024 * 1024
RECV_SIZE = 256 * 1024
CONNECT_TIMEOUT = 30.0


class PinMismatch(ConnectionGone):
    """The server's certificate is not the one its NURL names."""


def check_pinned(der: bytes | None, spki_hash: str) -> None:
    """Accept a server certificate only if its key is the pinned one and it signs itself.

    :raises PinMismatch: otherwise.
    """
    if not der:
        raise PinMismatch("the server sent no certificate")
    certificate = x509.load_der_x509_certificate(der)
    if not hmac.compare_digest(spki_hash_of(certificate).encode(), spki_hash.encode()):
        raise PinMismatch("the server's key is not the one its NURL names")
    key = certificate.public_key()
    hash_algorithm = certificate.signature_hash_algorithm
    try:
        if isinstance(key, rsa.RSAPublicKey) and hash_algorithm is not None:
            key.verify(certificate.signature, certificate.tbs_certificate_bytes,
                       padding.PKCS1v15(), hash_algorithm)
        elif isinstance(key, ec.EllipticCurvePublicKey) and hash_algorithm is not None:
            key.verify(certificate.signature, certificate.tbs_certificate_bytes,
                       ec.ECDSA(hash_algorithm))
        else:
            certificate.verify_directly_issued_by(certificate)
    except (InvalidSignature, ValueError, TypeError) as error:
        raise PinMismatch(f"the server's certificate does not sign itself: {error}") from None


class _ServerClosed(ConnectionGone):
    """The server closed the connection (end of stream)."""


class _Request:
    """One request on its way: its bytes, and what to do with its answer."""

    __slots__ = ("data", "deferred", "max_body", "headers", "body", "size", "begun")

    def __init__(self, data: list[bytes | memoryview], deferred: Deferred, max_body: int) -> None:
        self.data = data
        self.deferred = deferred
        self.max_body = max_body
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.size = 0
        self.begun = False


class ThreadedConnection:
    """One kept-open TLS connection to ``host:port``, driven by a thread of its own.

    :param host: where to connect.
    :param port: the TCP port.
    :param spki_hash: the pinned key (a NURL's user part).
    :param reactor: fires the Deferreds (``callFromThread``).
    :param on_lost: called (on the reactor) with this object when the open connection is lost.
    """

    def __init__(self, host: str, port: int, spki_hash: str, reactor: Any,
                 on_lost: Callable[["ThreadedConnection"], None] | None = None,
                 response_timeout: float = RESPONSE_TIMEOUT) -> None:
        self._address = (host, port)
        self._host_header = f"{host}:{port}".encode("ascii")
        self._spki_hash = spki_hash
        self._reactor = reactor
        self._on_lost = on_lost
        self._response_timeout = response_timeout
        self._lock = threading.Lock()
        self._queue: deque[_Request] = deque()
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._stopped = False
        self._inflight: deque[_Request] = deque()
        self.failed: str | None = None
        #: Whether a request is written before the answers to those before it (see
        #: ``httpwire.client``); when not, the next request is written once the thread has
        #: read the answer before it.
        self.pipelining = True

    @property
    def is_open(self) -> bool:
        """Whether the connection's thread runs and takes requests."""
        return self._thread is not None and self._thread.is_alive() and self.failed is None \
            and not self._stopped

    def request(self, method: bytes, target: bytes, headers: Sequence[tuple[bytes, bytes]] = (),
                body: bytes = b"", max_body: int = MAX_BODY) -> Deferred:
        """Queue a request (connecting first if needed); a Deferred of its :class:`HTTPResponse`."""
        d: Deferred = Deferred()
        lines = [b"%s %s HTTP/1.1\r\nhost: %s\r\n" % (method, target, self._host_header)]
        lines += [b"%s: %s\r\n" % header for header in headers]
        if body or method in (b"POST", b"PUT", b"PATCH"):
            lines.append(b"content-length: %d\r\n" % len(body))
        lines.append(b"\r\n")
        data: list[bytes | memoryview] = [b"".join(lines)]
        if body:
            data.append(memoryview(body))
        with self._lock:  # the thread's end drains the queue under the same lock
            gone = self._stopped or self.failed is not None
            if not gone:
                self._queue.append(_Request(data, d, max_body))
        if gone:
            d.errback(ConnectionGone(self.failed or "connection stopped"))
            return d
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="https-bulk", daemon=True)
            self._thread.start()
        else:
            self._wake()
        return d

    def stop(self) -> None:
        """Close the connection; requests not answered fail with ConnectionGone."""
        with self._lock:
            self._stopped = True
        if self._thread is None or not self._thread.is_alive():
            self._fail_queued(ConnectionGone("connection stopped"))
        else:
            self._wake()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except (BlockingIOError, OSError):
            pass  # already woken, or closing

    # -- the thread

    def _run(self) -> None:
        try:
            sock = self._connect()
        except PinMismatch as error:
            self._finish(error, None)
            return
        except Exception as error:  # noqa: BLE001 - reported to every waiting request
            self._finish(ConnectionGone(f"cannot connect: {error}"), None)
            return
        try:
            self._loop(sock)
        except Exception as error:  # noqa: BLE001
            self._finish(error if isinstance(error, ConnectionGone)
                         else ConnectionGone(f"connection lost: {error}"), sock)

    def _connect(self) -> ssl.SSLSocket:
        raw = socket.create_connection(self._address, timeout=CONNECT_TIMEOUT)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock = client_context().wrap_socket(raw)
        try:
            check_pinned(sock.getpeercert(binary_form=True), self._spki_hash)
        except BaseException:
            sock.close()
            raise
        sock.setblocking(False)
        return sock

    def _loop(self, sock: ssl.SSLSocket) -> None:
        selector = selectors.DefaultSelector()
        selector.register(sock, selectors.EVENT_READ)
        selector.register(self._wake_r, selectors.EVENT_READ)
        inflight = self._inflight
        handler = _Parsed(inflight)
        parser = httptools.HttpResponseParser(handler)
        handler.parser = parser
        output: deque[bytes | memoryview] = deque()
        last_activity = time.monotonic()
        interest = selectors.EVENT_READ
        while True:
            if self._stopped:
                raise ConnectionGone("connection stopped")
            with self._lock:
                while self._queue and (self.pipelining or not inflight):
                    request = self._queue.popleft()
                    inflight.append(request)
                    output.extend(request.data)
                    request.data = []
            while output:
                piece = output[0]
                try:
                    sent = sock.send(piece[:SEND_PIECE])
                except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
                    break
                last_activity = time.monotonic()
                if sent >= len(piece):
                    output.popleft()
                else:
                    output[0] = memoryview(piece)[sent:]
            wanted = selectors.EVENT_READ | (selectors.EVENT_WRITE if output else 0)
            if wanted != interest:
                selector.modify(sock, wanted)
                interest = wanted
            events = selector.select(timeout=1.0)
            for key, _ in events:
                if key.fileobj is self._wake_r:
                    try:
                        while self._wake_r.recv(4096):
                            pass
                    except (BlockingIOError, InterruptedError):
                        pass
            if any(key.fileobj is sock for key, mask in events if mask & selectors.EVENT_READ) \
                    or sock.pending():
                answers: list[tuple[Deferred, Any]] = []
                handler.answers = answers
                while True:
                    try:
                        data = sock.recv(RECV_SIZE)
                    except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                        break
                    if not data:
                        raise _ServerClosed("the server closed the connection")
                    last_activity = time.monotonic()
                    try:
                        parser.feed_data(data)
                    except httptools.HttpParserError as error:
                        cause = error.__context__ if isinstance(
                            error, httptools.HttpParserCallbackError) else error
                        if answers:
                            self._reactor.callFromThread(_deliver, answers)
                        raise ProtocolViolation(f"malformed HTTP answer: {cause}") from None
                if answers:
                    self._reactor.callFromThread(_deliver, answers)
            if inflight and time.monotonic() - last_activity > self._response_timeout:
                raise ResponseTimeout(f"no answer for {self._response_timeout:g} s")

    def _finish(self, reason: Exception, sock: ssl.SSLSocket | None) -> None:
        for closing in (sock, self._wake_r, self._wake_w):
            if closing is not None:
                try:
                    closing.close()
                except OSError:
                    pass
        failed = list(self._inflight)
        with self._lock:  # no request can join the queue once it is drained
            self.failed = str(reason)
            failed += list(self._queue)
            self._queue.clear()
        # A kept-alive connection the server ended: requests with no answer begun may be sent
        # again on a new connection (see httpwire.client.StaleConnection).
        stale = isinstance(reason, _ServerClosed)
        self._reactor.callFromThread(_deliver, [
            (r.deferred, Failure(StaleConnection(str(reason)) if stale and not r.begun
                                 else reason)) for r in failed])
        if self._on_lost is not None and not self._stopped:
            self._reactor.callFromThread(self._on_lost, self)

    def _fail_queued(self, reason: Exception) -> None:
        with self._lock:
            queued = list(self._queue)
            self._queue.clear()
        for request in queued:
            request.deferred.errback(reason)


class _Parsed:
    """httptools callbacks, in the connection's thread: answers matched to requests in order."""

    def __init__(self, inflight: deque[_Request]) -> None:
        self._inflight = inflight
        self.parser: Any = None
        self.answers: list[tuple[Deferred, Any]] = []

    def _current(self) -> _Request:
        if not self._inflight:
            raise ProtocolViolation("an answer came that no request asked for")
        return self._inflight[0]

    def on_message_begin(self) -> None:
        self._current().begun = True

    def on_header(self, name: bytes, value: bytes) -> None:
        self._current().headers.append((name.lower(), value))

    def on_body(self, data: bytes) -> None:
        request = self._current()
        request.size += len(data)
        if request.size > request.max_body:
            raise ProtocolViolation(f"answer body larger than {request.max_body} bytes")
        request.body.append(data)

    def on_message_complete(self) -> None:
        request = self._current()
        status = self.parser.get_status_code()
        if 100 <= status < 200:
            request.headers.clear()
            return
        self._inflight.popleft()
        body = request.body[0] if len(request.body) == 1 else b"".join(request.body)
        self.answers.append((request.deferred, HTTPResponse(status, tuple(request.headers), body)))


def _deliver(answers: list[tuple[Deferred, Any]]) -> None:
    """On the reactor: fire each request's Deferred with its answer or failure, in order."""
    for deferred, result in answers:
        if isinstance(result, Failure):
            deferred.errback(result)
        else:
            deferred.callback(result)

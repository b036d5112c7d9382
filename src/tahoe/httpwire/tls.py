"""TLS for the HTTPS storage protocol: the server's certificate, the client's pinning.

The server presents its node certificate (``private/node.pem``, the one
Foolscap uses). The client checks no certificate authority: it accepts the
connection only if the certificate's signature is good and the SHA-256 of
its SubjectPublicKeyInfo is the hash in the server's NURL
(``docs/formats/http-storage.md``, "TLS"). Expired and self-signed
certificates are accepted, as Tahoe 1.20 accepts them. The client's TLS is
the standard library's (:class:`PinnedTLSClient` on the reactor, as the bulk
connections of ``httpwire.threaded`` in their thread); the server's is
Twisted's over pyOpenSSL (:func:`server_options`).
"""
from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.internet.interfaces import IStreamClientEndpoint
from twisted.internet.protocol import Factory, Protocol, connectionDone
from twisted.internet.ssl import CertificateOptions, PrivateCertificate
from twisted.python.failure import Failure
from zope.interface import implementer

from ..util.nurl import spki_hash_of

#: Plaintext asked of one TLS read (a record holds at most 16 KiB).
RECORD_READ = 64 * 1024


def server_options(certificate: PrivateCertificate) -> CertificateOptions:
    """The server side: present ``certificate`` (with its key); ask the client for none."""
    return CertificateOptions(privateKey=certificate.privateKey.original,
                              certificate=certificate.original)


def certificate_spki_hash(certificate: PrivateCertificate) -> str:
    """The SPKI hash of a Twisted certificate, as it goes into NURLs."""
    return spki_hash_of(certificate.original.to_cryptography())


def client_context() -> ssl.SSLContext:
    """The standard library's TLS client settings for a pinned server (the kept-open
    connections' here, the bulk connections' in ``httpwire.threaded``): no certificate
    authority, no host name (the key is checked after the handshake), ALPN ``http/1.1``
    offered (Tahoe 1.20's server takes it)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["http/1.1"])
    return context


class PinnedTLSClient(Protocol):
    """TLS under one client protocol, by the standard library's ``ssl`` over memory BIOs,
    accepting only the server key named by ``spki_hash``.

    It is the wrapped protocol's transport, and connects it only once the handshake is
    done and the key checked (``threaded.check_pinned``); a mismatch or a failed
    handshake drops the connection, and the wrapped protocol sees only its loss. What the
    wrapped protocol writes is encrypted and handed to TCP at once, each write one
    ``transport.write``. Compared with Twisted's ``TLSMemoryBIOProtocol`` under
    ``wrapClientTLS`` this has no protocol-wrapper layers, no flush scheduled on the
    reactor per write and no cffi calls: the HTTPS client's per-request cost.
    A connection closed with TLS's close_notify, or by this side, is lost with
    ``ConnectionDone``; one cut without it, with ``ConnectionLost``.
    """

    def __init__(self, wrapped: Protocol, context: ssl.SSLContext, spki_hash: str) -> None:
        self.wrapped = wrapped
        self._spki_hash = spki_hash
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing)
        self._ready = False
        self._close_notify = False
        self._closed_by_us = False
        self._failure: Exception | None = None
        self.disconnecting = False

    # -- the wrapped protocol's transport

    def write(self, data: bytes) -> None:
        """Encrypt ``data`` and send it."""
        if self.disconnecting or not self._ready:
            return
        try:
            self._tls.write(data)
        except ssl.SSLError as error:
            self._fail(error)
            return
        self._flush()

    def writeSequence(self, data: Iterable[bytes]) -> None:  # noqa: N802 (Twisted)
        """Send the pieces as one."""
        self.write(b"".join(data))

    def loseConnection(self) -> None:  # noqa: N802 (Twisted)
        """Send close_notify, then close the TCP connection."""
        if self.disconnecting or self.transport is None:
            return
        self.disconnecting = True
        self._closed_by_us = True
        if self._ready:
            try:
                self._tls.unwrap()
            except ssl.SSLError:
                pass
            self._flush()
        self.transport.loseConnection()

    def abortConnection(self) -> None:  # noqa: N802 (Twisted)
        """Drop the TCP connection now."""
        self.disconnecting = True
        if self.transport is not None:
            self.transport.abortConnection()

    def getPeer(self) -> Any:  # noqa: N802 (Twisted)
        """The server's address."""
        return self.transport.getPeer()

    def getHost(self) -> Any:  # noqa: N802 (Twisted)
        """Our address."""
        return self.transport.getHost()

    # -- the TCP side

    def connectionMade(self) -> None:  # noqa: N802 (Twisted)
        """Start the handshake."""
        self._handshake()

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 (Twisted)
        """Decrypt, and hand what came to the wrapped protocol."""
        self._incoming.write(data)
        if not self._ready and not self._handshake():
            return
        wrapped = self.wrapped
        tls = self._tls
        while not self.disconnecting:
            try:
                plain = tls.read(RECORD_READ)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                plain = b""
            except ssl.SSLError as error:
                self._fail(error)
                return
            if not plain:  # the server's close_notify: its TCP FIN follows
                self._close_notify = True
                self.loseConnection()
                return
            wrapped.dataReceived(plain)
        if self._outgoing.pending:
            self._flush()

    def connectionLost(self, reason: Failure = connectionDone) -> None:  # noqa: N802
        """Tell the wrapped protocol, with why."""
        if self._failure is not None:
            reason = Failure(ConnectionLost(f"TLS: {self._failure}"))
        elif reason.check(ConnectionDone) and not (self._close_notify or self._closed_by_us):
            reason = Failure(ConnectionLost("the TLS stream was cut short (no close_notify)"))
        self.disconnecting = True
        self.wrapped.connectionLost(reason)

    def _handshake(self) -> bool:
        """Go on with the handshake; whether it is done (and the key the pinned one)."""
        try:
            self._tls.do_handshake()
        except ssl.SSLWantReadError:
            self._flush()
            return False
        except ssl.SSLError as error:
            self._fail(error)
            return False
        self._flush()
        # (imported here: a storage node, which needs this module's server side only,
        # does not load the client's connections)
        from .threaded import PinMismatch, check_pinned
        try:
            check_pinned(self._tls.getpeercert(binary_form=True), self._spki_hash)
        except PinMismatch as error:
            self._fail(error)
            return False
        self._ready = True
        self.wrapped.makeConnection(self)
        return True

    def _flush(self) -> None:
        data = self._outgoing.read()
        transport = self.transport
        if data and transport is not None:
            rest = send_now(transport, data)
            if rest:
                transport.write(rest)

    def _fail(self, error: Exception) -> None:
        self._failure = error
        self.abortConnection()


def send_now(transport: Any, data: bytes) -> bytes:
    """Send ``data`` on a Twisted TCP transport's socket at once when the transport holds
    nothing unsent; return what is left for ``transport.write`` (all of it otherwise).

    Twisted's ``write`` only buffers, and sends at the reactor's next turn (the descriptor
    registered for writing, then unregistered: two ``epoll_ctl`` and a dozen Python calls
    per write). A request of a small upload fits the socket buffer whole. Any transport
    that is not such a TCP transport, or whose buffer holds data (order matters), is left
    to ``write``; so is any error (``write`` then reports the loss).
    """
    if getattr(transport, "_tempDataBuffer", True) or getattr(transport, "dataBuffer", True) \
            or not getattr(transport, "connected", False) or transport.disconnecting \
            or getattr(transport, "_writeDisconnected", True):
        return data
    try:
        sent = transport.socket.send(data)
    except OSError:  # EAGAIN included: the buffer is full, Twisted waits for room
        return data
    return data[sent:]


class _PinnedTLSFactory(Factory):
    def __init__(self, factory: Any, context: ssl.SSLContext, spki_hash: str) -> None:
        self._factory = factory
        self._context = context
        self._spki_hash = spki_hash

    def buildProtocol(self, addr: Any) -> Protocol | None:  # noqa: N802 (Twisted)
        wrapped = self._factory.buildProtocol(addr)
        if wrapped is None:
            return None
        return PinnedTLSClient(wrapped, self._context, self._spki_hash)


@implementer(IStreamClientEndpoint)
class PinnedTLSEndpoint:
    """Connections over ``tcp`` (an endpoint) with :class:`PinnedTLSClient` on top.

    :param spki_hash: 43 characters of URL-safe base64 (a NURL's user part).
    """

    def __init__(self, tcp: IStreamClientEndpoint, spki_hash: str) -> None:
        self._tcp = tcp
        self._spki_hash = spki_hash
        self._context = client_context()

    def connect(self, factory: Any) -> Deferred:
        """Connect; fires with the protocol ``factory`` built (before the handshake ends:
        it is connected once it did)."""
        d = self._tcp.connect(_PinnedTLSFactory(factory, self._context, self._spki_hash))
        d.addCallback(lambda tls: tls.wrapped)
        return d

"""TLS for the HTTPS storage protocol: the server's certificate, the client's pinning.

The server presents its node certificate (``private/node.pem``, the one
Foolscap uses). The client checks no certificate authority: it accepts the
connection only if the certificate's signature is good and the SHA-256 of
its SubjectPublicKeyInfo is the hash in the server's NURL
(``docs/formats/http-storage.md``, "TLS"). Expired and self-signed
certificates are accepted, as Tahoe 1.20 accepts them. The client's TLS is
the standard library's (:class:`PinnedTLSClient` on the reactor, as the bulk
connections of ``httpwire.threaded`` in their thread); so is the server's
(:class:`TLSServerFactory` with :func:`server_context`), both over memory BIOs
(:class:`_MemoryTLS`).
"""
from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Iterable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.internet.interfaces import IStreamClientEndpoint
from twisted.internet.protocol import Factory, Protocol, connectionDone
from twisted.internet.ssl import PrivateCertificate
from twisted.python.failure import Failure
from zope.interface import implementer

from ..util.nurl import spki_hash_of

#: Plaintext asked of one TLS read (a record holds at most 16 KiB).
RECORD_READ = 64 * 1024

#: Bytes of a connection's start kept for :func:`offered_alpn`, at most.
HELLO_KEPT = 64 * 1024

#: Seconds a connection we closed waits for the peer to close its side, at most.
CLOSING_TIMEOUT = 10.0

#: Ciphertext held back while received bytes are handed up, at most (then it goes, so
#: that TCP's send buffer, not this one, paces a response streamed from there).
HELD_BACK = 64 * 1024


def server_context(certificate: PrivateCertificate) -> ssl.SSLContext:
    """The standard library's TLS server settings: present ``certificate`` (with its key),
    ask the client for none, take ALPN ``http/1.1`` (as Tahoe 1.20's server does).

    The PEM goes to ``ssl`` through an anonymous in-memory file (``memfd``), where there
    is one, so the key touches no disk; elsewhere through a file in a private temporary
    directory, removed at once.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["http/1.1"])
    context.sni_callback = _refuse_other_protocols
    pem = certificate.dumpPEM()
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fd = os.memfd_create("tahoe-tls")
        try:
            os.write(fd, pem)
            context.load_cert_chain(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
    else:
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "node.pem")
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
                f.write(pem)
            context.load_cert_chain(path)
    return context


#: TLS alert ``no_application_protocol`` (RFC 7301).
NO_APPLICATION_PROTOCOL = 120


def _refuse_other_protocols(tls: ssl.SSLObject, server_name: str | None,
                            context: ssl.SSLContext) -> int | None:
    """Fail the handshake of a client whose ALPN offer lacks ``http/1.1``, as Tahoe 1.20's
    server does (``ssl`` itself would go on without ALPN). The standard library calls
    this (its SNI hook) while it reads the ClientHello, SNI or not, and shows no ALPN
    offer: the offer is read from the hello's bytes (:func:`offered_alpn`)."""
    server = getattr(tls, "tahoe_server", None)
    offered = offered_alpn(bytes(server.hello)) if server is not None else None
    if offered and b"http/1.1" not in offered:
        return NO_APPLICATION_PROTOCOL
    return None


def offered_alpn(data: bytes) -> list[bytes] | None:
    """The protocol names of the ALPN extension of the TLS ClientHello that ``data`` (a
    connection's first bytes) begins with; None without one, or if ``data`` holds no
    whole ClientHello. Read only once OpenSSL has parsed the same hello."""
    handshake = bytearray()
    position = 0
    while position + 5 <= len(data) and data[position] == 22:  # handshake records
        length = int.from_bytes(data[position + 3:position + 5], "big")
        handshake += data[position + 5:position + 5 + length]
        position += 5 + length
    try:
        if handshake[0] != 1:  # ClientHello
            return None
        hello = handshake[4:4 + int.from_bytes(handshake[1:4], "big")]
        at = 2 + 32  # version, random
        at += 1 + hello[at]  # session id
        at += 2 + int.from_bytes(hello[at:at + 2], "big")  # cipher suites
        at += 1 + hello[at]  # compression methods
        end = at + 2 + int.from_bytes(hello[at:at + 2], "big")
        at += 2
        while at + 4 <= end:
            kind = int.from_bytes(hello[at:at + 2], "big")
            size = int.from_bytes(hello[at + 2:at + 4], "big")
            at += 4
            if kind == 16:  # application_layer_protocol_negotiation
                names, extension, inner = [], hello[at:at + size], 2
                while inner < len(extension):
                    names.append(bytes(extension[inner + 1:inner + 1 + extension[inner]]))
                    inner += 1 + extension[inner]
                return names
            at += size
    except IndexError:
        return None
    return None


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


class _MemoryTLS(Protocol):
    """TLS under one protocol (``wrapped``), by the standard library's ``ssl`` over memory
    BIOs, on a Twisted TCP transport: it is the wrapped protocol's transport.

    The wrapped protocol is connected once the handshake is done and
    :meth:`_peer_accepted` (a server's, earlier: :class:`TLSServer`); a failed handshake
    or a refused peer drops the connection, and the wrapped protocol sees only its loss.
    Written bytes are encrypted and handed to TCP at once, except while received bytes
    are being handed up: what the wrapped protocol writes then (its answers to pipelined
    requests) goes out in one send after. Compared with Twisted's ``TLSMemoryBIOProtocol``
    this has no protocol-wrapper layers, no flush scheduled on the reactor per write and
    no cffi calls. Flow control is TCP's: a producer registered here is registered on
    the TCP transport, and pausing this transport pauses TCP's reading. A connection
    closed with TLS's close_notify, or by this side, is lost with ``ConnectionDone``;
    one cut without it, with ``ConnectionLost``.
    """

    def __init__(self, wrapped: Protocol, context: ssl.SSLContext, server_side: bool) -> None:
        self.wrapped = wrapped
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_side=server_side)
        self._ready = False
        self._receiving = False
        self._close_notify = False
        self._closed_by_us = False
        self._failure: Exception | None = None
        self._closing: Any = None
        self._wrapped_connected = False
        self.disconnecting = False

    # -- the wrapped protocol's transport

    def write(self, data: bytes) -> None:
        """Encrypt ``data`` and send it (after the received bytes, while handing them up)."""
        if self.disconnecting or not self._ready:
            return
        try:
            self._tls.write(data)
        except ssl.SSLError as error:
            self._fail(error)
            return
        if not self._receiving or self._outgoing.pending > HELD_BACK:
            self._flush()

    def writeSequence(self, data: Iterable[bytes]) -> None:  # noqa: N802 (Twisted)
        """Send the pieces as one."""
        self.write(b"".join(data))

    def loseConnection(self) -> None:  # noqa: N802 (Twisted)
        """Send close_notify, then close the TCP connection once what is queued went.

        If the peer has not ended its side yet, only our direction is closed (TCP's FIN
        after the close_notify): the connection ends when the peer's close_notify and FIN
        come, or is dropped :data:`CLOSING_TIMEOUT` s later. Closing both directions at
        once would answer the peer's close_notify with a reset, which can destroy what
        we sent last before the peer has read it.
        """
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
        transport = self.transport
        clock = getattr(transport, "reactor", None)
        if self._close_notify or clock is None or not hasattr(transport, "loseWriteConnection"):
            transport.loseConnection()
            return
        transport.loseWriteConnection()
        self._closing = clock.callLater(CLOSING_TIMEOUT, transport.abortConnection)

    def abortConnection(self) -> None:  # noqa: N802 (Twisted)
        """Drop the TCP connection now."""
        self.disconnecting = True
        if self.transport is not None:
            self.transport.abortConnection()

    def getPeer(self) -> Any:  # noqa: N802 (Twisted)
        """The other side's address."""
        return self.transport.getPeer()

    def getHost(self) -> Any:  # noqa: N802 (Twisted)
        """Our address."""
        return self.transport.getHost()

    def registerProducer(self, producer: Any, streaming: bool) -> None:  # noqa: N802
        """Let TCP's send buffer pause and resume ``producer``."""
        self.transport.registerProducer(producer, streaming)

    def unregisterProducer(self) -> None:  # noqa: N802 (Twisted)
        self.transport.unregisterProducer()

    def pauseProducing(self) -> None:  # noqa: N802 (Twisted)
        """Stop reading from the peer."""
        self.transport.pauseProducing()

    def resumeProducing(self) -> None:  # noqa: N802 (Twisted)
        self.transport.resumeProducing()

    def stopProducing(self) -> None:  # noqa: N802 (Twisted)
        self.abortConnection()

    # -- the TCP side

    def connectionMade(self) -> None:  # noqa: N802 (Twisted)
        """Start the handshake (a client's hello; a server waits for it)."""
        self._handshake()

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 (Twisted)
        """Decrypt, and hand what came to the wrapped protocol."""
        self._incoming.write(data)
        if not self._ready and not self._handshake():
            return
        wrapped = self.wrapped
        tls = self._tls
        self._receiving = True
        try:
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
                if not plain:  # the peer's close_notify: its TCP FIN follows
                    self._close_notify = True
                    self._receiving = False
                    self.loseConnection()
                    return
                wrapped.dataReceived(plain)
        finally:
            self._receiving = False
        if self._outgoing.pending:
            self._flush()

    def connectionLost(self, reason: Failure = connectionDone) -> None:  # noqa: N802
        """Tell the wrapped protocol (if it was connected), with why."""
        if self._failure is not None:
            reason = Failure(ConnectionLost(f"TLS: {self._failure}"))
        elif reason.check(ConnectionDone) and not (self._close_notify or self._closed_by_us):
            reason = Failure(ConnectionLost("the TLS stream was cut short (no close_notify)"))
        self.disconnecting = True
        if self._closing is not None and self._closing.active():
            self._closing.cancel()
        if self._close_notify and self._failure is None and not reason.check(ConnectionDone):
            # the peer ended the TLS stream properly: nothing was lost, whatever TCP saw
            # after (our close_notify in answer may have met its closed socket)
            reason = Failure(ConnectionDone("closed after close_notify"))
        if self._wrapped_connected or self._loss_told_unconnected:
            self.wrapped.connectionLost(reason)

    #: whether the wrapped protocol hears of a connection lost before it was connected
    _loss_told_unconnected = True

    def _handshake(self) -> bool:
        """Go on with the handshake; whether it is done (and the peer accepted)."""
        try:
            self._tls.do_handshake()
        except ssl.SSLWantReadError:
            self._flush()
            return False
        except ssl.SSLError as error:
            self._fail(error)
            return False
        self._flush()
        if not self._peer_accepted():
            return False
        self._ready = True
        if not self._wrapped_connected:
            self._connect_wrapped()
        return True

    def _connect_wrapped(self) -> None:
        self._wrapped_connected = True
        self.wrapped.makeConnection(self)

    def _peer_accepted(self) -> bool:
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
        self._flush()  # a TLS alert, if the failure made one
        self.abortConnection()


class PinnedTLSClient(_MemoryTLS):
    """The client side of :class:`_MemoryTLS`, accepting only the server key named by
    ``spki_hash`` (``threaded.check_pinned``): the HTTPS client's kept-open connections.

    With a ``clock`` and a ``handshake_timeout``, a handshake not done that many
    seconds after TCP connected fails the connection: a server that accepts
    connections but never answers (hung, its kernel still accepting) would otherwise
    hold the connection, and every request waiting for it, for good.
    """

    def __init__(self, wrapped: Protocol, context: ssl.SSLContext, spki_hash: str,
                 clock: Any = None, handshake_timeout: float | None = None) -> None:
        super().__init__(wrapped, context, server_side=False)
        self._spki_hash = spki_hash
        self._clock = clock
        self._handshake_timeout = handshake_timeout
        self._handshake_timer: Any = None

    def connectionMade(self) -> None:  # noqa: N802 (Twisted)
        if self._clock is not None and self._handshake_timeout is not None:
            self._handshake_timer = self._clock.callLater(self._handshake_timeout,
                                                          self._handshake_expired)
        super().connectionMade()

    def _handshake_expired(self) -> None:
        self._handshake_timer = None
        if not self._ready and not self.disconnecting:
            self._fail(TimeoutError(f"no TLS handshake within {self._handshake_timeout:g} s"))

    def _stop_handshake_timer(self) -> None:
        if self._handshake_timer is not None and self._handshake_timer.active():
            self._handshake_timer.cancel()
        self._handshake_timer = None

    def _connect_wrapped(self) -> None:
        self._stop_handshake_timer()
        super()._connect_wrapped()

    def connectionLost(self, reason: Failure = connectionDone) -> None:  # noqa: N802
        self._stop_handshake_timer()
        super().connectionLost(reason)

    def _peer_accepted(self) -> bool:
        # (imported here: a storage node, which needs this module's server side only,
        # does not load the client's connections)
        from .threaded import PinMismatch, check_pinned
        try:
            check_pinned(self._tls.getpeercert(binary_form=True), self._spki_hash)
        except PinMismatch as error:
            self._fail(error)
            return False
        return True


class TLSServer(_MemoryTLS):
    """The server side of :class:`_MemoryTLS`: the node certificate, no client
    certificate asked. The wrapped protocol is connected with TCP, before the
    handshake, so that its timeouts cover a handshake that never ends (what it
    writes before the handshake ended is dropped)."""

    _loss_told_unconnected = False

    def __init__(self, wrapped: Protocol, context: ssl.SSLContext,
                 factory: "TLSServerFactory") -> None:
        super().__init__(wrapped, context, server_side=True)
        self._factory = factory
        #: the bytes received before the handshake ended (the ClientHello among them)
        self.hello = bytearray()
        self._tls.tahoe_server = self  # type: ignore[attr-defined]

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 (Twisted)
        if not self._ready and len(self.hello) < HELLO_KEPT:
            self.hello += data
        super().dataReceived(data)

    def _peer_accepted(self) -> bool:
        self.hello = bytearray()
        del self._tls.tahoe_server  # type: ignore[attr-defined]
        return True

    def connectionMade(self) -> None:  # noqa: N802 (Twisted)
        """Note the connection (:meth:`TLSServerFactory.protocols`) and connect the wrapped
        protocol; then wait for the client's hello."""
        self._factory.protocols.add(self)
        self._connect_wrapped()

    def connectionLost(self, reason: Failure = connectionDone) -> None:  # noqa: N802
        self._factory.protocols.discard(self)
        super().connectionLost(reason)


class TLSServerFactory(Factory):
    """Serves ``factory``'s protocols under :class:`TLSServer` with ``context``
    (:func:`server_context`); ``protocols`` are the open connections."""

    def __init__(self, context: ssl.SSLContext, factory: Any) -> None:
        self._context = context
        self._factory = factory
        self.protocols: set[TLSServer] = set()

    def doStart(self) -> None:  # noqa: N802 (Twisted)
        self._factory.doStart()

    def doStop(self) -> None:  # noqa: N802 (Twisted)
        self._factory.doStop()

    def buildProtocol(self, addr: Any) -> Protocol | None:  # noqa: N802 (Twisted)
        wrapped = self._factory.buildProtocol(addr)
        if wrapped is None:
            return None
        return TLSServer(wrapped, self._context, self)


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
    def __init__(self, factory: Any, context: ssl.SSLContext, spki_hash: str, clock: Any,
                 handshake_timeout: float | None) -> None:
        self._factory = factory
        self._context = context
        self._spki_hash = spki_hash
        self._clock = clock
        self._handshake_timeout = handshake_timeout

    def buildProtocol(self, addr: Any) -> Protocol | None:  # noqa: N802 (Twisted)
        wrapped = self._factory.buildProtocol(addr)
        if wrapped is None:
            return None
        return PinnedTLSClient(wrapped, self._context, self._spki_hash, self._clock,
                               self._handshake_timeout)


@implementer(IStreamClientEndpoint)
class PinnedTLSEndpoint:
    """Connections over ``tcp`` (an endpoint) with :class:`PinnedTLSClient` on top.

    :param spki_hash: 43 characters of URL-safe base64 (a NURL's user part).
    :param clock: with ``handshake_timeout``: a handshake not done that many seconds
        after TCP connected fails the connection (:class:`PinnedTLSClient`).
    """

    def __init__(self, tcp: IStreamClientEndpoint, spki_hash: str, clock: Any = None,
                 handshake_timeout: float | None = None) -> None:
        self._tcp = tcp
        self._spki_hash = spki_hash
        self._context = client_context()
        self._clock = clock
        self._handshake_timeout = handshake_timeout

    def connect(self, factory: Any) -> Deferred:
        """Connect; fires with the protocol ``factory`` built (before the handshake ends:
        it is connected once it did)."""
        d = self._tcp.connect(_PinnedTLSFactory(factory, self._context, self._spki_hash,
                                                self._clock, self._handshake_timeout))
        d.addCallback(lambda tls: tls.wrapped)
        return d

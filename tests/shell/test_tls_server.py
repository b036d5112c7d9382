"""``httpwire.tls``'s server side: the ClientHello's ALPN offer, answers held back while
requests are handed up, and the closing of a connection (our direction first)."""
from __future__ import annotations

import ssl
from typing import Any

from foolscap.api import Tub
from twisted.internet.protocol import Protocol
from twisted.internet.task import Clock

from tahoe.httpwire import tls


def _client_hello(alpn: list[str] | None) -> bytes:
    context = tls.client_context()
    if alpn is not None:
        context.set_alpn_protocols(alpn)
    else:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    client = context.wrap_bio(ssl.MemoryBIO(), outgoing := ssl.MemoryBIO())
    try:
        client.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def test_the_alpn_offer_is_read_from_the_client_hello() -> None:
    """The names a real ClientHello offers, in order; none without the extension; None for
    bytes that are no ClientHello."""
    assert tls.offered_alpn(_client_hello(["h2", "http/1.1"])) == [b"h2", b"http/1.1"]
    assert tls.offered_alpn(_client_hello(["h2"])) == [b"h2"]
    assert tls.offered_alpn(_client_hello(None)) is None
    assert tls.offered_alpn(b"GET / HTTP/1.1\r\n\r\n") is None
    assert tls.offered_alpn(_client_hello(["h2"])[:40]) is None  # cut short


class _Transport:
    """A TCP transport that records what the TLS layer does with it."""

    def __init__(self) -> None:
        self.reactor = Clock()
        self.written: list[bytes] = []
        self.calls: list[str] = []
        self.disconnecting = False

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def loseWriteConnection(self) -> None:  # noqa: N802 (Twisted)
        self.calls.append("loseWriteConnection")

    def loseConnection(self) -> None:  # noqa: N802 (Twisted)
        self.calls.append("loseConnection")

    def abortConnection(self) -> None:  # noqa: N802 (Twisted)
        self.calls.append("abortConnection")


class _Answers(Protocol):
    """Answers each piece it is handed with two writes."""

    def __init__(self) -> None:
        self.received: list[bytes] = []

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 (Twisted)
        self.received.append(data)
        self.transport.write(b"first answer;")
        self.transport.write(b"second answer")


def _connected() -> tuple[Any, tls.TLSServer, _Answers, _Transport]:
    """A server (its transport recorded) and a client after a handshake over memory."""
    context = tls.server_context(Tub().myCertificate)
    factory = tls.TLSServerFactory(context, _AnswersFactory())
    server = factory.buildProtocol(None)
    assert isinstance(server, tls.TLSServer)
    transport = _Transport()
    server.makeConnection(transport)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = tls.client_context().wrap_bio(incoming, outgoing)
    client.tahoe_incoming, client.tahoe_outgoing = incoming, outgoing  # type: ignore[attr-defined]
    for _ in range(5):
        try:
            client.do_handshake()
            break
        except ssl.SSLWantReadError:
            pass
        finally:
            if outgoing.pending:
                server.dataReceived(outgoing.read())
            incoming.write(b"".join(transport.written))
            transport.written.clear()
    assert factory.protocols == {server}
    return client, server, server.wrapped, transport  # type: ignore[return-value]


class _AnswersFactory:
    def buildProtocol(self, addr: Any) -> _Answers:  # noqa: N802 (Twisted)
        return _Answers()


def test_answers_written_while_requests_are_handed_up_go_in_one_send() -> None:
    """Two writes of the wrapped protocol during one received record leave as one write to
    TCP, after it; and what the client sent arrives whole."""
    client, server, answers, transport = _connected()
    assert client.selected_alpn_protocol() == "http/1.1"
    client.write(b"two pipelined requests")
    server.dataReceived(_drain(client))
    assert answers.received == [b"two pipelined requests"]
    assert len(transport.written) == 1
    assert _decrypt(client, transport.written[0]) == b"first answer;second answer"


def test_closing_waits_for_the_peer_then_drops_it_after_a_while() -> None:
    """Our close sends close_notify and closes our direction only; the peer's close_notify
    ends it all; a peer that never answers is dropped after CLOSING_TIMEOUT."""
    client, server, _, transport = _connected()
    server.loseConnection()
    assert transport.calls == ["loseWriteConnection"]
    assert _decrypt(client, transport.written[-1]) == b""  # the close_notify
    transport.reactor.advance(tls.CLOSING_TIMEOUT)
    assert transport.calls == ["loseWriteConnection", "abortConnection"]

    client, server, _, transport = _connected()
    try:
        client.unwrap()
    except ssl.SSLWantReadError:
        pass
    server.dataReceived(_drain(client))  # the peer's close_notify first: close it all
    assert transport.calls == ["loseConnection"]


def _drain(client: Any) -> bytes:
    return client.tahoe_outgoing.read()  # type: ignore[no-any-return]


def _decrypt(client: Any, data: bytes) -> bytes:
    client.tahoe_incoming.write(data)
    plain = b""
    while True:
        try:
            piece = client.read(65536)
        except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
            return plain
        if not piece:  # close_notify
            return plain
        plain += piece


def test_a_handshake_that_never_ends_is_closed_by_the_http_servers_idle_timeout() -> None:
    """The HTTP protocol is connected with TCP, before any hello: its idle timeout closes a
    connection whose client never finishes (here: never starts) the handshake."""
    from tahoe.httpwire.messages import Limits
    from tahoe.httpwire.server import HTTP1ServerFactory

    clock = Clock()

    def application(request: Any) -> Any:
        raise AssertionError("no request can come")

    factory = tls.TLSServerFactory(tls.server_context(Tub().myCertificate), HTTP1ServerFactory(
        application, clock, Limits(idle_timeout=5.0)))
    server = factory.buildProtocol(None)
    transport = _Transport()
    server.makeConnection(transport)
    half = _client_hello(["http/1.1"])[:20]  # a hello cut short, the rest never sent
    server.dataReceived(half)
    clock.advance(4.9)
    assert transport.calls == []
    clock.advance(0.2)
    assert transport.calls in (["abortConnection"], ["loseConnection"])

"""One port for Foolscap and the HTTPS storage protocol, told apart by the first bytes.

As Tahoe 1.20 does (``reference/storage-protocol.md`` §1.3): a connection
that starts with ``GET /id/`` is Foolscap's and goes to the Tub; anything
else is a TLS ClientHello for the HTTPS storage API. The decision is made
as soon as the first bytes differ from ``GET /id/`` (one byte for TLS),
after which the connection belongs to the chosen protocol and this module
is no longer in its path.

:class:`SwitchingEndpoint` wraps the endpoint a Tub listens on; the HTTPS
side is given later (:meth:`PortSwitch.serve_https`), once the storage
server exists. Until then, and for a node without HTTPS, non-Foolscap
connections are closed.
"""
from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IListeningPort, IProtocolFactory, IReactorTime, \
    IStreamServerEndpoint
from twisted.internet.protocol import Factory, Protocol
from zope.interface import implementer

from ..httpwire.tcp import set_no_delay

FOOLSCAP_PREFIX = b"GET /id/"
#: Seconds a new connection may take to send enough bytes to be told apart.
DECIDE_TIMEOUT = 30.0


class PortSwitch:
    """Holds the HTTPS storage factory for every switching port of a node."""

    def __init__(self, clock: IReactorTime) -> None:
        self.clock = clock
        self.https_factory: IProtocolFactory | None = None

    def serve_https(self, factory: IProtocolFactory) -> None:
        """From now on, hand non-Foolscap connections to ``factory`` (TLS included)."""
        factory.doStart()
        self.https_factory = factory

    def stop(self) -> None:
        """Close every open HTTPS connection and stop the factory (at node shutdown)."""
        factory, self.https_factory = self.https_factory, None
        if factory is None:
            return
        for protocol in list(getattr(factory, "protocols", ())):
            transport = getattr(protocol, "transport", None)
            if transport is not None:
                transport.abortConnection()
        factory.doStop()


class _Switch(Protocol):
    """A new connection, until its first bytes say whose it is."""

    def __init__(self, foolscap: IProtocolFactory, switch: PortSwitch, addr: Any) -> None:
        self._foolscap = foolscap
        self._switch = switch
        self._addr = addr
        self._buffer = b""
        self._timer: Any = None

    def connectionMade(self) -> None:  # noqa: N802 (Twisted)
        """Turn Nagle off (both protocols want it) and start the decision timer."""
        set_no_delay(self.transport)
        self._timer = self._switch.clock.callLater(DECIDE_TIMEOUT, self.transport.abortConnection)

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 (Twisted)
        """Collect bytes until they decide; then hand the connection over."""
        self._buffer += data
        size = min(len(self._buffer), len(FOOLSCAP_PREFIX))
        if self._buffer[:size] != FOOLSCAP_PREFIX[:size]:
            factory = self._switch.https_factory
        elif size == len(FOOLSCAP_PREFIX):
            factory = self._foolscap
        else:
            return
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        if factory is None:
            self.transport.abortConnection()
            return
        protocol = factory.buildProtocol(self._addr)
        if protocol is None:
            self.transport.abortConnection()
            return
        transport = self.transport
        transport.protocol = protocol
        protocol.makeConnection(transport)
        protocol.dataReceived(self._buffer)
        self._buffer = b""

    def connectionLost(self, reason: Any = None) -> None:  # noqa: N802 (Twisted)
        """Gone before deciding."""
        if self._timer is not None and self._timer.active():
            self._timer.cancel()


class _SwitchFactory(Factory):
    def __init__(self, foolscap: IProtocolFactory, switch: PortSwitch) -> None:
        self._foolscap = foolscap
        self._switch = switch

    def doStart(self) -> None:  # noqa: N802 (Twisted)
        self._foolscap.doStart()

    def doStop(self) -> None:  # noqa: N802 (Twisted)
        self._foolscap.doStop()

    def buildProtocol(self, addr: Any) -> _Switch:  # noqa: N802 (Twisted)
        return _Switch(self._foolscap, self._switch, addr)


@implementer(IStreamServerEndpoint)
class SwitchingEndpoint:
    """An endpoint whose connections go to Foolscap or to HTTPS by their first bytes.

    :param endpoint: the real endpoint (from ``tub.port``).
    :param switch: where the HTTPS factory comes from.
    """

    def __init__(self, endpoint: IStreamServerEndpoint, switch: PortSwitch) -> None:
        self._endpoint = endpoint
        self._switch = switch

    def listen(self, protocolFactory: IProtocolFactory) -> "Deferred[IListeningPort]":  # noqa: N803
        """Listen with Foolscap's factory behind the switch."""
        return self._endpoint.listen(_SwitchFactory(protocolFactory, self._switch))

    def __str__(self) -> str:
        return str(self._endpoint)

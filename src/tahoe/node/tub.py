"""The node's Foolscap Tub: certificate, Tub ID, listening ports and persistent FURLs.

Facts: ``reference/storage-protocol.md`` §1.1-1.3 (``private/node.pem``,
Tub ID, Tub options) and §7.6 (``tub.port``/``tub.location``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from foolscap.api import Referenceable, Tub
from foolscap.broker import Broker
from foolscap.furl import decode_furl

from ..httpwire.tcp import set_no_delay
from ..util import base32
from .fileutil import write_atomically
from .portswitch import PortSwitch, SwitchingEndpoint

#: Options Tahoe 1.20 sets on every Tub (storage-protocol.md §1.3).
TUB_OPTIONS = {
    "logLocalFailures": True,
    "logRemoteFailures": True,
    "expose-remote-exception-types": False,
    "accept-gifts": False,
}


class CoalescingTransport:
    """Collects a Foolscap broker's many small writes into one per reactor turn.

    Foolscap's serializer writes every token, often a single byte, to its
    transport; each write becomes a TLS record of its own (about 1,700 for a
    1 kB upload). Joining them until the reactor's next turn sends the same
    bytes, in the same order, in a few records. Large writes (share data) go
    out at once, after whatever is buffered. Every other attribute is the
    real transport's.
    """

    #: Writes at least this large bypass the buffer (after flushing it).
    DIRECT = 64 * 1024

    def __init__(self, transport: Any, clock: Any) -> None:
        self._transport = transport
        self._clock = clock
        self._pending: list[bytes] = []
        self._scheduled: Any = None

    def write(self, data: bytes) -> None:
        """Queue ``data`` (or, when large, send it right after the queue)."""
        if len(data) >= self.DIRECT:
            self.flush()
            self._transport.write(data)
            return
        self._pending.append(data)
        if self._scheduled is None:
            self._scheduled = self._clock.callLater(0, self.flush)

    def writeSequence(self, data: list[bytes]) -> None:  # noqa: N802 (Twisted)
        """Queue several pieces."""
        for piece in data:
            self.write(piece)

    def flush(self) -> None:
        """Hand everything queued to the real transport as one write."""
        if self._scheduled is not None:
            if self._scheduled.active():
                self._scheduled.cancel()
            self._scheduled = None
        if self._pending:
            pending, self._pending = self._pending, []
            self._transport.write(b"".join(pending))

    def loseConnection(self) -> None:  # noqa: N802 (Twisted)
        """Send what is queued, then close."""
        self.flush()
        self._transport.loseConnection()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class NoDelayBroker(Broker):  # type: ignore[misc]
    """A Foolscap broker with Nagle's algorithm off and its small writes coalesced.

    Without TCP_NODELAY a small call answered by a small reply waits for the
    peer's delayed ACK (40 ms on Linux); without coalescing every token is a
    TLS record of its own (see :class:`CoalescingTransport`).
    """

    def makeConnection(self, transport: Any) -> None:  # noqa: N802 (Twisted)
        """Turn on TCP_NODELAY and wrap the transport before the broker starts."""
        set_no_delay(transport)
        from twisted.internet import reactor
        super().makeConnection(CoalescingTransport(transport, reactor))


def new_tub(cert_data: bytes | None = None) -> Tub:
    """A Tub with Tahoe's options and Nagle turned off on its connections."""
    tub = Tub(certData=cert_data)
    tub.brokerClass = NoDelayBroker
    for name, value in TUB_OPTIONS.items():
        tub.setOption(name, value)
    return tub


def create_tub(basedir: Path, keepalive: int | None = None, disconnect: int | None = None) -> Tub:
    """Create the node's main Tub from ``private/node.pem``, generating it on first use.

    Also writes ``my_nodeid`` (the Tub ID) so that operators and scripts can read it.
    """
    private = basedir / "private"
    private.mkdir(mode=0o700, parents=True, exist_ok=True)
    cert_file = private / "node.pem"
    if cert_file.exists():
        tub = new_tub(cert_file.read_bytes())
    else:
        tub = new_tub()
        write_atomically(cert_file, tub.getCertData(), mode=0o600)
    if keepalive is not None:
        tub.setOption("keepaliveTimeout", keepalive)
    if disconnect is not None:
        tub.setOption("disconnectTimeout", disconnect)
    nodeid_file = basedir / "my_nodeid"
    text = tub.getTubID() + "\n"
    if not nodeid_file.exists() or nodeid_file.read_text() != text:
        write_atomically(nodeid_file, text)
    return tub


def create_outbound_tub(keepalive: int | None = None, disconnect: int | None = None) -> Tub:
    """A Tub that only connects out, with a throw-away certificate: for reaching storage servers.

    Tahoe 1.20 reaches each storage server from a new Tub of its own, never
    from the node's main Tub (``allmydata/storage_client.py``,
    ``NativeStorageServer.start_connecting`` calls its ``tub_maker``). What
    others see depends on it, and one such Tub shared by all servers is
    enough for both: a storage server that is also our client (every storage
    node is) keeps its own connection to us instead of Foolscap merging it
    with ours (the merged one, if the server opened it, has no winning hint),
    and our own server is reached over TCP (``Connected to
    tcp:127.0.0.1:PORT via tcp``), not through Foolscap's in-process loopback.
    Neither the uploader's canary nor leases depend on which Tub connects.
    """
    tub = new_tub()
    if keepalive is not None:
        tub.setOption("keepaliveTimeout", keepalive)
    if disconnect is not None:
        tub.setOption("disconnectTimeout", disconnect)
    return tub


def listen(tub: Tub, ports: list[str], location: str, switch: PortSwitch | None = None) -> None:
    """Listen on every endpoint string in ``ports`` and advertise ``location``.

    :param switch: if given, each port also takes the HTTPS storage protocol
        (told apart from Foolscap by the first bytes; see ``portswitch``).
    """
    for port in ports:
        if switch is None:
            tub.listenOn(port)
        else:
            from twisted.internet import reactor
            from twisted.internet.endpoints import serverFromString
            tub.listenOn(SwitchingEndpoint(serverFromString(reactor, port), switch))
    tub.setLocation(location)


def register_persistent(tub: Tub, obj: Referenceable, furl_file: Path) -> str:
    """Register ``obj`` under the swissnum kept in ``furl_file`` (a new one the first time).

    The FURL file is written atomically, so that a reader polling for it never
    sees a partial line. Call only once the Tub listens.

    :returns: the FURL.
    """
    name = None
    if furl_file.exists():
        old = furl_file.read_text().strip()
        if old:
            tubid, _hints, name = decode_furl(old)
            if tubid != tub.getTubID():
                raise ValueError(f"{furl_file} names Tub {tubid}, but this node is "
                                 f"{tub.getTubID()}; was private/node.pem replaced?")
    furl: str = tub.registerReference(obj, name=name)
    if not furl_file.exists() or furl_file.read_text().strip() != furl:
        write_atomically(furl_file, furl + "\n", mode=0o600)
    return furl


def tubid_bytes(tub: Tub) -> bytes:
    """The Tub ID in binary (20 bytes): the lease and write-enabler seed."""
    return base32.a2b(tub.getTubID())


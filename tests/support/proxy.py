"""A TCP forwarding proxy for tests: latency, round-trip counting, cuts and kills.

A :class:`TcpProxy` listens on ``127.0.0.1`` and forwards every accepted
connection to one target ``host:port``.  It runs its own event loop (raw
non-blocking sockets and :mod:`selectors`) in a daemon thread, so it neither
uses nor disturbs the Twisted reactor of the test process; every public method
may be called from any other thread.  It is meant to sit between a client
node and a storage server (Foolscap authenticates the server inside TLS, so a
transparent TCP proxy is invisible to both).

What it does to the traffic:

* **Delay.**  Each chunk of data is held for ``delay`` seconds (per
  direction, see :meth:`TcpProxy.set_delay`) after it arrived at the proxy and
  then forwarded, in order.  The hold is a timed queue, not a stop-and-wait:
  any number of chunks may be in flight, so a bulk transfer takes about
  ``size / bandwidth + delay`` (up to ``max_buffer`` bytes per direction and
  connection are held; beyond that the proxy stops reading, which is TCP
  back-pressure and not a throughput limit while ``max_buffer`` exceeds
  bandwidth × delay).  A round trip through the proxy therefore costs at least
  ``2 × delay``.  The end of a stream (FIN) is delayed like data; connection
  set-up (the TCP handshake with the proxy and the proxy's connect to the
  target) is not delayed.

* **Bursts and round trips**, counted per connection, as observed when data
  *arrives* at the proxy (before the delay):

  - A *chunk* is what one ``recv`` on one side returned.
  - A *burst* (:class:`Burst`) is a maximal run of chunks of one direction:
    a chunk starts a new burst when the previous chunk of the connection went
    the other way, when it is the connection's first chunk, or when
    :meth:`TcpProxy.mark` was called since the previous chunk (a burst never
    spans a mark).  A burst records its direction, the arrival times of its
    first and last chunk, its byte count and its chunk count.
  - A *turnaround*, or *round trip*, is a client→server burst immediately
    followed by a server→client burst of the same connection: the number of
    times the direction of traffic switched from client→server to
    server→client (:func:`count_round_trips`).  Three request/response pairs
    in lock-step are 3; three requests sent together and then answered
    together are 1; a request that is never answered is 0.

  With a delay ``d``, a client that waits for an answer before its next
  request is always seen as separate bursts (the answer reaches the proxy
  ``d`` after the request left it, the next request at least ``2d`` after);
  a client burst that lasts longer than ``d`` may be interleaved with early
  answers and counted as several.

* **Cut after N bytes** (:meth:`TcpProxy.cut_after`): the first connection
  that has forwarded ``N`` bytes in one direction (client→server by default),
  counted from when the rule was armed (or from its opening, for a later
  connection), is closed on both sides with a TCP RST once those bytes have
  left the proxy, and its further data is dropped; optionally the proxy is
  then killed.  Exactly ``N`` bytes reach the far side.

* **Kill and revive** (:meth:`TcpProxy.kill`, :meth:`TcpProxy.revive`): a
  killed proxy resets (RST) every open connection and every connection
  accepted until it is revived, so the target looks dead to the client; the
  listening port stays bound, so reviving cannot lose it.

Times are :func:`time.monotonic` seconds.  Statistics are read as immutable
snapshots (:class:`ConnectionStats`).
"""
from __future__ import annotations

import collections
import enum
import errno
import fcntl
import itertools
import selectors
import socket
import struct
import termios
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "Burst",
    "C2S",
    "ConnectionStats",
    "Direction",
    "Mark",
    "ProxyError",
    "ProxySet",
    "S2C",
    "TcpProxy",
    "count_round_trips",
]

T = TypeVar("T")

LISTEN_HOST = "127.0.0.1"
# Largest read from one socket at a time (bytes).
RECV_SIZE = 256 * 1024
# Largest write to one socket at a time (bytes); bounds the copy per send().
SEND_SIZE = 1024 * 1024
# Default bytes held per direction and connection before the proxy stops reading.
DEFAULT_MAX_BUFFER = 16 * 1024 * 1024
# How long a cut waits for the kernel to hand the last allowed bytes to the
# peer (unacknowledged bytes in the send queue) before resetting anyway.
CUT_DRAIN_TIMEOUT = 2.0
CUT_DRAIN_POLL = 0.002
# How long a command posted to the proxy's thread may take.
COMMAND_TIMEOUT = 10.0

_SERIALS = itertools.count(1)  # TcpProxy.serial: tells the marks of proxies apart


class ProxyError(RuntimeError):
    """The proxy's thread failed, or a command to it did not complete."""


class Direction(enum.Enum):
    """Which way data flows through the proxy."""

    C2S = "client->server"
    S2C = "server->client"

    @property
    def reverse(self) -> Direction:
        """The other direction."""
        return Direction.S2C if self is Direction.C2S else Direction.C2S


C2S = Direction.C2S
S2C = Direction.S2C


@dataclass(frozen=True)
class Burst:
    """A maximal run of chunks in one direction on one connection (see the module docstring).

    :ivar direction: which way the data went.
    :ivar started_at: arrival time of the first chunk at the proxy (monotonic seconds).
    :ivar ended_at: arrival time of the last chunk.
    :ivar nbytes: bytes in the burst.
    :ivar chunks: number of chunks (``recv`` results).
    :ivar epoch: how many :meth:`TcpProxy.mark` calls preceded the burst.
    """

    direction: Direction
    started_at: float
    ended_at: float
    nbytes: int
    chunks: int
    epoch: int


@dataclass(frozen=True)
class Mark:
    """A point in one proxy's traffic, from :meth:`TcpProxy.mark`.

    :ivar proxy: the serial number of the proxy that took it.
    :ivar epoch: bursts with ``epoch >= mark.epoch`` began after the mark.
    :ivar at: when the mark was taken (monotonic seconds).
    """

    proxy: int
    epoch: int
    at: float


def count_round_trips(bursts: Sequence[Burst]) -> int:
    """Number of client→server bursts immediately followed by a server→client burst.

    :param bursts: bursts of one connection, in order.
    """
    return sum(1 for first, second in zip(bursts, bursts[1:])
               if first.direction is C2S and second.direction is S2C)


@dataclass(frozen=True)
class ConnectionStats:
    """A snapshot of one proxied connection.

    :ivar proxy: the serial number of the proxy (as in :class:`Mark`).
    :ivar id: 1 for the proxy's first accepted connection, then 2, 3, ...
    :ivar client: the client's address ``(host, port)``.
    :ivar opened_at: when the proxy accepted it (monotonic seconds).
    :ivar connected_at: when the proxy's connection to the target was
        established, or None if it was not (yet).
    :ivar closed_at: when it was closed, or None while open.
    :ivar close_reason: None while open; ``"closed"`` (both sides ended
        normally), ``"cut"`` (by :meth:`TcpProxy.cut_after`), ``"killed"``,
        ``"rejected"`` (accepted while killed), ``"stopped"``, or a
        description of an error (``"client reset: ..."``, ``"connect failed: ..."``).
    :ivar c2s_received: bytes that arrived from the client.
    :ivar c2s_forwarded: bytes written to the target.
    :ivar s2c_received: bytes that arrived from the target.
    :ivar s2c_forwarded: bytes written to the client.
    :ivar bursts: every burst so far, in order.
    :ivar first_bytes: the first bytes the client sent (up to 16).
    """

    proxy: int
    id: int
    client: tuple[str, int]
    opened_at: float
    connected_at: float | None
    closed_at: float | None
    close_reason: str | None
    c2s_received: int
    c2s_forwarded: int
    s2c_received: int
    s2c_forwarded: int
    bursts: tuple[Burst, ...]
    first_bytes: bytes = b""

    @property
    def protocol(self) -> str | None:
        """What the client's first bytes say it speaks: ``"tls"`` (a TLS ClientHello, as the
        HTTPS storage protocol starts), ``"foolscap"`` (``GET /id/``), ``"other"``, or None
        before any byte."""
        if not self.first_bytes:
            return None
        if self.first_bytes[:1] == b"\x16":
            return "tls"
        if self.first_bytes.startswith(b"GET /id/"):
            return "foolscap"
        return "other"

    @property
    def is_open(self) -> bool:
        """Whether the connection was still open when the snapshot was taken."""
        return self.closed_at is None

    def bursts_since(self, mark: Mark | None = None) -> tuple[Burst, ...]:
        """The bursts that began after ``mark`` (all of them if None).

        :raises ValueError: if ``mark`` was taken by another proxy.
        """
        if mark is None:
            return self.bursts
        if mark.proxy != self.proxy:
            raise ValueError(f"mark of proxy #{mark.proxy} used on proxy #{self.proxy}")
        return tuple(b for b in self.bursts if b.epoch >= mark.epoch)

    def round_trips(self, since: Mark | None = None) -> int:
        """Turnarounds (:func:`count_round_trips`) among the bursts since ``since``."""
        return count_round_trips(self.bursts_since(since))

    def directions(self, since: Mark | None = None) -> list[Direction]:
        """The directions of the bursts since ``since``, e.g. ``[C2S, S2C, C2S, S2C]``."""
        return [b.direction for b in self.bursts_since(since)]


# ---------------------------------------------------------------- internals
# Everything below the public classes runs in the proxy's thread, except where
# noted; the proxy's lock guards every field that other threads read.


class _BurstAcc:
    """A burst still growing (mutable twin of :class:`Burst`)."""

    __slots__ = ("direction", "started_at", "ended_at", "nbytes", "chunks", "epoch")

    def __init__(self, direction: Direction, at: float, nbytes: int, epoch: int) -> None:
        self.direction = direction
        self.started_at = at
        self.ended_at = at
        self.nbytes = nbytes
        self.chunks = 1
        self.epoch = epoch

    def freeze(self) -> Burst:
        return Burst(self.direction, self.started_at, self.ended_at, self.nbytes, self.chunks,
                     self.epoch)


class _Pipe:
    """One direction of one connection: a timed queue, then an output buffer."""

    def __init__(self, direction: Direction, src: socket.socket, dst: socket.socket) -> None:
        self.direction = direction
        self.src = src
        self.dst = dst
        # (release time, chunk) in arrival order; None as chunk is the end of stream.
        self.queue: collections.deque[tuple[float, bytes | None]] = collections.deque()
        self.queued = 0              # bytes in self.queue
        self.out = bytearray()       # released, not yet written to dst
        self.eof_in = False          # src ended its stream (recv returned b"")
        self.eof_released = False   # that end of stream has left the queue
        self.eof_out = False         # dst was shut down for writing
        self.received = 0
        self.forwarded = 0
        self.budget: int | None = None  # bytes still allowed before the cut

    def held(self) -> int:
        """Bytes the proxy holds for this direction."""
        return self.queued + len(self.out)

    def last_release(self) -> float:
        return self.queue[-1][0] if self.queue else 0.0


class _Conn:
    """One proxied connection."""

    def __init__(self, serial: int, conn_id: int, client: socket.socket,
                 address: tuple[str, int], server: socket.socket, now: float) -> None:
        self.serial = serial
        self.id = conn_id
        self.client = client
        self.server = server
        self.address = address
        self.opened_at = now
        self.connected_at: float | None = None
        self.closed_at: float | None = None
        self.close_reason: str | None = None
        self.c2s = _Pipe(C2S, client, server)
        self.s2c = _Pipe(S2C, server, client)
        self.bursts: list[_BurstAcc] = []
        self.first_bytes = b""
        self.held_by_rule = False  # stalled by a hold rule until disarm()
        self.cutting_since: float | None = None   # the cut is waiting for the send queue
        self.cut_pipe: _Pipe | None = None
        self.events: dict[socket.socket, int] = {client: 0, server: 0}

    @property
    def connected(self) -> bool:
        return self.connected_at is not None

    @property
    def closed(self) -> bool:
        return self.closed_at is not None

    def pipes(self) -> tuple[_Pipe, _Pipe]:
        return self.c2s, self.s2c

    def pipe(self, direction: Direction) -> _Pipe:
        return self.c2s if direction is C2S else self.s2c

    def snapshot(self) -> ConnectionStats:
        return ConnectionStats(
            proxy=self.serial, id=self.id, client=self.address, opened_at=self.opened_at,
            connected_at=self.connected_at, closed_at=self.closed_at,
            close_reason=self.close_reason,
            c2s_received=self.c2s.received, c2s_forwarded=self.c2s.forwarded,
            s2c_received=self.s2c.received, s2c_forwarded=self.s2c.forwarded,
            bursts=tuple(b.freeze() for b in self.bursts), first_bytes=self.first_bytes)


@dataclass
class _CutRule:
    nbytes: int
    direction: Direction
    kill: bool
    hold: bool = False


def _reset(sock: socket.socket) -> None:
    """Close ``sock`` abruptly: SO_LINGER 0 makes close() send a RST and drop unsent data."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


def _unsent_bytes(sock: socket.socket) -> int:
    """Bytes in ``sock``'s kernel send queue not yet acknowledged by the peer (Linux), else 0."""
    try:
        raw = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, struct.pack("i", 0))
    except OSError:
        return 0
    return int(struct.unpack("i", raw)[0])


class TcpProxy:
    """A TCP proxy on ``127.0.0.1`` in front of ``target_host:target_port``.

    See the module docstring for the delay, burst, round-trip, cut and kill
    semantics.  Use as a context manager, or call :meth:`start` then
    :meth:`stop` (in a ``finally``).

    :param target_host: where connections are forwarded (e.g. ``"127.0.0.1"``).
    :param target_port: the target's TCP port.
    :param delay: one-way delay in seconds, applied to each direction (>= 0).
    :param listen_port: the port to listen on; 0 (the default) lets the
        kernel choose one (read it from :attr:`port` after :meth:`start`).
    :param max_buffer: bytes held per direction and connection (delayed or
        waiting to be written) before the proxy stops reading that side.
    :param name: a label for the thread and ``repr``.
    :raises ValueError: for a negative delay or a non-positive ``max_buffer``.

    :ivar target: ``(target_host, target_port)``.
    :ivar serial: a number unique to this proxy in the process (see :class:`Mark`).
    """

    def __init__(self, target_host: str, target_port: int, *, delay: float = 0.0,
                 listen_port: int = 0, max_buffer: int = DEFAULT_MAX_BUFFER,
                 name: str = "") -> None:
        if max_buffer <= 0:
            raise ValueError(f"max_buffer must be positive, not {max_buffer}")
        self.target = (target_host, target_port)
        self.serial = next(_SERIALS)
        self.name = name or f"proxy->{target_host}:{target_port}"
        self._listen_port = listen_port
        self._max_buffer = max_buffer
        self._lock = threading.RLock()
        self._delays = {C2S: 0.0, S2C: 0.0}
        self.set_delay(delay)

        self._changed = threading.Condition(self._lock)   # notified after each loop pass
        self._thread: threading.Thread | None = None
        self._selector: selectors.BaseSelector | None = None
        self._listener: socket.socket | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._stopping = False
        self._error: BaseException | None = None
        self._commands: collections.deque[Callable[[], None]] = collections.deque()

        self._ids = itertools.count(1)
        self._open: dict[int, _Conn] = {}
        self._all: list[_Conn] = []
        self._epoch = 0
        self._killed = False
        self._cut_rule: _CutRule | None = None
        self._cuts: list[int] = []
        self._cut_event = threading.Event()
        self._hold_event = threading.Event()
        self._last_activity = time.monotonic()

    def __repr__(self) -> str:
        port = self._listener.getsockname()[1] if self._listener is not None else "-"
        return f"<TcpProxy {self.name} 127.0.0.1:{port} -> {self.target[0]}:{self.target[1]}>"

    # ------------------------------------------------------------ life cycle

    def start(self) -> TcpProxy:
        """Bind the listening socket and start the proxy's thread; returns ``self``.

        :raises OSError: if the port cannot be bound.
        :raises ProxyError: if the proxy was started before.
        """
        if self._thread is not None:
            raise ProxyError(f"{self!r} was already started")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((LISTEN_HOST, self._listen_port))
            listener.listen(128)
            listener.setblocking(False)
        except BaseException:
            listener.close()
            raise
        self._listener = listener
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ, self._on_accept)
        selector.register(self._wake_r, selectors.EVENT_READ, self._on_wake)
        self._selector = selector
        self._thread = threading.Thread(target=self._run, name=f"TcpProxy {self.name}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = COMMAND_TIMEOUT) -> None:
        """Reset every connection, close the listening socket and join the thread.

        Calling it again, or on a proxy never started, does nothing.

        :raises ProxyError: if the thread does not end within ``timeout``
            seconds, or if it had failed (the cause is chained).
        """
        thread = self._thread
        if thread is None:
            return
        with self._lock:
            self._stopping = True
        self._wake()
        thread.join(timeout)
        if thread.is_alive():
            raise ProxyError(f"{self!r}: thread did not stop within {timeout:g} s")
        if self._error is not None:
            error, self._error = self._error, None
            raise ProxyError(f"{self!r}: the proxy thread failed") from error

    def __enter__(self) -> TcpProxy:
        return self.start() if self._thread is None else self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The listening port on 127.0.0.1.

        :raises ProxyError: before :meth:`start`.
        """
        if self._listener is None:
            raise ProxyError(f"{self!r} is not started")
        port: int = self._listener.getsockname()[1]
        return port

    @property
    def address(self) -> tuple[str, int]:
        """``("127.0.0.1", port)``: where clients connect."""
        return LISTEN_HOST, self.port

    @property
    def running(self) -> bool:
        """Whether the proxy's thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    # ------------------------------------------------------------ settings

    @property
    def delay(self) -> float:
        """The client→server one-way delay in seconds; setting it sets both directions."""
        return self._delays[C2S]

    @delay.setter
    def delay(self, seconds: float) -> None:
        self.set_delay(seconds)

    def set_delay(self, c2s: float, s2c: float | None = None) -> None:
        """Set the one-way delays (seconds, >= 0) for data arriving from now on.

        Data already held keeps its release time; order is always preserved
        (a chunk is never released before the one that arrived before it).

        :param s2c: the server→client delay; the same as ``c2s`` if None.
        :raises ValueError: for a negative delay.
        """
        s2c = c2s if s2c is None else s2c
        if c2s < 0 or s2c < 0:
            raise ValueError(f"delays must be >= 0, not {c2s}, {s2c}")
        with self._lock:
            self._delays = {C2S: float(c2s), S2C: float(s2c)}

    # ------------------------------------------------------------ statistics

    def mark(self) -> Mark:
        """Start a new epoch: bursts from now on are separate from earlier ones.

        Typically taken once connections are warm and quiet (see
        :meth:`wait_idle`), so that ``stats.round_trips(since=mark)`` counts
        only what follows.
        """
        with self._lock:
            self._epoch += 1
            return Mark(self.serial, self._epoch, time.monotonic())

    def connections(self) -> list[ConnectionStats]:
        """Snapshots of every connection accepted so far (open and closed), oldest first."""
        with self._lock:
            return [conn.snapshot() for conn in self._all]

    def open_connections(self) -> list[ConnectionStats]:
        """Snapshots of the connections open right now, oldest first."""
        with self._lock:
            return [conn.snapshot() for conn in self._open.values()]

    def round_trips(self, since: Mark | None = None) -> int:
        """Turnarounds since ``since``, summed over every connection."""
        return sum(stats.round_trips(since) for stats in self.connections())

    @property
    def killed(self) -> bool:
        """Whether the proxy resets every connection (between :meth:`kill` and :meth:`revive`)."""
        with self._lock:
            return self._killed

    @property
    def cuts(self) -> list[int]:
        """Ids of the connections closed by a :meth:`cut_after` rule, in order."""
        with self._lock:
            return list(self._cuts)

    def held_bytes(self) -> int:
        """Bytes the proxy holds right now (delayed or waiting to be written), all connections."""
        with self._lock:
            return sum(pipe.held() for conn in self._open.values() for pipe in conn.pipes())

    def idle_for(self) -> float:
        """Seconds since data last arrived or left, or 0.0 while the proxy holds data."""
        with self._lock:
            if any(pipe.held() or (pipe.eof_in and not pipe.eof_released)
                   for conn in self._open.values() for pipe in conn.pipes()):
                return 0.0
            return max(0.0, time.monotonic() - self._last_activity)

    def wait_idle(self, idle: float, timeout: float) -> None:
        """Wait until no data has passed for ``idle`` seconds and none is held.

        Woken by the proxy's own activity, so it does not poll.

        :raises TimeoutError: if that does not happen within ``timeout`` seconds.
        :raises ProxyError: if the proxy's thread has died.
        """
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                self._check_alive()
                quiet = self.idle_for()
                if quiet >= idle:
                    return
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{self!r}: not idle for {idle:g} s within {timeout:g} s")
                self._changed.wait(min(idle - quiet if quiet else idle, remaining))

    def wait_for(self, predicate: Callable[[TcpProxy], T], timeout: float, what: str) -> T:
        """Wait until ``predicate(self)`` is true, re-checking after each pass of the proxy's loop.

        The predicate runs with the proxy's lock held: it may read statistics
        but must not call :meth:`kill`, :meth:`cut_after` and the like.

        :returns: the predicate's true value.
        :raises TimeoutError: if it stays false for ``timeout`` seconds.
        :raises ProxyError: if the proxy's thread has died.
        """
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                self._check_alive()
                value = predicate(self)
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{self!r}: timed out after {timeout:g} s waiting "
                                       f"for {what}")
                self._changed.wait(min(remaining, 0.5))

    # ------------------------------------------------------------ faults

    def cut_after(self, nbytes: int, *, direction: Direction = C2S, kill: bool = False) -> None:
        """Arm a one-shot rule: reset the first connection that forwards ``nbytes`` more bytes.

        Bytes are counted per connection in ``direction``, from now on for open
        connections and from their opening for later ones.  The connection that
        reaches ``nbytes`` first forwards exactly that many, stops reading, waits
        until the kernel has handed them to the peer (at most
        ``CUT_DRAIN_TIMEOUT`` s) and is reset on both sides; data it still
        holds is dropped.  Then the rule is disarmed; with ``kill`` the proxy is
        also killed (:meth:`kill`), so that reconnections fail too.  Arming a
        rule replaces one still armed.  Wait for it with :meth:`wait_for_cut`.

        :param nbytes: bytes to forward before the cut (>= 1).
        :raises ValueError: if ``nbytes`` < 1.
        """
        if nbytes < 1:
            raise ValueError(f"nbytes must be >= 1, not {nbytes} (use kill() to cut now)")

        def arm() -> None:
            self._cut_event.clear()
            self._cut_rule = _CutRule(nbytes, direction, kill)
            for conn in self._open.values():
                conn.pipe(direction).budget = nbytes
                conn.pipe(direction.reverse).budget = None

        self._call(arm)

    def hold_after(self, nbytes: int, *, direction: Direction = C2S) -> None:
        """Arm a one-shot rule: stall the first connection that forwards ``nbytes`` more bytes.

        Counted as for :meth:`cut_after`, but the connection that reaches
        ``nbytes`` is not reset: it forwards nothing more in ``direction`` (it
        keeps reading up to ``max_buffer``, then pushes back) until
        :meth:`disarm`, which sends what it holds, in order. The other
        connections go on as usual once it has fired. Wait for it with
        :meth:`wait_for_hold`.

        :param nbytes: bytes to forward before stalling (>= 1).
        :raises ValueError: if ``nbytes`` < 1.
        """
        if nbytes < 1:
            raise ValueError(f"nbytes must be >= 1, not {nbytes}")

        def arm() -> None:
            self._hold_event.clear()
            self._cut_rule = _CutRule(nbytes, direction, kill=False, hold=True)
            for conn in self._open.values():
                conn.pipe(direction).budget = nbytes
                conn.pipe(direction.reverse).budget = None

        self._call(arm)

    def wait_for_hold(self, timeout: float) -> None:
        """Wait until a :meth:`hold_after` rule has stalled a connection.

        :raises TimeoutError: if it does not within ``timeout`` seconds.
        """
        if not self._hold_event.wait(timeout):
            raise TimeoutError(f"{self!r}: nothing held within {timeout:g} s")

    def disarm(self) -> None:
        """Cancel a :meth:`cut_after` rule that has not fired, or release a :meth:`hold_after`."""
        def disarm() -> None:
            self._cut_rule = None
            for conn in self._open.values():
                conn.held_by_rule = False
                for pipe in conn.pipes():
                    pipe.budget = None
                self._flush_all(conn)
                self._update_interest(conn)

        self._call(disarm)

    def wait_for_cut(self, timeout: float) -> ConnectionStats:
        """Wait until a :meth:`cut_after` rule has fired; return the cut connection's snapshot.

        :raises TimeoutError: if it does not fire within ``timeout`` seconds.
        """
        if not self._cut_event.wait(timeout):
            raise TimeoutError(f"{self!r}: no cut within {timeout:g} s")
        with self._lock:
            conn_id = self._cuts[-1]
            return next(conn.snapshot() for conn in self._all if conn.id == conn_id)

    def kill(self) -> None:
        """Make the target look dead: reset every open connection and every new one.

        Returns once the open connections are reset.  The port stays bound:
        new connections are accepted and reset at once (close reason
        ``"rejected"``).
        """
        def kill() -> None:
            self._killed = True
            for conn in list(self._open.values()):
                self._abort(conn, "killed")

        self._call(kill)

    def revive(self) -> None:
        """Undo :meth:`kill`: forward new connections again."""
        def revive() -> None:
            self._killed = False

        self._call(revive)

    # ------------------------------------------------------------ the thread

    def _check_alive(self) -> None:
        if self._error is not None:
            raise ProxyError(f"{self!r}: the proxy thread failed") from self._error
        if self._thread is None or not self._thread.is_alive():
            raise ProxyError(f"{self!r} is not running")

    def _wake(self) -> None:
        if self._wake_w is None:
            return
        try:
            self._wake_w.send(b"x")
        except (BlockingIOError, OSError):
            pass  # already awake (buffer full) or stopped

    def _call(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` in the proxy's thread (under the lock) and wait for it."""
        if threading.current_thread() is self._thread:
            fn()
            return
        self._check_alive()
        done = threading.Event()
        failure: list[BaseException] = []

        def command() -> None:
            try:
                fn()
            except BaseException as e:  # reported to the caller, not the loop
                failure.append(e)
            finally:
                done.set()

        with self._lock:
            self._commands.append(command)
        self._wake()
        deadline = time.monotonic() + COMMAND_TIMEOUT
        while not done.wait(0.05):
            self._check_alive()
            if time.monotonic() > deadline:
                raise ProxyError(f"{self!r}: command did not complete in {COMMAND_TIMEOUT:g} s")
        if failure:
            raise failure[0]

    def _run(self) -> None:
        selector = self._selector
        assert selector is not None
        try:
            while True:
                with self._lock:
                    if self._stopping:
                        break
                    timeout = self._next_timeout(time.monotonic())
                events = selector.select(timeout)
                with self._changed:
                    now = time.monotonic()
                    for key, mask in events:
                        handler = key.data
                        if isinstance(handler, _Conn):
                            sock: socket.socket = key.fileobj  # type: ignore[assignment]
                            self._on_conn_event(handler, sock, mask, now)
                        else:
                            handler(now)
                    while self._commands:
                        self._commands.popleft()()
                    now = time.monotonic()
                    for conn in list(self._open.values()):
                        self._release_due(conn, now)
                        self._check_cut(conn, now)
                        if not conn.closed:
                            self._update_interest(conn)
                    self._changed.notify_all()
        except BaseException as e:  # surfaced by stop() and by every later call
            self._error = e
        finally:
            with self._changed:
                for conn in list(self._open.values()):
                    self._abort(conn, "stopped")
                while self._commands:   # never leave a caller waiting
                    self._commands.popleft()()
                selector.close()
                for sock in (self._listener, self._wake_r, self._wake_w):
                    if sock is not None:
                        sock.close()
                self._changed.notify_all()

    def _next_timeout(self, now: float) -> float | None:
        """Seconds until the next chunk is due or a cut must be re-checked; None: no timer."""
        due: float | None = None
        for conn in self._open.values():
            if conn.cutting_since is not None:
                return CUT_DRAIN_POLL
            for pipe in conn.pipes():
                if pipe.queue:
                    at = pipe.queue[0][0]
                    due = at if due is None else min(due, at)
        return None if due is None else max(0.0, due - now)

    def _on_wake(self, now: float) -> None:
        assert self._wake_r is not None
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def _on_accept(self, now: float) -> None:
        assert self._listener is not None and self._selector is not None
        while True:
            try:
                client, address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if e.errno in (errno.ECONNABORTED, errno.EMFILE, errno.ENFILE):
                    return
                raise
            client.setblocking(False)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            server.setblocking(False)
            server.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Conn(self.serial, next(self._ids), client, (address[0], address[1]), server, now)
            self._all.append(conn)
            self._open[conn.id] = conn
            self._last_activity = now
            if self._killed:
                self._abort(conn, "rejected")
                continue
            rule = self._cut_rule
            if rule is not None:
                conn.pipe(rule.direction).budget = rule.nbytes
            result = server.connect_ex(self.target)
            if result not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
                self._abort(conn, f"connect failed: {errno.errorcode.get(result, result)}")
                continue
            self._update_interest(conn)

    def _on_conn_event(self, conn: _Conn, sock: socket.socket, mask: int, now: float) -> None:
        if conn.closed:
            return
        if sock is conn.server and not conn.connected:
            if mask & (selectors.EVENT_WRITE | selectors.EVENT_READ):
                error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if error:
                    self._abort(conn, f"connect failed: {errno.errorcode.get(error, error)}")
                    return
                conn.connected_at = now
                self._flush_all(conn)
            return
        # An error or hang-up is reported as both events: read only when asked to.
        if mask & selectors.EVENT_READ and conn.events[sock] & selectors.EVENT_READ:
            pipe = conn.c2s if sock is conn.client else conn.s2c
            self._read(conn, pipe, now)
        if not conn.closed and mask & selectors.EVENT_WRITE:
            pipe = conn.s2c if sock is conn.client else conn.c2s
            self._flush(conn, pipe)

    def _read(self, conn: _Conn, pipe: _Pipe, now: float) -> None:
        side = "client" if pipe.direction is C2S else "server"
        try:
            data = pipe.src.recv(RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._abort(conn, f"{side} reset: {e.strerror or e}")
            return
        release = max(now + self._delays[pipe.direction], pipe.last_release())
        self._last_activity = now
        if not data:
            pipe.eof_in = True
            pipe.queue.append((release, None))
            return
        pipe.queue.append((release, data))
        pipe.queued += len(data)
        pipe.received += len(data)
        if pipe.direction is C2S and len(conn.first_bytes) < 16:
            conn.first_bytes += data[:16 - len(conn.first_bytes)]
        last = conn.bursts[-1] if conn.bursts else None
        if last is None or last.direction is not pipe.direction or last.epoch != self._epoch:
            conn.bursts.append(_BurstAcc(pipe.direction, now, len(data), self._epoch))
        else:
            last.ended_at = now
            last.nbytes += len(data)
            last.chunks += 1

    def _release_due(self, conn: _Conn, now: float) -> None:
        for pipe in conn.pipes():
            while pipe.queue and pipe.queue[0][0] <= now:
                _, data = pipe.queue.popleft()
                if data is None:
                    pipe.eof_released = True
                else:
                    pipe.queued -= len(data)
                    pipe.out += data
        self._flush_all(conn)

    def _flush_all(self, conn: _Conn) -> None:
        for pipe in conn.pipes():
            if not conn.closed:
                self._flush(conn, pipe)

    def _flush(self, conn: _Conn, pipe: _Pipe) -> None:
        """Write what ``pipe`` may write now; then half-close, close or start a cut."""
        if not conn.connected or conn.closed or conn.cutting_since is not None:
            return
        while pipe.out and pipe.budget != 0:
            limit = min(len(pipe.out), SEND_SIZE)
            if pipe.budget is not None:
                limit = min(limit, pipe.budget)
            try:
                sent = pipe.dst.send(pipe.out[:limit])
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:
                side = "server" if pipe.direction is C2S else "client"
                self._abort(conn, f"{side} reset: {e.strerror or e}")
                return
            del pipe.out[:sent]
            pipe.forwarded += sent
            self._last_activity = time.monotonic()
            if pipe.budget is not None:
                pipe.budget -= sent
        if pipe.budget == 0 and self._cut_rule is not None and self._cut_rule.hold:
            self._hold(conn)
            return
        if pipe.budget == 0 and conn.held_by_rule:
            return
        if pipe.budget == 0:
            conn.cutting_since = time.monotonic()
            conn.cut_pipe = pipe
            self._update_interest(conn)
            return
        if not pipe.out and pipe.eof_released and not pipe.eof_out:
            pipe.eof_out = True
            try:
                pipe.dst.shutdown(socket.SHUT_WR)
            except OSError as e:
                side = "server" if pipe.direction is C2S else "client"
                self._abort(conn, f"{side} reset: {e.strerror or e}")
                return
        if conn.c2s.eof_out and conn.s2c.eof_out:
            self._close(conn, "closed")

    def _hold(self, conn: _Conn) -> None:
        """A hold rule fired on ``conn``: it stays stalled; the others are let go."""
        self._cut_rule = None
        conn.held_by_rule = True
        for other in list(self._open.values()):
            if other is not conn:
                for pipe in other.pipes():
                    pipe.budget = None
                self._flush_all(other)
        self._update_interest(conn)
        self._hold_event.set()

    def _check_cut(self, conn: _Conn, now: float) -> None:
        """Reset a connection being cut once its last allowed bytes have left the kernel."""
        if conn.closed or conn.cutting_since is None:
            return
        assert conn.cut_pipe is not None
        if (_unsent_bytes(conn.cut_pipe.dst) > 0
                and now - conn.cutting_since < CUT_DRAIN_TIMEOUT):
            return
        rule = self._cut_rule
        self._cut_rule = None
        for other in self._open.values():
            for pipe in other.pipes():
                pipe.budget = None
        self._abort(conn, "cut")
        self._cuts.append(conn.id)
        if rule is not None and rule.kill:
            self._killed = True
            for other in list(self._open.values()):
                self._abort(other, "killed")
        else:
            for other in list(self._open.values()):
                self._flush_all(other)
        self._cut_event.set()

    def _update_interest(self, conn: _Conn) -> None:
        assert self._selector is not None
        wanted = {conn.client: 0, conn.server: 0}
        if not conn.connected:
            wanted[conn.server] = selectors.EVENT_WRITE
            if not conn.c2s.eof_in and conn.c2s.held() < self._max_buffer:
                wanted[conn.client] |= selectors.EVENT_READ
        elif conn.cutting_since is None:
            for pipe in conn.pipes():
                if not pipe.eof_in and pipe.held() < self._max_buffer:
                    wanted[pipe.src] |= selectors.EVENT_READ
                if pipe.out and pipe.budget != 0:
                    wanted[pipe.dst] |= selectors.EVENT_WRITE
        for sock, events in wanted.items():
            current = conn.events[sock]
            if events == current:
                continue
            if current == 0:
                self._selector.register(sock, events, conn)
            elif events == 0:
                self._selector.unregister(sock)
            else:
                self._selector.modify(sock, events, conn)
            conn.events[sock] = events

    def _forget(self, conn: _Conn, reason: str) -> None:
        assert self._selector is not None
        for sock, events in conn.events.items():
            if events:
                self._selector.unregister(sock)
            conn.events[sock] = 0
        conn.closed_at = time.monotonic()
        conn.close_reason = reason
        conn.cutting_since = None
        for pipe in conn.pipes():
            pipe.queue.clear()
            pipe.queued = 0
            pipe.out.clear()
        self._open.pop(conn.id, None)

    def _abort(self, conn: _Conn, reason: str) -> None:
        """Reset both sides of ``conn`` (RST) and drop what it holds."""
        if conn.closed:
            return
        self._forget(conn, reason)
        _reset(conn.client)
        _reset(conn.server)

    def _close(self, conn: _Conn, reason: str) -> None:
        """Close both sides of ``conn`` normally (both streams have ended)."""
        if conn.closed:
            return
        self._forget(conn, reason)
        conn.client.close()
        conn.server.close()


class ProxySet:
    """The proxies one fixture or test started; stops them all, newest first.

    Use as a context manager, or call :meth:`stop_all` in a ``finally``.
    """

    def __init__(self) -> None:
        self._proxies: list[TcpProxy] = []

    def __enter__(self) -> ProxySet:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop_all()

    def __iter__(self) -> Iterator[TcpProxy]:
        return iter(list(self._proxies))

    def __len__(self) -> int:
        return len(self._proxies)

    def start(self, target_host: str, target_port: int, **options: Any) -> TcpProxy:
        """Start a :class:`TcpProxy` (same arguments) and remember it for :meth:`stop_all`."""
        proxy = TcpProxy(target_host, target_port, **options).start()
        self._proxies.append(proxy)
        return proxy

    def adopt(self, proxies: Iterable[TcpProxy]) -> None:
        """Remember proxies started elsewhere, so that :meth:`stop_all` stops them."""
        self._proxies.extend(proxies)

    def stop_all(self) -> None:
        """Stop every remembered proxy (newest first) and forget them.

        :raises ProxyError: after trying them all, the first failure of one.
        """
        first: ProxyError | None = None
        while self._proxies:
            try:
                self._proxies.pop().stop()
            except ProxyError as e:
                first = first or e
        if first is not None:
            raise first

"""The test proxy (``tests/support/proxy.py``) against a small threaded line server, and
a grid of our nodes behind proxies (``tests/support/proxied_grid.py``)."""
from __future__ import annotations

import hashlib
import random
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.nodes import TahoeTool, our_tahoe
from tests.support.processes import ProcessSet, wait_until
from tests.support.proxied_grid import start_proxied_grid
from tests.support.proxy import (C2S, S2C, ConnectionStats, ProxySet, TcpProxy,
                                 count_round_trips)

# Generous bound on the proxy's own overhead for one round trip (seconds).
SLACK = 0.15
WAIT = 10.0


@dataclass
class ServedConnection:
    """What the line server saw on one connection.

    :ivar received: bytes received so far.
    :ivar ending: None while open; ``"eof"`` or ``"reset"``.
    """

    received: int = 0
    digest: Any = field(default_factory=hashlib.sha256)
    ending: str | None = None


class LineServer:
    """A TCP server on 127.0.0.1, one thread per connection.

    Each complete line ``X\\n`` is answered with ``re:X\\n`` (the answers to
    the lines of one ``recv`` go out in one ``sendall``); at end of stream it
    sends ``total:<bytes received>\\n`` and closes.  It records, per
    connection, the bytes received, their SHA-256 and how the stream ended.
    """

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.served: list[ServedConnection] = []
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, name="LineServer", daemon=True)
        self._acceptor.start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            record = ServedConnection()
            thread = threading.Thread(target=self._serve, args=(sock, record),
                                      name="LineServer conn", daemon=True)
            with self._lock:
                self.served.append(record)
                self._sockets.append(sock)
                self._threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket, record: ServedConnection) -> None:
        pending = b""
        try:
            while True:
                try:
                    data = sock.recv(256 * 1024)
                except ConnectionResetError:
                    record.ending = "reset"
                    return
                if not data:
                    sock.sendall(b"total:%d\n" % record.received)
                    record.ending = "eof"
                    return
                record.received += len(data)
                record.digest.update(data)
                if b"\n" in data:
                    lines = (pending + data).split(b"\n")
                    pending = lines.pop()
                    sock.sendall(b"".join(b"re:" + line + b"\n" for line in lines))
                elif len(pending) < 1024:
                    pending += data
        except OSError:
            record.ending = record.ending or "reset"
        finally:
            sock.close()

    def stop(self) -> None:
        """Close every socket and join every thread."""
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes accept() on Linux
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self._acceptor.join(WAIT)
        for thread in self._threads:
            thread.join(WAIT)


@pytest.fixture
def server() -> Iterator[LineServer]:
    """A running line server, stopped after the test."""
    line_server = LineServer()
    try:
        yield line_server
    finally:
        line_server.stop()


@pytest.fixture(autouse=True)
def no_leftover_threads() -> Iterator[None]:
    """Every test leaves no proxy or server thread behind (session fixtures' ones aside)."""
    before = set(threading.enumerate())
    yield
    leftovers = [t.name for t in threading.enumerate()
                 if t not in before and t.name.startswith(("TcpProxy", "LineServer"))]
    assert leftovers == []


def connect(proxy: TcpProxy) -> socket.socket:
    """A blocking client socket connected to ``proxy``, with a timeout."""
    sock = socket.create_connection(proxy.address, timeout=WAIT)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_lines(sock: socket.socket, count: int) -> list[bytes]:
    """Read exactly ``count`` lines."""
    data = b""
    while data.count(b"\n") < count:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError(f"end of stream after {data!r}")
        data += chunk
    lines = data.split(b"\n")
    assert lines[count:] == [b""], "read past the expected lines"
    return lines[:count]


def exchange(sock: socket.socket, *requests: bytes) -> list[bytes]:
    """Send the lines in one ``sendall`` and read their answers."""
    sock.sendall(b"".join(r + b"\n" for r in requests))
    return read_lines(sock, len(requests))


def assert_reset(proxy: TcpProxy) -> None:
    """A new connection through ``proxy`` is reset (at connect, send or receive)."""
    with pytest.raises(ConnectionError):
        with connect(proxy) as sock:
            exchange(sock, b"anyone there?")


def forwarded(proxy: TcpProxy) -> int:
    """Client-to-server bytes forwarded on the proxy's first connection (0 before it)."""
    connections = proxy.connections()
    return connections[0].c2s_forwarded if connections else 0


def closed(proxy: TcpProxy) -> ConnectionStats | None:
    """The proxy's first connection once it is closed, else None."""
    connections = proxy.connections()
    return connections[0] if connections and not connections[0].is_open else None


def only_connection(proxy: TcpProxy) -> ConnectionStats:
    """The snapshot of the proxy's single connection."""
    (stats,) = proxy.connections()
    return stats


# ---------------------------------------------------------------- forwarding and delay


def test_forwards_and_closes_cleanly(server: LineServer) -> None:
    """Data goes both ways unchanged and a half-close on each side closes the connection."""
    with TcpProxy("127.0.0.1", server.port) as proxy:
        with connect(proxy) as sock:
            assert exchange(sock, b"hello") == [b"re:hello"]
            sock.shutdown(socket.SHUT_WR)
            assert read_lines(sock, 1) == [b"total:6"]
            assert sock.recv(10) == b""
        stats = proxy.wait_for(lambda p: closed(p), WAIT, "the connection to close")
    assert stats.close_reason == "closed"
    assert (stats.c2s_received, stats.c2s_forwarded) == (6, 6)
    assert (stats.s2c_received, stats.s2c_forwarded) == (9 + 8, 9 + 8)
    assert server.served[0].ending == "eof"
    assert not proxy.running


def test_request_response_takes_two_delays(server: LineServer) -> None:
    """With a one-way delay d, each request/response takes at least 2d and not much more."""
    delay = 0.1
    with TcpProxy("127.0.0.1", server.port, delay=delay) as proxy, connect(proxy) as sock:
        for i in range(3):
            started = time.monotonic()
            assert exchange(sock, b"ping%d" % i) == [b"re:ping%d" % i]
            elapsed = time.monotonic() - started
            assert 2 * delay <= elapsed < 2 * delay + SLACK, elapsed


def test_asymmetric_delay(server: LineServer) -> None:
    """set_delay(c2s, s2c) delays each direction by its own amount."""
    with TcpProxy("127.0.0.1", server.port) as proxy, connect(proxy) as sock:
        proxy.set_delay(0.05, 0.15)
        started = time.monotonic()
        assert exchange(sock, b"x") == [b"re:x"]
        assert 0.2 <= time.monotonic() - started < 0.2 + SLACK
        (request, answer) = only_connection(proxy).bursts
        # Bursts are timed on arrival at the proxy: the answer arrives once the
        # request has been held for the client->server delay.
        assert answer.started_at - request.started_at >= 0.05


def test_delay_does_not_limit_throughput(server: LineServer) -> None:
    """10 MiB pass a proxy with a 50 ms delay each way in well under a second, in order."""
    payload = random.Random(1).randbytes(10 * 1024 * 1024).replace(b"\n", b"N")
    with TcpProxy("127.0.0.1", server.port, delay=0.05) as proxy, connect(proxy) as sock:
        started = time.monotonic()
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)
        assert read_lines(sock, 1) == [b"total:%d" % len(payload)]
        elapsed = time.monotonic() - started
    assert elapsed < 1.0, elapsed
    assert server.served[0].digest.digest() == hashlib.sha256(payload).digest()
    stats = only_connection(proxy)
    assert stats.c2s_forwarded == len(payload)
    assert stats.directions()[:2] == [C2S, S2C] and stats.bursts[0].chunks > 1


# ---------------------------------------------------------------- bursts and round trips


def test_lock_step_requests_are_one_round_trip_each(server: LineServer) -> None:
    """Three requests each waiting for its answer count as three turnarounds."""
    with TcpProxy("127.0.0.1", server.port, delay=0.02) as proxy, connect(proxy) as sock:
        for i in range(3):
            assert exchange(sock, b"q%d" % i) == [b"re:q%d" % i]
        stats = only_connection(proxy)
    assert stats.directions() == [C2S, S2C] * 3
    assert stats.round_trips() == 3 == proxy.round_trips()
    assert [b.nbytes for b in stats.bursts] == [3, 6] * 3
    starts = [b.started_at for b in stats.bursts]
    assert starts == sorted(starts)
    assert all(later - earlier >= 0.02 for earlier, later in zip(starts, starts[1:]))


def test_pipelined_requests_are_one_round_trip(server: LineServer) -> None:
    """Three requests sent together and answered together count as one turnaround."""
    with TcpProxy("127.0.0.1", server.port, delay=0.02) as proxy, connect(proxy) as sock:
        assert exchange(sock, b"a", b"b", b"c") == [b"re:a", b"re:b", b"re:c"]
        stats = only_connection(proxy)
    assert stats.directions() == [C2S, S2C]
    assert stats.round_trips() == 1
    assert (stats.bursts[0].nbytes, stats.bursts[1].nbytes) == (6, 15)


def test_mark_excludes_warm_up(server: LineServer) -> None:
    """Round trips since a mark count only the exchanges after it, and an unanswered
    request is not a round trip."""
    with TcpProxy("127.0.0.1", server.port, delay=0.02) as proxy, connect(proxy) as sock:
        assert exchange(sock, b"warm") == [b"re:warm"]
        assert exchange(sock, b"up") == [b"re:up"]
        proxy.wait_idle(0.01, WAIT)
        mark = proxy.mark()
        assert exchange(sock, b"one", b"two") == [b"re:one", b"re:two"]
        assert exchange(sock, b"three") == [b"re:three"]
        sock.sendall(b"no newline, no answer")
        proxy.wait_for(lambda p: forwarded(p) == 43, WAIT, "the last send")
        stats = only_connection(proxy)
    assert stats.round_trips() == 4
    assert stats.round_trips(since=mark) == 2 == proxy.round_trips(since=mark)
    assert stats.directions(since=mark) == [C2S, S2C, C2S, S2C, C2S]
    assert count_round_trips(stats.bursts_since(mark)[-1:]) == 0


def test_marks_belong_to_their_proxy(server: LineServer) -> None:
    """A mark taken on one proxy cannot be used on another's statistics."""
    with TcpProxy("127.0.0.1", server.port) as first, TcpProxy("127.0.0.1", server.port) as second:
        with connect(first) as sock:
            assert exchange(sock, b"hi") == [b"re:hi"]
        with pytest.raises(ValueError):
            first.connections()[0].round_trips(since=second.mark())
        assert first.connections()[0].round_trips(since=first.mark()) == 0


def test_mark_splits_a_burst(server: LineServer) -> None:
    """A burst never spans a mark, so traffic after a mark is never counted before it."""
    with TcpProxy("127.0.0.1", server.port) as proxy, connect(proxy) as sock:
        sock.sendall(b"part ")
        proxy.wait_for(lambda p: forwarded(p) == 5, WAIT, "first part")
        mark = proxy.mark()
        assert exchange(sock, b"two") == [b"re:part two"]
        stats = only_connection(proxy)
    assert stats.directions() == [C2S, C2S, S2C]
    assert stats.round_trips() == 1 == stats.round_trips(since=mark)
    assert stats.bursts_since(mark)[0].nbytes == 4


# ---------------------------------------------------------------- cuts


def test_cut_after_n_bytes_forwards_exactly_n(server: LineServer) -> None:
    """After arming cut_after(N), exactly N more bytes reach the server; then both sides
    see a reset."""
    nbytes = 50_000
    with TcpProxy("127.0.0.1", server.port, delay=0.01) as proxy, connect(proxy) as sock:
        assert exchange(sock, b"warm-up") == [b"re:warm-up"]
        proxy.cut_after(nbytes)
        try:
            sock.sendall(b"z" * 200_000)
        except (ConnectionResetError, BrokenPipeError):
            pass
        stats = proxy.wait_for_cut(WAIT)
        with pytest.raises(ConnectionResetError):
            while sock.recv(65536):
                pass
        served = server.served[0]
        wait_until(lambda: served.ending, WAIT, "the server to see the end")
    assert stats.close_reason == "cut" and proxy.cuts == [stats.id]
    assert stats.c2s_forwarded == 8 + nbytes
    assert served.received == 8 + nbytes
    assert served.ending == "reset"


def test_cut_applies_to_later_connections_and_can_kill(server: LineServer) -> None:
    """A rule armed before a connection counts from its opening; with kill=True,
    reconnections are reset until revive()."""
    with TcpProxy("127.0.0.1", server.port) as proxy:
        proxy.cut_after(10, kill=True)
        with connect(proxy) as sock:
            try:
                sock.sendall(b"0123456789abcdef\n")
            except (ConnectionResetError, BrokenPipeError):
                pass
            stats = proxy.wait_for_cut(WAIT)
            with pytest.raises(ConnectionResetError):
                sock.recv(100)
        assert stats.c2s_forwarded == 10 and proxy.killed
        wait_until(lambda: server.served and server.served[0].ending, WAIT,
                   "the server to see the end")
        assert server.served[0].received == 10

        assert_reset(proxy)
        proxy.revive()
        with connect(proxy) as sock:
            assert exchange(sock, b"back") == [b"re:back"]
        # The rule fired once: the new connection is not cut.
        with connect(proxy) as sock:
            assert exchange(sock, b"x" * 20) == [b"re:" + b"x" * 20]
    reasons = [c.close_reason for c in proxy.connections()]
    assert reasons[:2] == ["cut", "rejected"] and len(reasons) == 4


def test_cut_server_to_client(server: LineServer) -> None:
    """A cut may count server-to-client bytes: the client gets exactly N bytes of the answer."""
    with TcpProxy("127.0.0.1", server.port) as proxy, connect(proxy) as sock:
        proxy.cut_after(4, direction=S2C)
        sock.sendall(b"hello\n")
        proxy.wait_for_cut(WAIT)
        received = b""
        with pytest.raises(ConnectionResetError):
            while chunk := sock.recv(100):
                received += chunk
    assert received == b"re:h"


def test_disarm(server: LineServer) -> None:
    """A disarmed rule never fires."""
    with TcpProxy("127.0.0.1", server.port) as proxy, connect(proxy) as sock:
        proxy.cut_after(5)
        proxy.disarm()
        assert exchange(sock, b"long enough") == [b"re:long enough"]
        assert proxy.cuts == []


def test_hold_stalls_one_connection_until_disarm(server: LineServer) -> None:
    """hold_after(N) lets exactly N more bytes through on the connection that reaches N,
    keeps the rest while the others carry on, and sends it all, in order, on disarm."""
    with TcpProxy("127.0.0.1", server.port) as proxy, connect(proxy) as bulk, \
            connect(proxy) as other:
        assert exchange(bulk, b"warm-up") == [b"re:warm-up"]
        proxy.hold_after(50_000)
        bulk.sendall(b"z" * 120_000 + b"\n")
        proxy.wait_for_hold(WAIT)
        record = server.served[0]
        wait_until(lambda: record.received == 8 + 50_000, WAIT, "the bytes before the hold")
        assert exchange(other, b"still moving") == [b"re:still moving"]
        time.sleep(0.2)
        assert record.received == 8 + 50_000
        proxy.disarm()
        wait_until(lambda: record.received == 8 + 120_001, WAIT, "the held bytes")
        assert proxy.cuts == []


# ---------------------------------------------------------------- kill, revive, stop


def test_kill_resets_connections_and_revive_accepts_again(server: LineServer) -> None:
    """kill() resets open connections and rejects new ones; revive() forwards again."""
    with TcpProxy("127.0.0.1", server.port) as proxy:
        old = connect(proxy)
        try:
            assert exchange(old, b"before") == [b"re:before"]
            proxy.kill()
            assert proxy.killed
            with pytest.raises(ConnectionResetError):
                old.recv(100)
        finally:
            old.close()
        assert_reset(proxy)
        wait_until(lambda: server.served and server.served[0].ending, WAIT,
                   "the server to see the end")
        assert server.served[0].ending == "reset"
        assert len(server.served) == 1, "a rejected connection reached the server"

        proxy.revive()
        with connect(proxy) as sock:
            assert exchange(sock, b"after") == [b"re:after"]
        reasons = [c.close_reason for c in proxy.connections()]
    assert reasons[:2] == ["killed", "rejected"] and len(reasons) == 3


def test_stop_resets_connections_and_frees_the_port(server: LineServer) -> None:
    """stop() resets open connections, closes the port and joins the thread; it is idempotent."""
    proxies = ProxySet()
    proxy = proxies.start("127.0.0.1", server.port)
    port = proxy.port
    with connect(proxy) as sock:
        assert exchange(sock, b"hi") == [b"re:hi"]
        proxies.stop_all()
        with pytest.raises(ConnectionResetError):
            sock.recv(100)
    assert not proxy.running and len(proxies) == 0
    proxy.stop()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=WAIT).close()
    assert proxy.connections()[0].close_reason == "stopped"


def test_unreachable_target() -> None:
    """A connection to a target that refuses is reset, with the reason recorded."""
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        port = placeholder.getsockname()[1]
    with TcpProxy("127.0.0.1", port) as proxy:
        assert_reset(proxy)
        stats = proxy.wait_for(lambda p: closed(p), WAIT, "the connection to close")
    assert stats.close_reason == "connect failed: ECONNREFUSED"


# ---------------------------------------------------------------- a grid of our nodes behind proxies


@pytest.mark.interop
def test_proxied_grid_of_our_nodes(tmp_path: Path) -> None:
    """Our client reaches 3 of our storage servers only through their proxies, and a killed
    proxy makes its server disconnected until it is revived."""
    with ProcessSet() as processes, ProxySet() as proxies:
        grid = start_proxied_grid(TahoeTool(our_tahoe(), tmp_path / "logs"), tmp_path,
                                  processes, proxies, storage_nodes=3)
        expected = {s.info.server_id: s.connection_status for s in grid.servers}
        assert grid.server_status() == expected
        assert all(len(proxy.open_connections()) == 1 for proxy in grid.proxies)
        nicknames = {entry["nickname"] for entry in grid.client.welcome()["servers"]}
        assert nicknames == {"storage1", "storage2", "storage3"}

        victim, *others = grid.servers
        grid.wait_idle(0.05, WAIT)
        marks = grid.mark()
        victim.proxy.kill()
        wait_until(lambda: not grid.server_status()[victim.info.server_id].startswith(
            "Connected"), WAIT, "the client to see the server gone", ignore=(OSError,))
        status = grid.server_status()
        assert all(status[s.info.server_id] == s.connection_status for s in others)

        victim.proxy.revive()
        wait_until(lambda: grid.server_status() == expected, WAIT,
                   "the client to reconnect", ignore=(OSError,))
        # Only the new connection to the victim carried traffic since the marks.
        traffic = grid.directions_since(marks)
        assert list(traffic) == [victim.info.nickname]
        assert [directions[:2] for directions in traffic[victim.info.nickname]] == [[C2S, S2C]]
        reasons = [c.close_reason for c in victim.proxy.connections()]
        assert reasons[0] == "killed" and reasons[-1] is None
    assert not any(node.node.process.is_running() for node in grid.storage_nodes)

"""Resource exhaustion: thousands of idle connections, slowloris requests, very deep paths,
absurd sizes.  The node keeps answering others quickly, with bounded memory; each limit seen
is recorded with its value for ``docs/reliability.md``.

The gateway is the session grid's client; the HTTPS storage port is a storage node of
``http_storage_support`` (``http_node``).  The long timeouts (a stalled request is dropped after
60 s, an undecided connection after 30 s) are waited out only in ``make test-faults``.
"""
from __future__ import annotations

import contextlib
import socket
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from tahoe.httpwire.server import Limits
from tahoe.node.portswitch import DECIDE_TIMEOUT
from tests.integration.http_storage_support import HTTPStorage, NodeAddress, http_node
from tests.support.dirapi import WebAPI
from tests.support.proxied_grid import ProxiedGrid
from tests.support.reliability import long_schedule, record_limit, runs

__all__ = ["http_node"]

# Opening a loopback connection takes about 5 ms on the CI machine, so make test opens a
# few hundred; make test-faults several thousand.
IDLE_CONNECTIONS = runs(400)
SLOW_CLIENTS = runs(50)
ANSWER_DEADLINE = 5.0
MEMORY_BOUND = 96 * 1024 * 1024


def _rss(pid: int) -> int:
    """Resident memory of a process, bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


@contextlib.contextmanager
def connections(port: int, count: int, first_bytes: bytes = b"") -> Iterator[list[socket.socket]]:
    """``count`` open TCP connections to 127.0.0.1:port, each having sent ``first_bytes``."""
    opened: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            if first_bytes:
                sock.sendall(first_bytes)
            opened.append(sock)
        yield opened
    finally:
        for sock in opened:
            sock.close()


def _port(url: str) -> int:
    return int(url.rstrip("/").rsplit(":", 1)[1])


def _timed_welcome(api: WebAPI) -> float:
    started = time.monotonic()
    assert api.request("GET", "/?t=json").status == 200
    return time.monotonic() - started


def test_idle_and_slowloris_gateway_connections(local_grid: ProxiedGrid) -> None:
    """Hundreds (thousands in make test-faults) of idle connections and slowloris requests
    (headers, then bodies, trickled): others are answered within 5 s, memory stays bounded."""
    api, pid = WebAPI(local_grid.client.url, timeout=30), local_grid.client.node.process.pid
    port = _port(local_grid.client.url)
    before = _rss(pid)
    with connections(port, IDLE_CONNECTIONS) as idle:
        assert _timed_welcome(api) < ANSWER_DEADLINE
        with connections(port, SLOW_CLIENTS, b"GET /?t=json HTTP/1.1\r\nHost: x\r\n") as heads, \
                connections(port, SLOW_CLIENTS, b"PUT /uri HTTP/1.1\r\nHost: x\r\n"
                            b"Content-Length: 100000000\r\n\r\n") as bodies:
            slowest = 0.0
            for round_ in range(3):
                for sock in heads:
                    sock.sendall(b"X-Slow-%d: 1\r\n" % round_)
                for sock in bodies:
                    sock.sendall(b"x" * 1024)
                slowest = max(slowest, _timed_welcome(api))
            grown = _rss(pid) - before
            assert slowest < ANSWER_DEADLINE, slowest
            assert grown < MEMORY_BOUND, grown
        assert len(idle) == IDLE_CONNECTIONS
    assert _timed_welcome(api) < ANSWER_DEADLINE
    assert local_grid.client.node.process.is_running()
    record_limit("gateway connections", f"{IDLE_CONNECTIONS} idle + {2 * SLOW_CLIENTS} "
                                        f"slowloris held; others answered in {slowest:.2f} s; "
                                        f"memory +{grown / 2 ** 20:.0f} MiB")


def test_deep_and_long_paths(local_grid: ProxiedGrid) -> None:
    """A 12-level path is created and read back; 1000 segments get a quick 404; a request
    line past the HTTP parser's limit is refused, not a 500."""
    api = WebAPI(local_grid.client.url, timeout=60)
    dircap = api.mkdir()
    deep = "/".join(f"d{i}" for i in range(12))
    started = time.monotonic()
    api.ok("PUT", api.object_path(dircap, deep + "/file"), b"at the bottom")
    created = time.monotonic() - started
    assert api.read(dircap, deep + "/file") == b"at the bottom"
    assert api.json(dircap, deep)[0] == "dirnode"

    started = time.monotonic()
    answer = api.request("GET", api.object_path(dircap, "/".join(["a"] * 1000)))
    assert answer.status == 404 and time.monotonic() - started < ANSWER_DEADLINE

    for length in (16_000, 70_000):
        target = api.object_path(dircap) + "/" + "b" * length
        with socket.create_connection(("127.0.0.1", _port(local_grid.client.url)), 30) as sock:
            sock.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            head = sock.recv(200)
        status = int(head.split()[1]) if head.startswith(b"HTTP/") else None
        assert status is None or status < 500, (length, head)
    assert api.request("GET", "/?t=json").status == 200
    record_limit("directory depth", f"no limit; 12 levels created in one PUT in {created:.1f} s")
    record_limit("gateway request line", "16384 bytes (Twisted's line limit): longer is refused")


def test_absurd_sizes_at_the_gateway(local_grid: ProxiedGrid) -> None:
    """A Content-Length of 10**15 with the body cut off, and a Range past 2**64, leave the
    gateway answering."""
    api = WebAPI(local_grid.client.url, timeout=30)
    port = _port(local_grid.client.url)
    with socket.create_connection(("127.0.0.1", port), 10) as sock:
        sock.sendall(b"PUT /uri HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000000\r\n\r\n"
                     b"only this")
    cap = api.ok("PUT", "/uri", b"small file").text.strip()
    answer = api.request("GET", "/uri/" + urllib.parse.quote(cap),
                         headers={"Range": f"bytes={2 ** 64}-{2 ** 65}"})
    assert answer.status in (200, 206, 416)
    assert api.request("GET", "/?t=json").status == 200


def test_idle_connections_on_the_storage_port(http_node: NodeAddress) -> None:
    """Connections that never say which protocol they speak, and stalled TLS handshakes,
    do not keep the storage server from answering."""
    storage = HTTPStorage(http_node)
    try:
        with connections(http_node.port, IDLE_CONNECTIONS // 2), \
                connections(http_node.port, SLOW_CLIENTS, b"\x16\x03\x01"):
            started = time.monotonic()
            assert storage.send("GET", "/storage/v1/version").status == 200
            assert time.monotonic() - started < ANSWER_DEADLINE
    finally:
        storage.close()
    limits = Limits()
    record_limit("storage port", f"{IDLE_CONNECTIONS // 2} undecided + {SLOW_CLIENTS} stalled "
                                 f"connections held; "
                                 f"undecided dropped after {DECIDE_TIMEOUT:g} s")
    record_limit("HTTPS storage request", f"target {limits.target_bytes} B, headers "
                                          f"{limits.header_bytes} B / {limits.header_count}, "
                                          f"{limits.waiting_requests} pipelined")


@long_schedule
def test_storage_port_drops_undecided_and_stalled_connections(http_node: NodeAddress) -> None:
    """A connection that sends nothing is closed after the protocol decision timeout (30 s);
    an HTTPS request stalled mid-headers after the request timeout (60 s)."""
    from tests.support.rawhttp import ConnectionClosed, RawConnection
    with connections(http_node.port, 1) as (silent,):
        silent.settimeout(DECIDE_TIMEOUT + 15)
        started = time.monotonic()
        try:
            assert silent.recv(1) == b""  # closed, or
        except ConnectionResetError:
            pass  # aborted
        assert DECIDE_TIMEOUT - 1 <= time.monotonic() - started < DECIDE_TIMEOUT + 15
    stalled = RawConnection("127.0.0.1", http_node.port, timeout=Limits().request_timeout + 30)
    try:
        stalled.send(b"GET /storage/v1/version HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        try:
            status: int | None = stalled.read_response().status  # an answer, then closed
        except (ConnectionClosed, OSError):
            status = None  # or just closed
        assert status in (None, 400, 408), status
        assert time.monotonic() - started >= Limits().request_timeout - 1
    finally:
        stalled.close()
    record_limit("stalled HTTPS storage request", f"closed after {Limits().request_timeout:g} s "
                                                  f"without a byte")


GATEWAY_IDLE_TIMEOUT = 60.0  # Twisted's HTTPChannel default, which the gateway keeps


@long_schedule
def test_gateway_drops_idle_connections(local_grid: ProxiedGrid) -> None:
    """A gateway connection that sends nothing is closed after about a minute."""
    with connections(_port(local_grid.client.url), 1) as (idle,):
        idle.settimeout(GATEWAY_IDLE_TIMEOUT + 30)
        started = time.monotonic()
        try:
            assert idle.recv(1) == b""
        except ConnectionResetError:
            pass
        elapsed = time.monotonic() - started
    assert GATEWAY_IDLE_TIMEOUT - 5 <= elapsed < GATEWAY_IDLE_TIMEOUT + 30, elapsed
    record_limit("idle gateway connection", f"closed after {elapsed:.0f} s (a byte now and "
                                            f"then keeps it: slowloris is bounded by memory, "
                                            f"see gateway connections)")

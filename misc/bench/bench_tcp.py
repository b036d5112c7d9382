"""Raw-TCP control: push a file's expanded bytes (size × N/k) to N local sinks, nothing else.

The best case for moving an upload's bytes on this machine: no encryption,
coding, hashing, serialization or disk.  A separate *sink* process (like the
storage servers, which are separate processes) listens on N ports on
127.0.0.1; each connection reads an 8-byte length, that many bytes into a
reused buffer, and answers one byte.  The pusher (in the benchmark process)
keeps N connections open, as a client keeps its storage connections, and per
"file" sends ``size/k`` bytes on each at once from non-blocking sockets, then
waits for the N answers: one round trip plus transfer.

    python misc/bench/bench_tcp.py sink --count 10     # prints its ports as JSON
"""
from __future__ import annotations

import argparse
import json
import selectors
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

__all__ = ["TcpControl"]

RECV_SIZE = 1024 * 1024
HEADER = struct.Struct(">Q")


def _recv_exact(conn: socket.socket, count: int, buffer: memoryview) -> bool:
    while count:
        got = conn.recv_into(buffer[:min(count, len(buffer))])
        if not got:
            return False
        count -= got
    return True


def _serve_connection(conn: socket.socket) -> None:
    buffer = memoryview(bytearray(RECV_SIZE))
    header = bytearray(HEADER.size)
    with conn:
        while _recv_exact(conn, HEADER.size, memoryview(header)):
            (length,) = HEADER.unpack(header)
            if not _recv_exact(conn, length, buffer):
                return
            conn.sendall(b"k")


def _serve(listener: socket.socket) -> None:
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_serve_connection, args=(conn,), daemon=True).start()


def sink_main(count: int) -> int:
    """Listen on ``count`` ports, print them as JSON, serve until stdin closes."""
    listeners = []
    for _ in range(count):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listeners.append(listener)
        threading.Thread(target=_serve, args=(listener,), daemon=True).start()
    print(json.dumps([s.getsockname()[1] for s in listeners]), flush=True)
    sys.stdin.read()  # the parent holds the pipe; EOF means stop
    return 0


class TcpControl:
    """A sink process and N connections to it.

    :param total: N, the number of sinks (servers).
    :param needed: k: each sink receives ``size / k`` bytes per file.
    """

    def __init__(self, total: int, needed: int) -> None:
        self.total = total
        self.needed = needed
        self._process = subprocess.Popen([sys.executable, __file__, "sink", "--count", str(total)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._process.stdout is not None
        ports = json.loads(self._process.stdout.readline())
        self._socks = []
        for port in ports:
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._socks.append(sock)
        self._payload = b""

    def push(self, size: int) -> float:
        """Send ``size/k`` bytes to every sink at once; seconds until all have answered."""
        per_sink = -(-size // self.needed)
        if len(self._payload) < per_sink:
            self._payload = bytes(per_sink)
        payload = memoryview(self._payload)[:per_sink]
        message = HEADER.pack(per_sink)
        started = time.perf_counter()
        for sock in self._socks:
            sock.setblocking(False)
        pending = {sock: [memoryview(message), payload] for sock in self._socks}
        selector = selectors.DefaultSelector()
        for sock in self._socks:
            selector.register(sock, selectors.EVENT_WRITE)
        answered = 0
        while answered < len(self._socks):
            for key, _ in selector.select():
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                parts = pending[sock]
                if parts:
                    try:
                        sent = sock.send(parts[0][:RECV_SIZE])
                    except BlockingIOError:
                        continue
                    parts[0] = parts[0][sent:]
                    if not parts[0]:
                        parts.pop(0)
                    if not parts:
                        selector.modify(sock, selectors.EVENT_READ)
                elif sock.recv(1):
                    selector.unregister(sock)
                    answered += 1
        selector.close()
        elapsed = time.perf_counter() - started
        for sock in self._socks:
            sock.setblocking(True)
        return elapsed

    def close(self) -> None:
        """Close the connections and stop the sink process (its stdin closes)."""
        for sock in self._socks:
            sock.close()
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def __enter__(self) -> TcpControl:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def main(argv: Sequence[str] | None = None) -> int:
    """``sink --count N``: run the sink side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["sink"])
    parser.add_argument("--count", type=int, default=10)
    args = parser.parse_args(argv)
    return sink_main(args.count)


if __name__ == "__main__":
    sys.exit(main())

"""A lean HTTP client for timing a gateway (standard library only), and the test files.

The benchmark process shares two cores with the nodes it measures, so it
spends as little CPU as it can: a file body goes out with ``sendfile(2)``,
and a download is read into one reused buffer and thrown away.  Every
request uses a new connection to ``127.0.0.1`` (a loopback connect costs
about 0.1 ms, well below what is measured).

Convergent encryption gives a file that was uploaded before the same storage
index, and servers answer that they already hold its shares: repeating an
upload of the same bytes measures nothing.  :class:`TestFiles` therefore
writes one random file per size and overwrites its first 32 bytes with new
random bytes before every upload.
"""
from __future__ import annotations

import http.client
import os
import socket
import time
import urllib.parse
from pathlib import Path

__all__ = ["GatewayClient", "TestFiles", "UploadFailed"]

CHUNK = 1024 * 1024
#: Seconds one request may take (a 500 MB upload to Tahoe 1.20 takes about 30 s).
TIMEOUT = float(os.environ.get("BENCH_HTTP_TIMEOUT", "300"))
UNIQUE_PREFIX = 32


class UploadFailed(RuntimeError):
    """The gateway answered an upload or download with an error status."""


class GatewayClient:
    """Timed requests against one gateway.

    :param url: the gateway's base URL, ``http://127.0.0.1:PORT/``.
    """

    def __init__(self, url: str) -> None:
        parsed = urllib.parse.urlsplit(url)
        self.host = parsed.hostname or "127.0.0.1"
        self.port = parsed.port or 80
        self._buffer = bytearray(CHUNK)

    def _connect(self) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), timeout=TIMEOUT)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _response(self, sock: socket.socket, method: str) -> http.client.HTTPResponse:
        response = http.client.HTTPResponse(sock, method=method)
        response.begin()
        return response

    def put_bytes(self, data: bytes) -> tuple[str, float]:
        """``PUT /uri`` with ``data`` as the body; return (cap, seconds)."""
        head = (f"PUT /uri HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode("ascii")
        started = time.perf_counter()
        with self._connect() as sock:
            sock.sendall(head + data)
            return self._cap(sock), time.perf_counter() - started

    def put_file(self, path: Path) -> tuple[str, float]:
        """``PUT /uri`` with the file at ``path`` (sent with sendfile); return (cap, seconds)."""
        size = path.stat().st_size
        head = (f"PUT /uri HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Content-Length: {size}\r\nConnection: close\r\n\r\n").encode("ascii")
        with open(path, "rb") as body:
            started = time.perf_counter()
            with self._connect() as sock:
                sock.sendall(head)
                sock.sendfile(body)
                return self._cap(sock), time.perf_counter() - started

    def _cap(self, sock: socket.socket) -> str:
        response = self._response(sock, "PUT")
        body = response.read()
        if response.status not in (200, 201):
            raise UploadFailed(f"PUT /uri -> {response.status}: {body[:500]!r}")
        return body.decode("ascii").strip()

    def get(self, cap: str, byte_range: tuple[int, int] | None = None) -> tuple[int, float]:
        """``GET /uri/CAP`` (with ``Range: bytes=first-last`` if given), body discarded.

        :returns: (bytes received, seconds until the last byte).
        """
        path = "/uri/" + urllib.parse.quote(cap, safe="")
        extra = "" if byte_range is None else f"Range: bytes={byte_range[0]}-{byte_range[1]}\r\n"
        head = (f"GET {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{extra}"
                f"Connection: close\r\n\r\n").encode("ascii")
        started = time.perf_counter()
        with self._connect() as sock:
            sock.sendall(head)
            response = self._response(sock, "GET")
            wanted = 206 if byte_range is not None else 200
            received = 0
            view = memoryview(self._buffer)
            while True:
                count = response.readinto(view)
                if not count:
                    break
                received += count
            elapsed = time.perf_counter() - started
            if response.status != wanted:
                raise UploadFailed(f"GET {path[:40]}… -> {response.status}")
        return received, elapsed


class TestFiles:
    """Random files of given sizes under ``directory``, made unique before each use.

    :param directory: where the files go (created).
    """

    __test__ = False  # not a pytest class

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def path(self, size: int) -> Path:
        """The file of ``size`` bytes, created on first use (random content)."""
        path = self.directory / f"{size}.bin"
        if not path.exists() or path.stat().st_size != size:
            with open(path, "wb") as out:
                remaining = size
                while remaining:
                    piece = min(remaining, 16 * CHUNK)
                    out.write(os.urandom(piece))
                    remaining -= piece
        return path

    def fresh(self, size: int) -> Path:
        """The file of ``size`` bytes with a new random prefix (a new storage index)."""
        path = self.path(size)
        with open(path, "r+b") as out:
            out.write(os.urandom(min(UNIQUE_PREFIX, size)))
        return path

    @staticmethod
    def fresh_bytes(size: int) -> bytes:
        """``size`` new random bytes (for small uploads kept in memory)."""
        return os.urandom(size)

"""A blocking HTTP/1.1-over-TLS client that sends exactly the bytes a test gives it.

For tests of the HTTPS storage protocol at the byte level (replaying Tahoe
1.20's vectors, malformed requests): the request is written as given, and
one answer is read back with its status, headers and de-chunked body. The
server's certificate is not checked against any authority; a test that
cares compares its key hash (:attr:`RawConnection.spki_hash`).
"""
from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass, field

from cryptography import x509

from tahoe.util.nurl import spki_hash_of


class ConnectionClosed(Exception):
    """The server closed the connection before (or while) answering."""


@dataclass
class RawResponse:
    """One answer: status, reason, headers (names lower-cased) and de-chunked body."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    framing: str = "none"

    def header(self, name: str) -> str | None:
        """The first value of a header (``name`` lower-case), or None."""
        return next((v for k, v in self.headers if k == name), None)

    @property
    def closes(self) -> bool:
        """Whether the server said it closes the connection after this answer."""
        return (self.header("connection") or "").lower() == "close"


@dataclass
class RawConnection:
    """One TLS connection to ``host:port``; reopen with :meth:`reconnect`."""

    host: str
    port: int
    timeout: float = 10.0
    alpn: tuple[str, ...] = ()
    _sock: ssl.SSLSocket | None = None
    _buffer: bytearray = field(default_factory=bytearray)
    spki_hash: str = ""
    selected_alpn: str | None = None

    def __post_init__(self) -> None:
        self.reconnect()

    def reconnect(self) -> None:
        """Close the current connection (if any) and open a new one."""
        self.close()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        if self.alpn:
            context.set_alpn_protocols(list(self.alpn))
        raw = socket.create_connection((self.host, self.port), timeout=self.timeout)
        try:
            self._sock = context.wrap_socket(raw)
        except BaseException:
            raw.close()
            raise
        self.selected_alpn = self._sock.selected_alpn_protocol()
        self._buffer = bytearray()
        der = self._sock.getpeercert(binary_form=True)
        self.spki_hash = spki_hash_of(x509.load_der_x509_certificate(der)) if der else ""

    def close(self) -> None:
        """Close the connection."""
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None

    def send(self, data: bytes) -> None:
        """Write ``data`` as it is."""
        assert self._sock is not None
        self._sock.sendall(data)

    def _fill(self) -> None:
        assert self._sock is not None
        try:
            chunk = self._sock.recv(65536)
        except (ssl.SSLError, ConnectionResetError) as error:
            raise ConnectionClosed(str(error)) from None
        if not chunk:
            raise ConnectionClosed("end of stream")
        self._buffer += chunk

    def _line(self) -> bytes:
        while b"\r\n" not in self._buffer:
            self._fill()
        index = self._buffer.index(b"\r\n")
        line = bytes(self._buffer[:index])
        del self._buffer[:index + 2]
        return line

    def _exactly(self, count: int) -> bytes:
        while len(self._buffer) < count:
            self._fill()
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    def read_response(self, head: bool = False) -> RawResponse:
        """Read one answer (``head``: the request was HEAD, so no body follows).

        :raises ConnectionClosed: if the connection ends first.
        """
        while True:
            version, _, rest = self._line().decode("latin-1").partition(" ")
            status_text, _, reason = rest.partition(" ")
            headers = []
            while line := self._line():
                name, _, value = line.decode("latin-1").partition(":")
                headers.append((name.strip().lower(), value.strip()))
            status = int(status_text)
            if status >= 200:
                break
        response = RawResponse(status, reason, headers, b"")
        transfer = (response.header("transfer-encoding") or "").lower()
        length = response.header("content-length")
        if head or status in (204, 304):
            return response
        if transfer == "chunked":
            pieces = []
            while size := int(self._line().split(b";")[0], 16):
                pieces.append(self._exactly(size))
                self._line()
            while self._line():
                pass
            response.body, response.framing = b"".join(pieces), "chunked"
        elif length is not None:
            response.body, response.framing = self._exactly(int(length)), "content-length"
        else:
            while True:
                try:
                    self._fill()
                except ConnectionClosed:
                    break
            response.body, response.framing = bytes(self._buffer), "until-close"
            self._buffer.clear()
        return response

    def exchange(self, request: bytes, head: bool = False) -> RawResponse:
        """Send one request and read its answer."""
        self.send(request)
        return self.read_response(head)


def request_bytes(method: str, target: str, headers: list[tuple[str, str]], body: bytes = b"",
                  version: str = "HTTP/1.1") -> bytes:
    """A request's bytes: request line, headers as given, blank line, body."""
    lines = [f"{method} {target} {version}\r\n"] + [f"{k}: {v}\r\n" for k, v in headers]
    return "".join(lines).encode("latin-1") + b"\r\n" + body

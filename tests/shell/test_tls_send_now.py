"""``httpwire.tls.send_now``: data goes straight to an idle TCP socket, else through write."""
from __future__ import annotations

import socket

import pytest
from twisted.internet.testing import StringTransport

from tahoe.httpwire.tls import send_now


class _IdleTCP:
    """What send_now reads of an idle Twisted TCP transport, over a real socket pair."""

    def __init__(self, sock: socket.socket) -> None:
        self.socket = sock
        self._tempDataBuffer: list[bytes] = []
        self.dataBuffer = b""
        self.connected = True
        self.disconnecting = False
        self._writeDisconnected = False


def test_idle_socket_takes_the_data_at_once() -> None:
    """An idle transport's socket is sent the data at once; nothing is left for write."""
    ours, theirs = socket.socketpair()
    try:
        assert send_now(_IdleTCP(ours), b"request bytes") == b""
        assert theirs.recv(100) == b"request bytes"
    finally:
        ours.close()
        theirs.close()


def test_busy_or_unknown_transports_get_everything_through_write() -> None:
    """A transport holding unsent data (order matters), closing, or of another kind keeps
    every byte for its write."""
    ours, theirs = socket.socketpair()
    try:
        busy = _IdleTCP(ours)
        busy._tempDataBuffer.append(b"earlier")
        assert send_now(busy, b"later") == b"later"
        closing = _IdleTCP(ours)
        closing.disconnecting = True
        assert send_now(closing, b"x") == b"x"
        assert send_now(StringTransport(), b"y") == b"y"
        theirs.setblocking(False)
        with pytest.raises(BlockingIOError):  # nothing was sent
            theirs.recv(100)
    finally:
        ours.close()
        theirs.close()

"""The storage broker and new announcements of a server it knows already."""
from __future__ import annotations

from typing import Any

from twisted.internet.task import Clock

from tahoe.client.broker import StorageBroker

FURL = "pb://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa@tcp:127.0.0.1:1234/swissnum"


class Reconnector:
    """What ``Tub.connectTo`` returns: records whether it was stopped."""

    def __init__(self) -> None:
        self.stopped = False

    def stopConnecting(self) -> None:  # noqa: N802 (Foolscap)
        self.stopped = True


class RecordingTub:
    """A Tub that records ``connectTo`` calls and never connects."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Reconnector]] = []

    def connectTo(self, furl: str, *args: Any, **kwargs: Any) -> Reconnector:  # noqa: N802
        reconnector = Reconnector()
        self.calls.append((furl, reconnector))
        return reconnector


def announcement(seqnum: int, nickname: str = "s1", furl: str = FURL) -> dict[str, Any]:
    """A storage announcement (Foolscap only)."""
    return {"anonymous-storage-FURL": furl, "nickname": nickname, "seqnum": seqnum,
            "nonce": f"n{seqnum}", "permutation-seed-base32": "aaaa"}


def test_a_restarted_server_keeps_its_connection() -> None:
    """A new announcement that reaches the server the same way (a restart, or one after a
    cached one) updates the server without a new connection; a new address reconnects."""
    tub = RecordingTub()
    broker = StorageBroker(tub, Clock(), prefer_https=False)  # type: ignore[arg-type]
    broker.add_server(b"v0-x", announcement(1), b"l" * 20, b"p")
    handle = broker.servers[b"v0-x"]
    broker.add_server(b"v0-x", announcement(2, nickname="renamed"), b"l" * 20, b"p")
    assert len(tub.calls) == 1 and not tub.calls[0][1].stopped
    assert broker.servers[b"v0-x"] is handle and handle.nickname == "renamed"
    assert handle.announcement["seqnum"] == 2
    moved = FURL.replace("1234", "4321")
    broker.add_server(b"v0-x", announcement(3, furl=moved), b"l" * 20, b"p")
    assert [furl for furl, _ in tub.calls] == [FURL, moved] and tub.calls[0][1].stopped

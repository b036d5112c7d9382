"""The broker's Grid Manager rule over time: a certificate that runs out stops new
shares without a new announcement, a renewed one brings the server back."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from twisted.internet.task import Clock
from twisted.python import log

from tahoe.client.broker import StorageBroker
from tahoe.crypto.ed25519 import SigningKey
from tahoe.grid_manager.certificate import sign_certificate
from tests.shell.test_broker_announcements import FURL, Reconnector, announcement

MANAGER = SigningKey(b"\x07" * 32)
SERVER = SigningKey(b"\x08" * 32).public_key
SERVER_ID = SERVER.server_id.encode("ascii")
T0 = datetime(2030, 1, 1, tzinfo=timezone.utc).timestamp()


class _Info:
    state = "connecting"


class _Reconnector(Reconnector):
    def getReconnectionInfo(self) -> _Info:  # noqa: N802 (Foolscap)
        return _Info()


class RecordingTub:
    """A Tub whose ``connectTo`` never connects (its reconnector reports "connecting")."""

    def connectTo(self, furl: str, *args: Any, **kwargs: Any) -> _Reconnector:  # noqa: N802
        return _Reconnector()


def certified(seqnum: int, expires: float, key: SigningKey = MANAGER) -> dict[str, Any]:
    """An announcement carrying one certificate for SERVER, expiring at ``expires``."""
    cert = sign_certificate(key, SERVER, datetime.fromtimestamp(expires, timezone.utc))
    return dict(announcement(seqnum), **{"grid-manager-certificates": [cert.to_json_value()]})


def test_expiry_and_renewal() -> None:
    """Certified until the expiry (shown in the summary), refused after it, logged once;
    a renewed certificate in a new announcement certifies it again."""
    clock = Clock()
    clock.advance(T0 - 10)
    lines: list[str] = []
    observer = lambda event: lines.append(" ".join(map(str, event.get("message", ()))))
    log.addObserver(observer)
    try:
        broker = StorageBroker(RecordingTub(), clock, prefer_https=False,  # type: ignore[arg-type]
                               grid_managers={"gm": MANAGER.public_key})
        broker.add_server(SERVER_ID, certified(1, T0), b"l" * 20, b"p")
        handle = broker.servers[SERVER_ID]
        assert broker.may_store(handle)
        summary = broker.summaries()[0]
        assert summary.certified is True and summary.certificate_expires == T0
        clock.advance(20)
        assert not broker.may_store(handle) and not broker.may_store(handle)
        assert broker.summaries()[0].certified is False
        expired = [line for line in lines if "expired at 2030-01-01T00:00:00+00:00" in line]
        assert len(expired) == 1, lines
        broker.add_server(SERVER_ID, certified(2, T0 + 3600), b"l" * 20, b"p")
        assert broker.servers[SERVER_ID] is handle and broker.may_store(handle)
        broker.add_server(SERVER_ID, certified(3, T0 + 3600, SigningKey(b"\x09" * 32)),
                          b"l" * 20, b"p")
        assert not broker.may_store(handle)
        assert any("refused, forged" in line for line in lines)
    finally:
        log.removeObserver(observer)


def test_without_grid_managers_every_server_may_store() -> None:
    """No [grid_managers]: certificates are ignored and the summary says nothing of them."""
    broker = StorageBroker(RecordingTub(), Clock(), prefer_https=False)  # type: ignore[arg-type]
    broker.add_server(SERVER_ID, announcement(1), b"l" * 20, b"p")
    assert broker.may_store(broker.servers[SERVER_ID])
    assert broker.summaries()[0].certified is None
    assert FURL in broker.servers[SERVER_ID].furl

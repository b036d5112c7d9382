"""Pure builders of the JSON documents the gateway serves (``reference/frontends.md`` §3.9)."""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from attrs import frozen


@frozen
class ServerSummary:
    """What the welcome page reports about one known storage server."""

    nodeid: str
    nickname: str
    connection_status: str
    available_space: int | None
    version: str | None
    last_received_data: float | None
    #: with ``[grid_managers]``: whether a valid certificate lets it store shares
    #: (None: no Grid Manager is configured)
    certified: bool | None = None
    #: the valid certificate's expiry, seconds since the epoch
    certificate_expires: float | None = None


def welcome_json(introducer_statuses: Iterable[str], servers: Iterable[ServerSummary]) -> dict:
    """``GET /?t=json`` on a client node: introducer statuses and every known server."""
    return {
        "introducers": {"statuses": list(introducer_statuses)},
        "servers": [
            {
                "nodeid": s.nodeid,
                "connection_status": s.connection_status,
                "available_space": s.available_space,
                "nickname": s.nickname,
                "version": s.version,
                "last_received_data": s.last_received_data,
                "grid_manager_certified": s.certified,
                "grid_manager_certificate_expires": s.certificate_expires,
            }
            for s in sorted(servers, key=lambda s: s.nodeid)
        ],
    }


def introducer_json(subscriptions: Mapping[str, int], announcements: Mapping[str, int]) -> dict:
    """``GET /?t=json`` on an introducer: counts per service name."""
    return {"subscription_summary": dict(subscriptions),
            "announcement_summary": dict(announcements)}


def dumps(document: Any) -> bytes:
    """Serialize a JSON document as the gateway sends it (UTF-8, newline-terminated)."""
    return (json.dumps(document, indent=1) + "\n").encode("utf-8")

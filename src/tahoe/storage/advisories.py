"""Corruption advisories: the report files a server keeps for its operator.

Follows ``storage-protocol.md`` §2.8 and §4.6 (see
``docs/formats/storage-containers.md``).
"""
from __future__ import annotations

from datetime import datetime, timezone

from .paths import storage_index_to_b32


def advisory_file_name(now: float, storage_index: bytes, shnum: int) -> str:
    """``<UTC ISO time, colons removed>--<SI-b32>-<shnum>``.

    The time has a ``T`` between date and time and microseconds only when
    they are not zero, e.g. ``2026-11-22T012745.662414--a4dq...-0``.

    :param now: seconds since the epoch.
    """
    when = datetime.fromtimestamp(now, timezone.utc).replace(tzinfo=None)
    stamp = when.isoformat("T").replace(":", "")
    return f"{stamp}--{storage_index_to_b32(storage_index)}-{shnum}"


def advisory_text(share_type: str, storage_index: bytes, shnum: int, reason: bytes) -> bytes:
    """The content of one report; ``reason`` is kept byte for byte.

    :param share_type: ``"immutable"`` or ``"mutable"``.
    """
    head = (f"report: Share Corruption\n"
            f"type: {share_type}\n"
            f"storage_index: {storage_index_to_b32(storage_index)}\n"
            f"share_number: {shnum}\n"
            f"\n")
    return head.encode("utf-8") + reason + b"\n"

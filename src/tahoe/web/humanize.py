"""Numbers as people read them: sizes, rates, durations and moments (pure).

Sizes use decimal units (``1.0 GB`` is 10**9 bytes), as the welcome page
always has; the exact count goes in a tooltip (:func:`exact_bytes`).
Moments are given in seconds since the epoch and shown in UTC, so a page
does not depend on the gateway's time zone.
"""
from __future__ import annotations

import datetime

__all__ = ["exact_bytes", "human_ago", "human_duration", "human_rate", "human_size",
           "human_time"]

_UNITS = ("B", "kB", "MB", "GB", "TB", "PB")


def human_size(size: float | None) -> str:
    """``512 B``, ``1.2 kB``, ``3.4 GB``; ``?`` for an unknown size.

    :param size: bytes (non-negative); fractions are allowed (rates).
    """
    if size is None:
        return "?"
    value = float(size)
    if value < 1000:
        return f"{value:.0f} B"
    for unit in _UNITS[1:]:
        value /= 1000
        if value < 999.95 or unit == _UNITS[-1]:
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def exact_bytes(size: int | None) -> str:
    """``1234567 bytes`` (``1 byte``; ``unknown size`` for None): the number as JSON has it."""
    if size is None:
        return "unknown size"
    return "1 byte" if size == 1 else f"{size} bytes"


def human_rate(bytes_per_second: float | None) -> str:
    """``12.3 MB/s``; ``?`` when unknown."""
    return "?" if bytes_per_second is None else human_size(bytes_per_second) + "/s"


def human_duration(seconds: float | None) -> str:
    """``850 µs``, ``12.3 ms``, ``1.25 s``, ``3 min 4 s``, ``2 h 5 min``, ``3 days``.

    :param seconds: a non-negative duration; None gives ``?``.
    """
    if seconds is None:
        return "?"
    if seconds < 0.001:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms"
    if seconds < 60:
        return f"{seconds:.2f} s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    if whole < 2 * 86400:
        return f"{whole // 3600} h {whole % 3600 // 60} min"
    return f"{whole // 86400} days"


def human_time(seconds: float | None) -> str:
    """A moment as ``YYYY-MM-DD HH:MM:SS`` UTC; ``?`` when unknown or out of range."""
    if seconds is None:
        return "?"
    try:
        moment = datetime.datetime.fromtimestamp(float(seconds), datetime.timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def human_ago(then: float | None, now: float) -> str:
    """How long before ``now`` a moment was: ``just now``, ``5 s ago``, ``3 min ago``…"""
    if then is None:
        return "never"
    elapsed = now - then
    if elapsed < 1:
        return "just now"
    if elapsed < 60:
        return f"{elapsed:.0f} s ago"
    if elapsed < 3600:
        return f"{elapsed // 60:.0f} min ago"
    if elapsed < 2 * 86400:
        return f"{elapsed // 3600:.0f} h ago"
    return f"{elapsed // 86400:.0f} days ago"

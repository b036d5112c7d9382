"""Reserved space, available space and the allocation accounting of ``allocate_buckets``.

Follows ``storage-protocol.md`` §6 (see ``docs/formats/storage-containers.md``).
"""
from __future__ import annotations

import re
from typing import Iterable

from .errors import BadSizeString

#: What ``get_version`` reports when there is no way to ask the disk (§6.1).
UNLIMITED_REPORT = 2 ** 64

_SIZE = re.compile(r"\A([0-9]+)([kmgtpe]?)(i?)(b?)\Z", re.IGNORECASE)
_SCALES = "kmgtpe"


def parse_size(text: str) -> int:
    """Parse a size string such as ``[storage]reserved_space``.

    A decimal number, an optional case-insensitive scale ``K M G T P E``, an
    optional ``i`` for powers of 1024 instead of 1000, and an optional ``B``:
    ``"1G"`` is 10**9, ``"1Gi"`` and ``"1GiB"`` are 2**30, ``"100MB"`` is 10**8.
    Surrounding white space is ignored.

    :raises BadSizeString: for anything else (empty, negative, fractional, unknown unit).
    """
    match = _SIZE.match(text.strip())
    if not match:
        raise BadSizeString(f"not a size: {text!r}")
    number, scale, binary, _ = match.groups()
    base = 1024 if binary else 1000
    exponent = _SCALES.index(scale.lower()) + 1 if scale else 0
    return int(number) * base ** exponent


def available_space(free_for_nonroot: int | None, reserved_space: int, readonly: bool) -> int | None:
    """Bytes the server may still fill (§6.1).

    :param free_for_nonroot: ``f_bavail * f_frsize`` of the shares directory,
        0 if the disk-stats call failed, or ``None`` if there is no disk-stats API.
    :returns: ``max(free - reserved, 0)``; 0 when read-only; ``None`` (no limit)
        when there is no disk-stats API.
    """
    if readonly:
        return 0
    if free_for_nonroot is None:
        return None
    return max(free_for_nonroot - reserved_space, 0)


def reported_space(available: int | None) -> int:
    """The number ``get_version`` reports for available space (2**64 for no limit)."""
    return UNLIMITED_REPORT if available is None else available


def remaining_space(available: int | None, allocated: Iterable[int]) -> int | None:
    """What ``allocate_buckets`` may still give out: available minus every open writer's size."""
    if available is None:
        return None
    return available - sum(allocated)


def fit_allocations(shnums: Iterable[int], allocated_size: int,
                    remaining: int | None) -> list[int]:
    """The share numbers that get a writer, taking ``shnums`` in turn (§6.3).

    Each share needs ``remaining >= allocated_size`` and then uses up
    ``allocated_size``; a share that does not fit is left out.

    :param remaining: from :func:`remaining_space`; ``None`` means no limit.
    """
    granted = []
    for shnum in shnums:
        if remaining is None:
            granted.append(shnum)
        elif remaining >= allocated_size:
            granted.append(shnum)
            remaining -= allocated_size
    return granted

"""Reserved-space strings, available space and allocation accounting."""
from __future__ import annotations

import pytest

from tahoe.storage.errors import BadSizeString
from tahoe.storage.space import (UNLIMITED_REPORT, available_space, fit_allocations,
                                 parse_size, remaining_space, reported_space)


@pytest.mark.parametrize("text,value", [
    ("0", 0), ("123", 123), ("1K", 1000), ("1k", 1000), ("1KB", 1000), ("1kb", 1000),
    ("1Ki", 1024), ("1KiB", 1024), ("1kib", 1024), ("100MB", 100_000_000),
    ("1G", 10 ** 9), ("1Gi", 2 ** 30), ("1GiB", 2 ** 30), ("1GB", 10 ** 9), ("2T", 2 * 10 ** 12),
    ("1Ti", 2 ** 40), ("1P", 10 ** 15), ("1Pi", 2 ** 50), ("1E", 10 ** 18), ("1Ei", 2 ** 60),
    ("5B", 5), (" 1G ", 10 ** 9), ("1g", 10 ** 9),
])
def test_parse_size(text: str, value: int) -> None:
    """Decimal and binary scales, optional B, any case."""
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "G", "-1G", "1.5G", "1X", "1GG", "1BG", "1 G", "1Gii",
                                  "0x10", "1Z"])
def test_parse_size_refuses(text: str) -> None:
    """Anything but number, scale, i and B is refused."""
    with pytest.raises(BadSizeString):
        parse_size(text)


def test_available_space() -> None:
    """Free minus reserve, never negative; 0 when read-only; no limit without disk stats."""
    assert available_space(10_000, 1_000, readonly=False) == 9_000
    assert available_space(500, 1_000, readonly=False) == 0
    assert available_space(10_000, 0, readonly=True) == 0
    assert available_space(None, 1_000, readonly=False) is None
    assert available_space(None, 0, readonly=True) == 0
    assert reported_space(None) == UNLIMITED_REPORT == 2 ** 64
    assert reported_space(123) == 123


def test_allocation_accounting() -> None:
    """Shares are taken in turn while what remains covers one more allocation."""
    assert remaining_space(1000, [100, 200]) == 700
    assert remaining_space(None, [100]) is None
    assert fit_allocations([0, 1, 2, 3], 300, 700) == [0, 1]
    assert fit_allocations([5, 6], 0, 0) == [5, 6]
    assert fit_allocations([5, 6], 1, 0) == []
    assert fit_allocations([0, 1, 2], 10 ** 12, None) == [0, 1, 2]
    assert fit_allocations([0], 10, -5) == []

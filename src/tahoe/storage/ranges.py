"""A set of byte ranges: which parts of an immutable share have been written.

A bucket writer keeps one so that it compares only the overlapping bytes
of a write with what is on disk (``storage-protocol.md`` §3.1); a fresh range,
as in every sequential upload, costs no read at all.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right


class RangeSet:
    """Disjoint, sorted, half-open ranges ``[start, stop)``; touching ranges are merged."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._stops: list[int] = []

    def add(self, start: int, stop: int) -> None:
        """Include ``[start, stop)``; an empty range changes nothing."""
        if stop <= start:
            return
        first = bisect_left(self._stops, start)
        last = bisect_right(self._starts, stop)
        if first < last:
            start = min(start, self._starts[first])
            stop = max(stop, self._stops[last - 1])
        self._starts[first:last] = [start]
        self._stops[first:last] = [stop]

    def overlaps(self, start: int, stop: int) -> list[tuple[int, int]]:
        """The parts of ``[start, stop)`` already included, in order."""
        if stop <= start:
            return []
        first = bisect_right(self._stops, start)
        last = bisect_left(self._starts, stop)
        return [(max(start, self._starts[i]), min(stop, self._stops[i]))
                for i in range(first, last)]

    def ranges(self) -> list[tuple[int, int]]:
        """Every range, in order."""
        return list(zip(self._starts, self._stops))

    def __len__(self) -> int:
        """Number of disjoint ranges."""
        return len(self._starts)

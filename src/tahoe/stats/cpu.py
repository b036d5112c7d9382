"""CPU usage of the node process, from (wall time, CPU time) samples.

Facts: ``reference/frontends.md`` §5 (``cpu_monitor.*``): a sample is taken
at start and then every 60 s; ``cpu_monitor.total`` is the CPU seconds of the
latest sample; ``cpu_monitor.<N>min_avg`` (N = 1, 5, 15) is the fraction of
one CPU used between the sample N intervals back and the latest one, present
once N + 1 samples exist.
"""
from __future__ import annotations

from collections import deque

#: Seconds between samples.
SAMPLE_INTERVAL = 60.0
#: Averages reported, in minutes (one sample interval each).
AVERAGE_MINUTES = (1, 5, 15)
#: Samples kept: enough for the longest average.
HISTORY = max(AVERAGE_MINUTES) + 1


class CPUUsage:
    """The recent samples of one process."""

    def __init__(self) -> None:
        self._samples: deque[tuple[float, float]] = deque(maxlen=HISTORY)

    def add(self, wall: float, cpu: float) -> None:
        """Record a sample: wall-clock seconds and CPU seconds used so far."""
        self._samples.append((float(wall), float(cpu)))

    def average(self, intervals: int) -> float | None:
        """CPU seconds per wall second over the last ``intervals`` sample
        intervals, or ``None`` without enough samples (or time)."""
        if intervals < 1 or len(self._samples) < intervals + 1:
            return None
        first_wall, first_cpu = self._samples[-intervals - 1]
        last_wall, last_cpu = self._samples[-1]
        if last_wall <= first_wall:
            return None
        return (last_cpu - first_cpu) / (last_wall - first_wall)

    def stats(self) -> dict[str, float]:
        """The ``cpu_monitor.*`` keys that have data."""
        values: dict[str, float] = {}
        if self._samples:
            values["cpu_monitor.total"] = self._samples[-1][1]
        for minutes in AVERAGE_MINUTES:
            average = self.average(minutes)
            if average is not None:
                values[f"cpu_monitor.{minutes}min_avg"] = average
        return values

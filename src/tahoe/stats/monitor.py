"""The CPU sampler: one sample at start, then one every :data:`~.cpu.SAMPLE_INTERVAL` seconds."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .cpu import SAMPLE_INTERVAL, CPUUsage


class CPUMonitor:
    """Feeds a :class:`~.cpu.CPUUsage` from a clock.

    :param clock: gives ``seconds()`` and ``callLater`` (the reactor, or a
        ``task.Clock`` in tests).
    :param process_time: returns the CPU seconds this process has used.
    :param usage: where the samples go.
    """

    def __init__(self, clock: Any, process_time: Callable[[], float],
                 usage: CPUUsage | None = None) -> None:
        self._clock = clock
        self._process_time = process_time
        self.usage = usage if usage is not None else CPUUsage()
        self._call: Any = None

    @property
    def running(self) -> bool:
        """Whether a next sample is scheduled."""
        return self._call is not None

    def start(self) -> None:
        """Take the first sample now and schedule the next ones (a no-op if running)."""
        if self._call is None:
            self._sample()

    def stop(self) -> None:
        """Cancel the next sample."""
        call, self._call = self._call, None
        if call is not None and call.active():
            call.cancel()

    def _sample(self) -> None:
        self.usage.add(self._clock.seconds(), self._process_time())
        self._call = self._clock.callLater(SAMPLE_INTERVAL, self._sample)

"""Counters, sample windows and gauge producers: the ``/statistics?t=json`` document.

Facts: ``reference/frontends.md`` §5. The document is
``{"counters": {name: int}, "stats": {name: number or None}}``; counters start
at zero (absent until first counted) and only go up; stats are current values,
booleans written 1 or 0, and a key is missing until its producer has data.
A sample window named ``P`` appears as the stats ``P.samplesize``, ``P.mean``,
``P.<NN_N>_percentile`` (see :mod:`.samples`).

Everything here is synchronous and pure: the time comes from the ``now``
callable passed in (any monotonic source of seconds).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import Any, ContextManager, Union

from .samples import SampleWindow

Number = Union[int, float]
Value = Union[int, float, bool, None]
#: A gauge producer: called for every document; returns current values (``None`` = no data).
Producer = Callable[[], Mapping[str, Value]]


class Statistics:
    """One node's statistics.

    :param now: returns the current time in seconds (used to time operations).
    """

    def __init__(self, now: Callable[[], float]) -> None:
        self.now = now
        self._counters: dict[str, int] = {}
        self._windows: dict[str, SampleWindow] = {}
        self._producers: list[Producer] = []

    # -- recording

    def count(self, name: str, amount: int = 1) -> None:
        """Add ``amount`` (an int >= 0) to the counter ``name``.

        :raises ValueError: for a negative amount (counters only go up).
        """
        if amount < 0:
            raise ValueError(f"counter {name} cannot go down by {amount}")
        self._counters[name] = self._counters.get(name, 0) + int(amount)

    def add_sample(self, name: str, value: float) -> None:
        """Add one sample (seconds, bytes per second, ...) to the window ``name``."""
        window = self._windows.get(name)
        if window is None:
            window = self._windows[name] = SampleWindow()
        window.add(value)

    def add_producer(self, producer: Producer) -> None:
        """Ask ``producer`` for current values each time a document is made."""
        self._producers.append(producer)

    @contextmanager
    def operation(self, counter: str | None, latency: str | None = None) -> Iterator[None]:
        """Count an operation when it starts and, if it ends without raising,
        add its duration (seconds) to the window ``latency``."""
        if counter is not None:
            self.count(counter)
        started = self.now()
        yield
        if latency is not None:
            self.add_sample(latency, max(0.0, self.now() - started))

    def timer(self) -> "OperationTimer":
        """A timer started now, for operations that end in a later callback."""
        return OperationTimer(self)

    # -- reading

    def counters(self) -> dict[str, int]:
        """A copy of every counter counted so far."""
        return dict(self._counters)

    def stats(self) -> dict[str, Number | None]:
        """Current values: every producer's data, then every sample window's summary.

        Booleans become 1 or 0; a producer's ``None`` leaves its key out.
        """
        values: dict[str, Number | None] = {}
        for producer in self._producers:
            for name, value in producer().items():
                if value is None:
                    continue
                values[name] = int(value) if isinstance(value, bool) else value
        for prefix, window in self._windows.items():
            summary = window.summary()
            if summary is not None:
                for key, value in summary.items():
                    values[f"{prefix}.{key}"] = value
        return values

    def document(self) -> dict[str, dict[str, Any]]:
        """``{"counters": {...}, "stats": {...}}``, each sorted by name."""
        return {"counters": dict(sorted(self.counters().items())),
                "stats": dict(sorted(self.stats().items()))}


class OperationTimer:
    """Measures one operation from its creation to :meth:`done`."""

    def __init__(self, statistics: Statistics) -> None:
        self._statistics = statistics
        self.started = statistics.now()

    def elapsed(self) -> float:
        """Seconds since the timer started (never negative)."""
        return max(0.0, self._statistics.now() - self.started)

    def done(self, latency: str, rate: str | None = None, size: int = 0) -> float:
        """Record the duration in the window ``latency``, and ``size / duration``
        (bytes per second) in the window ``rate`` if it is given and the
        duration is above zero.

        :returns: the duration in seconds.
        """
        elapsed = self.elapsed()
        self._statistics.add_sample(latency, elapsed)
        if rate is not None and elapsed > 0:
            self._statistics.add_sample(rate, size / elapsed)
        return elapsed


#: Storage operations whose latencies are kept (``abort`` is only counted).
TIMED_STORAGE_OPERATIONS = frozenset({"allocate", "write", "close", "read", "get", "writev",
                                      "readv", "add-lease", "renew"})


def storage_operation(statistics: Statistics | None, operation: str) -> ContextManager[None]:
    """Count ``storage_server.<operation>`` and time it into
    ``storage_server.latencies.<operation>`` (if it is a timed one); a no-op
    without statistics."""
    if statistics is None:
        return nullcontext()
    latency = (f"storage_server.latencies.{operation}"
               if operation in TIMED_STORAGE_OPERATIONS else None)
    return statistics.operation(f"storage_server.{operation}", latency)

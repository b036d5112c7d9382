"""Windows of recent samples and their summary by Tahoe-LAFS 1.20's percentile rules.

Facts: ``reference/frontends.md`` §5 (``storage_server.latencies.<op>.<q>``):
the last 1000 samples count; ``mean`` needs 2 samples; each percentile needs a
minimum number of samples and is ``None`` below it. A percentile ``p`` of
``n`` sorted samples is the sample at index ``int(p * n)`` (the same float
arithmetic as Tahoe, so the same sample is picked).
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

#: Samples kept per window (older ones are forgotten).
WINDOW_SIZE = 1000

#: (fraction, key, samples needed) for every percentile reported.
PERCENTILES: tuple[tuple[float, str, int], ...] = (
    (0.01, "01_0_percentile", 100),
    (0.10, "10_0_percentile", 10),
    (0.50, "50_0_percentile", 10),
    (0.90, "90_0_percentile", 10),
    (0.95, "95_0_percentile", 20),
    (0.99, "99_0_percentile", 100),
    (0.999, "99_9_percentile", 1000),
)

#: Every key a summary has, in the order Tahoe lists them.
SUMMARY_KEYS: tuple[str, ...] = ("samplesize", "mean", *(key for _, key, _ in PERCENTILES))


def summarize(samples: Iterable[float]) -> dict[str, float | int | None]:
    """The summary of a non-empty set of samples.

    :param samples: values (seconds, bytes per second, ...), any order.
    :returns: ``samplesize`` (int), ``mean`` (``None`` below 2 samples) and
        every key of :data:`PERCENTILES` (``None`` below its minimum count).
    :raises ValueError: if there are no samples (a key without data is left out
        of the document instead).
    """
    ordered: Sequence[float] = sorted(samples)
    count = len(ordered)
    if count == 0:
        raise ValueError("no samples to summarize")
    summary: dict[str, float | int | None] = {
        "samplesize": count,
        "mean": sum(ordered) / count if count > 1 else None,
    }
    for fraction, key, needed in PERCENTILES:
        summary[key] = ordered[int(fraction * count)] if count >= needed else None
    return summary


class SampleWindow:
    """The last :data:`WINDOW_SIZE` samples of one measurement."""

    def __init__(self, size: int = WINDOW_SIZE) -> None:
        if size < 1:
            raise ValueError("a sample window holds at least one sample")
        self._samples: deque[float] = deque(maxlen=size)

    def add(self, value: float) -> None:
        """Remember ``value``, forgetting the oldest sample when the window is full."""
        self._samples.append(float(value))

    def __len__(self) -> int:
        return len(self._samples)

    def summary(self) -> dict[str, float | int | None] | None:
        """:func:`summarize` of the window, or ``None`` while it is empty."""
        return summarize(self._samples) if self._samples else None

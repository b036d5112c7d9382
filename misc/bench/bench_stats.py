"""Summaries, the A + B·size fit and ratios for the grid benchmark (pure: numbers in, numbers out).

The per-file cost model comes from the 2007 Tahoe performance notes: an
upload of ``size`` bytes takes ``A + B·size`` seconds, ``A`` being the fixed
cost per file (round trips, start-up of the upload, Python overhead) and
``1/B`` the asymptotic throughput.  :func:`fit_cost_model` fits it to
(size, seconds) points by least squares on *relative* errors (weights
``1/t²``), so that 1 kB files, which take milliseconds, decide ``A`` as much as
100 MB files, which take seconds, decide ``B``; an unweighted fit would let
the largest files decide both.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["CostFit", "Summary", "fit_cost_model", "ratio", "summarize"]


@dataclass(frozen=True)
class Summary:
    """Median, minimum and maximum of repeated measurements, and how many there were."""

    median: float
    low: float
    high: float
    count: int

    def as_dict(self) -> dict[str, float]:
        """``{"median", "min", "max", "n"}`` for the JSON report."""
        return {"median": self.median, "min": self.low, "max": self.high, "n": self.count}


def summarize(samples: Iterable[float]) -> Summary | None:
    """The :class:`Summary` of ``samples``, or None when there are none."""
    values = [float(v) for v in samples]
    if not values:
        return None
    return Summary(statistics.median(values), min(values), max(values), len(values))


@dataclass(frozen=True)
class CostFit:
    """``seconds = a + b * size``.

    :ivar a: fixed cost per file, seconds.
    :ivar b: cost per byte, seconds.
    :ivar points: the (size, seconds) points fitted.
    """

    a: float
    b: float
    points: tuple[tuple[float, float], ...]

    @property
    def a_ms(self) -> float:
        """``A`` in milliseconds."""
        return self.a * 1000.0

    @property
    def throughput_mb_s(self) -> float:
        """``1/B`` in MB/s (10⁶ bytes per second); infinite when ``B`` is not positive."""
        return math.inf if self.b <= 0 else 1.0 / self.b / 1e6

    def predict(self, size: float) -> float:
        """Seconds the model gives for ``size`` bytes."""
        return self.a + self.b * size

    def as_dict(self) -> dict[str, object]:
        """The fit for the JSON report (infinite throughput as None)."""
        throughput = self.throughput_mb_s
        return {"A_ms": self.a_ms, "B_s_per_byte": self.b,
                "inv_B_MB_per_s": None if math.isinf(throughput) else throughput,
                "points": [list(p) for p in self.points]}


def fit_cost_model(points: Sequence[tuple[float, float]]) -> CostFit | None:
    """Fit ``t = A + B·size`` to ``(size, t)`` points, minimising Σ((fit − t)/t)².

    :returns: None with fewer than two distinct sizes or a non-positive time.
    """
    usable = [(float(s), float(t)) for s, t in points if t > 0]
    if len({s for s, _ in usable}) < 2:
        return None
    # Weighted normal equations with w = 1/t².
    sw = sx = sy = sxx = sxy = 0.0
    for size, seconds in usable:
        w = 1.0 / (seconds * seconds)
        sw += w
        sx += w * size
        sy += w * seconds
        sxx += w * size * size
        sxy += w * size * seconds
    det = sw * sxx - sx * sx
    if det == 0:
        return None
    b = (sw * sxy - sx * sy) / det
    a = (sy - b * sx) / sw
    return CostFit(a, b, tuple(usable))


def fit_medians(samples_by_size: Mapping[int, Sequence[float]]) -> CostFit | None:
    """:func:`fit_cost_model` over the median time of each size."""
    points = [(size, statistics.median(times)) for size, times in sorted(samples_by_size.items())
              if times]
    return fit_cost_model(points)


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``, or None when either is missing or the denominator is 0."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator

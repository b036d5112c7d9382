"""The PNG plot: upload time against file size on log axes, with the fitted A + B·size lines.

One series per system and control (ours, Tahoe 1.20 and its Foolscap path,
both on servers that discard data, raw TCP): the median time of each size as
a marker with a bar from the fastest to the slowest repetition, and the
fitted cost model as a line of the same colour.  Needs matplotlib (the
``bench`` extra); drawn with the non-interactive Agg backend.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from bench_stats import CostFit, Summary

__all__ = ["plot"]

SERIES = (
    # label, system, figure key (ms by size), fit key, colour, marker
    ("ours", "ours", "upload_by_size_ms", "fit", "tab:blue", "o"),
    ("ours, servers discard data", "ours", "discard_upload_by_size_ms", "discard_fit",
     "tab:cyan", "v"),
    ("Tahoe 1.20 (default: HTTPS storage)", "tahoe", "upload_by_size_ms", "fit", "tab:red", "s"),
    ("Tahoe 1.20, Foolscap", "tahoe", "foolscap_upload_by_size_ms", "foolscap_fit",
     "tab:orange", "D"),
    ("Tahoe 1.20, servers discard data (Foolscap client)", "tahoe",
     "discard_upload_by_size_ms", "discard_fit",
     "tab:pink", "^"),
)


def _series(axes: Any, label: str, by_size: dict[int, Summary], fit: CostFit | None,
            colour: str, marker: str) -> None:
    sizes = sorted(size for size, s in by_size.items() if s is not None)
    if not sizes:
        return
    medians = [by_size[s].median / 1000 for s in sizes]
    lows = [m - by_size[s].low / 1000 for s, m in zip(sizes, medians)]
    highs = [by_size[s].high / 1000 - m for s, m in zip(sizes, medians)]
    if fit is not None:
        label = f"{label}: A={fit.a_ms:.1f} ms, 1/B={fit.throughput_mb_s:.0f} MB/s"
    axes.errorbar(sizes, medians, yerr=[lows, highs], fmt=marker, color=colour, label=label,
                  capsize=3, markersize=5)
    if fit is not None:
        low, high = min(sizes), max(sizes)
        xs = [low * (high / low) ** (i / 100) for i in range(101)] if high > low else [low]
        ys = [fit.predict(x) for x in xs]
        points = [(x, y) for x, y in zip(xs, ys) if y > 0]
        if points:
            axes.plot([p[0] for p in points], [p[1] for p in points], "--", color=colour,
                      linewidth=1)


def plot(path: Path, derived: dict[str, Any], title: str) -> None:
    """Draw the upload-time plot into ``path`` (PNG).

    :raises ImportError: without matplotlib.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(9, 6), dpi=110)
    for label, system, key, fit_key, colour, marker in SERIES:
        figures = derived["systems"].get(system) or {}
        _series(axes, label, figures.get(key) or {}, figures.get(fit_key), colour, marker)
    controls = derived.get("controls", {})
    _series(axes, "control: raw TCP, size×N/k to N sinks", controls.get("tcp_by_size_ms") or {},
            controls.get("tcp_fit"), "tab:green", "x")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("file size (bytes)")
    axes.set_ylabel("upload time (s), median with min–max")
    axes.set_title(title, fontsize=10)
    axes.grid(True, which="both", linewidth=0.3)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize=7, loc="upper left")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)

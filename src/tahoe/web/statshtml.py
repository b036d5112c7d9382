"""The ``/statistics`` page for people (pure): traffic, latencies and rates as tables, a chart.

The document is the one ``t=json`` serves (``reference/frontends.md`` §5):
``{"counters": {...}, "stats": {...}}``. Sample windows (latencies in
seconds, rates in bytes per second) appear in ``stats`` as
``<window>.samplesize``, ``<window>.mean`` and ``<window>.<NN_N>_percentile``;
the page gathers each window into one row, and draws the median and 90th
percentile latency of each window as bars. The raw document follows,
folded.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from .humanize import exact_bytes, human_duration, human_rate
from .page import esc, facts_table, page, size_html, table
from .svgchart import Bar, BarGroup, bar_chart, legend

__all__ = ["latency_table", "sample_windows", "statistics_page"]

Document = Mapping[str, Mapping[str, Any]]

#: (title, files counter, bytes counter) of the traffic table.
SUMMARY_ROWS = (
    ("Immutable files uploaded", "uploader.files_uploaded", "uploader.bytes_uploaded"),
    ("Immutable files downloaded", "downloader.files_downloaded", "downloader.bytes_downloaded"),
    ("Mutable files published", "mutable.files_published", "mutable.bytes_published"),
    ("Mutable files retrieved", "mutable.files_retrieved", "mutable.bytes_retrieved"),
)
#: (key suffix, column title) of the percentiles shown.
PERCENTILES = (("10_0_percentile", "10%"), ("50_0_percentile", "median"),
               ("90_0_percentile", "90%"), ("99_0_percentile", "99%"))


def sample_windows(stats: Mapping[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    """Window name -> its summary values, for windows whose name has ``.{kind}.``.

    :param kind: ``latencies`` or ``rates``.
    """
    windows: dict[str, dict[str, Any]] = {}
    for key, value in stats.items():
        window, _, field = key.rpartition(".")
        if f".{kind}." in f"{window}." and field and window.count(".") >= 2:
            windows.setdefault(window, {})[field] = value
    return {name: values for name, values in sorted(windows.items())
            if "samplesize" in values}


def _window_rows(windows: Mapping[str, Mapping[str, Any]],
                 show: Callable[[float | None], str]) -> list[list[str]]:
    rows = []
    for name, values in windows.items():
        cells = [f"<code>{esc(name)}</code>", esc(values.get("samplesize", 0)),
                 esc(show(values.get("mean")))]
        cells += [esc(show(values.get(key))) for key, _ in PERCENTILES]
        rows.append(cells)
    return rows


def latency_table(stats: Mapping[str, Any], prefix: str = "") -> str:
    """A table of every latency window (whose name starts with ``prefix``)."""
    windows = {name: values for name, values in sample_windows(stats, "latencies").items()
               if name.startswith(prefix)}
    return table(["Operation", "Samples", "Mean"] + [title for _, title in PERCENTILES],
                 _window_rows(windows, human_duration), empty="No operation timed yet.")


def _latency_chart(stats: Mapping[str, Any]) -> str:
    groups = []
    for name, values in sample_windows(stats, "latencies").items():
        label = name.rsplit(".", 1)[-1]
        bars = tuple(Bar(float(values[key]), series,
                         f"{name}: {title} {human_duration(values[key])}")
                     for key, title, series in (("50_0_percentile", "median", "median"),
                                                ("90_0_percentile", "90th percentile", "p90"))
                     if values.get(key) is not None)
        if bars:
            groups.append(BarGroup(label, bars))
    chart = bar_chart(groups, title="Median and 90th percentile latency per operation",
                      value_format=human_duration,
                      empty="Percentiles appear after ten operations of a kind.")
    return (f'<figure class="chart-box">{chart}<figcaption>Latency per operation '
            f"{legend([('median', 'median'), ('p90', '90th percentile')])}</figcaption>"
            "</figure>")


def _node_rows(stats: Mapping[str, Any]) -> list[tuple[str, str]]:
    rows = []
    if stats.get("node.uptime") is not None:
        rows.append(("Uptime", esc(human_duration(stats["node.uptime"]))))
    if stats.get("cpu_monitor.total") is not None:
        rows.append(("CPU time used", esc(human_duration(stats["cpu_monitor.total"]))))
    for key, label in (("cpu_monitor.1min_avg", "CPU, last minute"),
                       ("cpu_monitor.5min_avg", "CPU, last 5 minutes"),
                       ("cpu_monitor.15min_avg", "CPU, last 15 minutes")):
        if stats.get(key) is not None:
            rows.append((label, f"{stats[key] * 100:.1f}% of one core"))
    return rows


def statistics_page(document: Document) -> str:
    """The HTML page: node, traffic, latency chart and tables, rates, then every value."""
    counters = document.get("counters", {})
    stats = document.get("stats", {})
    traffic = table(["", "Files", "Bytes"],
                    ([esc(title), esc(f"{counters.get(files, 0)} files"),
                      f"{size_html(counters.get(size, 0))} <small class=\"muted\">"
                      f"{exact_bytes(counters.get(size, 0))}</small>"]
                     for title, files, size in SUMMARY_ROWS))
    rates = table(["Operation", "Samples", "Mean"] + [title for _, title in PERCENTILES],
                  _window_rows(sample_windows(stats, "rates"), human_rate),
                  empty="No transfer measured yet.")
    raw = esc(json.dumps(document, indent=1, sort_keys=True))
    main = ((facts_table(_node_rows(stats)) if _node_rows(stats) else "")
            + f"<h2>General</h2>{traffic}<h2>Latencies</h2>{_latency_chart(stats)}"
            + latency_table(stats) + f"<h2>Transfer rates</h2>{rates}"
            + f'<details class="raw"><summary>Raw stats:</summary><pre>{raw}</pre></details>'
            + '<p class="actions"><a class="button" href="?t=json">JSON</a>'
              '<a class="button" href="?t=openmetrics">OpenMetrics</a></p>')
    return page("Tahoe-LAFS - Operational Statistics", main, current="/statistics",
                heading="Operational Statistics").decode("utf-8")

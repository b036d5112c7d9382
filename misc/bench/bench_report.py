"""Tables (plain text for stdout, Markdown for docs/performance.md) and the JSON file.

A cell shows the median and, in brackets, the minimum and maximum over the
repetitions; "ours/Tahoe" and "ours/control" divide medians.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench_stats import CostFit, Summary, ratio

__all__ = ["jsonable", "main_rows", "render", "segment_rows", "target_rows", "write_json"]

Figure = Summary | float | int | None
HEADER = ["figure", "ours (HTTPS)", "ours (Foolscap)", "Tahoe 1.20", "ours/Tahoe", "control",
          "ours/control"]


def jsonable(value: Any) -> Any:
    """``value`` with summaries and fits as dicts, infinities and NaNs as None."""
    if isinstance(value, (Summary, CostFit)):
        return jsonable(value.as_dict())
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return None
    return value


def write_json(path: Path, report: dict[str, Any]) -> None:
    """Write ``report`` (raw samples and derived figures) as indented JSON."""
    path.write_text(json.dumps(jsonable(report), indent=1, sort_keys=False) + "\n")


def number(value: float | None) -> str:
    """Three significant digits, without exponent for everyday magnitudes."""
    if value is None or (isinstance(value, float) and (math.isnan(value) or math.isinf(value))):
        return "–"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def cell(value: Figure) -> str:
    """``median [min–max]`` for a summary of several samples, else the number."""
    if isinstance(value, Summary):
        if value.count > 1:
            return f"{number(value.median)} [{number(value.low)}–{number(value.high)}]"
        return number(value.median)
    return number(value)


def median(value: Figure) -> float | None:
    """The median of a summary, or the number itself."""
    if isinstance(value, Summary):
        return value.median
    return None if value is None else float(value)


def _row(label: str, ours: Figure, foolscap: Figure, tahoe: Figure, control: Figure = None,
         control_label: str = "") -> list[str]:
    """A main-table row: our HTTPS and Foolscap figures, Tahoe's, ratios (of the HTTPS one)."""
    control_text = f"{control_label} {cell(control)}".strip() if control is not None else ""
    return [label, cell(ours), cell(foolscap), cell(tahoe),
            number(ratio(median(ours), median(tahoe))), control_text,
            number(ratio(median(ours), median(control)))]


def _size_label(size: int) -> str:
    for unit, scale in (("MB", 10**6), ("kB", 10**3)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} B"


def main_rows(derived: dict[str, Any]) -> list[list[str]]:
    """The main table: every figure of ours (HTTPS and Foolscap) and Tahoe, with its control."""
    ours = derived["systems"].get("ours", {})
    foolscap = derived["systems"].get("ours-foolscap", {})
    tahoe = derived["systems"].get("tahoe", {})
    controls = derived["controls"]

    def each(key: str) -> tuple[Figure, Figure, Figure]:
        return ours.get(key), foolscap.get(key), tahoe.get(key)

    def fit_value(figures: dict[str, Any], fit: str, attr: str) -> float | None:
        value = figures.get(fit)
        return None if value is None else getattr(value, attr)

    def fits(fit: str, attr: str) -> tuple[Figure, Figure, Figure]:
        return (fit_value(ours, fit, attr), fit_value(foolscap, fit, attr),
                fit_value(tahoe, fit, attr))

    rows = [
        _row("1 kB upload, web API (ms)", *each("upload_1k_ms"), ours.get("floor_https_1k_ms"),
             "HTTPS floor"),
        _row("1 kB upload, web API, Tahoe forced to Foolscap (ms)", None, None,
             tahoe.get("foolscap_upload_1k_ms")),
        _row("HTTPS floor, 10 allocate+write pipelined (ms)", *each("floor_https_1k_ms")),
        _row("Foolscap floor, 10 allocate+write+close (ms)", *each("floor_1k_ms")),
        _row("  same, Foolscap's plain Tub, Nagle on (ms)", *each("floor_plain_1k_ms")),
        _row("tahoe put 1 kB, whole process (ms)", *each("cli_put_1k_ms")),
    ]
    tcp_fit = controls.get("tcp_fit")
    rows.append(_row("A, fixed cost per file (ms)", *fits("fit", "a_ms"),
                     None if tcp_fit is None else tcp_fit.a_ms, "raw TCP"))
    rows.append(_row("1/B, throughput (MB/s)", *fits("fit", "throughput_mb_s"),
                     None if tcp_fit is None else tcp_fit.throughput_mb_s, "raw TCP"))
    rows.append(_row("  1/B against the core's key pass + encode (MB/s)",
                     fit_value(ours, "fit", "throughput_mb_s"), None, None,
                     controls.get("key_and_encode_MBps"), "encode"))
    tahoe_foolscap = tahoe.get("foolscap_fit")
    if tahoe_foolscap is not None:
        rows.append(["  Tahoe forced to Foolscap: A (ms) / 1/B (MB/s)", "", "",
                     f"{number(tahoe_foolscap.a_ms)} / {number(tahoe_foolscap.throughput_mb_s)}",
                     "", "", ""])
    by_size = [s.get("upload_by_size_ms", {}) for s in (ours, foolscap, tahoe)]
    for size in sorted(set().union(*by_size)):
        rows.append(_row(f"upload {_size_label(size)} (ms)", *(s.get(size) for s in by_size),
                         controls.get("tcp_by_size_ms", {}).get(size), "raw TCP"))
    rows.append(_row("A, servers discarding data (ms)", *fits("discard_fit", "a_ms")))
    rows.append(_row("1/B, servers discarding data (MB/s)",
                     *fits("discard_fit", "throughput_mb_s")))
    rows.append(_row("1 kB upload, servers discarding data (ms)", *each("discard_upload_1k_ms")))
    large = _size_label(ours.get("download_size") or tahoe.get("download_size") or 0)
    rows.append(_row(f"{large} download (MB/s)", *each("download_MBps")))
    rows.append(_row(f"1 KiB ranged read in the middle of {large} (ms)", *each("ranged_ms")))
    rows.append(_row("client RSS idle, fresh (MiB)", *each("client_idle_rss_mib")))
    rows.append(_row(f"client peak RSS, {large} upload (MiB)", *each("peak_rss_large_mib")))
    big = ours.get("big_size") or tahoe.get("big_size")
    if big:
        rows.append(_row(f"client peak RSS, {_size_label(big)} upload (MiB)",
                         *each("peak_rss_big_mib")))
        rows.append(_row(f"  {_size_label(big)} upload speed (MB/s)", *each("big_upload_MBps")))
    rows.append(_row("client RSS after the workloads (MiB)", *each("client_rss_after_mib")))
    rows.append(_row("idle storage server RSS, per server (MiB)", *each("storage_idle_rss_mib")))
    rows.append(_row("idle storage server CPU, per server (% of a core)",
                     *each("storage_idle_cpu_pct")))
    rows.append(_row("introducer RSS (MiB)", *each("introducer_rss_mib")))
    systems = (ours, foolscap, tahoe)
    delays = sorted({d for s in systems for d in s.get("rtt", {})}, key=float)
    for delay in delays:
        entries = [s.get("rtt", {}).get(delay, {}) for s in systems]
        rtt_ms = 2 * float(delay) * 1000
        rows.append(_row(f"1 kB upload via delay proxies, RTT {rtt_ms:g} ms (ms)",
                         *(e.get("upload_ms") for e in entries)))
        if float(delay) > 0:
            rows.append(_row("  as a multiple of the RTT",
                             *(e.get("multiple_of_rtt") for e in entries)))
            rows.append(_row("  RTTs beyond the no-delay time",
                             *(e.get("round_trips_beyond_no_delay") for e in entries)))
    rows.extend(_directory_rows(*(s.get("directories") or {} for s in systems)))
    rows.append(_row("other work on the machine, per section (% of a core)",
                     *each("foreign_cpu_pct")))
    for name, speed in (controls.get("encode_MBps") or {}).items():
        rows.append(["control: " + name.replace("_", " ") + " (MB/s)", "", "", "", "",
                     number(speed), ""])
    # A run of some sections only (``--sections``) leaves the other rows empty.
    return [row for row in rows if any(row[i] not in ("", "–") for i in (1, 2, 3, 5))]


def _directory_rows(ours: dict[str, Any], foolscap: dict[str, Any],
                    tahoe: dict[str, Any]) -> list[list[str]]:
    """``tahoe put alias:``, ``mkdir`` and ``cp -r`` rows (whole CLI processes)."""
    systems = (ours, foolscap, tahoe)
    if not any(systems):
        return []
    rows = [_row(f"tahoe {label}, whole process (ms)", *(s.get(key) for s in systems))
            for label, key in (("put 1 kB FILE alias:name", "put_alias_ms"),
                               ("mkdir (unlinked)", "mkdir_unlinked_ms"),
                               ("mkdir alias:name", "mkdir_alias_ms"))]
    trees = [s.get("cp", {}) for s in systems]
    for files in sorted(set().union(*trees)):
        entries = [t.get(files, {}) for t in trees]
        dirs = next((e.get("dirs") for e in entries if e.get("dirs")), None)
        for way, key in (("up", "up_files_per_s"), ("down", "down_files_per_s")):
            rows.append(_row(f"tahoe cp -r {way}, {files} files of 1 kB in {dirs} dirs"
                             " (files/s)", *(e.get(key) for e in entries)))
    return rows


def segment_rows(derived: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The segment-size table: a column per (segment size, system)."""
    systems = [name for name in ("ours", "tahoe") if derived["systems"].get(name)]
    segments = sorted({int(s) for name in systems
                       for s in derived["systems"][name].get("segments", {})})
    header = ["file, figure"] + [f"{s // 1024} KiB {name}" for s in segments for name in systems]
    files = sorted({int(f) for name in systems
                    for seg in derived["systems"][name].get("segments", {}).values()
                    for f in seg["files"]})
    figures = [("upload (MB/s)", "upload_MBps"), ("download (MB/s)", "download_MBps"),
               ("1 KiB ranged read (ms)", "ranged_ms"),
               ("peak RSS, upload (MiB)", "upload_peak_rss_mib"),
               ("peak RSS, download (MiB)", "download_peak_rss_mib")]
    rows = []
    for size in files:
        for label, key in figures:
            row = [f"{_size_label(size)}: {label}"]
            for segment in segments:
                for name in systems:
                    seg = derived["systems"][name].get("segments", {}).get(str(segment), {})
                    row.append(cell(seg.get("files", {}).get(str(size), {}).get(key)))
            rows.append(row)
    return header, rows


def target_rows(derived: dict[str, Any]) -> list[list[str]]:
    """One row per target: value and whether it is met."""
    verdict = {True: "met", False: "NOT met", None: "not measured"}
    return [[t["target"], f"{number(t['value'])} {t['unit']}", verdict[t["met"]]]
            for t in derived["targets"]]


def render(header: Sequence[str], rows: Sequence[Sequence[str]], markdown: bool = False) -> str:
    """A plain-text table with aligned columns, or a Markdown pipe table."""
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(c or " " for c in row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    fmt: Callable[[Sequence[str]], str] = lambda r: "  ".join(  # noqa: E731
        str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
    return "\n".join([fmt(header), fmt(["-" * w for w in widths]), *map(fmt, rows)])

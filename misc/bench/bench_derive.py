"""From raw samples to figures: summaries, fits, ratios to Tahoe and to the controls, targets.

Input is the JSON-ready dict the run produced (``systems``, ``controls``);
output is a list of table rows and a dict of derived figures, both JSON-ready.
Every figure is a median over repetitions (with min and max); a ratio is
"ours / other" of the same figure, so for times below 1 means faster.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from bench_stats import CostFit, Summary, fit_medians, ratio, summarize

__all__ = ["derive", "system_figures"]

MB = 1e6


def _get(tree: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(tree, dict):
            return None
        tree = tree.get(key)
    return tree


def _scaled(samples: Sequence[float] | None, factor: float) -> Summary | None:
    if not samples:
        return None
    return summarize(s * factor for s in samples if s is not None)


def _sizes(uploads: dict[str, Any] | None) -> dict[int, list[float]]:
    seconds = _get(uploads, "seconds") or {}
    return {int(size): list(times) for size, times in seconds.items() if times}


def _fit(uploads: dict[str, Any] | None) -> CostFit | None:
    return fit_medians(_sizes(uploads))


def _throughput(download: dict[str, Any] | None) -> Summary | None:
    if not download or not download.get("seconds"):
        return None
    return summarize(b / s / MB for b, s in zip(download["bytes"], download["seconds"]) if s > 0)


def system_figures(raw: dict[str, Any], plan: dict[str, Any]) -> dict[str, Any]:
    """Every derived figure of one system (summaries as dicts, fits as dicts)."""
    fig: dict[str, Any] = {}
    fig["foreign_cpu_pct"] = summarize((raw.get("section_foreign_cpu_pct") or {}).values())
    fig["upload_1k_ms"] = _scaled(raw.get("small_upload_s"), 1000)
    fig["cli_put_1k_ms"] = _scaled(raw.get("cli_put_s"), 1000)
    fig["floor_1k_ms"] = _scaled(_get(raw, "floor", "seconds"), 1000)
    fig["floor_plain_1k_ms"] = _scaled(_get(raw, "floor_plain", "seconds"), 1000)
    fig["floor_https_1k_ms"] = _scaled(_get(raw, "floor_https", "seconds"), 1000)
    fig["fit"] = _fit(raw.get("uploads"))
    fig["upload_by_size_ms"] = {size: summarize(t * 1000 for t in times)
                                for size, times in _sizes(raw.get("uploads")).items()}
    fig["download_MBps"] = _throughput(raw.get("download"))
    fig["ranged_ms"] = _scaled(raw.get("ranged_s"), 1000)
    idle = raw.get("idle") or {}
    fig["client_idle_rss_mib"] = idle.get("client_rss_mib")
    fig["client_rss_after_mib"] = raw.get("client_rss_after_mib")
    fig["storage_idle_rss_mib"] = summarize(v for v in idle.get("storage_rss_mib", []) if v)
    fig["storage_idle_cpu_pct"] = summarize(v for v in idle.get("storage_cpu_pct", [])
                                            if v is not None)
    fig["introducer_rss_mib"] = idle.get("introducer_rss_mib")
    large = str(plan.get("download_size", 100 * 1000 * 1000))
    fig["download_size"] = int(large)
    fig["peak_rss_large_mib"] = summarize(_get(raw, "uploads", "peak_rss_mib", large) or [])
    memory_sizes = sorted(int(s) for s in (_get(raw, "memory", "seconds") or {}))
    if memory_sizes:
        big = str(memory_sizes[-1])
        fig["big_size"] = int(big)
        fig["peak_rss_big_mib"] = summarize(_get(raw, "memory", "peak_rss_mib", big) or [])
        fig["rss_before_big_mib"] = summarize(_get(raw, "memory", "rss_before_mib", big) or [])
        fig["big_upload_MBps"] = summarize(int(big) / s / MB
                                           for s in _get(raw, "memory", "seconds", big))
    rtt = raw.get("rtt") or {}
    base = summarize(rtt.get("0.0") or [])
    fig["rtt"] = {}
    for delay_text, samples in rtt.items():
        delay = float(delay_text)
        summary = _scaled(samples, 1000)
        entry: dict[str, Any] = {"delay_ms": delay * 1000, "upload_ms": summary}
        if delay > 0 and summary is not None:
            rtt_ms = 2 * delay * 1000
            entry["rtt_ms"] = rtt_ms
            entry["multiple_of_rtt"] = summary.median / rtt_ms
            if base is not None:
                beyond = summary.median - base.median * 1000
                entry["round_trips_beyond_no_delay"] = beyond / rtt_ms
        fig["rtt"][delay_text] = entry
    discard = raw.get("discard") or {}
    fig["discard_upload_1k_ms"] = _scaled(discard.get("small_upload_s"), 1000)
    fig["discard_fit"] = _fit(discard.get("uploads"))
    fig["discard_upload_by_size_ms"] = {size: summarize(t * 1000 for t in times)
                                        for size, times in _sizes(discard.get("uploads")).items()}
    foolscap = raw.get("foolscap_client")
    if foolscap:
        fig["foolscap_upload_1k_ms"] = _scaled(foolscap.get("small_upload_s"), 1000)
        fig["foolscap_fit"] = _fit(foolscap.get("uploads"))
        fig["foolscap_upload_by_size_ms"] = {
            size: summarize(t * 1000 for t in times)
            for size, times in _sizes(foolscap.get("uploads")).items()}
    fig["directories"] = _directory_figures(raw.get("directories"))
    fig["segments"] = {}
    for segment, seg in (raw.get("segments") or {}).items():
        if not seg:
            continue
        per_file: dict[str, Any] = {}
        for size, times in (_get(seg, "uploads", "seconds") or {}).items():
            per_file[size] = {
                "upload_MBps": summarize(int(size) / t / MB for t in times),
                "download_MBps": _throughput(_get(seg, "download", size)),
                "ranged_ms": _scaled(_get(seg, "ranged_s", size), 1000),
                "upload_peak_rss_mib": summarize(_get(seg, "uploads", "peak_rss_mib", size) or []),
                "download_peak_rss_mib": summarize(
                    _get(seg, "download", size, "peak_rss_mib") or []),
            }
        fig["segments"][segment] = {"idle_rss_mib": seg.get("idle_rss_mib"), "files": per_file}
    return fig


def _directory_figures(raw: dict[str, Any] | None) -> dict[str, Any]:
    """Whole-process CLI times (ms) and ``cp -r`` speeds (files per second) per tree size."""
    if not raw:
        return {}
    fig: dict[str, Any] = {
        "put_alias_ms": _scaled(raw.get("put_s"), 1000),
        "mkdir_unlinked_ms": _scaled(raw.get("mkdir_unlinked_s"), 1000),
        "mkdir_alias_ms": _scaled(raw.get("mkdir_alias_s"), 1000),
        "cp": {},
    }
    for files, tree in (raw.get("cp") or {}).items():
        count = int(tree["files"])
        fig["cp"][int(files)] = {
            "dirs": tree.get("dirs"),
            "up_files_per_s": summarize(count / s for s in tree.get("up_s", []) if s > 0),
            "down_files_per_s": summarize(count / s for s in tree.get("down_s", []) if s > 0),
        }
    return fig


def _cp_speedup(ours: dict[str, Any], tahoe: dict[str, Any], files: int | None = None
                ) -> float | None:
    """Ours over Tahoe in files per second copied up, for a tree of ``files`` files (None:
    the largest tree both copied)."""
    ours_cp = _get(ours, "directories", "cp") or {}
    tahoe_cp = _get(tahoe, "directories", "cp") or {}
    common = sorted(set(ours_cp) & set(tahoe_cp))
    if files is not None:
        common = [n for n in common if n == files]
    if not common:
        return None
    tree = common[-1]
    return ratio(_median(ours_cp[tree]["up_files_per_s"]),
                 _median(tahoe_cp[tree]["up_files_per_s"]))


def _round_trips(figures: dict[str, Any]) -> float | None:
    """Round trips a 1 kB upload waits for, at the largest proxy delay measured."""
    delays = sorted((float(d), e) for d, e in (figures.get("rtt") or {}).items() if float(d) > 0)
    return delays[-1][1].get("round_trips_beyond_no_delay") if delays else None


def control_figures(controls: dict[str, Any]) -> dict[str, Any]:
    """The raw-TCP fit and per-size times, and the encode speeds (MB/s of plaintext)."""
    fig: dict[str, Any] = {}
    tcp = controls.get("tcp")
    fig["tcp_fit"] = _fit(tcp)
    fig["tcp_by_size_ms"] = {size: summarize(t * 1000 for t in times)
                             for size, times in _sizes(tcp).items()}
    cases = _get(controls, "encode", "cases") or {}
    speeds = {name: case.get("mb_per_s") for name, case in cases.items()}
    fig["encode_MBps"] = speeds
    key, enc = speeds.get("convergent_key_pass"), speeds.get("encode_core")
    fig["key_and_encode_MBps"] = 1 / (1 / key + 1 / enc) if key and enc else None
    return fig


def _median(value: Any) -> float | None:
    if isinstance(value, Summary):
        return value.median
    return value if isinstance(value, (int, float)) else None


def _check(value: float | None, test: Callable[[float], bool]) -> bool | None:
    if value is None or math.isinf(value) or math.isnan(value):
        return None  # e.g. 1/B from sizes too small to show a cost per byte
    return bool(test(value))


def derive(report: dict[str, Any]) -> dict[str, Any]:
    """Figures per system and for the controls, ratios, and the targets with met/not met."""
    plan = report.get("plan", {})
    systems = {name: system_figures(raw, plan) for name, raw in report["systems"].items()}
    controls = control_figures(report.get("controls", {}))
    ours, tahoe = systems.get("ours", {}), systems.get("tahoe", {})
    fit, tahoe_fit = ours.get("fit"), tahoe.get("fit")
    up, tahoe_up = _median(ours.get("upload_1k_ms")), _median(tahoe.get("upload_1k_ms"))
    floor = _median(ours.get("floor_https_1k_ms"))
    idle = ours.get("client_idle_rss_mib")
    peak_big = _median(ours.get("peak_rss_big_mib"))
    storage_rss = ours.get("storage_idle_rss_mib")
    storage_cpu = _median(ours.get("storage_idle_cpu_pct"))
    targets = [
        ("1 kB web-API upload >= 5x faster than Tahoe 1.20 (default; moonshot 10x)",
         ratio(tahoe_up, up), lambda r: r >= 5, "x faster"),
        ("1 kB web-API upload <= 1.5x the floor of its protocol (HTTPS floor)",
         ratio(up, floor), lambda r: r <= 1.5, "x floor"),
        ("round trips of a 1 kB upload through delay proxies <= 1.3 (Tahoe: 3.1)",
         _round_trips(ours), lambda r: r <= 1.3, "RTT"),
        ("tahoe put 1 kB (whole process) <= 100 ms", _median(ours.get("cli_put_1k_ms")),
         lambda v: v <= 100, "ms"),
        ("A <= 10 ms", fit.a_ms if fit else None, lambda v: v <= 10, "ms"),
        ("1/B >= 60 MB/s", fit.throughput_mb_s if fit else None, lambda v: v >= 60, "MB/s"),
        ("100 MB download >= 150 MB/s", _median(ours.get("download_MBps")),
         lambda v: v >= 150, "MB/s"),
        ("1 KiB ranged read <= 10 ms", _median(ours.get("ranged_ms")), lambda v: v <= 10, "ms"),
        ("client RSS idle <= 50 MiB", idle, lambda v: v <= 50, "MiB"),
        ("client peak RSS during the largest upload <= idle + 64 MiB",
         None if peak_big is None or idle is None else peak_big - idle,
         lambda v: v <= 64, "MiB over idle"),
        ("idle storage server RSS <= 40 MiB (largest of the servers)",
         storage_rss.high if storage_rss else None, lambda v: v <= 40, "MiB"),
        ("idle storage server CPU near zero (<= 1% of a core, median)", storage_cpu,
         lambda v: v <= 1.0, "% of a core"),
        ("tahoe cp -r of 300 files of 1 kB >= 10x faster than Tahoe 1.20 (moonshot 20x)",
         _cp_speedup(ours, tahoe, 300), lambda r: r >= 10, "x faster"),
        ("tahoe cp -r of 1 kB files >= 20x faster than Tahoe 1.20 (largest tree)",
         _cp_speedup(ours, tahoe), lambda r: r >= 20, "x faster"),
    ]
    return {
        "systems": systems,
        "controls": controls,
        "ratios": {
            "upload_1k_ours_over_tahoe": ratio(up, tahoe_up),
            "upload_1k_https_over_foolscap": ratio(
                up, _median(systems.get("ours-foolscap", {}).get("upload_1k_ms"))),
            "upload_1k_ours_over_floor": ratio(up, floor),
            "A_ours_over_tahoe": ratio(fit.a if fit else None, tahoe_fit.a if tahoe_fit else None),
            "inv_B_ours_over_tahoe": ratio(fit.throughput_mb_s if fit else None,
                                           tahoe_fit.throughput_mb_s if tahoe_fit else None),
            "inv_B_ours_over_tcp": ratio(fit.throughput_mb_s if fit else None,
                                         controls["tcp_fit"].throughput_mb_s
                                         if controls.get("tcp_fit") else None),
            "inv_B_ours_over_key_and_encode": ratio(fit.throughput_mb_s if fit else None,
                                                    controls.get("key_and_encode_MBps")),
        },
        "targets": [{"target": text, "value": value, "unit": unit,
                     "met": _check(value, test)} for text, value, test, unit in targets],
    }

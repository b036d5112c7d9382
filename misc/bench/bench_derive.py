"""From raw samples to figures: summaries, fits, ratios to Tahoe and to the controls, targets.

Input is the JSON-ready dict the run produced (``systems``, ``controls``);
output is a list of table rows and a dict of derived figures, both JSON-ready.
Every figure is a median over repetitions (with min and max); a ratio is
"ours / other" of the same figure, so for times below 1 means faster.

A ratio against Tahoe is given only for figures measured in turns with
Tahoe's grid in the same run (``interleaved_with``), and only when the other
work on the machine stayed at or under :data:`MAX_OTHER_WORK_PCT` of a core
during both systems' blocks of that section (its *load key*); otherwise
``comparison`` says why there is none.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from bench_stats import CostFit, Summary, fit_medians, ratio, summarize

__all__ = ["MAX_OTHER_WORK_PCT", "comparisons", "cpu_figures", "derive", "gated_ratio",
           "system_figures"]

MB = 1e6
#: Other work on the machine (% of one core) above which no ratio against Tahoe is given.
MAX_OTHER_WORK_PCT = 5.0


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


def cpu_figures(raw: dict[str, Any], cores: int, shares: int) -> dict[str, dict[str, Any]]:
    """CPU per operation (ms) for each process and role, the floor (all / cores) and the
    process that used the most, from ``cpu_per_op`` (:class:`bench_cpu.CpuMeter`).

    :param shares: shares per file (N): a storage server's CPU per share is the
        storage servers' CPU per upload over N.
    """
    out: dict[str, dict[str, Any]] = {}
    for op, entry in raw.items():
        ops = entry.get("ops") or 0
        if not ops:
            continue
        per = {name: 1000.0 * seconds / ops for name, seconds in entry.get("cpu_s", {}).items()}
        storage = [ms for name, ms in per.items() if name.startswith("storage")]
        others = [ms for name, ms in per.items() if name not in ("client", "introducer", "cli",
                                                                 "bench")
                  and not name.startswith("storage")]
        total = sum(per.values())
        top = max(per.items(), key=lambda item: item[1]) if per else ("", 0.0)
        out[op] = {
            "ops": ops, "wall_ms": 1000.0 * entry.get("wall_s", 0.0) / ops, "cpu_ms": per,
            "client_ms": per.get("client"), "introducer_ms": per.get("introducer"),
            "storage_ms": sum(storage) if storage else None,
            "storage_max_ms": max(storage) if storage else None,
            "storage_per_share_ms": sum(storage) / shares if storage and shares else None,
            "cli_ms": per.get("cli"), "bench_ms": per.get("bench"),
            "other_nodes_ms": sum(others) if others else None,
            "total_ms": total, "cores": cores, "floor_ms": total / cores if cores else None,
            "top": top[0], "top_ms": top[1],
        }
    return out


def _role_memory(sample: dict[str, float] | None) -> dict[str, float] | None:
    return None if not sample else {"rss_mib": sample["rss"], "uss_mib": sample["uss"]}


def _largest_memory(samples: Sequence[dict[str, float] | None] | None) -> dict[str, Any] | None:
    found = [s for s in samples or [] if s]
    if not found:
        return None
    return {"rss_mib": max(s["rss"] for s in found), "uss_mib": max(s["uss"] for s in found),
            "rss_median_mib": summarize(s["rss"] for s in found).median,  # type: ignore[union-attr]
            "uss_median_mib": summarize(s["uss"] for s in found).median,  # type: ignore[union-attr]
            "nodes": len(found)}


def memory_roles(raw: dict[str, Any]) -> dict[str, Any]:
    """RSS and USS at rest per role (the largest of the storage nodes), and the client's peak
    RSS during the largest upload of the memory section, with its rise over the RSS before."""
    idle, after = raw.get("idle") or {}, raw.get("idle_after") or {}
    roles: dict[str, Any] = {
        "client_fresh": _role_memory(idle.get("client_memory_mib")),
        "client_at_rest": _role_memory(after.get("client_memory_mib")),
        "storage_fresh": _largest_memory(idle.get("storage_memory_mib")),
        "storage_served": _largest_memory(after.get("storage_memory_mib")),
        "introducer": _role_memory(after.get("introducer_memory_mib")
                                   or idle.get("introducer_memory_mib")),
    }
    sizes = sorted(int(s) for s in (_get(raw, "memory", "peak_rss_mib") or {}))
    if sizes:
        big = str(sizes[-1])
        peaks = _get(raw, "memory", "peak_rss_mib", big) or []
        before = _get(raw, "memory", "rss_before_mib", big) or []
        roles["client_peak"] = {
            "size": int(big), "peak_rss_mib": summarize(p for p in peaks if p is not None),
            "over_rest_mib": summarize(p - b for p, b in zip(peaks, before)
                                       if p is not None and b is not None)}
    return {role: value for role, value in roles.items() if value}


def system_figures(raw: dict[str, Any], plan: dict[str, Any],
                   cores: int | None = None) -> dict[str, Any]:
    """Every derived figure of one system (summaries as dicts, fits as dicts)."""
    fig: dict[str, Any] = {}
    fig["foreign_cpu_pct"] = summarize((raw.get("section_foreign_cpu_pct") or {}).values())
    fig["load_pct"] = {key: entry.get("foreign_pct") for key, entry in
                       (raw.get("load") or {}).items()}
    fig["interleaved_with"] = raw.get("interleaved_with") or []
    fig["cpu_per_op"] = cpu_figures(raw.get("cpu_per_op") or {}, cores or 1,
                                    int(plan.get("total") or 0))
    fig["memory_roles"] = memory_roles(raw)
    fig["upload_1k_ms"] = _scaled(raw.get("small_upload_s"), 1000)
    fig["download_1k_ms"] = _scaled(_get(raw, "small_download", "seconds"), 1000)
    fig["cli_put_1k_ms"] = _scaled(raw.get("cli_put_s"), 1000)
    fig["share_file_control_ms"] = (raw.get("share_file_control") or {}).get("cpu_ms")
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


def comparisons(ours: dict[str, Any], tahoe: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per load key: the other work during ours and during Tahoe's blocks (% of a core),
    whether a ratio may be given (``ok``) and if not, why. Empty unless the two systems
    were measured in turns in one run."""
    if not ours or not tahoe or "tahoe" not in (ours.get("interleaved_with") or []):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for key in sorted(set(ours.get("load_pct") or {}) | set(tahoe.get("load_pct") or {})):
        mine, theirs = ours["load_pct"].get(key), tahoe["load_pct"].get(key)
        if mine is None or theirs is None:
            why = "not measured on both sides"
        elif max(mine, theirs) > MAX_OTHER_WORK_PCT:
            why = (f"other work {mine:.1f}% of a core during ours, {theirs:.1f}% during"
                   f" Tahoe's (limit {MAX_OTHER_WORK_PCT:g}%)")
        else:
            why = None
        out[key] = {"ours_pct": mine, "tahoe_pct": theirs, "ok": why is None, "why": why}
    return out


def gated_ratio(compared: dict[str, dict[str, Any]], keys: Sequence[str] | None,
                numerator: float | None, denominator: float | None
                ) -> tuple[float | None, str | None]:
    """``numerator / denominator`` of figures measured beside Tahoe under load keys ``keys``,
    or (None, why) when the comparison does not hold. ``keys`` None: no check (memory)."""
    value = ratio(numerator, denominator)
    if value is None or keys is None:
        return value, None
    if not compared:
        return None, "not measured in turns with Tahoe in this run"
    for key in keys:
        check = compared.get(key)
        if check is None:
            return None, f"{key}: not measured on both sides"
        if not check["ok"]:
            return None, f"{key}: {check['why']}"
    return value, None


def _cp_speedup(ours: dict[str, Any], tahoe: dict[str, Any], compared: dict[str, Any],
                files: int | None = None) -> tuple[float | None, str | None]:
    """Ours over Tahoe in files per second copied up, for a tree of ``files`` files (None:
    the largest tree both copied), with why there is none."""
    ours_cp = _get(ours, "directories", "cp") or {}
    tahoe_cp = _get(tahoe, "directories", "cp") or {}
    common = sorted(set(ours_cp) & set(tahoe_cp))
    if files is not None:
        common = [n for n in common if n == files]
    if not common:
        return None, None
    tree = common[-1]
    return gated_ratio(compared, [f"cp_{tree}"], _median(ours_cp[tree]["up_files_per_s"]),
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


def cpu_floor_throughput(cpu: dict[str, dict[str, Any]]) -> float | None:
    """MB/s an upload could reach if its CPU, spread over every core, were all it took: the
    CPU per byte between the smallest and the largest cost-model size metered."""
    sizes = sorted(int(op.split("_", 1)[1]) for op in cpu
                   if op.startswith("upload_") and op[7:].isdigit())
    if len(sizes) < 2 or sizes[-1] <= sizes[0]:
        return None
    small, big = cpu[f"upload_{sizes[0]}"], cpu[f"upload_{sizes[-1]}"]
    if not small.get("floor_ms") or not big.get("floor_ms"):
        return None
    per_byte_ms = (big["floor_ms"] - small["floor_ms"]) / (sizes[-1] - sizes[0])
    return None if per_byte_ms <= 0 else 1.0 / per_byte_ms / 1000.0


def derive(report: dict[str, Any]) -> dict[str, Any]:
    """Figures per system and for the controls, ratios, and the targets with met/not met."""
    plan = report.get("plan", {})
    cores = report.get("machine", {}).get("cpus") or 1
    systems = {name: system_figures(raw, plan, cores) for name, raw in report["systems"].items()}
    controls = control_figures(report.get("controls", {}))
    ours, tahoe = systems.get("ours", {}), systems.get("tahoe", {})
    compared = comparisons(ours, tahoe)
    fit, tahoe_fit = ours.get("fit"), tahoe.get("fit")
    up, tahoe_up = _median(ours.get("upload_1k_ms")), _median(tahoe.get("upload_1k_ms"))
    floor = _median(ours.get("floor_https_1k_ms"))
    idle = ours.get("client_idle_rss_mib")
    peak_big = _median(ours.get("peak_rss_big_mib"))
    storage_cpu = _median(ours.get("storage_idle_cpu_pct"))
    roles = ours.get("memory_roles", {})
    client_fresh, served = roles.get("client_fresh") or {}, roles.get("storage_served") or {}
    upload_cpu = ours.get("cpu_per_op", {}).get("upload_1k", {})
    rounds_cpu = ours.get("cpu_per_op", {}).get("upload_1k_rounds", {})
    cpu_floor = cpu_floor_throughput(ours.get("cpu_per_op", {}))
    ours["cpu_floor_throughput_MBps"] = cpu_floor
    throughput = fit.throughput_mb_s if fit else None
    speedup, speedup_why = gated_ratio(compared, ["upload_1k"], tahoe_up, up)
    cp300, cp300_why = _cp_speedup(ours, tahoe, compared, 300)
    cp_largest, cp_largest_why = _cp_speedup(ours, tahoe, compared)
    targets: list[tuple[str, float | None, Callable[[float], bool], str, str | None]] = [
        ("1 kB web-API upload >= 7x faster than Tahoe 1.20 at its defaults, in turns"
         " (moonshot 10x)", speedup, lambda r: r >= 7, "x faster", speedup_why),
        ("1 kB web-API upload <= 1.5x the floor of its protocol (HTTPS floor)",
         ratio(up, floor), lambda r: r <= 1.5, "x floor", None),
        ("client CPU per 1 kB web-API upload <= 3 ms (blocks in turns)",
         upload_cpu.get("client_ms"), lambda v: v <= 3, "ms", None),
        ("client CPU per 1 kB web-API upload <= 3 ms (rounds back to back)",
         rounds_cpu.get("client_ms"), lambda v: v <= 3, "ms", None),
        ("storage server CPU per 1 kB share <= 0.8 ms (blocks in turns)",
         upload_cpu.get("storage_per_share_ms"), lambda v: v <= 0.8, "ms", None),
        ("storage server CPU per 1 kB share <= 0.8 ms (rounds back to back)"
         + (f"; of it, the file work alone on this disk now: {control:.3f} ms (control)"
            if (control := ours.get("share_file_control_ms")) is not None else ""),
         rounds_cpu.get("storage_per_share_ms"), lambda v: v <= 0.8, "ms", None),
        ("round trips of a 1 kB upload through delay proxies <= 1.3 (Tahoe: 3.1)",
         _round_trips(ours), lambda r: r <= 1.3, "RTT", None),
        ("tahoe put 1 kB (whole process) <= 100 ms", _median(ours.get("cli_put_1k_ms")),
         lambda v: v <= 100, "ms", None),
        ("A <= 10 ms", fit.a_ms if fit else None, lambda v: v <= 10, "ms", None),
        ("1/B >= 60 MB/s, or >= the CPU floor of this run / 1.2"
         + (f" ({cpu_floor:.0f} MB/s / 1.2)" if cpu_floor else ""), throughput,
         lambda v: v >= 60 or (cpu_floor is not None and v * 1.2 >= cpu_floor), "MB/s", None),
        ("100 MB download >= 150 MB/s", _median(ours.get("download_MBps")),
         lambda v: v >= 150, "MB/s", None),
        ("1 KiB ranged read <= 10 ms", _median(ours.get("ranged_ms")), lambda v: v <= 10, "ms",
         None),
        ("idle client RSS <= 52 MiB (fresh)", client_fresh.get("rss_mib"), lambda v: v <= 52,
         "MiB", None),
        ("idle client USS <= 36 MiB (fresh)", client_fresh.get("uss_mib"), lambda v: v <= 36,
         "MiB", None),
        ("client peak RSS during the largest upload <= idle + 64 MiB",
         None if peak_big is None or idle is None else peak_big - idle,
         lambda v: v <= 64, "MiB over idle", None),
        ("idle storage node after serving shares: RSS <= 45 MiB (largest of the servers)",
         served.get("rss_mib"), lambda v: v <= 45, "MiB", None),
        ("idle storage node after serving shares: USS <= 30 MiB (largest of the servers)",
         served.get("uss_mib"), lambda v: v <= 30, "MiB", None),
        ("idle storage server CPU near zero (<= 1% of a core, median)", storage_cpu,
         lambda v: v <= 1.0, "% of a core", None),
        ("tahoe cp -r of 300 new files of 1 kB >= 12x faster than Tahoe 1.20, in turns"
         " (moonshot 20x)", cp300, lambda r: r >= 12, "x faster", cp300_why),
        ("tahoe cp -r of 1 kB files >= 20x faster than Tahoe 1.20 (largest tree)",
         cp_largest, lambda r: r >= 20, "x faster", cp_largest_why),
    ]
    return {
        "systems": systems,
        "controls": controls,
        "max_other_work_pct": MAX_OTHER_WORK_PCT,
        "comparison": compared,
        "ratios": {
            "upload_1k_ours_over_tahoe": gated_ratio(compared, ["upload_1k"], up, tahoe_up)[0],
            "upload_1k_https_over_foolscap": ratio(
                up, _median(systems.get("ours-foolscap", {}).get("upload_1k_ms"))),
            "upload_1k_ours_over_floor": ratio(up, floor),
            "A_ours_over_tahoe": gated_ratio(compared, ["cost"], fit.a if fit else None,
                                             tahoe_fit.a if tahoe_fit else None)[0],
            "inv_B_ours_over_tahoe": gated_ratio(
                compared, ["cost"], throughput,
                tahoe_fit.throughput_mb_s if tahoe_fit else None)[0],
            "inv_B_ours_over_tcp": ratio(throughput, controls["tcp_fit"].throughput_mb_s
                                         if controls.get("tcp_fit") else None),
            "inv_B_ours_over_key_and_encode": ratio(throughput,
                                                    controls.get("key_and_encode_MBps")),
            "inv_B_ours_over_cpu_floor": ratio(throughput, cpu_floor),
        },
        "targets": [{"target": text, "value": value, "unit": unit, "why": why,
                     "met": _check(value, test)} for text, value, test, unit, why in targets],
    }

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

from bench_derive import gated_ratio
from bench_plan import size_label
from bench_stats import CostFit, Summary, ratio

__all__ = ["CPU_HEADER", "Rows", "comparison_rows", "cpu_rows", "jsonable", "main_rows",
           "memory_rows", "render", "segment_rows", "target_rows", "write_json"]

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


#: A row's load keys: the sections whose other work decides whether its ratio to Tahoe is
#: given (:func:`bench_derive.gated_ratio`); None: not checked (memory); ``NO_RATIO``: none.
Keys = Sequence[str] | None
NO_RATIO: tuple[str, ...] = ("-",)
REFUSED = "refused"


class Rows:
    """Builds main-table rows, each ratio against Tahoe checked against the run's other work.

    :ivar refused: row label -> why its ratio against Tahoe was not given.
    """

    def __init__(self, derived: dict[str, Any]) -> None:
        self.compared = derived.get("comparison") or {}
        self.refused: dict[str, str] = {}

    def __call__(self, label: str, ours: Figure, foolscap: Figure, tahoe: Figure,
                 control: Figure = None, control_label: str = "", *,
                 load: Keys = NO_RATIO) -> list[str]:
        """Our HTTPS and Foolscap figures, Tahoe's, ratios (of the HTTPS one)."""
        control_text = f"{control_label} {cell(control)}".strip() if control is not None else ""
        if load == NO_RATIO:
            against = "–"
        else:
            value, why = gated_ratio(self.compared, load, median(ours), median(tahoe))
            against = number(value)
            if why is not None:
                against = REFUSED
                self.refused[label.strip()] = why
        return [label, cell(ours), cell(foolscap), cell(tahoe), against, control_text,
                number(ratio(median(ours), median(control)))]


def main_rows(derived: dict[str, Any], rows: Rows | None = None) -> list[list[str]]:
    """The main table: every figure of ours (HTTPS and Foolscap) and Tahoe, with its control.

    :param rows: collects the ratios refused (a new one if None).
    """
    ours = derived["systems"].get("ours", {})
    foolscap = derived["systems"].get("ours-foolscap", {})
    tahoe = derived["systems"].get("tahoe", {})
    controls = derived["controls"]
    row = rows if rows is not None else Rows(derived)

    def each(key: str) -> tuple[Figure, Figure, Figure]:
        return ours.get(key), foolscap.get(key), tahoe.get(key)

    def fit_value(figures: dict[str, Any], fit: str, attr: str) -> float | None:
        value = figures.get(fit)
        return None if value is None else getattr(value, attr)

    def fits(fit: str, attr: str) -> tuple[Figure, Figure, Figure]:
        return (fit_value(ours, fit, attr), fit_value(foolscap, fit, attr),
                fit_value(tahoe, fit, attr))

    rows = [
        row("1 kB upload, web API (ms)", *each("upload_1k_ms"), ours.get("floor_https_1k_ms"),
            "HTTPS floor", load=["upload_1k"]),
        row("1 kB download, web API (ms)", *each("download_1k_ms"), load=["download_1k"]),
        row("1 kB upload, web API, Tahoe forced to Foolscap (ms)", None, None,
            tahoe.get("foolscap_upload_1k_ms")),
        row("HTTPS floor, 10 allocate+write pipelined (ms)", *each("floor_https_1k_ms"),
            load=["floor"]),
        row("Foolscap floor, 10 allocate+write+close (ms)", *each("floor_1k_ms"), load=["floor"]),
        row("  same, Foolscap's plain Tub, Nagle on (ms)", *each("floor_plain_1k_ms"),
            load=["floor"]),
        row("tahoe put 1 kB, whole process (ms)", *each("cli_put_1k_ms"), load=["put_cli"]),
    ]
    tcp_fit = controls.get("tcp_fit")
    rows.append(row("A, fixed cost per file (ms)", *fits("fit", "a_ms"),
                    None if tcp_fit is None else tcp_fit.a_ms, "raw TCP", load=["cost"]))
    rows.append(row("1/B, throughput (MB/s)", *fits("fit", "throughput_mb_s"),
                    None if tcp_fit is None else tcp_fit.throughput_mb_s, "raw TCP",
                    load=["cost"]))
    rows.append(row("  1/B against the core's key pass + encode (MB/s)",
                    fit_value(ours, "fit", "throughput_mb_s"), None, None,
                    controls.get("key_and_encode_MBps"), "encode"))
    rows.append(row("  1/B against the CPU floor of this run (MB/s)",
                    fit_value(ours, "fit", "throughput_mb_s"), None, None,
                    ours.get("cpu_floor_throughput_MBps"), "CPU floor"))
    tahoe_foolscap = tahoe.get("foolscap_fit")
    if tahoe_foolscap is not None:
        rows.append(["  Tahoe forced to Foolscap: A (ms) / 1/B (MB/s)", "", "",
                     f"{number(tahoe_foolscap.a_ms)} / {number(tahoe_foolscap.throughput_mb_s)}",
                     "", "", ""])
    by_size = [s.get("upload_by_size_ms", {}) for s in (ours, foolscap, tahoe)]
    for size in sorted(set().union(*by_size)):
        rows.append(row(f"upload {size_label(size)} (ms)", *(s.get(size) for s in by_size),
                        controls.get("tcp_by_size_ms", {}).get(size), "raw TCP", load=["cost"]))
    rows.append(row("A, servers discarding data (ms)", *fits("discard_fit", "a_ms"),
                    load=["discard_cost"]))
    rows.append(row("1/B, servers discarding data (MB/s)",
                    *fits("discard_fit", "throughput_mb_s"), load=["discard_cost"]))
    rows.append(row("1 kB upload, servers discarding data (ms)", *each("discard_upload_1k_ms"),
                    load=["discard_small"]))
    large = size_label(ours.get("download_size") or tahoe.get("download_size") or 0)
    rows.append(row(f"{large} download (MB/s)", *each("download_MBps"), load=["download"]))
    rows.append(row(f"1 KiB ranged read in the middle of {large} (ms)", *each("ranged_ms"),
                    load=["ranged"]))
    rows.append(row("client RSS idle, fresh (MiB)", *each("client_idle_rss_mib"), load=None))
    rows.append(row(f"client peak RSS, {large} upload (MiB)", *each("peak_rss_large_mib"),
                    load=None))
    big = ours.get("big_size") or tahoe.get("big_size")
    if big:
        rows.append(row(f"client peak RSS, {size_label(big)} upload (MiB)",
                        *each("peak_rss_big_mib"), load=None))
        rows.append(row(f"  {size_label(big)} upload speed (MB/s)", *each("big_upload_MBps"),
                        load=["memory"]))
    rows.append(row("client RSS after the workloads (MiB)", *each("client_rss_after_mib"),
                    load=None))
    rows.append(row("idle storage server RSS, per server (MiB)", *each("storage_idle_rss_mib"),
                    load=None))
    rows.append(row("idle storage server CPU, per server (% of a core)",
                    *each("storage_idle_cpu_pct"), load=["idle"]))
    rows.append(row("introducer RSS (MiB)", *each("introducer_rss_mib"), load=None))
    systems = (ours, foolscap, tahoe)
    delays = sorted({d for s in systems for d in s.get("rtt", {})}, key=float)
    for delay in delays:
        entries = [s.get("rtt", {}).get(delay, {}) for s in systems]
        rtt_ms = 2 * float(delay) * 1000
        rows.append(row(f"1 kB upload via delay proxies, RTT {rtt_ms:g} ms (ms)",
                        *(e.get("upload_ms") for e in entries), load=["rtt"]))
        if float(delay) > 0:
            rows.append(row("  as a multiple of the RTT",
                            *(e.get("multiple_of_rtt") for e in entries), load=["rtt"]))
            rows.append(row("  RTTs beyond the no-delay time",
                            *(e.get("round_trips_beyond_no_delay") for e in entries),
                            load=["rtt"]))
    rows.extend(_directory_rows(row, *(s.get("directories") or {} for s in systems)))
    rows.append(row("other work on the machine, per section (% of a core)",
                    *each("foreign_cpu_pct")))
    for name, speed in (controls.get("encode_MBps") or {}).items():
        rows.append(["control: " + name.replace("_", " ") + " (MB/s)", "", "", "", "",
                     number(speed), ""])
    # A run of some sections only (``--sections``) leaves the other rows empty.
    return [r for r in rows if any(r[i] not in ("", "–") for i in (1, 2, 3, 5))]


def _directory_rows(row: Rows, ours: dict[str, Any], foolscap: dict[str, Any],
                    tahoe: dict[str, Any]) -> list[list[str]]:
    """``tahoe put alias:``, ``mkdir`` and ``cp -r`` rows (whole CLI processes)."""
    systems = (ours, foolscap, tahoe)
    if not any(systems):
        return []
    rows = [row(f"tahoe {label}, whole process (ms)", *(s.get(key) for s in systems),
                load=[load])
            for label, key, load in (("put 1 kB FILE alias:name", "put_alias_ms", "put_alias"),
                                     ("mkdir (unlinked)", "mkdir_unlinked_ms", "mkdir"),
                                     ("mkdir alias:name", "mkdir_alias_ms", "mkdir_alias"))]
    trees = [s.get("cp", {}) for s in systems]
    for files in sorted(set().union(*trees)):
        entries = [t.get(files, {}) for t in trees]
        dirs = next((e.get("dirs") for e in entries if e.get("dirs")), None)
        for way, key in (("up", "up_files_per_s"), ("down", "down_files_per_s")):
            rows.append(row(f"tahoe cp -r {way}, {files} files of 1 kB in {dirs} dirs"
                            " (files/s)", *(e.get(key) for e in entries), load=[f"cp_{files}"]))
    return rows


#: The operations of the CPU table, in order, with their labels (``upload_<size>`` and
#: ``cp_*_<files>`` are labelled from their names; anything else measured comes last).
CPU_OPS = {"upload_1k": "1 kB upload, web API",
           "upload_1k_rounds": "1 kB upload, web API, in rounds of uploads back to back",
           "download_1k": "1 kB download, web API",
           "put_cli_1k": "tahoe put 1 kB", "put_alias_1k": "tahoe put 1 kB FILE alias:name",
           "mkdir": "tahoe mkdir (unlinked)", "mkdir_alias": "tahoe mkdir alias:name"}
CPU_HEADER = ["CPU per operation (ms)", "system", "wall", "client", "storage, all",
              "storage, busiest", "introducer", "CLI", "bench", "all processes",
              "floor (all / {cores} cores)", "most CPU"]


def _op_label(op: str) -> str:
    if op in CPU_OPS:
        return CPU_OPS[op]
    kind, _, count = op.rpartition("_")
    if count.isdigit():
        if kind == "upload":
            return f"upload {size_label(int(count))}, web API (cost model, memory)"
        if kind == "download":
            return f"download {size_label(int(count))}, web API"
        if kind in ("cp_up", "cp_down"):
            return f"tahoe cp -r {kind[3:]} of {count} files, per file"
    return op


def _op_order(op: str) -> tuple[int, int, str]:
    names = list(CPU_OPS)
    if op in CPU_OPS:
        return (names.index(op), 0, op)
    kind, _, count = op.rpartition("_")
    rank = {"cp_up": 10, "cp_down": 11, "upload": 20, "download": 21}.get(kind, 30)
    return (rank, int(count) if count.isdigit() else 0, op)


def cpu_rows(derived: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The CPU table: for each operation and system, wall time and CPU per operation of each
    role (every storage server together, and the busiest one), the sum over every process,
    the floor that sum sets on the wall time (all / cores), and the process that used the
    most."""
    rows = []
    cores = next((entry.get("cores") for figures in derived["systems"].values()
                  for entry in (figures.get("cpu_per_op") or {}).values()), None)
    header = [h.format(cores=cores or "?") for h in CPU_HEADER]
    systems = [(name, figures.get("cpu_per_op") or {})
               for name, figures in derived["systems"].items()]
    ops = sorted({op for _, cpu in systems for op in cpu}, key=_op_order)
    for op in ops:
        for name, cpu in systems:
            entry = cpu.get(op)
            if not entry:
                continue
            rows.append([_op_label(op), name, number(entry["wall_ms"]),
                         number(entry.get("client_ms")), number(entry.get("storage_ms")),
                         number(entry.get("storage_max_ms")), number(entry.get("introducer_ms")),
                         number(entry.get("cli_ms")), number(entry.get("bench_ms")),
                         number(entry["total_ms"]), number(entry.get("floor_ms")),
                         f"{entry['top']} {number(entry['top_ms'])}"])
    return header, rows


MEMORY_ROLES = (("client_fresh", "client at rest, fresh"),
                ("client_at_rest", "client at rest, after the workloads"),
                ("storage_fresh", "storage node at rest, fresh (largest)"),
                ("storage_served", "storage node at rest, after serving shares (largest)"),
                ("introducer", "introducer at rest"))


def memory_rows(derived: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The memory table: RSS and USS (``smaps_rollup``) per role and system, and the client's
    peak RSS during the largest upload with its rise over the RSS just before."""
    systems = [(name, figures.get("memory_roles") or {})
               for name, figures in derived["systems"].items() if figures.get("memory_roles")]
    header = ["memory per role (MiB)"] + [f"{name} {kind}" for name, _ in systems
                                         for kind in ("RSS", "USS")]
    rows = []
    for role, label in MEMORY_ROLES:
        if any(roles.get(role) for _, roles in systems):
            rows.append([label] + [number((roles.get(role) or {}).get(key))
                                   for _, roles in systems for key in ("rss_mib", "uss_mib")])
    peaks = [roles.get("client_peak") or {} for _, roles in systems]
    size = next((p["size"] for p in peaks if p.get("size")), None)
    if size:
        rows.append([f"client peak during a {size_label(size)} upload (RSS), rise"]
                    + [text for peak in peaks for text in (
                        cell(peak.get("peak_rss_mib")), "+" + cell(peak.get("over_rest_mib"))
                        if peak.get("over_rest_mib") else "–")])
    return header, rows


def comparison_rows(derived: dict[str, Any]) -> list[list[str]]:
    """Per section measured in turns with Tahoe: the other work during each side's blocks, and
    whether its ratios are given."""
    limit = derived.get("max_other_work_pct")
    return [[key, number(check.get("ours_pct")), number(check.get("tahoe_pct")),
             "ratios given" if check["ok"] else f"ratios refused (over {number(limit)}%)"
             if check.get("ours_pct") is not None and check.get("tahoe_pct") is not None
             else "ratios refused (one side missing)"]
            for key, check in (derived.get("comparison") or {}).items()]


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
            row = [f"{size_label(size)}: {label}"]
            for segment in segments:
                for name in systems:
                    seg = derived["systems"][name].get("segments", {}).get(str(segment), {})
                    row.append(cell(seg.get("files", {}).get(str(size), {}).get(key)))
            rows.append(row)
    return header, rows


def target_rows(derived: dict[str, Any]) -> list[list[str]]:
    """One row per target: value and whether it is met (or why a ratio to Tahoe was refused)."""
    verdict = {True: "met", False: "NOT met", None: "not measured"}
    return [[t["target"], f"{number(t['value'])} {t['unit']}",
             f"{REFUSED}: {t['why']}" if t.get("why") else verdict[t["met"]]]
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

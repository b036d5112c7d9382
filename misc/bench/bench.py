"""The grid benchmark (``make bench``, ``make bench-compare``): a local grid, timed end to end.

Builds a grid on 127.0.0.1 (an introducer, 10 storage servers, a client;
3-of-10, happy 7) of our nodes at their defaults (the HTTPS storage
protocol), then one of our nodes forced to Foolscap (the main workloads
only), and with ``--compare`` also one of Tahoe-LAFS 1.20's (installed by
``misc/interop/install-tahoe-1.20.sh``), runs every workload of
``docs/performance.md`` against each, measures the controls (raw TCP, the
core's encode speed, the Foolscap and HTTPS floors, servers that discard
data) in the same run.

With ``--compare`` our grid and Tahoe's are up at once and measured in turns
(blocks of operations alternating, the grid not measured frozen with
SIGSTOP: ``bench_schedule.py``); a ratio against Tahoe is printed only when
the other work on the machine stayed at or under 5 % of a core during both
sides of its section, and otherwise the table says why not.  For every
process of the grid (and the CLI processes) it adds up CPU per operation,
and reads memory per role (RSS and USS) at rest.  It writes:

* a table on stdout (medians with [min–max], ratios to Tahoe and to the controls,
  the targets met or not), then the other work per section measured in turns,
  CPU per operation and memory per role;
* ``--json`` (every raw timing, the plan, the machine, the derived figures);
* ``--plot`` (PNG: upload time against size, log axes, with the fitted lines);
* ``--markdown`` (the same tables for ``docs/performance.md``).

Not a test: nothing here asserts a speed.  ``--smoke`` runs a tiny plan (3
servers, 1 kB, 10 kB and 1 MB, one repetition, blocks of one) to check the harness;
``--sections directories,put`` runs only some parts.  Usage::

    python misc/bench/bench.py [--compare] [--smoke] [--sections A,B] [--json F] [--plot F]
                               [--markdown F]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for _path in (str(HERE), str(ROOT)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from bench_controls import encode_control, tcp_control  # noqa: E402
from bench_derive import derive  # noqa: E402
from bench_http import TestFiles  # noqa: E402
from bench_plan import SECTIONS, Plan, full_plan, parse_sections, smoke_plan  # noqa: E402
from bench_proc import wait_for_quiet_machine  # noqa: E402
from bench_report import (HEADER, Rows, comparison_rows, cpu_rows,  # noqa: E402
                          main_rows, memory_rows, render, segment_rows, target_rows, write_json)
from bench_system import Sections, System, log, run_systems  # noqa: E402
from tests.support.nodes import our_tahoe  # noqa: E402

__all__ = ["main"]

#: What our nodes forced to Foolscap run: enough for a Foolscap column beside the HTTPS one.
FOOLSCAP_SECTIONS = ("small", "floor", "put", "directories", "cost", "rtt")


def machine() -> dict[str, Any]:
    """What the figures were measured on (and how busy it was)."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {"cpus": os.cpu_count(), "cpu_model": model, "platform": platform.platform(),
            "python": sys.version.split()[0], "commit": commit,
            "memory_mib": os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20,
            "loadavg_start": os.getloadavg(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %z")}


def run(plan: Plan, names: list[str], workdir: Path,
        sections: tuple[str, ...] = tuple(SECTIONS)) -> dict[str, Any]:
    """Measure the controls, then each system named (``ours``, ``tahoe``); the raw report.

    :param sections: the section groups to run (:data:`bench_plan.SECTIONS`).
    """
    report: dict[str, Any] = {"machine": machine(), "plan": plan.as_dict(), "systems": {},
                              "controls": {}, "sections": list(sections)}
    files = TestFiles(workdir / "files")
    controls = Sections("controls", report["controls"])
    if "controls" in sections:
        report["controls"]["tcp"] = controls.run("raw TCP", lambda: tcp_control(
            {**plan.sizes}, plan.total, plan.needed))
        report["controls"]["encode"] = controls.run("encode (bench_core)", lambda: encode_control(
            plan.encode_mib, plan.encode_repeat, workdir))
    systems = []
    if "ours" in names:
        systems.append(System("ours", our_tahoe(), foolscap_only=False))
    if "tahoe" in names:
        from tests.support.tahoe120 import ensure_tahoe120
        systems.append(System("tahoe", ensure_tahoe120(), foolscap_only=False,
                              extra_foolscap_client=True))
    if "ours-foolscap" in names:
        systems.append(System("ours-foolscap", our_tahoe(), foolscap_only=True,
                              sections=FOOLSCAP_SECTIONS))
    # Ours and Tahoe's are measured in turns, both grids up, every ratio between them from
    # the same stretches of the run; the Foolscap-only variant of ours on its own, after.
    paired = [s for s in systems if s.name in ("ours", "tahoe")]
    groups = [paired] if len(paired) == 2 else [[s] for s in paired]
    groups += [[s] for s in systems if s not in paired]
    for group in groups:
        label = " and ".join(s.name for s in group)
        waited, foreign = wait_for_quiet_machine(plan.quiet_wait)
        log(f"[{label}] waited {waited:.0f} s for a quieter machine (other work:"
            f" {foreign:.0f}% of a core)")
        started = time.monotonic()
        measured = run_systems(group, plan, workdir, files, sections)
        for name, results in measured.items():
            results["total_s"] = time.monotonic() - started
            results["quiet_wait"] = {"seconds": waited, "foreign_cpu_pct": foreign}
            report["systems"][name] = results
    report["machine"]["loadavg_end"] = os.getloadavg()
    return report


def tables(derived: dict[str, Any], markdown: bool = False) -> str:
    """The main table (with why any ratio against Tahoe was refused), the other work per
    section compared, CPU per operation, memory per role, segment sizes and the targets."""
    rows = Rows(derived)
    parts = [render(HEADER, main_rows(derived, rows), markdown)]
    if rows.refused:
        parts.append("Ratios against Tahoe refused:\n" + "\n".join(
            f"{'- ' if markdown else '  '}{label}: {why}" for label, why in rows.refused.items()))
    compared = comparison_rows(derived)
    if compared:
        parts.append(render(["measured in turns with Tahoe", "other work during ours (% of a"
                             " core)", "during Tahoe's", "verdict"], compared, markdown))
    cpu_header, cpu = cpu_rows(derived)
    if cpu:
        parts.append(render(cpu_header, cpu, markdown))
    memory_header, memory = memory_rows(derived)
    if memory:
        parts.append(render(memory_header, memory, markdown))
    seg_header, seg_rows = segment_rows(derived)
    if seg_rows:
        parts.append(render(seg_header, seg_rows, markdown))
    targets = [row for row in target_rows(derived) if row[2] != "not measured"]
    if targets:
        parts.append(render(["target", "ours", "verdict"], targets, markdown))
    return "\n\n".join(parts)


def errors_of(report: dict[str, Any]) -> dict[str, str]:
    """Every failed section, as ``"system: section" -> message``."""
    found = {f"controls: {k}": v for k, v in report["controls"].get("errors", {}).items()}
    for name, system in report["systems"].items():
        found.update({f"{name}: {k}": v for k, v in system.get("errors", {}).items()})
    return found


def measure(args: argparse.Namespace, plan: Plan) -> dict[str, Any]:
    """Run the systems and controls the arguments ask for, in a work directory."""
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tahoe-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        names = (args.systems or ("ours,ours-foolscap,tahoe" if args.compare
                                  else "ours,ours-foolscap")).split(",")
        sections = parse_sections(args.sections)
        if args.skip_controls:
            sections = tuple(s for s in sections if s != "controls")
        report = run(plan, [n.strip() for n in names], workdir, sections)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    report["total_s"] = time.monotonic() - started
    return report


def _exit_on_signal(signum: int, frame: object) -> None:
    """SIGTERM or SIGHUP: leave by SystemExit, so that every ``finally`` (thawing a frozen
    grid, stopping the nodes) runs, as Ctrl-C's KeyboardInterrupt does."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 if every section ran, 1 if one failed (the rest is reported)."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", action="store_true",
                        help="also run Tahoe-LAFS 1.20 (installed under ~/.cache if needed)")
    parser.add_argument("--systems", default=None,
                        help="comma-separated: ours (HTTPS, the default), ours-foolscap, tahoe"
                             " (default: ours,ours-foolscap; with --compare all three)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one repetition")
    parser.add_argument("--sections", default=None, metavar="A,B",
                        help="run only these section groups (default: all): "
                        + ", ".join(f"{name} ({what})" for name, what in SECTIONS.items()))
    parser.add_argument("--skip-controls", action="store_true",
                        help="no raw-TCP and encode controls (the floor still runs per system)")
    parser.add_argument("--json", type=Path, default=Path("bench-grid.json"))
    parser.add_argument("--plot", type=Path, default=Path("bench-grid.png"))
    parser.add_argument("--markdown", type=Path, help="also write the tables as Markdown")
    parser.add_argument("--workdir", type=Path,
                        help="where grids and test files go (default: a new temporary directory,"
                        " removed at the end)")
    parser.add_argument("--from-json", type=Path, metavar="JSON",
                        help="measure nothing: redo the tables and plot from an earlier --json")
    args = parser.parse_args(argv)
    try:
        parse_sections(args.sections)
    except ValueError as error:
        parser.error(str(error))
    plan = smoke_plan() if args.smoke else full_plan()
    if args.from_json:
        report = json.loads(args.from_json.read_text())
        report.pop("derived", None)
        plan = Plan(**{k: v for k, v in report["plan"].items() if k in Plan.__dataclass_fields__})
    else:
        report = measure(args, plan)
    derived = derive(report)
    report["derived"] = derived
    write_json(args.json, report)
    foreign = [f["foreign_cpu_pct"].median for f in derived["systems"].values()
               if f.get("foreign_cpu_pct") is not None]
    title = (f"Upload time vs size, {plan.storage_nodes} servers, {plan.shares_text}, "
             f"{report['machine']['cpus']} CPUs, {report['machine'].get('commit', '')}"
             + (f", other work ~{max(foreign):.0f}% of a core" if foreign else ""))
    try:
        from bench_plot import plot
        plot(args.plot, derived, title)
    except ImportError as error:
        log(f"no plot ({error}): install the 'bench' extra (matplotlib)")
        report.setdefault("errors", {})["plot"] = str(error)
    print(tables(derived))
    if args.markdown:
        args.markdown.write_text(tables(derived, markdown=True) + "\n")
    print(f"\nwrote {args.json} and {args.plot} in {report['total_s']:.0f} s "
          f"(load average {report['machine']['loadavg_start'][0]:.1f} at start, "
          f"{report['machine']['loadavg_end'][0]:.1f} at the end)")
    errors = errors_of(report)
    for where, message in errors.items():
        print(f"FAILED {where}: {message}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

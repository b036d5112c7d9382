"""Smoke runs of the grid benchmark harness (``misc/bench/bench.py --smoke``), so it cannot rot.

The harness runs end to end at tiny sizes (a 3-server grid, 1 kB, 10 kB and
1 MB files, one repetition) and must produce its JSON, PNG and Markdown without
a failed section, with CPU per operation for every process and memory per
role; beside Tahoe's grid, in turns with it frozen.  No timing is asserted:
benchmarks are not tests.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "misc" / "bench"
SMOKE_TIMEOUT = 300.0

sys.path.insert(0, str(BENCH))
from bench_stats import fit_cost_model, summarize  # noqa: E402


def _run_smoke(tmp_path: Path, *extra: str) -> tuple[dict[str, Any], subprocess.CompletedProcess]:
    out = tmp_path / "out"
    out.mkdir()
    argv = [sys.executable, str(BENCH / "bench.py"), "--smoke", "--json", str(out / "b.json"),
            "--plot", str(out / "b.png"), "--markdown", str(out / "b.md"),
            "--workdir", str(tmp_path / "work"), *extra]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    result = subprocess.run(argv, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True,
                            text=True, env=env, timeout=SMOKE_TIMEOUT)
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-6000:]}"
    report = json.loads((out / "b.json").read_text())
    assert (out / "b.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| figure |" in (out / "b.md").read_text()
    return report, result


#: The operations whose CPU per process the smoke plan measures (``cpu_per_op``).
CPU_OPS = {"upload_1k", "upload_1k_rounds", "download_1k", "put_cli_1k", "put_alias_1k", "mkdir", "mkdir_alias",
           "cp_up_6", "cp_down_6", "upload_1000", "upload_10000", "upload_1000000",
           "download_10000", "upload_20000"}


def _assert_cpu_and_memory(report: dict[str, Any], name: str, stdout: str) -> None:
    """CPU per operation for every process of the grid (and the CLI and the benchmark), the
    floor and the busiest process derived, and memory per role, in the JSON and on stdout."""
    raw = report["systems"][name]["cpu_per_op"]
    assert set(raw) == CPU_OPS
    processes = {"client", "introducer", "storage1", "storage2", "storage3", "cli", "bench"}
    for op, entry in raw.items():
        assert entry["ops"] >= 1 and entry["wall_s"] > 0, op
        assert set(entry["cpu_s"]) == processes, (op, entry)
    assert raw["cp_up_6"]["ops"] == 6 and raw["cp_up_6"]["cpu_s"]["cli"] > 0
    derived = report["derived"]["systems"][name]["cpu_per_op"]
    for op in ("upload_1k", "download_1k", "cp_up_6", "mkdir", "upload_1000000"):
        figures = derived[op]
        assert figures["floor_ms"] == pytest.approx(figures["total_ms"] / figures["cores"])
        assert figures["top"] in processes and figures["storage_ms"] is not None
    roles = report["derived"]["systems"][name]["memory_roles"]
    for role in ("client_fresh", "client_at_rest", "storage_fresh", "storage_served",
                 "introducer"):
        assert 0 < roles[role]["uss_mib"] < roles[role]["rss_mib"], (role, roles[role])
    assert roles["client_peak"]["size"] == 20000 and roles["client_peak"]["peak_rss_mib"]
    assert "CPU per operation (ms)" in stdout and "memory per role (MiB)" in stdout
    assert "storage node at rest, after serving shares (largest)" in stdout


def _assert_system_measured(system: dict[str, Any], *, rtt_and_segments: bool = True) -> None:
    assert not system["errors"], system["errors"]
    assert system["small_upload_s"] and system["cli_put_s"]
    assert system["small_download"]["bytes"] == [1000] * len(system["small_upload_s"])
    assert set(system["uploads"]["seconds"]) == {"1000", "10000", "1000000"}
    assert system["download"]["bytes"] == [10000]
    assert system["ranged_s"]
    assert system["idle"]["storage_rss_mib"] and system["idle"]["client_rss_mib"]
    assert system["memory"]["peak_rss_mib"]
    if rtt_and_segments:
        assert set(system["rtt"]) == {"0.0", "0.002"}
        assert len(system["segments"]) == 1 and all(system["segments"].values())
    else:
        assert "rtt" not in system and "segments" not in system
    assert system["floor"]["seconds"] and system["floor_plain"]["seconds"]
    assert system["floor_https"]["seconds"]
    assert system["discard"]["uploads"]["seconds"]
    directories = system["directories"]
    assert directories["put_s"] and directories["mkdir_unlinked_s"] and directories["mkdir_alias_s"]
    assert directories["cp"]["6"]["up_s"] and directories["cp"]["6"]["down_s"]


def test_fit_recovers_a_cost_model() -> None:
    """The relative least-squares fit returns A and B of exact A + B·size points."""
    fit = fit_cost_model([(size, 0.005 + size / 50e6) for size in (1e3, 1e5, 1e7, 1e8)])
    assert fit is not None
    assert fit.a_ms == pytest.approx(5.0)
    assert fit.throughput_mb_s == pytest.approx(50.0)
    assert summarize([3.0, 1.0, 2.0]).median == 2.0  # type: ignore[union-attr]


def test_bench_smoke_our_grid(tmp_path: Path) -> None:
    """``bench.py --smoke`` runs every workload and control on our grid (HTTPS), the main
    workloads on our grid forced to Foolscap, and writes its outputs."""
    report, result = _run_smoke(tmp_path)
    _assert_system_measured(report["systems"]["ours"])
    _assert_cpu_and_memory(report, "ours", result.stdout)
    assert "CPU per operation (ms)" in (tmp_path / "out" / "b.md").read_text()
    foolscap = report["systems"]["ours-foolscap"]
    assert not foolscap["errors"], foolscap["errors"]
    assert foolscap["foolscap_only"] and foolscap["small_upload_s"] and foolscap["rtt"]
    assert foolscap["floor"]["seconds"] and "floor_https" not in foolscap
    assert "segments" not in foolscap and "memory" not in foolscap
    assert not report["controls"]["errors"]
    assert report["controls"]["tcp"]["seconds"]
    assert report["controls"]["encode"]["cases"]["encode_core"]["mb_per_s"] > 0
    assert report["derived"]["targets"]
    assert "1 kB upload, web API" in result.stdout
    assert "tahoe cp -r up, 6 files of 1 kB in 2 dirs" in result.stdout


def test_bench_sections_pick_parts(tmp_path: Path) -> None:
    """``--sections controls`` runs the controls alone: no grid starts and no section of
    the system runs. (The smoke run above has every section; a grid section alone is
    ``--sections directories``, which starts a grid for it.)"""
    report, _ = _run_smoke(tmp_path, "--sections", "controls", "--systems", "ours")
    ours = report["systems"]["ours"]
    assert not ours["errors"], ours["errors"]
    assert ours["sections"] == ["controls"] and ours["version"]
    assert not {"grid_start_s", "idle", "uploads", "directories", "discard", "rtt"} & set(ours)
    assert report["controls"]["tcp"]["seconds"]
    assert report["controls"]["encode"]["cases"]["encode_core"]["mb_per_s"] > 0


def test_bench_rejects_an_unknown_section(tmp_path: Path) -> None:
    """A misspelt section name stops the run before any grid starts, naming the choices."""
    result = subprocess.run([sys.executable, str(BENCH / "bench.py"), "--sections", "dirs"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "unknown section(s) dirs" in result.stderr and "directories" in result.stderr


@pytest.mark.interop
def test_bench_smoke_in_turns_with_tahoe(tmp_path: Path) -> None:
    """``bench.py --smoke --systems ours,tahoe`` (what ``--compare`` runs, less our Foolscap-only
    grid): both grids up at once, every section run in turns, in blocks where it repeats an
    operation, the other grid frozen meanwhile; the other work on the machine recorded for
    each side, and a ratio against Tahoe given only when it stayed under 5 % of a core on
    both. All sections but the segment sizes and the delay proxies, each of which starts
    another Tahoe client (about 3 s of CPU): their harness code is the one the run on our
    grid checks, given Tahoe's own configuration key and ``servers.yaml``."""
    report, result = _run_smoke(tmp_path, "--systems", "ours,tahoe", "--skip-controls",
                                "--sections",
                                "idle,small,floor,put,directories,cost,memory,foolscap,discard")
    tahoe = report["systems"]["tahoe"]
    assert tahoe["version"].startswith("tahoe-lafs/1.20")
    assert tahoe["foolscap_client"]["small_upload_s"]
    for name, other in (("ours", "tahoe"), ("tahoe", "ours")):
        system = report["systems"][name]
        _assert_system_measured(system, rtt_and_segments=False)
        _assert_cpu_and_memory(report, name, result.stdout)
        assert system["interleaved_with"] == [other]
        assert system["load"]["upload_1k"]["blocks"] == 2  # the smoke plan's blocks are 1 op
        assert system["load"]["cp_6"]["blocks"] == 1
        # The grid not measured was frozen: it used no CPU during the other's blocks.
        assert all(entry["frozen_cpu_s"] < 0.05 for entry in system["load"].values())
    compared = report["derived"]["comparison"]
    assert {"upload_1k", "download_1k", "cp_6", "mkdir", "cost", "discard_small"} <= set(compared)
    upload_row = next(line for line in result.stdout.splitlines()
                      if line.startswith("1 kB upload, web API (ms)"))
    if compared["upload_1k"]["ok"]:
        assert "refused" not in upload_row
    else:
        assert "refused" in upload_row and "upload_1k: other work" in result.stdout


FREEZE_THEN_END = """
import os, sys
sys.path.insert(0, sys.argv[1])
from bench_freeze import Freezer
from bench_proc import proc_table
freezer = Freezer()
pids = freezer.freeze("grid", [int(sys.argv[2])])
print(sorted(proc_table()[pid].state for pid in pids), flush=True)
if sys.argv[3] == "kill":
    os.kill(os.getpid(), 9)  # no finally, no atexit: only the guard can thaw
try:
    with freezer:
        raise KeyboardInterrupt  # Ctrl-C
except KeyboardInterrupt:
    print(sorted(proc_table()[pid].state for pid in pids), flush=True)
"""


@pytest.mark.parametrize("end", ["kill", "interrupt"])
def test_a_frozen_grid_is_thawed_however_the_benchmark_ends(end: str) -> None:
    """Processes the benchmark froze (SIGSTOP) are continued when it is interrupted (the
    Freezer's context) and when it is killed outright (its guard process sees the pipe close)."""
    from bench_proc import descendants, proc_table
    from tests.support.processes import wait_until

    tree = subprocess.Popen(["sh", "-c", "sleep 60 & exec sleep 60"])
    pids = wait_until(lambda: (found := descendants([tree.pid], proc_table())) and
                      len(found) == 2 and found, 10, "a tree of two processes")
    try:
        result = subprocess.run([sys.executable, "-c", FREEZE_THEN_END, str(BENCH),
                                 str(tree.pid), end], capture_output=True, text=True, timeout=60)
        lines = result.stdout.splitlines()
        assert lines[0] == "['T', 'T']", (result.stdout, result.stderr)
        if end == "interrupt":  # thawed by the context manager, before the process ends
            assert lines[1] == "['S', 'S']", (result.stdout, result.stderr)
        wait_until(lambda: all(proc_table()[pid].state == "S" for pid in pids), 10,
                   "the frozen processes running again")
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        tree.wait()


def test_storage_benchmark_smoke(tmp_path: Path) -> None:
    """``bench_storage.py`` end to end on 300 shares: both node runs collect exactly what the
    population says, and the report has every section."""
    out = tmp_path / "storage.json"
    argv = [sys.executable, str(BENCH / "bench_storage.py"), "--scales", "300", "--no-loop",
            "--dir", str(tmp_path / "work"), "--cold-samples", "0", "--tahoe-max", "0",
            "--layout", "20", "--json", str(out)]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    result = subprocess.run(argv, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True,
                            text=True, env=env, timeout=SMOKE_TIMEOUT)
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-6000:]}"
    [scale] = json.loads(out.read_text())["scales"]
    assert scale["first_start"]["deleted_shares"] == scale["first_gc_deleted_expected"] > 0
    assert scale["indexed_start"]["deleted_shares"] == scale["indexed_gc_deleted_expected"]
    assert set(scale["lookups"]) >= {"get_buckets_hit", "get_buckets_miss", "allocate_new"}

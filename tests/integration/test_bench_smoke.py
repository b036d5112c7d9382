"""Smoke runs of the grid benchmark harness (``misc/bench/bench.py --smoke``), so it cannot rot.

The harness runs end to end at tiny sizes (a 3-server grid, 1 kB and 10 kB
files, one repetition) and must produce its JSON, PNG and Markdown without a
failed section.  No timing is asserted: benchmarks are not tests.
"""
from __future__ import annotations

import json
import os
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


def _assert_system_measured(system: dict[str, Any], *, rtt_and_segments: bool = True) -> None:
    assert not system["errors"], system["errors"]
    assert system["small_upload_s"] and system["cli_put_s"]
    assert set(system["uploads"]["seconds"]) == {"1000", "10000"}
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
def test_bench_smoke_tahoe_grid(tmp_path: Path) -> None:
    """``bench.py --smoke --systems tahoe`` runs the workloads on a Tahoe-LAFS 1.20 grid, all
    but the segment sizes and the delay proxies: each of those starts another Tahoe client
    (about 3 s of CPU), and the harness's code for them is the one the run on our grid
    checks, given Tahoe's own configuration key and ``servers.yaml``."""
    report, result = _run_smoke(tmp_path, "--systems", "tahoe", "--skip-controls", "--sections",
                                "idle,small,floor,put,directories,cost,memory,foolscap,discard")
    tahoe = report["systems"]["tahoe"]
    _assert_system_measured(tahoe, rtt_and_segments=False)
    assert tahoe["version"].startswith("tahoe-lafs/1.20")
    assert tahoe["foolscap_client"]["small_upload_s"]
    assert "ours" not in report["systems"]


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

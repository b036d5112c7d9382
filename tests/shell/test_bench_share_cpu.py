"""``misc/bench/bench_share_cpu.py`` runs (so the per-share CPU benchmark cannot rot)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]


def test_share_cpu_benchmark_runs(tmp_path: Path) -> None:
    """A short run answers every share 201 and prints its figure; the profile is written."""
    profile = tmp_path / "shares.prof"
    done = subprocess.run(
        [sys.executable, str(REPOSITORY / "misc" / "bench" / "bench_share_cpu.py"),
         "--shares", "20", "--profile", str(profile)],
        capture_output=True, text=True, timeout=120, cwd=REPOSITORY)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"[0-9.]+ us of CPU per share \(20 shares of 1116 bytes\)\n", done.stdout)
    assert profile.stat().st_size > 0

"""A smoke run of the S3 benchmark (``misc/bench/bench_s3.py --smoke``), so it cannot rot.

At tiny sizes (3 storage servers, 10 operations of 1 kB, one 12 MB upload,
300 keys, 50 files for restic) the harness starts its grid, makes its account
with ``tahoe s3 add-account``, turns the gateway on and runs every section
against it and the web API, without SeaweedFS; its JSON must have every
figure and no failed section. No timing is asserted: benchmarks are not tests.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.programs import require

BENCH = Path(__file__).resolve().parents[2] / "misc" / "bench" / "bench_s3.py"
SMOKE_TIMEOUT = 300.0


def test_bench_s3_smoke(tmp_path: Path) -> None:
    """Every section of the S3 benchmark runs at tiny sizes and reports its figures."""
    require("restic")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    result = subprocess.run([sys.executable, str(BENCH), "--smoke", "--no-weed", "--json",
                             str(tmp_path / "s3.json"), "--workdir", str(tmp_path / "work")],
                            cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True,
                            text=True, env=env, timeout=SMOKE_TIMEOUT)
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-6000:]}"
    report = json.loads((tmp_path / "s3.json").read_text())
    ours = report["systems"]["ours"]
    assert ours["errors"] == {}
    assert ours["small"]["s3_put"]["n"] == ours["small"]["web_get"]["n"] == 10
    assert ours["small"]["put_ratio"] > 0 and ours["small"]["get_ratio"] > 0
    assert ours["large"]["s3_MB_per_s"] > 0 and ours["large"]["boto3_MB_per_s"] > 0
    assert ours["large"]["web_MB_per_s"] > 0
    assert ours["list"]["keys"] == 300 and ours["list"]["list_seconds"]["n"] == 1
    assert ours["restic"]["files"] == 50 and ours["restic"]["server_cpu_s"] > 0
    assert "seaweedfs" not in report["systems"]
    assert "| 1 kB PutObject" in result.stdout

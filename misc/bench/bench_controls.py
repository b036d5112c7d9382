"""Controls measured in the same run: raw TCP to local sinks, and the core's encode speed.

* **Raw TCP** (:class:`bench_tcp.TcpControl`): the same file sizes as the
  cost model, each pushed as ``size × N/k`` bytes over N connections to a
  sink process; the best case for moving an upload's bytes here.
* **Encode** (``bench_core.py``, run as its own process): AES-CTR alone,
  zfec alone, SHA-256 of what the encoder hashes, the convergent-key pass and
  the whole core encoder, in MB/s of plaintext, without any network.

The Foolscap-only floor depends on the servers, so it is measured per
system (:func:`bench_workloads.floor`).
"""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench_tcp import TcpControl

__all__ = ["encode_control", "tcp_control"]

HERE = Path(__file__).resolve().parent


def tcp_control(repetitions: Mapping[int, int], total: int, needed: int,
                warmup: int = 3) -> dict[str, Any]:
    """Seconds per "file" of each size (``{size: repetitions}``) over raw TCP."""
    out: dict[str, Any] = {"seconds": {}, "sinks": total, "expansion": total / needed}
    with TcpControl(total, needed) as control:
        for _ in range(warmup):
            control.push(1000)
        for size, reps in sorted(repetitions.items()):
            out["seconds"][str(size)] = [control.push(size) for _ in range(max(reps, 3))]
    return out


def encode_control(size_mib: float, repeat: int, workdir: Path,
                   max_segment_size: int = 1024 * 1024) -> dict[str, Any]:
    """Run ``bench_core.py`` in its own process; its JSON report."""
    out = workdir / "bench-core.json"
    result = subprocess.run(
        [sys.executable, str(HERE / "bench_core.py"), "--size-mib", str(size_mib),
         "--repeat", str(repeat), "--max-segment-size", str(max_segment_size),
         "--json", str(out)],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=1800)
    if result.returncode != 0:
        raise RuntimeError(f"bench_core.py failed: {result.stderr[-2000:].decode()}")
    report: dict[str, Any] = json.loads(out.read_text())
    return report

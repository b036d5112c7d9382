"""The measurements themselves, each against one running client: raw timings, no summaries.

Every function returns plain lists or dicts of seconds (or MiB) so the report
can summarise and the JSON keep every sample.  Sizes are bytes (1 kB = 1,000
bytes, 1 MB = 10⁶); a "1 KiB ranged read" is 1,024 bytes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench_grid import BenchGrid, BenchNode
from bench_http import GatewayClient, TestFiles
from bench_proc import MemoryWatch, cpu_over, memory_mib, rss_mib
from tests.support.proxy import ProxySet

__all__ = ["cli_puts", "downloads", "floor", "idle_metrics", "ranged_reads", "round_trips",
           "small_uploads", "sized_uploads"]

HERE = Path(__file__).resolve().parent
KIB = 1024


def small_uploads(client: BenchNode, count: int, warmup: int, size: int = 1000,
                  caps: list[str] | None = None) -> list[float]:
    """``count`` uploads of ``size`` new random bytes with ``PUT /uri`` (after ``warmup``).

    :param caps: receives the caps of the timed uploads.
    """
    gateway = GatewayClient(client.url or "")
    seconds = []
    for i in range(warmup + count):
        cap, elapsed = gateway.put_bytes(TestFiles.fresh_bytes(size))
        if i >= warmup:
            seconds.append(elapsed)
            if caps is not None:
                caps.append(cap)
    return seconds


def share_file_control(where: Path, count: int = 300, size: int = 1116) -> dict[str, Any]:
    """The disk work of one 1 kB share as a storage server does it, alone, on the grid's
    filesystem, by the server's own calls (``storage.disk``): a new file made, written
    and closed in ``incoming/``, a bucket directory made (a prefix directory too, when
    missing) and the file renamed into it; CPU
    (``RUSAGE_SELF``, user and system) and wall time per share, in ms.

    A control for the storage servers' CPU per share: how dear the filesystem makes new
    files at the moment (on ext4 it varies severalfold with what was deleted there
    before), measured in the same run."""
    import resource
    import secrets
    import shutil

    from tahoe.storage import disk
    from tahoe.util import base32

    root = where / "share-file-control"
    incoming = root / "incoming"
    incoming.mkdir(parents=True, exist_ok=True)
    data = b"\x00" * size
    try:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        before, wall = usage.ru_utime + usage.ru_stime, time.monotonic()
        for i in range(count):
            si = base32.b2a(secrets.token_bytes(16))
            path = f"{incoming}/{si}.0"
            disk.create_with(path, [(0, data)])
            bucket = f"{root}/{si[:2]}/{si}"
            disk.make_directory(bucket)
            os.rename(path, f"{bucket}/0")
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu, wall = usage.ru_utime + usage.ru_stime - before, time.monotonic() - wall
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"count": count, "cpu_ms": 1000.0 * cpu / count, "wall_ms": 1000.0 * wall / count}


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}


def cli_puts(tahoe: Path, client: BenchNode, files: TestFiles, count: int,
             size: int = 1000) -> list[float]:
    """``tahoe -d CLIENT put FILE``, ``count`` times, each timed as a whole process."""
    seconds = []
    env = _clean_env()
    for _ in range(count):
        path = files.fresh(size)
        started = time.perf_counter()
        result = subprocess.run([str(tahoe), "-d", str(client.basedir), "put", str(path)],
                                stdin=subprocess.DEVNULL, capture_output=True, env=env,
                                timeout=300)
        elapsed = time.perf_counter() - started
        if result.returncode != 0 or not result.stdout.startswith(b"URI:"):
            raise RuntimeError(f"tahoe put failed: {result.stdout[:300]!r} "
                               f"{result.stderr[-1000:]!r}")
        seconds.append(elapsed)
    return seconds


def sized_uploads(client: BenchNode, files: TestFiles, repetitions: Mapping[int, int], *,
                  watch_from: int | None = None) -> dict[str, Any]:
    """Upload files of each size (``{size: repetitions}``) through ``PUT /uri``.

    :param watch_from: for files at least this large, record the client's
        RSS before and its peak during each upload.
    :returns: ``{"seconds": {size: [...]}, "caps": {size: [...]},
        "peak_rss_mib": {size: [...]}, "rss_before_mib": {size: [...]}}``
        (sizes as strings, for JSON).
    """
    gateway = GatewayClient(client.url or "")
    out: dict[str, Any] = {"seconds": {}, "caps": {}, "peak_rss_mib": {}, "rss_before_mib": {}}
    for size, reps in sorted(repetitions.items()):
        key = str(size)
        for _ in range(reps):
            path = files.fresh(size)
            watch = MemoryWatch(client.pid) if watch_from is not None and size >= watch_from \
                else None
            if watch:
                watch.start()
            try:
                cap, elapsed = gateway.put_file(path)
            finally:
                if watch:
                    watch.stop()
            out["seconds"].setdefault(key, []).append(elapsed)
            out["caps"].setdefault(key, []).append(cap)
            if watch:
                out["peak_rss_mib"].setdefault(key, []).append(watch.peak_mib)
                out["rss_before_mib"].setdefault(key, []).append(watch.before_mib)
    return out


def downloads(client: BenchNode, caps: Sequence[str], *, watch: bool = True) -> dict[str, Any]:
    """Download each cap whole (body discarded); seconds, bytes and the client's peak RSS."""
    gateway = GatewayClient(client.url or "")
    out: dict[str, Any] = {"seconds": [], "bytes": [], "peak_rss_mib": []}
    for cap in caps:
        memory = MemoryWatch(client.pid).start() if watch else None
        try:
            received, elapsed = gateway.get(cap)
        finally:
            if memory:
                memory.stop()
        out["seconds"].append(elapsed)
        out["bytes"].append(received)
        if memory:
            out["peak_rss_mib"].append(memory.peak_mib)
    return out


def ranged_reads(client: BenchNode, cap: str, size: int, count: int,
                 length: int = KIB) -> list[float]:
    """``count`` reads of ``length`` bytes in the middle of a ``size``-byte file (Range)."""
    gateway = GatewayClient(client.url or "")
    first = max(0, size // 2 - length // 2)
    last = min(size, first + length) - 1
    seconds = []
    for _ in range(count):
        received, elapsed = gateway.get(cap, (first, last))
        if received != last - first + 1:
            raise RuntimeError(f"ranged read returned {received} bytes, not {last - first + 1}")
        seconds.append(elapsed)
    return seconds


def idle_metrics(grid: BenchGrid, client: BenchNode, window: float) -> dict[str, Any]:
    """Memory of every node at rest (RSS from ``status``; RSS, PSS and USS from
    ``smaps_rollup``), and the storage servers' CPU over ``window`` seconds."""
    server_pids = [node.pid for node in grid.servers]
    introducer = grid.pids()[0] if grid.introducer else None
    memory = {
        "storage_memory_mib": [memory_mib(pid) for pid in server_pids],
        "introducer_memory_mib": memory_mib(introducer) if introducer else None,
        "client_memory_mib": memory_mib(client.pid),
    }
    cpu = cpu_over(server_pids, window)
    return {
        "storage_rss_mib": [rss_mib(pid) for pid in server_pids],
        "storage_cpu_pct": cpu,
        "cpu_window_s": window,
        "introducer_rss_mib": rss_mib(introducer) if introducer else None,
        "client_rss_mib": rss_mib(client.pid),
        **memory,
    }


def floor(grid: BenchGrid, count: int, warmup: int, *, plain: bool = False,
          https: bool = False, file_size: int = 1000) -> dict[str, Any]:
    """Run a floor control in its own process (our venv) against the grid's storage servers:
    ``bench_floor.py`` (Foolscap: allocate, write, close) or, with ``https``,
    ``bench_floor_https.py`` (allocate and write, pipelined)."""
    script = "bench_floor_https.py" if https else "bench_floor.py"
    argv = [sys.executable, str(HERE / script), "--count", str(count),
            "--warmup", str(warmup), "--file-size", str(file_size)]
    if plain:
        argv.append("--plain")
    argv += [str(node.basedir) for node in grid.servers]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), str(HERE.parents[1]),
                                                      env.get("PYTHONPATH")]))
    result = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, env=env,
                            timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"{script} failed: {result.stderr[-2000:].decode()}")
    answer: dict[str, Any] = json.loads(result.stdout.decode().strip().splitlines()[-1])
    return answer


def round_trips(grid: BenchGrid, delays: Sequence[float], count: int,
                warmup: int) -> dict[str, Any]:
    """1 kB uploads from a client that reaches every storage server through a delay proxy.

    The same client and proxies are used for every delay (``0`` first, the
    proxy's own cost), changed between runs; a delay ``d`` is one way, so the
    round-trip time is ``2d``.

    :returns: ``{str(delay): [seconds...]}``.
    """
    out: dict[str, Any] = {}
    with ProxySet() as proxies:
        client, servers = grid.start_proxied_client("client-proxied", proxies, delay=0.0)
        try:
            for delay in [0.0, *delays]:
                for server in servers:
                    server.proxy.set_delay(delay)
                out[str(delay)] = small_uploads(client, count, warmup)
        finally:
            client.stop()
    return out

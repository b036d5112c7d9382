"""Profile our client node during 1 kB uploads and one 100 MB upload (cProfile).

Starts a grid of our nodes (10 storage servers, 3-of-10), runs the client
under ``bench_profiled_node.py`` (cProfile switched on by signals, reactor
thread and thread-pool calls separately), warms it up, then profiles

1. ``--small-count`` uploads of 1 kB through ``PUT /uri``;
2. one upload of ``--large-mb`` MB,

and prints, for each, the functions with the largest cumulative and own
times, writing the ``.prof`` files (for ``python -m pstats`` or snakeviz) to
``--out``.  cProfile slows pure-Python code down (about 1.5-2× here), so the
times are for ranking, not for the table.  Usage::

    python misc/bench/bench_profile.py [--out bench-profile] [--small-count 50] [--large-mb 100]
"""
from __future__ import annotations

import argparse
import io
import os
import pstats
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for _path in (str(HERE), str(ROOT)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from bench_grid import START_TIMEOUT, BenchGrid, BenchNode  # noqa: E402
from bench_http import GatewayClient, TestFiles  # noqa: E402
from tests.support import webapi  # noqa: E402
from tests.support.nodes import (Shares, TahoeTool, config_for_tests, edit_tahoe_cfg,  # noqa: E402
                                 our_tahoe)
from tests.support.ports import free_port  # noqa: E402
from tests.support.processes import ProcessSet, wait_for_file  # noqa: E402

__all__ = ["main"]


def start_profiled_client(grid: BenchGrid, name: str, prefix: Path) -> BenchNode:
    """A client of ``grid`` running under ``bench_profiled_node.py``."""
    basedir = grid.workdir / name
    grid.tool.create_client(basedir, introducer_furl=grid.introducer_furl, shares=grid.shares,
                            nickname=name, web_port=free_port())
    edit_tahoe_cfg(basedir, config_for_tests(storage=False, force_foolscap=grid.server_foolscap))
    process = grid.processes.start(
        [sys.executable, HERE / "bench_profiled_node.py", str(prefix), "run",
         "--allow-stdin-close", basedir], log_path=grid.tool.log_dir / f"{name}.log")
    from tests.support.nodes import RunningNode
    running = RunningNode(basedir, process)
    node = BenchNode(running, running.node_url(START_TIMEOUT))
    grid.clients.append(node)
    webapi.wait_for_connected_servers(node.url or "", grid.storage_nodes, START_TIMEOUT,
                                      processes=[process])
    return node


def window(node: BenchNode, prefix: Path, number: int, work: object) -> tuple[Path, float]:
    """Profile what ``work()`` makes the node do; return the file prefix and wall seconds."""
    os.kill(node.running.process.pid, signal.SIGUSR1)
    started = time.perf_counter()
    work()  # type: ignore[operator]
    elapsed = time.perf_counter() - started
    os.kill(node.running.process.pid, signal.SIGUSR2)
    base = Path(f"{prefix}-{number}")
    wait_for_file(Path(f"{base}.done"), 120, processes=[node.running.process])
    return base, elapsed


def summary(path: Path, sort: str, limit: int) -> str:
    """The top ``limit`` lines of a profile sorted by ``sort``."""
    if not path.exists():
        return f"(no {path.name})\n"
    out = io.StringIO()
    stats = pstats.Stats(str(path), stream=out)
    stats.strip_dirs().sort_stats(sort).print_stats(limit)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    """Run the two profiles and print their summaries."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-profile"))
    parser.add_argument("--small-count", type=int, default=50)
    parser.add_argument("--large-mb", type=float, default=100)
    parser.add_argument("--storage-nodes", type=int, default=10)
    parser.add_argument("--limit", type=int, default=30)
    parser.add_argument("--foolscap", action="store_true",
                        help="servers and client forced to Foolscap (default: HTTPS)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    prefix = args.out.resolve() / "client"
    workdir = Path(tempfile.mkdtemp(prefix="tahoe-profile-"))
    tool = TahoeTool(our_tahoe(), workdir / "logs")
    files = TestFiles(workdir / "files")
    large = int(args.large_mb * 1e6)
    report = io.StringIO()
    with ProcessSet() as processes:
        grid = BenchGrid(tool, workdir / "grid", processes, args.storage_nodes,
                         Shares(3, 7, 10) if args.storage_nodes >= 10 else Shares(2, 3, 3),
                         server_foolscap=args.foolscap)
        grid.start()
        client = start_profiled_client(grid, "client", prefix)
        grid.settle()
        gateway = GatewayClient(client.url or "")
        for _ in range(5):
            gateway.put_bytes(os.urandom(1000))
        files.path(large)

        def small() -> None:
            for _ in range(args.small_count):
                gateway.put_bytes(os.urandom(1000))

        base1, small_s = window(client, prefix, 1, small)
        base2, large_s = window(client, prefix, 2, lambda: gateway.put_file(files.fresh(large)))
        grid.stop(remove=True)
    shutil.rmtree(workdir, ignore_errors=True)
    for title, base, seconds in ((f"{args.small_count} uploads of 1 kB", base1, small_s),
                                 (f"one upload of {args.large_mb:g} MB", base2, large_s)):
        report.write(f"\n===== {title}: {seconds:.2f} s wall under cProfile =====\n")
        for thread in ("main", "workers"):
            for sort in ("cumulative", "tottime"):
                report.write(f"\n--- {thread} thread(s), by {sort} ---\n")
                report.write(summary(Path(f"{base}.{thread}.prof"), sort, args.limit))
    (args.out / "profile.txt").write_text(report.getvalue())
    print(report.getvalue())
    print(f"wrote {args.out}/profile.txt and the .prof files")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The benchmark of one implementation, or of two in turns: grids, clients, every workload.

For each system (ours, or Tahoe-LAFS 1.20) this starts a grid of
``Plan.storage_nodes`` storage servers and a client, measures (idle memory
and CPU, 1 kB uploads and downloads, the Foolscap and HTTPS floors, ``tahoe
put``, the directory commands of its own ``tahoe`` CLI, the cost model,
downloads and ranged reads, memory during large uploads, the segment-size
variants, round trips through delay proxies, memory after the workloads),
stops that grid, and repeats the 1 kB uploads and the cost model on a grid
whose servers discard share data.  Only the section groups asked for run
(``bench.py --sections``).  A section that fails is recorded in ``errors``
and the run goes on.

Given two systems (``bench.py --compare``: ours and Tahoe's), both grids are
up at once and every section runs for both in the same place of the run:
sections of repeated operations in alternating blocks (:class:`bench_schedule.Schedule`),
the rest once for each, always with the other grid frozen.  The operations
of the web API and the CLI also add up CPU per process (``cpu_per_op``).
"""
from __future__ import annotations

import functools
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench_dirs import ALIAS, Cli, DirTree, create_alias, mkdirs, puts, tree_run
from bench_freeze import Freezer
from bench_grid import BenchGrid
from bench_http import TestFiles
from bench_plan import SECTIONS, Plan, size_label
from bench_proc import rss_mib, wait_quiet
from bench_schedule import Schedule, Sections, Side, System, log, merge_samples, settle_all
from bench_workloads import (cli_puts, downloads, floor, idle_metrics, ranged_reads,
                             round_trips, share_file_control, sized_uploads,
                             small_uploads)
from tests.support.nodes import Shares, TahoeTool
from tests.support.processes import ProcessSet

__all__ = ["Sections", "System", "log", "run_systems"]

SEGMENT_KEY = "shares._max_immutable_segment_size_for_testing"
MAIN_GRID_SECTIONS = ("idle", "small", "floor", "put", "directories", "cost", "memory",
                      "foolscap", "segments", "rtt")
#: Uploads of this size or more go one per block when two systems take turns.
LARGE = 10 * 1000 * 1000


def run_systems(systems: Sequence[System], plan: Plan, workdir: Path, files: TestFiles,
                wanted: Sequence[str] = tuple(SECTIONS)) -> dict[str, dict[str, Any]]:
    """Every measurement of one system, or of two in turns; raw samples, JSON-ready, by name.

    :param wanted: the section groups to run (:data:`bench_plan.SECTIONS`); a main
        grid starts only if one of its sections is wanted, a grid of discarding
        servers only for ``discard``.
    """
    sides = []
    for system in systems:
        own = tuple(name for name in wanted
                    if system.sections is None or name in system.sections)
        results: dict[str, Any] = {
            "tahoe": str(system.tahoe), "sections": list(own),
            "foolscap_only": system.foolscap_only,
            "interleaved_with": [other.name for other in systems if other is not system]}
        sections = Sections(system.name, results)
        tool = TahoeTool(system.tahoe, workdir / system.name / "logs")
        sides.append(Side(system, plan, workdir / system.name, files, sections, tool, own))
        results["version"] = sections.run("version", tool.version)
    with ProcessSet() as processes, Freezer() as freezer:
        schedule = Schedule(sides, freezer, plan)
        main = [side for side in sides if any(side.wants(n) for n in MAIN_GRID_SECTIONS)]
        if main:
            _grids(schedule, main, processes, _main_grid)
        discard = [side for side in sides if side.wants("discard")]
        if discard:
            _grids(schedule, discard, processes, _discard_grid, name="grid-discard",
                   storage_settings={"storage": {"debug_discard": "true"}},
                   # Tahoe 1.20's HTTPS storage never completes an upload to a debug_discard
                   # server (BucketWriter.write returns before recording the range): Foolscap.
                   client_foolscap=lambda side: side.system.foolscap_only
                   or side.name == "tahoe")
    return {side.name: side.results for side in sides}


def _grids(schedule: Schedule, sides: Sequence[Side], processes: ProcessSet,
           body: Callable[[Schedule], None], *, name: str = "grid",
           storage_settings: dict[str, dict[str, str | None]] | None = None,
           client_foolscap: Callable[[Side], bool] = lambda side: side.system.foolscap_only
           ) -> None:
    """Start a grid and client for each side (the others frozen), run ``body``, thaw, stop."""
    plan = schedule.plan
    prefix = "" if name == "grid" else "discard "
    try:
        for side in sides:
            schedule.activate(side)
            grid = BenchGrid(side.tool, side.workdir / name, processes, plan.storage_nodes,
                             Shares(plan.needed, plan.happy, plan.total),
                             server_foolscap=side.system.foolscap_only,
                             storage_settings=storage_settings or {})
            side.grid, side.state = grid, {}
            started = time.monotonic()
            side.sections.run(f"{prefix}grid start", grid.start)
            foolscap = client_foolscap(side)
            side.client = side.sections.run(f"{prefix}client start", lambda: grid.start_client(
                "client", force_foolscap=foolscap))
            if name == "grid":
                side.results["grid_start_s"] = time.monotonic() - started
            else:
                side.results["discard_client_foolscap"] = foolscap
        body(schedule)
    finally:
        schedule.release()
        for side in sides:
            if side.grid is not None:
                side.grid.stop(remove=True)
            side.grid, side.client = None, None


def _main_grid(run: Schedule) -> None:
    plan = run.plan
    block = plan.block_ops
    settle_all(run, plan.settle_timeout, "settle_s")
    run.each("idle", "idle memory and CPU", "idle", lambda s: idle_metrics(
        s.grid, s.client, plan.idle_window), store="idle")
    # 1 kB through the web API: new content each (a new storage index), then each read back.
    run.each("small", "1 kB uploads: warm-up", None, lambda s: small_uploads(
        s.client, 0, plan.small_warmup))
    run.alternate("small", "1 kB uploads (web API)", "upload_1k", plan.small_count, block,
                  _small_uploads)
    run.alternate("small", "1 kB downloads (web API)", "download_1k", plan.small_count, block,
                  _small_downloads)
    run.each("small", "1 kB uploads in rounds (CPU per upload)", "upload_1k_rounds",
             lambda s: _upload_rounds(s, plan.cpu_round_ops, plan.cpu_rounds))
    run.each("small", "share files on the grid's filesystem (control)", None,
             lambda s: share_file_control(s.grid.workdir, plan.cpu_round_ops * 3),
             store="share_file_control")
    run.each("floor", "Foolscap floor", "floor", lambda s: floor(
        s.grid, plan.floor_count, plan.floor_warmup), store="floor")
    run.each("floor", "Foolscap floor, plain Tub", "floor", lambda s: floor(
        s.grid, plan.floor_count, plan.floor_warmup, plain=True), store="floor_plain")
    run.each("floor", "HTTPS floor", "floor", lambda s: floor(
        s.grid, plan.floor_count, plan.floor_warmup, https=True), store="floor_https",
        only=lambda s: not s.system.foolscap_only)
    run.alternate("put", "tahoe put 1 kB", "put_cli", plan.cli_count, block, _cli_puts)
    _directories(run)
    for size, reps in sorted(plan.sizes.items()):
        run.alternate("cost", f"cost model uploads, {size_label(size)}", "cost", reps,
                      block if size < LARGE else 1, functools.partial(
                          _sized, size=size, key="uploads", watch_from=plan.download_size))
    downloaded = plan.sizes.get(plan.download_size, 0)
    run.alternate("cost", "downloads", "download", downloaded, 1, _large_downloads,
                  only=lambda s: bool(_large_caps(s)))
    run.alternate("cost", "1 KiB ranged reads", "ranged", plan.ranged_count, block,
                  _ranged_reads, only=lambda s: bool(_large_caps(s)))
    for size, reps in sorted(plan.memory_sizes.items()):
        run.alternate("memory", f"large uploads (memory), {size_label(size)}", "memory", reps, 1,
                      functools.partial(_sized, size=size, key="memory", watch_from=0))
    run.each("idle", "client RSS after the workloads", None, lambda s: rss_mib(s.client.pid),
             store="client_rss_after_mib")
    run.each("foolscap", "Foolscap-only client", "foolscap", lambda s: _foolscap_client(
        plan, s.grid, s.files), store="foolscap_client",
        only=lambda s: s.system.extra_foolscap_client)
    for segment_size in plan.segment_sizes:
        run.each("segments", f"segment size {segment_size}", "segments",
                 functools.partial(_segments, segment_size=segment_size))
    run.each("rtt", "round trips (delay proxies)", "rtt", lambda s: round_trips(
        s.grid, plan.rtt_delays, plan.rtt_count, plan.rtt_warmup), store="rtt")
    # At rest: every storage node has served shares by now.
    settle_all(run, plan.rest_settle_s, "settle_after_s", section="idle")
    run.each("idle", "idle after the workloads", "idle_after", lambda s: idle_metrics(
        s.grid, s.client, min(plan.idle_window, 2.0)), store="idle_after")


def _upload_rounds(side: Side, ops: int, rounds: int) -> None:
    """CPU per 1 kB upload over rounds of ``ops`` uploads back to back, the grid awake
    throughout: the blocks of ``upload_1k`` each begin with a grid just woken (SIGCONT),
    whose catching up falls on few uploads. Wall times are not kept (``upload_1k`` has
    them, in turns)."""
    for _ in range(rounds):
        with side.meter.measure("upload_1k_rounds", ops):
            small_uploads(side.client, ops, 0)


def _small_uploads(side: Side, start: int, count: int) -> None:
    caps = side.state.setdefault("caps_1k", [])
    with side.meter.measure("upload_1k", count):
        seconds = small_uploads(side.client, count, 0, caps=caps)
    side.extend("small_upload_s", seconds)


def _small_downloads(side: Side, start: int, count: int) -> None:
    caps = side.state.get("caps_1k", [])[start:start + count]
    if not caps:
        raise RuntimeError("no 1 kB upload to download (the uploads failed)")
    with side.meter.measure("download_1k", len(caps)):
        out = downloads(side.client, caps, watch=False)
    side.merge("small_download", out)


def _cli_puts(side: Side, start: int, count: int) -> None:
    with side.meter.measure("put_cli_1k", count):
        seconds = cli_puts(side.system.tahoe, side.client, side.files, count)
    side.extend("cli_put_s", seconds)


def _sized(side: Side, start: int, count: int, *, size: int, key: str,
           watch_from: int | None) -> None:
    """``count`` uploads of ``size`` bytes into ``results[key]`` (CPU as ``upload_<size>``)."""
    with side.meter.measure(f"upload_{size}", count):
        out = sized_uploads(side.client, side.files, {size: count}, watch_from=watch_from)
    side.merge(key, out)


def _large_caps(side: Side) -> list[str]:
    return (side.results.get("uploads") or {}).get("caps", {}).get(
        str(side.plan.download_size), [])


def _large_downloads(side: Side, start: int, count: int) -> None:
    caps = _large_caps(side)[start:start + count]
    with side.meter.measure(f"download_{side.plan.download_size}", len(caps)):
        out = downloads(side.client, caps)
    side.merge("download", out)


def _ranged_reads(side: Side, start: int, count: int) -> None:
    side.extend("ranged_s", ranged_reads(side.client, _large_caps(side)[0],
                                         side.plan.download_size, count))


def _directories(run: Schedule) -> None:
    """``tahoe put FILE alias:``, ``mkdir`` (unlinked and linked), ``cp -r`` of new trees."""
    plan, block = run.plan, run.plan.block_ops

    def alias(side: Side) -> None:
        side.state["cli"] = Cli(side.system.tahoe, side.client)
        side.results["directories"] = {"alias": ALIAS, "put_s": [], "mkdir_unlinked_s": [],
                                       "mkdir_alias_s": [], "cp": {}}
        side.results["directories"]["create_alias_s"] = create_alias(side.state["cli"])

    def put(side: Side, start: int, count: int) -> None:
        side.results["directories"]["put_s"] += puts(side.state["cli"], side.workdir / "dirs",
                                                     start, count, side.meter)

    def mkdir(side: Side, start: int, count: int, linked: bool) -> None:
        key = "mkdir_alias_s" if linked else "mkdir_unlinked_s"
        side.results["directories"][key] += mkdirs(side.state["cli"], start, count, linked,
                                                   side.meter)

    run.each("directories", "directories: create-alias", None, alias)
    has_cli = [side for side in run.sides if side.wants("directories")]
    run.alternate("directories", "tahoe put FILE alias:name", "put_alias", plan.dir_put_count,
                  block, put, only=lambda s: "cli" in s.state)
    run.alternate("directories", "tahoe mkdir", "mkdir", plan.dir_mkdir_count, block,
                  functools.partial(mkdir, linked=False), only=lambda s: "cli" in s.state)
    run.alternate("directories", "tahoe mkdir alias:name", "mkdir_alias", plan.dir_mkdir_count,
                  block, functools.partial(mkdir, linked=True), only=lambda s: "cli" in s.state)
    for tree in plan.dir_trees:
        files = tree[0] * tree[1]
        fewest = tree[3] if len(tree) > 3 else 1

        def enough(rounds: int, files: int = files, fewest: int = fewest) -> bool:
            return rounds >= fewest and any(
                side.state.get(f"cp_spent_{files}", 0.0) >= plan.dir_budget_s
                for side in has_cli)

        run.alternate("directories", f"tahoe cp -r, {files} files", f"cp_{files}", tree[2], 1,
                      functools.partial(_cp_tree, tree=tree), stop=enough,
                      only=lambda s: "cli" in s.state)
    for side in has_cli:
        shutil.rmtree(side.workdir / "dirs", ignore_errors=True)


def _cp_tree(side: Side, start: int, count: int, *, tree: DirTree) -> None:
    files = tree[0] * tree[1]
    entry = side.results["directories"]["cp"].setdefault(str(files), {
        "dirs": tree[0], "files_per_dir": tree[1], "files": files, "up_s": [], "down_s": []})
    for rep in range(start, start + count):
        up, down = tree_run(side.state["cli"], side.workdir / "dirs", tree, rep,
                            side.plan.dir_download, side.meter)
        entry["up_s"].append(up)
        if down is not None:
            entry["down_s"].append(down)
        side.state[f"cp_spent_{files}"] = (side.state.get(f"cp_spent_{files}", 0.0) + up
                                           + (down or 0.0))


def _segments(side: Side, segment_size: int) -> None:
    segments = side.results.setdefault("segments", {})
    segments[str(segment_size)] = None
    segments[str(segment_size)] = _segment_variant(side.plan, side.grid, side.files,
                                                   segment_size, side.system.foolscap_only)


def _discard_grid(run: Schedule) -> None:
    plan = run.plan
    settle_all(run, plan.settle_timeout, "discard_settle_s")

    def small(side: Side, start: int, count: int) -> None:
        side.results.setdefault("discard", {}).setdefault("small_upload_s", []).extend(
            small_uploads(side.client, count, 0))

    run.each("discard", "discard: warm-up", None, lambda s: small_uploads(
        s.client, 0, plan.small_warmup))
    run.alternate("discard", "discard: 1 kB uploads", "discard_small", plan.small_count,
                  plan.block_ops, small)
    for size, reps in sorted(plan.discard_sizes.items()):
        run.alternate("discard", f"discard: cost model, {size_label(size)}", "discard_cost", reps,
                      plan.block_ops if size < LARGE else 1, functools.partial(
                          _discard_sized, size=size))


def _discard_sized(side: Side, start: int, count: int, *, size: int) -> None:
    merge_samples(side.results.setdefault("discard", {}).setdefault("uploads", {}),
                  sized_uploads(side.client, side.files, {size: count}))


def _foolscap_client(plan: Plan, grid: BenchGrid, files: TestFiles) -> dict[str, Any]:
    client = grid.start_client("client-foolscap", force_foolscap=True)
    try:
        wait_quiet([client.pid], timeout=plan.settle_timeout)
        return {"small_upload_s": small_uploads(client, plan.small_count, plan.small_warmup),
                "uploads": sized_uploads(client, files, plan.discard_sizes)}
    finally:
        client.stop()


def _segment_variant(plan: Plan, grid: BenchGrid, files: TestFiles, segment_size: int,
                     force_foolscap: bool) -> dict[str, Any]:
    client = grid.start_client(f"client-seg{segment_size}", force_foolscap=force_foolscap,
                               settings={"client": {SEGMENT_KEY: str(segment_size)}})
    try:
        wait_quiet([client.pid], timeout=plan.settle_timeout)
        out: dict[str, Any] = {"idle_rss_mib": rss_mib(client.pid)}
        out["uploads"] = sized_uploads(client, files, plan.segment_files, watch_from=0)
        out["download"] = {}
        out["ranged_s"] = {}
        for size, caps in out["uploads"]["caps"].items():
            out["download"][size] = downloads(client, caps)
            out["ranged_s"][size] = ranged_reads(client, caps[0], int(size),
                                                 plan.segment_ranged_count)
        return out
    finally:
        client.stop()

"""One implementation's whole benchmark: its grids, clients and every workload, in order.

For a system (ours, or Tahoe-LAFS 1.20) this starts a grid of ``Plan.storage_nodes``
storage servers and a client, measures (idle memory and CPU, 1 kB uploads,
the Foolscap floor, ``tahoe put``, the cost model, downloads and ranged
reads, memory during large uploads, the segment-size variants, round trips
through delay proxies, and the directory commands of its own ``tahoe`` CLI),
stops that grid, and repeats the cost model on a grid whose servers discard
share data.  Only the section groups asked for run (``bench.py --sections``).
A section that fails is recorded in ``errors`` and the run goes on.
"""
from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_dirs import directories
from bench_grid import BenchGrid, BenchNode
from bench_http import TestFiles
from bench_plan import SECTIONS, Plan
from bench_proc import CpuAccount, rss_mib, wait_quiet
from bench_workloads import (cli_puts, downloads, floor, idle_metrics, ranged_reads,
                             round_trips, sized_uploads, small_uploads)
from tests.support.nodes import Shares, TahoeTool
from tests.support.processes import ProcessSet

__all__ = ["System", "run_system"]

SEGMENT_KEY = "shares._max_immutable_segment_size_for_testing"


@dataclass(frozen=True)
class System:
    """An implementation under test, with a transport.

    :ivar name: ``ours``, ``ours-foolscap`` or ``tahoe``.
    :ivar tahoe: its ``tahoe`` executable.
    :ivar foolscap_only: whether its servers and clients are kept to Foolscap
        (``force_foolscap``); otherwise each uses its default, the HTTPS storage
        protocol.
    :ivar extra_foolscap_client: also measure a ``force_foolscap`` client
        (Tahoe: its Foolscap path next to its default).
    :ivar sections: the only section groups this system runs (None: all asked for).
    """

    name: str
    tahoe: Path
    foolscap_only: bool
    extra_foolscap_client: bool = False
    sections: tuple[str, ...] | None = None


class Sections:
    """Runs named sections, logging progress and keeping going after a failure."""

    def __init__(self, system: str, results: dict[str, Any]) -> None:
        self.system = system
        self.results = results
        self.errors: dict[str, str] = results.setdefault("errors", {})
        self.durations: dict[str, float] = results.setdefault("section_seconds", {})
        self.foreign: dict[str, float] = results.setdefault("section_foreign_cpu_pct", {})

    def run(self, name: str, func: Callable[[], Any]) -> Any:
        """Run ``func``; on an exception record it under ``name`` and return None."""
        started = time.monotonic()
        account = CpuAccount()
        log(f"[{self.system}] {name} ...")
        try:
            return func()
        except Exception as error:  # noqa: BLE001 (a benchmark keeps going; the error is kept)
            self.errors[name] = f"{type(error).__name__}: {error}"
            log(f"[{self.system}] {name} FAILED: {error}\n{traceback.format_exc()}")
            return None
        finally:
            self.durations[name] = time.monotonic() - started
            self.foreign[name] = account.foreign_pct()
            log(f"[{self.system}] {name} done in {self.durations[name]:.1f} s (other work on"
                f" the machine: {self.foreign[name]:.0f}% of a core)")


def log(message: str) -> None:
    """Progress goes to stderr (the table goes to stdout)."""
    print(message, file=sys.stderr, flush=True)


MAIN_GRID_SECTIONS = ("idle", "small", "floor", "put", "directories", "cost", "memory",
                      "foolscap", "segments", "rtt")


def run_system(system: System, plan: Plan, workdir: Path, files: TestFiles,
               wanted: Sequence[str] = tuple(SECTIONS)) -> dict[str, Any]:
    """Every measurement of one implementation; raw samples in a JSON-ready dict.

    :param wanted: the section groups to run (:data:`bench_plan.SECTIONS`); the
        main grid starts only if one of its sections is wanted, the grid of
        discarding servers only for ``discard``.
    """
    if system.sections is not None:
        wanted = tuple(name for name in wanted if name in system.sections)
    results: dict[str, Any] = {"tahoe": str(system.tahoe), "sections": list(wanted),
                               "foolscap_only": system.foolscap_only}
    sections = Sections(system.name, results)
    tool = TahoeTool(system.tahoe, workdir / "logs")
    results["version"] = sections.run("version", tool.version)
    shares = Shares(plan.needed, plan.happy, plan.total)
    with ProcessSet() as processes:
        if any(name in wanted for name in MAIN_GRID_SECTIONS):
            grid = BenchGrid(tool, workdir / "grid", processes, plan.storage_nodes, shares,
                             server_foolscap=system.foolscap_only)
            started = time.monotonic()
            sections.run("grid start", grid.start)
            client = sections.run("client start", lambda: grid.start_client(
                "client", force_foolscap=system.foolscap_only))
            results["grid_start_s"] = time.monotonic() - started
            if client is not None:
                _main_grid(system, plan, grid, client, files, sections, wanted, workdir)
            grid.stop(remove=True)
        if "discard" in wanted:
            # Tahoe 1.20's HTTPS storage never completes an upload to a debug_discard server
            # (BucketWriter.write returns before recording the range): Foolscap for Tahoe.
            _discard_grid(plan, tool, workdir, processes, shares, files, sections,
                          system.foolscap_only, client_foolscap=system.foolscap_only
                          or system.name == "tahoe")
    return results


def _discard_grid(plan: Plan, tool: TahoeTool, workdir: Path, processes: ProcessSet,
                  shares: Shares, files: TestFiles, sections: Sections,
                  server_foolscap: bool, client_foolscap: bool) -> None:
    discard = BenchGrid(tool, workdir / "grid-discard", processes, plan.storage_nodes,
                        shares, server_foolscap=server_foolscap,
                        storage_settings={"storage": {"debug_discard": "true"}})
    sections.run("discard grid start", discard.start)
    sections.results["discard_client_foolscap"] = client_foolscap
    client = sections.run("discard client start", lambda: discard.start_client(
        "client", force_foolscap=client_foolscap))
    if client is not None:
        discard.settle(plan.settle_timeout)
        sections.results["discard"] = {
            "small_upload_s": sections.run("discard: 1 kB uploads", lambda: small_uploads(
                client, plan.small_count, plan.small_warmup)),
            "uploads": sections.run("discard: cost model", lambda: sized_uploads(
                client, files, plan.discard_sizes)),
        }
    discard.stop(remove=True)


def _main_grid(system: System, plan: Plan, grid: BenchGrid, client: BenchNode,
               files: TestFiles, sections: Sections, wanted: Sequence[str],
               workdir: Path) -> None:
    results = sections.results
    results["settle_s"] = grid.settle(plan.settle_timeout)
    if "idle" in wanted:
        results["idle"] = sections.run("idle memory and CPU",
                                       lambda: idle_metrics(grid, client, plan.idle_window))
    if "small" in wanted:
        results["small_upload_s"] = sections.run("1 kB uploads (web API)", lambda: small_uploads(
            client, plan.small_count, plan.small_warmup))
    if "floor" in wanted:
        results["floor"] = sections.run("Foolscap floor", lambda: floor(
            grid, plan.floor_count, plan.floor_warmup))
        results["floor_plain"] = sections.run("Foolscap floor, plain Tub", lambda: floor(
            grid, plan.floor_count, plan.floor_warmup, plain=True))
        if not system.foolscap_only:
            results["floor_https"] = sections.run("HTTPS floor", lambda: floor(
                grid, plan.floor_count, plan.floor_warmup, https=True))
    if "put" in wanted:
        results["cli_put_s"] = sections.run("tahoe put 1 kB", lambda: cli_puts(
            system.tahoe, client, files, plan.cli_count))
    if "directories" in wanted:
        results["directories"] = sections.run("directories (CLI)", lambda: directories(
            system.tahoe, client, workdir / "dirs", put_count=plan.dir_put_count,
            mkdir_count=plan.dir_mkdir_count, trees=plan.dir_trees, budget=plan.dir_budget_s,
            download=plan.dir_download))
    if "cost" in wanted:
        uploads = sections.run("cost model uploads", lambda: sized_uploads(
            client, files, plan.sizes, watch_from=plan.download_size))
        results["uploads"] = uploads
        caps = (uploads or {}).get("caps", {}).get(str(plan.download_size), [])
        if caps:
            results["download"] = sections.run("downloads", lambda: downloads(client, caps))
            results["ranged_s"] = sections.run("1 KiB ranged reads", lambda: ranged_reads(
                client, caps[0], plan.download_size, plan.ranged_count))
    if "memory" in wanted:
        results["memory"] = sections.run("large uploads (memory)", lambda: sized_uploads(
            client, files, plan.memory_sizes, watch_from=0))
    if "idle" in wanted:
        results["client_rss_after_mib"] = rss_mib(client.pid)
    if system.extra_foolscap_client and "foolscap" in wanted:
        results["foolscap_client"] = sections.run(
            "Foolscap-only client", lambda: _foolscap_client(plan, grid, files))
    if "segments" in wanted:
        results["segments"] = {}
        for segment_size in plan.segment_sizes:
            results["segments"][str(segment_size)] = sections.run(
                f"segment size {segment_size}", lambda s=segment_size: _segment_variant(
                    plan, grid, files, s, system.foolscap_only))
    if "rtt" in wanted:
        results["rtt"] = sections.run("round trips (delay proxies)", lambda: round_trips(
            grid, plan.rtt_delays, plan.rtt_count, plan.rtt_warmup))
    if "idle" in wanted:
        results["idle_after"] = sections.run("idle after the workloads", lambda: idle_metrics(
            grid, client, min(plan.idle_window, 2.0)))


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

"""Who is measured when: one system's sections in order, or two systems' in alternating blocks.

A :class:`Side` is one implementation in a run (its grid, its client, its
raw results).  A :class:`Schedule` runs the sections over one side, or over
two sides whose grids are up at once (``bench.py --compare``: ours and
Tahoe's):

* :meth:`Schedule.alternate` splits a section of repeated operations into
  blocks (say 5 uploads) and runs them by turns, ours, Tahoe's, ours...;
* :meth:`Schedule.each` runs a section once per side, one after the other
  (sections that start clients of their own: the floors, the segment sizes,
  the delay proxies, the idle measurements).

Before a side's turn the other grid is frozen with SIGSTOP and this one
thawed (:mod:`bench_freeze`), so neither grid's background work lands in the
other's figures; every turn records the other work on the machine
(:class:`bench_cpu.LoadAccount`) under a *load key*, and ``bench_derive``
prints a ratio against Tahoe only when that other work stayed under 5 % of
a core on both sides.  With a single side nothing is frozen and blocks run
back to back.
"""
from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from bench_cpu import CpuMeter, Load, LoadAccount, Roots
from bench_freeze import Freezer
from bench_grid import BenchGrid, BenchNode
from bench_http import TestFiles
from bench_plan import Plan
from bench_proc import wait_quiet
from tests.support.nodes import TahoeTool

__all__ = ["Schedule", "Sections", "Side", "System", "log", "merge_samples", "settle_all"]


def log(message: str) -> None:
    """Progress goes to stderr (the table goes to stdout)."""
    print(message, file=sys.stderr, flush=True)


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


def _add_load(into: dict[str, Any], key: str, load: Load) -> None:
    entry = into.setdefault(key, {"wall_s": 0.0, "foreign_cpu_s": 0.0, "frozen_cpu_s": 0.0,
                                  "blocks": 0})
    entry["wall_s"] += load.wall_s
    entry["foreign_cpu_s"] += load.foreign_s
    entry["frozen_cpu_s"] += load.frozen_s
    entry["blocks"] += 1
    entry["foreign_pct"] = Load(entry["wall_s"], entry["foreign_cpu_s"]).pct


class Sections:
    """Runs named sections of one system, keeping going after a failure.

    Into ``results`` go ``errors`` (name -> message), ``section_seconds`` and
    ``section_foreign_cpu_pct`` (per name, added up over a section's blocks),
    and ``load`` (per load key: wall seconds, other work's CPU-seconds, blocks
    and % of a core), which decides whether a ratio against Tahoe is printed.
    """

    def __init__(self, system: str, results: dict[str, Any]) -> None:
        self.system = system
        self.results = results
        self.errors: dict[str, str] = results.setdefault("errors", {})
        self.durations: dict[str, float] = results.setdefault("section_seconds", {})
        self.foreign: dict[str, float] = results.setdefault("section_foreign_cpu_pct", {})
        self.load: dict[str, Any] = results.setdefault("load", {})
        self._by_name: dict[str, Any] = {}

    def run(self, name: str, func: Callable[[], Any], *, load_key: str | None = None,
            frozen: Sequence[int] = (), measured: Sequence[int] = ()) -> Any:
        """Run ``func`` (logged); on an exception record it under ``name`` and return None."""
        log(f"[{self.system}] {name} ...")
        _, value = self.attempt(name, func, load_key=load_key, frozen=frozen, measured=measured)
        self.report(name)
        return value

    def attempt(self, name: str, func: Callable[[], Any], *, load_key: str | None = None,
                frozen: Sequence[int] = (), measured: Sequence[int] = ()) -> tuple[bool, Any]:
        """Run ``func`` silently, adding its time and other work to ``name`` (and ``load_key``).

        :param frozen: PIDs of grids meant to be frozen meanwhile (their CPU is other work).
        :param measured: PIDs of the grid measured (its CPU is not other work).
        :returns: (whether it returned, what it returned or None).
        """
        account = LoadAccount(frozen, measured)
        try:
            return True, func()
        except Exception as error:  # noqa: BLE001 (a benchmark keeps going; the error is kept)
            self.errors[name] = f"{type(error).__name__}: {error}"
            log(f"[{self.system}] {name} FAILED: {error}\n{traceback.format_exc()}")
            return False, None
        finally:
            load = account.stop()
            _add_load(self._by_name, name, load)
            self.durations[name] = self._by_name[name]["wall_s"]
            self.foreign[name] = self._by_name[name]["foreign_pct"]
            if load_key is not None:
                _add_load(self.load, load_key, load)

    def report(self, name: str) -> None:
        """Log the time and other work of ``name`` so far."""
        blocks = self._by_name.get(name, {}).get("blocks", 0)
        log(f"[{self.system}] {name} done in {self.durations.get(name, 0.0):.1f} s"
            + (f" ({blocks} blocks)" if blocks > 1 else "")
            + f" (other work on the machine: {self.foreign.get(name, 0.0):.0f}% of a core)")


@dataclass
class Side:
    """One implementation in a run: its grid and client (when up) and its raw results."""

    system: System
    plan: Plan
    workdir: Path
    files: TestFiles
    sections: Sections
    tool: TahoeTool
    wanted: tuple[str, ...]
    grid: BenchGrid | None = None
    client: BenchNode | None = None
    #: what one block leaves for the next (caps uploaded, seconds spent, the CLI).
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The system's name."""
        return self.system.name

    @property
    def results(self) -> dict[str, Any]:
        """The raw, JSON-ready results of this system."""
        return self.sections.results

    def wants(self, section: str) -> bool:
        """Whether the section group ``section`` is to run for this side."""
        return section in self.wanted

    def roots(self) -> Roots:
        """The processes of the grid that is up (none if none is)."""
        return self.grid.process_roots() if self.grid is not None else {}

    def pids(self) -> list[int]:
        """Every root PID of the grid that is up."""
        return [pid for pids in self.roots().values() for pid in pids]

    @cached_property
    def meter(self) -> CpuMeter:
        """CPU per operation of this side's grid, into ``results["cpu_per_op"]``."""
        return CpuMeter(self.roots, self.results.setdefault("cpu_per_op", {}))

    def extend(self, key: str, values: Sequence[Any]) -> None:
        """Append ``values`` to the list ``results[key]``."""
        self.results.setdefault(key, []).extend(values)

    def merge(self, key: str, values: dict[str, Any]) -> None:
        """Merge ``values`` into the dict ``results[key]`` (lists extended, dicts merged)."""
        merge_samples(self.results.setdefault(key, {}), values)


def merge_samples(into: dict[str, Any], new: dict[str, Any]) -> None:
    """Merge nested dicts of sample lists: lists are extended, dicts merged, the rest replaced."""
    for key, value in new.items():
        if isinstance(value, dict):
            merge_samples(into.setdefault(key, {}), value)
        elif isinstance(value, list):
            into.setdefault(key, []).extend(value)
        else:
            into[key] = value


class Schedule:
    """Runs sections over the sides of a run, alternating and freezing when there are two.

    :param sides: one side, or two whose grids are up at once.
    :param freezer: stops and continues the grids.
    :param plan: for the block size and the settling after a thaw.
    """

    def __init__(self, sides: Sequence[Side], freezer: Freezer, plan: Plan) -> None:
        self.sides = list(sides)
        self.freezer = freezer
        self.plan = plan
        self._active: Side | None = None

    @property
    def interleaved(self) -> bool:
        """Whether two grids take turns."""
        return len(self.sides) > 1

    def activate(self, side: Side, settle: bool = True) -> bool:
        """Freeze every other side's grid and thaw this one's (then, with ``settle``, let it
        catch up briefly: :meth:`settle`); whether it was thawed."""
        if not self.interleaved or self._active is side:
            return False
        for other in self.sides:
            if other is not side and not self.freezer.frozen(other.name):
                pids = other.pids()
                if pids:
                    self.freezer.freeze(other.name, pids)
        self._active = side
        if not self.freezer.frozen(side.name):
            return False
        self.freezer.thaw(side.name)
        if settle:
            self.settle(side)
        return True

    def settle(self, side: Side) -> None:
        """Let a grid just thawed run the timers that came due while it was frozen (at most
        ``Plan.thaw_settle_s``)."""
        wait_quiet(side.pids(), window=0.1, timeout=self.plan.thaw_settle_s)

    def _turn(self, side: Side, func: Callable[[], Any]) -> Callable[[], Any]:
        """``side`` made the one running; ``func``, after the thawed grid settled, to be run
        where the other work is counted (a longer stretch than the operations alone: the
        ticks of /proc weigh less)."""
        thawed = self.activate(side, settle=False)

        def turn() -> Any:
            if thawed:
                self.settle(side)
            return func()
        return turn

    def release(self) -> None:
        """Thaw every grid (before grids are stopped, or the next ones started)."""
        self.freezer.thaw_all()
        self._active = None

    def frozen_pids(self, side: Side) -> list[int]:
        """The PIDs that should be frozen while ``side`` is measured."""
        return [pid for other in self.sides if other is not side for pid in other.pids()]

    def sides_for(self, section: str | None) -> list[Side]:
        """The sides with a client up that want ``section`` (None: every such side)."""
        return [side for side in self.sides
                if (section is None or side.wants(section)) and side.client is not None]

    def each(self, section: str | None, label: str, load_key: str | None,
             func: Callable[[Side], Any], *, store: str | None = None,
             only: Callable[[Side], bool] = lambda side: True) -> None:
        """Run ``func(side)`` once for every side that wants ``section``, one after the other.

        :param store: the result goes to ``results[store]`` (None: ``func`` stores it).
        :param only: a further filter on the sides.
        """
        for side in self.sides_for(section):
            if not only(side):
                continue
            value = side.sections.run(label, self._turn(side, lambda: func(side)),
                                      load_key=load_key, frozen=self.frozen_pids(side),
                                      measured=side.pids())
            if store is not None:
                side.results[store] = value

    def alternate(self, section: str | None, label: str, load_key: str, total: int,
                  block: int, op: Callable[[Side, int, int], Any], *,
                  stop: Callable[[int], bool] | None = None,
                  only: Callable[[Side], bool] = lambda side: True) -> None:
        """Run ``op(side, start, count)`` in blocks of ``block`` until ``total`` per side,
        the sides taking turns (the other grid frozen). A side whose block fails runs
        no more blocks of this section.

        :param stop: called after each round with the number of rounds done; True ends
            the section early.
        :param only: a further filter on the sides.
        """
        sides = [side for side in self.sides_for(section) if only(side)]
        block = max(1, block)
        done = {side.name: 0 for side in sides}
        for side in sides:
            log(f"[{side.name}] {label} ..." + (" (in turns with "
                + ", ".join(s.name for s in sides if s is not side) + ")"
                if len(sides) > 1 else ""))
        live = [side for side in sides if total > 0]
        rounds = 0
        while live:
            for side in list(live):
                count = min(block, total - done[side.name])
                ok, _ = side.sections.attempt(
                    label, self._turn(side, lambda s=side, c=count: op(s, done[s.name], c)),
                    load_key=load_key, frozen=self.frozen_pids(side), measured=side.pids())
                done[side.name] += count
                if not ok or done[side.name] >= total:
                    live.remove(side)
            rounds += 1
            if stop is not None and stop(rounds):
                break
        for side in sides:
            side.sections.report(label)


def settle_all(schedule: Schedule, timeout: float, key: str, section: str | None = None) -> None:
    """Let each side's grid become quiet (in turns); the seconds waited go to ``results[key]``."""
    for side in schedule.sides_for(section):
        if side.grid is not None:
            schedule.activate(side)
            side.results[key] = side.grid.settle(timeout)

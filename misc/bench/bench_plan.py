"""What the grid benchmark measures and how often: the full plan and the smoke plan.

The repetition counts keep a full ``make bench`` (our grid only) to about
10 minutes and ``make bench-compare`` (also Tahoe-LAFS 1.20, which uploads
at about 18 MB/s here) to about 25 minutes on a 2-core machine.

:data:`SECTIONS` names the parts of a run that ``bench.py --sections`` can pick.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

__all__ = ["SECTIONS", "Plan", "full_plan", "parse_sections", "size_label", "smoke_plan"]

KB = 1000
MB = 1000 * KB
KIB = 1024
MIB = 1024 * KIB


#: Section groups, in the order a run measures them, with what each covers.
SECTIONS: dict[str, str] = {
    "controls": "raw TCP and encode controls (once per run)",
    "idle": "idle memory and CPU of the fresh grid, and after the workloads",
    "small": "1 kB uploads through the web API",
    "floor": "the Foolscap-only floor (our Tub settings, and Foolscap's plain Tub)",
    "put": "tahoe put 1 kB (unlinked), whole process",
    "directories": "tahoe put FILE alias:name, mkdir, cp -r of 1 kB trees up and down",
    "cost": "the cost model uploads, 100 MB downloads and ranged reads",
    "memory": "client memory during 500 MB uploads",
    "foolscap": "Tahoe's Foolscap-only client (Tahoe only)",
    "segments": "the segment-size variants",
    "rtt": "round trips through delay proxies",
    "discard": "the grid whose servers discard share data",
}


def size_label(size: int) -> str:
    """``1 kB``, ``100 MB``, ``512 B`` (powers of 1,000)."""
    for unit, scale in (("MB", MB), ("kB", KB)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} B"


def parse_sections(text: str | None) -> tuple[str, ...]:
    """``"a,b"`` -> the named sections in run order (every section when ``text`` is None).

    :raises ValueError: for a name not in :data:`SECTIONS`.
    """
    if text is None:
        return tuple(SECTIONS)
    names = {n.strip() for n in text.split(",") if n.strip()}
    unknown = sorted(names - set(SECTIONS))
    if unknown or not names:
        raise ValueError(f"unknown section(s) {', '.join(unknown) or '(none given)'}; "
                         f"choose from {', '.join(SECTIONS)}")
    return tuple(n for n in SECTIONS if n in names)


@dataclass(frozen=True)
class Plan:
    """Sizes (bytes), repetition counts and grid shape of one benchmark run."""

    storage_nodes: int = 10
    needed: int = 3
    happy: int = 7
    total: int = 10
    #: 1 kB uploads through the web API: timed count, untimed warm-up.
    small_count: int = 50
    small_warmup: int = 5
    #: 1 kB uploads back to back in each round of the CPU-per-upload measurement (the
    #: issue's way: no freezing and waking between them), and how many rounds
    cpu_round_ops: int = 100
    cpu_rounds: int = 3
    #: whole-process ``tahoe put`` of 1 kB.
    cli_count: int = 20
    #: the directories section (``bench_dirs.py``): ``tahoe put FILE alias:name`` of 1 kB
    #: and ``tahoe mkdir`` (unlinked, and ``alias:name``), whole processes, this many each.
    dir_put_count: int = 20
    dir_mkdir_count: int = 10
    #: ``tahoe cp -r`` of local trees (new files every time) up and down: (directories,
    #: 1 kB files per directory, most repetitions, fewest repetitions); repetitions of a
    #: tree stop once the runs of one system took ``dir_budget_s`` seconds, but not
    #: before the fewest (with ``--compare`` both systems run the same number, in turns).
    dir_trees: tuple[tuple[int, ...], ...] = ((3, 100, 3, 3), (10, 100, 3, 1))
    dir_budget_s: float = 45.0
    #: whether each tree is also copied down again (grid -> local) and compared.
    dir_download: bool = True
    #: the cost model: size -> repetitions.
    sizes: dict[int, int] = field(default_factory=lambda: {
        KB: 10, 10 * KB: 10, 100 * KB: 10, MB: 10, 10 * MB: 5, 100 * MB: 5})
    #: whole downloads of the files of this size uploaded for the cost model.
    download_size: int = 100 * MB
    ranged_count: int = 30
    #: client memory during uploads of these sizes (the first comes from the cost model).
    memory_sizes: dict[int, int] = field(default_factory=lambda: {500 * MB: 2})
    #: one-way delays (seconds) of the proxies in front of every storage server.
    rtt_delays: tuple[float, ...] = (0.007, 0.025)
    rtt_count: int = 20
    rtt_warmup: int = 2
    #: the cost model again, with ``[storage] debug_discard = true`` servers (and for
    #: Tahoe's Foolscap-only client).
    discard_sizes: dict[int, int] = field(default_factory=lambda: {
        KB: 10, 10 * KB: 5, 100 * KB: 5, MB: 5, 10 * MB: 3, 100 * MB: 3})
    #: maximum segment sizes, and the files (size -> repetitions) for each.
    segment_sizes: tuple[int, ...] = (128 * KIB, MIB, 4 * MIB)
    segment_files: dict[int, int] = field(default_factory=lambda: {MB: 5, 100 * MB: 3})
    segment_ranged_count: int = 20
    floor_count: int = 50
    floor_warmup: int = 3
    #: the encode control (bench_core.py): MiB and repetitions.
    encode_mib: float = 64
    encode_repeat: int = 3
    #: seconds over which idle storage servers' CPU is measured.
    idle_window: float = 10.0
    #: the most seconds to wait for a grid to become quiet after it starts.
    settle_timeout: float = 20.0
    #: the most seconds to wait, before each system, for other work on the machine to calm down.
    quiet_wait: float = 120.0
    #: operations per block when two grids take turns (``--compare``: ours, then Tahoe's,
    #: the other frozen); sizes of 10 MB and more, and ``cp -r`` trees, go one per block.
    block_ops: int = 5
    #: the most seconds to let a grid just thawed catch up (its timers) before its block.
    thaw_settle_s: float = 1.0
    #: the most seconds to wait for a grid to be quiet before its memory at rest is read
    #: after the workloads (Tahoe's never is: ten servers asking each other's versions).
    rest_settle_s: float = 5.0

    @property
    def shares_text(self) -> str:
        """``k/happy/N``."""
        return f"{self.needed}/{self.happy}/{self.total}"

    def as_dict(self) -> dict[str, object]:
        """The plan for the JSON report."""
        return dataclasses.asdict(self)


def full_plan() -> Plan:
    """The plan of ``make bench``."""
    return Plan()


def smoke_plan() -> Plan:
    """Tiny sizes, one repetition, a 3-server grid: checks the harness end to end in ~1 minute."""
    return Plan(
        storage_nodes=3, needed=2, happy=3, total=3,
        small_count=2, small_warmup=1, cli_count=1, cpu_round_ops=2, cpu_rounds=1,
        dir_put_count=1, dir_mkdir_count=1, dir_trees=((2, 3, 1, 1),), dir_budget_s=0.0,
        sizes={KB: 1, 10 * KB: 1, MB: 1}, download_size=10 * KB, ranged_count=1,
        memory_sizes={20 * KB: 1},
        rtt_delays=(0.002,), rtt_count=1, rtt_warmup=0,
        discard_sizes={KB: 1, 10 * KB: 1},
        segment_sizes=(8 * KIB,), segment_files={10 * KB: 1}, segment_ranged_count=1,
        floor_count=2, floor_warmup=1,
        encode_mib=0.25, encode_repeat=1,
        idle_window=0.2, settle_timeout=1.0, quiet_wait=0.0, block_ops=1, thaw_settle_s=0.05,
        rest_settle_s=0.5,
    )

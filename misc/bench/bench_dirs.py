"""The directories section: each implementation's ``tahoe`` CLI against its own gateway.

Every command is a whole process (interpreter start, CLI, HTTP, the
gateway's work), timed from ``fork`` to exit, with the client node directory
given by ``-d`` (``node.url`` and ``private/aliases``, where ``tahoe
create-alias bench`` puts the alias):

* ``tahoe put FILE bench:put-<i>`` of 1 kB, each a new name and new content;
* ``tahoe mkdir`` (unlinked: ``POST /uri?t=mkdir``) and ``tahoe mkdir
  bench:mkdir-<i>`` (a new directory linked into the alias);
* ``tahoe cp -r TREE bench:cp-<files>-<i>``: a local tree of ``dirs``
  directories of ``per_dir`` random files of 1 kB each (new random content for
  every run), uploaded into a new directory of the alias, and ``tahoe cp -r
  bench:cp-<files>-<i>/tree DEST`` down again, checked byte for byte.

The functions here run one block of a section (``bench_system`` calls them
in turns for each implementation); with a :class:`bench_cpu.CpuMeter` each
command's CPU is added up per operation (``put_alias_1k``, ``mkdir``,
``mkdir_alias``, ``cp_up_<files>`` and ``cp_down_<files>`` per file).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from bench_cpu import CpuMeter
from bench_grid import BenchNode
from tests.support.trees import same_trees

__all__ = ["ALIAS", "Cli", "DirTree", "create_alias", "make_tree", "mkdirs", "puts",
           "tree_run"]

ALIAS = "bench"
#: Seconds one CLI command may take (Tahoe's cp -r of 1000 files takes about 2 minutes).
CLI_TIMEOUT = 1200.0
TREE_NAME = "tree"

#: directories, files per directory, most repetitions, fewest repetitions (a tree's
#: repetitions stop once its runs took the plan's budget, but not before the fewest).
DirTree = tuple[int, ...]


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}


class Cli:
    """Runs one implementation's ``tahoe -d CLIENT ...`` as timed whole processes."""

    def __init__(self, tahoe: Path, client: BenchNode) -> None:
        self.argv = [str(tahoe), "-d", str(client.basedir)]
        self.env = _clean_env()

    def timed(self, *args: str | os.PathLike[str]) -> tuple[bytes, float]:
        """Run the command; return (stdout, seconds); raise unless it exits 0."""
        argv = self.argv + [str(a) for a in args]
        started = time.perf_counter()
        result = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                env=self.env, timeout=CLI_TIMEOUT)
        elapsed = time.perf_counter() - started
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[3:])!r} exited {result.returncode}: "
                               f"{result.stdout[-500:]!r} {result.stderr[-1500:]!r}")
        return result.stdout, elapsed


def make_tree(root: Path, dirs: int, per_dir: int, size: int = 1000) -> int:
    """``dirs`` directories ``d00``… under ``root``, each of ``per_dir`` random files; the count."""
    for d in range(dirs):
        directory = root / f"d{d:02d}"
        directory.mkdir(parents=True)
        for f in range(per_dir):
            (directory / f"f{f:03d}.bin").write_bytes(os.urandom(size))
    return dirs * per_dir


def _metered(meter: CpuMeter | None, op: str, count: int) -> AbstractContextManager[None]:
    return nullcontext() if meter is None else meter.measure(op, count)


def create_alias(cli: Cli) -> float:
    """``tahoe create-alias bench``; seconds."""
    return cli.timed("create-alias", ALIAS)[1]


def puts(cli: Cli, workdir: Path, start: int, count: int, meter: CpuMeter | None = None,
         size: int = 1000) -> list[float]:
    """``tahoe put FILE bench:put-<i>`` for i in ``start``..., new content each; seconds."""
    workdir.mkdir(parents=True, exist_ok=True)
    seconds = []
    path = workdir / "put.bin"
    for i in range(start, start + count):
        path.write_bytes(os.urandom(size))
        with _metered(meter, "put_alias_1k", 1):
            _, elapsed = cli.timed("put", path, f"{ALIAS}:put-{i:03d}")
        seconds.append(elapsed)
    return seconds


def mkdirs(cli: Cli, start: int, count: int, linked: bool,
           meter: CpuMeter | None = None) -> list[float]:
    """``tahoe mkdir bench:mkdir-<i>`` (``linked``) or ``tahoe mkdir`` (unlinked); seconds."""
    seconds = []
    for i in range(start, start + count):
        if linked:
            with _metered(meter, "mkdir_alias", 1):
                _, elapsed = cli.timed("mkdir", f"{ALIAS}:mkdir-{i:03d}")
        else:
            with _metered(meter, "mkdir", 1):
                out, elapsed = cli.timed("mkdir")
            if not out.startswith(b"URI:DIR2"):
                raise RuntimeError(f"tahoe mkdir printed {out[:200]!r}, not a directory cap")
        seconds.append(elapsed)
    return seconds


def tree_run(cli: Cli, workdir: Path, tree: DirTree, rep: int, download: bool,
             meter: CpuMeter | None = None) -> tuple[float, float | None]:
    """One ``tahoe cp -r`` of a new tree up into ``bench:cp-<files>-<rep>`` (and down again,
    compared, if ``download``); (seconds up, seconds down or None)."""
    dirs, per_dir = tree[0], tree[1]
    files = dirs * per_dir
    local = workdir / f"cp-{files}-{rep}"
    source = local / TREE_NAME
    make_tree(source, dirs, per_dir)
    target = f"{ALIAS}:cp-{files}-{rep}"
    try:
        with _metered(meter, f"cp_up_{files}", files):
            _, up = cli.timed("cp", "-r", source, target)
        down = None
        if download:
            dest = local / "down"
            dest.mkdir()
            with _metered(meter, f"cp_down_{files}", files):
                _, down = cli.timed("cp", "-r", f"{target}/{TREE_NAME}", dest)
            if not same_trees(source, dest / TREE_NAME):
                raise RuntimeError(f"cp -r down of {target} differs from what went up")
        return up, down
    finally:
        shutil.rmtree(local, ignore_errors=True)

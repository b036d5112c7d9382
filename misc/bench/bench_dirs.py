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

Repetitions of one tree stop early once the tree's runs have taken
``budget`` seconds (the first run always happens), so Tahoe 1.20, which
uploads one file at a time, stays within a few minutes.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_grid import BenchNode
from tests.support.trees import same_trees

__all__ = ["DirTree", "directories", "make_tree"]

ALIAS = "bench"
#: Seconds one CLI command may take (Tahoe's cp -r of 1000 files takes about 2 minutes).
CLI_TIMEOUT = 1200.0
TREE_NAME = "tree"

DirTree = tuple[int, int, int]  # directories, files per directory, most repetitions


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


def _puts(cli: Cli, workdir: Path, count: int, size: int = 1000) -> list[float]:
    seconds = []
    path = workdir / "put.bin"
    for i in range(count):
        path.write_bytes(os.urandom(size))
        _, elapsed = cli.timed("put", path, f"{ALIAS}:put-{i:03d}")
        seconds.append(elapsed)
    return seconds


def _mkdirs(cli: Cli, count: int, linked: bool) -> list[float]:
    seconds = []
    for i in range(count):
        if linked:
            _, elapsed = cli.timed("mkdir", f"{ALIAS}:mkdir-{i:03d}")
        else:
            out, elapsed = cli.timed("mkdir")
            if not out.startswith(b"URI:DIR2"):
                raise RuntimeError(f"tahoe mkdir printed {out[:200]!r}, not a directory cap")
        seconds.append(elapsed)
    return seconds


def _tree_runs(cli: Cli, workdir: Path, tree: DirTree, budget: float,
               download: bool) -> dict[str, Any]:
    dirs, per_dir, repetitions = tree
    files = dirs * per_dir
    out: dict[str, Any] = {"dirs": dirs, "files_per_dir": per_dir, "files": files,
                           "up_s": [], "down_s": []}
    spent = 0.0
    for rep in range(repetitions):
        if rep and spent >= budget:
            break
        local = workdir / f"cp-{files}-{rep}"
        source = local / TREE_NAME
        make_tree(source, dirs, per_dir)
        target = f"{ALIAS}:cp-{files}-{rep}"
        _, up = cli.timed("cp", "-r", source, target)
        out["up_s"].append(up)
        spent += up
        if download:
            dest = local / "down"
            dest.mkdir()
            _, down = cli.timed("cp", "-r", f"{target}/{TREE_NAME}", dest)
            if not same_trees(source, dest / TREE_NAME):
                raise RuntimeError(f"cp -r down of {target} differs from what went up")
            out["down_s"].append(down)
            spent += down
        shutil.rmtree(local, ignore_errors=True)
    return out


def directories(tahoe: Path, client: BenchNode, workdir: Path, *, put_count: int,
                mkdir_count: int, trees: Sequence[DirTree], budget: float,
                download: bool = True) -> dict[str, Any]:
    """The whole section; raw seconds per command (JSON-ready).

    :returns: ``{"create_alias_s", "put_s": [...], "mkdir_unlinked_s": [...],
        "mkdir_alias_s": [...], "cp": {str(files): {"dirs", "files_per_dir",
        "files", "up_s": [...], "down_s": [...]}}}``.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    cli = Cli(tahoe, client)
    out: dict[str, Any] = {"alias": ALIAS}
    _, out["create_alias_s"] = cli.timed("create-alias", ALIAS)
    out["put_s"] = _puts(cli, workdir, put_count)
    out["mkdir_unlinked_s"] = _mkdirs(cli, mkdir_count, linked=False)
    out["mkdir_alias_s"] = _mkdirs(cli, mkdir_count, linked=True)
    out["cp"] = {}
    for tree in trees:
        out["cp"][str(tree[0] * tree[1])] = _tree_runs(cli, workdir, tree, budget, download)
    shutil.rmtree(workdir, ignore_errors=True)
    return out

"""``tahoe backup`` through the session's local grid: snapshots, reuse, excludes, warnings,
re-checks of old entries, errors; and a smoke run of its benchmark."""
from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.dirapi import WebAPI
from tests.support.nodes import our_tahoe
from tests.support.proxied_grid import ProxiedGrid

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


@pytest.fixture
def cli_dir(local_grid: ProxiedGrid, tmp_path: Path) -> Path:
    """A CLI node directory for the local grid's gateway with a ``bk:`` alias."""
    directory = tmp_path / "cli"
    (directory / "private").mkdir(parents=True)
    (directory / "node.url").write_text(local_grid.client.url + "\n")
    dircap = WebAPI(local_grid.client.url).ok("POST", "/uri?t=mkdir").text
    (directory / "private" / "aliases").write_text(f"bk: {dircap}\n")
    return directory


def tahoe(cli_dir: Path, *args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    """Our ``tahoe -d CLI_DIR ARGS``."""
    return subprocess.run([str(our_tahoe()), "-d", str(cli_dir), *map(str, args)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
                          env=_env())


def make_tree(root: Path, seed: str) -> None:
    """A small tree: two directories, a nested one, files big and small."""
    rng = random.Random(seed + str(time.time()))
    for path, size in (("a/one.txt", 20), ("a/two.bin", 5000), ("a/deep/three.bin", 70_000),
                       ("b/four.txt", 40), ("top.txt", 10)):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(rng.randbytes(size))


def listing(local_grid: ProxiedGrid, cli_dir: Path, path: str) -> set[str]:
    """Names under ``bk:PATH`` (``tahoe ls``)."""
    result = tahoe(cli_dir, "ls", f"bk:{path}")
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


def test_snapshots_reuse_and_verbose_output(local_grid: ProxiedGrid, cli_dir: Path,
                                            tmp_path: Path) -> None:
    """A first backup uploads all, a second reuses all (files and directories), a change
    re-makes only its directories; -v tells each path's fate; Latest and Archives/<UTC
    time> name the snapshots, and Latest reads back byte for byte."""
    tree = tmp_path / "tree"
    make_tree(tree, "snapshots")
    first = tahoe(cli_dir, "backup", tree, "bk:home")
    assert first.returncode == 0, first.stderr
    assert " 5 files uploaded (0 reused), 0 files skipped, 4 directories created (0 reused)," \
           " 0 directories skipped" in first.stdout
    assert first.stdout.count("Backing up ") == 9 and "Backing up 9/9... " in first.stdout
    second = tahoe(cli_dir, "backup", "-v", tree, "bk:home")
    assert " 0 files uploaded (5 reused)," in second.stdout
    assert "4 directories created" not in second.stdout and "(4 reused)" in second.stdout
    assert f"skipping '{tree / 'a' / 'one.txt'}'.." in second.stdout
    assert f" re-using old directory for '{tree / 'a'}'" in second.stdout
    assert " 0 files checked, 0 directories checked" in second.stdout
    (tree / "b" / "four.txt").write_bytes(b"changed!" * 20)
    time.sleep(1.1)  # a new snapshot name (whole seconds)
    third = tahoe(cli_dir, "backup", "-v", tree, "bk:home")
    assert f"uploading '{tree / 'b' / 'four.txt'}'.." in third.stdout
    assert f" {tree / 'b' / 'four.txt'} -> URI:" in third.stdout
    assert " 1 files uploaded (4 reused), 0 files skipped, 2 directories created (2 reused)" \
        in third.stdout
    archives = listing(local_grid, cli_dir, "home/Archives")
    assert len(archives) >= 2 and all(len(name) == 20 and name.endswith("Z")
                                      for name in archives)
    assert listing(local_grid, cli_dir, "home/Latest") == {"a", "b", "top.txt"}
    got = tahoe(cli_dir, "get", "bk:home/Latest/b/four.txt", "-")
    assert got.stdout == "changed!" * 20
    quiet = tahoe(cli_dir, "-q", "backup", tree, "bk:home")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")


def test_excludes_and_skipped_paths(local_grid: ProxiedGrid, cli_dir: Path,
                                    tmp_path: Path) -> None:
    """--exclude, --exclude-from-utf-8 and --exclude-vcs leave paths out at any depth;
    symbolic links and FIFOs are skipped with Tahoe's warnings and exit status 2."""
    tree = tmp_path / "tree"
    make_tree(tree, "excludes")
    (tree / "a" / "deep" / "junk.tmp").write_text("junk")
    (tree / "a" / ".git").mkdir()
    (tree / "a" / ".git" / "config").write_text("[core]")
    (tree / "b" / "secret.key").write_text("k")
    (tree / "link").symlink_to(tree / "top.txt")
    os.mkfifo(tree / "pipe")
    patterns = tmp_path / "patterns"
    patterns.write_text("*.key\n", encoding="utf-8")
    result = tahoe(cli_dir, "backup", "--exclude", "*.tmp", "--exclude-from-utf-8", patterns,
                   "--exclude-vcs", tree, "bk:ex")
    assert result.returncode == 2, result.stderr
    assert f"WARNING: cannot backup symlink '{tree / 'link'}'" in result.stderr
    assert f"WARNING: cannot backup special '{tree / 'pipe'}'" in result.stderr
    assert " 5 files uploaded (0 reused), 2 files skipped, 4 directories created" in result.stdout
    assert listing(local_grid, cli_dir, "ex/Latest/a/deep") == {"three.bin"}
    assert listing(local_grid, cli_dir, "ex/Latest/a") == {"one.txt", "two.bin", "deep"}
    assert listing(local_grid, cli_dir, "ex/Latest/b") == {"four.txt"}


def test_old_entries_are_checked_before_reuse(local_grid: ProxiedGrid, cli_dir: Path,
                                              tmp_path: Path) -> None:
    """Entries last checked over two months ago are checked on the grid (t=check) and,
    being healthy, reused; the check dates move forward."""
    tree = tmp_path / "tree"
    make_tree(tree, "recheck")
    assert tahoe(cli_dir, "backup", tree, "bk:old").returncode == 0
    db = sqlite3.connect(cli_dir / "private" / "backupdb.sqlite")
    long_ago = time.time() - 70 * 86400
    db.execute("UPDATE last_upload SET last_checked = ?", (long_ago,))
    db.execute("UPDATE directories SET last_checked = ?", (long_ago,))
    db.commit()
    result = tahoe(cli_dir, "backup", "-v", tree, "bk:old")
    assert " 0 files uploaded (5 reused)," in result.stdout
    assert " 5 files checked, 4 directories checked" in result.stdout
    assert result.stdout.count("checking 'URI:") == 9
    assert min(row[0] for row in db.execute("SELECT last_checked FROM last_upload")) > long_ago


def test_errors_are_clear(local_grid: ProxiedGrid, cli_dir: Path, tmp_path: Path) -> None:
    """An unknown alias, a FROM that is not a directory and an unusable database each get
    a message and exit status 1, and nothing is linked."""
    tree = tmp_path / "tree"
    make_tree(tree, "errors")
    unknown = tahoe(cli_dir, "backup", tree, "nosuch:x")
    assert unknown.returncode == 1 and "Unknown alias 'nosuch'" in unknown.stderr
    not_dir = tahoe(cli_dir, "backup", tree / "top.txt", "bk:err")
    assert not_dir.returncode == 1 and "is not a directory" in not_dir.stderr
    (cli_dir / "private" / "backupdb.sqlite").write_bytes(b"garbage" * 1000)
    junk = tahoe(cli_dir, "backup", tree, "bk:err")
    assert junk.returncode == 1 and "ERROR: Unable to load backup db." in junk.stderr
    assert "Traceback" not in unknown.stderr + not_dir.stderr + junk.stderr
    assert "err" not in listing(local_grid, cli_dir, "")


def test_benchmark_smoke(cli_dir: Path, tmp_path: Path) -> None:
    """misc/bench/bench_backup.py runs end to end on a small tree and writes its JSON (no
    timing is asserted: benchmarks are not tests)."""
    out = tmp_path / "bench.json"
    result = subprocess.run([sys.executable, str(ROOT / "misc" / "bench" / "bench_backup.py"),
                             "--files", "40", "--per-dir", "10", "--changed", "3",
                             "--node-directory", str(cli_dir), "--workdir", str(tmp_path / "w"),
                             "--json", str(out)], capture_output=True, text=True, timeout=300,
                            env=_env())
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert set(report["runs"]) == {"first", "unchanged", "changed"}
    assert "40 files uploaded (0 reused)" in report["runs"]["first"]["summary"]
    assert "0 files uploaded (40 reused)" in report["runs"]["unchanged"]["summary"]
    assert "3 files uploaded (37 reused)" in report["runs"]["changed"]["summary"]
    assert "unchanged" in result.stdout and "target" in result.stdout

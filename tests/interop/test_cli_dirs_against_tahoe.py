"""Our directory commands against a Tahoe-LAFS 1.20 gateway, beside Tahoe's own CLI.

Our CLI (``.venv/bin/tahoe``) and Tahoe's run as separate programs against one
Tahoe 1.20 client node, sharing one CLI directory (``node.url`` and
``private/aliases``).  Checked: aliases (``create-alias``, ``add-alias``,
``list-aliases`` in all three forms: the same text as Tahoe's, read-only caps
included), ``mkdir``, ``put`` into ``alias:dir/name``, ``ls`` with every flag
(the same lines as Tahoe's ``ls``), exit statuses, ``cp -r`` of a tree up and
back, ``cp`` of single files, ``mv``, ``ln``, ``unlink``/``rm``, and a few error
messages beside Tahoe's. (The speed of ``cp -r`` beside Tahoe's is ``make
bench``'s to measure.)

Every file uploaded here is made from a seed unique to this module and test,
so that no other upload finds its shares already stored.
"""
from __future__ import annotations

import os
import random
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.grid import ClientFactory, Gateway, Grid
from tests.support.nodes import our_tahoe
from tests.support.trees import same_trees

pytestmark = pytest.mark.interop

CLI_TIMEOUT = 600.0
TREE_FILES = 50


def run(exe: Path, *args: str | os.PathLike[str],
        input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``exe ARGS`` (a ``tahoe``), stdin from ``input`` or /dev/null."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(exe), *map(os.fspath, args)], input=input,
                          stdin=None if input is not None else subprocess.DEVNULL,
                          capture_output=True, timeout=CLI_TIMEOUT, env=env)


def ok(result: subprocess.CompletedProcess[bytes]) -> str:
    """The stdout of a successful command, as text (fails the test otherwise)."""
    assert result.returncode == 0, (result.args, result.stdout, result.stderr)
    return result.stdout.decode()


def make_tree(root: Path, seed: str, files: int, size: int = 1000) -> None:
    """``files`` random files of ``size`` bytes under ``root``, spread over nested directories."""
    rng = random.Random(seed)
    directories = [root, root / "a", root / "a" / "deep", root / "b", root / "b" / "c d"]
    for directory in directories:
        directory.mkdir(parents=True, exist_ok=True)
    (root / "empty").mkdir()
    for i in range(files):
        directory = directories[i % len(directories)]
        (directory / f"file-{i:03d}.bin").write_bytes(rng.randbytes(size + i % 7))
    (root / "tiny.txt").write_bytes(b"small enough for a LIT cap " + seed.encode())


def file_lines(listing: str) -> list[str]:
    """The lines of an ``ls --uri`` listing that are not directories."""
    return [line for line in listing.splitlines() if "URI:DIR2" not in line]


@pytest.fixture(scope="module")
def gateway(tahoe_grid: Grid, tahoe_client: ClientFactory) -> Gateway:
    """A Tahoe 1.20 client node joined to the Tahoe 1.20 grid."""
    return tahoe_client(tahoe_grid.introducer_furl)


@pytest.fixture
def cli_dir(tmp_path: Path, gateway: Gateway) -> Path:
    """A bare CLI directory (node.url and private/) pointing at the Tahoe gateway."""
    directory = tmp_path / "cli"
    (directory / "private").mkdir(parents=True)
    (directory / "node.url").write_text(gateway.url + "\n")
    return directory


def test_aliases_mkdir_put_ls_match_tahoe(tmp_path: Path, cli_dir: Path,
                                          tahoe120: Path) -> None:
    """Aliases, mkdir, put into alias:dir/name and every ls form print what Tahoe prints."""
    def ours(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[bytes]:
        return run(our_tahoe(), "-d", cli_dir, *args)

    def theirs(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[bytes]:
        return run(tahoe120, "-d", cli_dir, *args)

    assert ok(ours("create-alias", "work:")) == "Alias 'work' created\n"
    again = ours("create-alias", "work")
    assert again.returncode == 1 and again.stderr == b"Alias 'work' already exists!\n"
    dircap = ok(ours("mkdir")).strip()
    assert dircap.startswith("URI:DIR2:")
    assert ok(ours("add-alias", "other-longer-name", dircap)) == \
        "Alias 'other-longer-name' added\n"
    for flags in ([], ["--readonly-uri"], ["--json"]):
        assert ok(ours("list-aliases", *flags)) == ok(theirs("list-aliases", *flags)), flags

    subdir = ok(ours("mkdir", "work:docs/sub")).strip()
    assert subdir.startswith("URI:DIR2:")
    assert ok(ours("mkdir", "work:docs/sub")).strip() == subdir  # existing: unchanged
    assert ok(ours("mkdir", "--format=MDMF", "work:docs/mdmf")).startswith("URI:DIR2-MDMF:")
    rng = random.Random("cli-dirs-ls")
    (tmp_path / "f").write_bytes(rng.randbytes(3000))
    (tmp_path / "lit").write_bytes(b"tiny")
    ok(ours("put", tmp_path / "f", "work:docs/report ☃.bin"))
    ok(ours("put", tmp_path / "lit", "work:docs/lit.txt"))
    ok(ours("put", "--mutable", tmp_path / "lit", "work:docs/mutable.txt"))

    # Every flag on a directory; the other kinds of path with the flags that print
    # differently for them (Tahoe's CLI costs about a second a call, so not every pair).
    cases = [(flags, "work:docs") for flags in (
        [], ["-l"], ["-F"], ["--uri"], ["--readonly-uri"], ["-lF", "--uri"], ["--json"])]
    cases += [(flags, where) for flags in ([], ["-lF", "--uri"], ["--json"])
              for where in ("work:docs/", "work:docs/lit.txt", "work:")]
    with ThreadPoolExecutor(4) as pool:  # read-only calls: four at a time
        mines = pool.map(lambda case: ours("ls", *case[0], case[1]), cases)
        tahoes = pool.map(lambda case: theirs("ls", *case[0], case[1]), cases)
        for (flags, where), mine, tahoe in zip(cases, mines, tahoes):
            assert (mine.returncode, mine.stdout) == (tahoe.returncode, tahoe.stdout), \
                (flags, where, mine.stderr, tahoe.stderr)
    missing, their_missing = ours("ls", "work:nope"), theirs("ls", "work:nope")
    assert missing.returncode == their_missing.returncode == 2
    assert missing.stderr == their_missing.stderr == b"No such file or directory\n"


def test_cp_tree_up_and_back(tmp_path: Path, cli_dir: Path, tahoe120: Path) -> None:
    """cp -r of ~50 files up (one tree) and back down gives identical trees; Tahoe agrees."""
    def ours(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[bytes]:
        return run(our_tahoe(), "-d", cli_dir, *args)

    source = tmp_path / "tree"
    make_tree(source, "cli-dirs-round-trip", TREE_FILES)
    ok(ours("create-alias", "up"))
    assert ok(ours("cp", "-r", source, "up:")) == "Success: files copied\n"
    assert ok(ours("cp", "-r", "up:tree", tmp_path / "back")) == "Success: files copied\n"
    assert same_trees(source, tmp_path / "back" / "tree")
    # Tahoe's own CLI reads the same tree back.
    ok(run(tahoe120, "-d", cli_dir, "cp", "-r", "up:tree", tmp_path / "theirs"))
    assert same_trees(source, tmp_path / "theirs" / "tree")
    # Copying again merges: nothing changes, every file is replaced by the same cap.
    before = ok(ours("ls", "--uri", "up:tree/a"))
    ok(ours("cp", "-r", source, "up:"))
    assert ok(ours("ls", "--uri", "up:tree/a")) == before
    # Grid to grid: files are linked by cap, directories are new.
    ok(ours("cp", "-r", "up:tree", "up:copy"))
    copied = ok(ours("ls", "--uri", "up:copy/tree/a"))
    assert file_lines(copied) == file_lines(before) and len(file_lines(before)) > 5
    single = ok(ours("cp", source / "tiny.txt", "up:one/tiny.txt"))
    assert single == "Success: file copied\n"
    ok(ours("cp", "up:one/tiny.txt", tmp_path / "tiny.txt"))
    assert (tmp_path / "tiny.txt").read_bytes() == (source / "tiny.txt").read_bytes()
    caps = tmp_path / "caps"
    ok(ours("cp", "-r", "--caps-only", "up:one", caps))
    assert (caps / "one" / "tiny.txt").read_text().startswith("URI:LIT:")


def test_mv_ln_unlink(tmp_path: Path, cli_dir: Path, tahoe120: Path) -> None:
    """mv, ln, unlink and rm change links as Tahoe's do, with Tahoe's messages."""
    def ours(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[bytes]:
        return run(our_tahoe(), "-d", cli_dir, *args)

    ok(ours("create-alias", "m"))
    (tmp_path / "f").write_bytes(random.Random("cli-dirs-mv").randbytes(2000))
    cap = ok(ours("put", tmp_path / "f", "m:one")).strip()
    ok(ours("mkdir", "m:dir"))
    assert ok(ours("mv", "m:one", "m:two")) == "OK\n"
    assert ok(ours("ls", "m:")) == "dir\ntwo\n"
    assert ok(ours("mv", "m:two", "m:dir/")) == "OK\n"
    assert ok(ours("ln", "m:dir/two", "m:three")) == "OK\n"
    assert ok(ours("ls", "--uri", "m:three")).split() == ["three", cap]
    assert ok(ours("ls", "m:dir")) == "two\n"
    mine, tahoes = ours("ln", "m:three", "m:dir"), run(tahoe120, "-d", cli_dir, "ln",
                                                       "m:three", "m:dir")
    assert mine.returncode == tahoes.returncode == 1
    assert mine.stderr == tahoes.stderr == b"Error: You can't overwrite a directory with a file\n"
    assert ok(ours("unlink", "m:three")) == "200 OK\n"
    assert ok(ours("rm", "m:dir/two")) == "200 OK\n"
    assert ok(ours("ls", "m:")) == "dir\n" and ok(ours("ls", "m:dir")) == ""
    gone = ours("unlink", "m:three")
    assert gone.returncode == 1 and gone.stderr.startswith(b"ERROR: 404 Not Found")
    bare = ours("unlink", "m:")
    assert bare.returncode == 1
    assert bare.stderr == run(tahoe120, "-d", cli_dir, "unlink", "m:").stderr


def test_cp_errors_match_tahoe(tmp_path: Path, cli_dir: Path, tahoe120: Path) -> None:
    """cp's refusals print Tahoe's words and exit 1, as Tahoe's cp does."""
    ok(run(our_tahoe(), "-d", cli_dir, "create-alias", "e"))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_bytes(b"x")
    (tmp_path / "f").write_bytes(b"f")
    cases = [
        ["cp", tmp_path / "d", "e:"],
        ["cp", tmp_path / "missing", "e:"],
        ["cp", "e:missing", tmp_path / "out"],
        ["cp", tmp_path / "f", tmp_path / "d" / "x", tmp_path / "g"],
        ["cp", "-r", tmp_path / "d", tmp_path / "f"],
        ["cp", str(tmp_path / "f") + "/", "e:"],
    ]
    with ThreadPoolExecutor(4) as pool:  # every case is refused, changing nothing
        mines = pool.map(lambda case: run(our_tahoe(), "-d", cli_dir, *case), cases)
        tahoes = pool.map(lambda case: run(tahoe120, "-d", cli_dir, *case), cases)
        for case, mine, tahoe in zip(cases, mines, tahoes):
            assert (mine.returncode, mine.stdout, mine.stderr) == \
                (tahoe.returncode, tahoe.stdout, tahoe.stderr), case

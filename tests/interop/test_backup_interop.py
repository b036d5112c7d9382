"""``tahoe backup``: a backup made by Tahoe 1.20 is continued by ours, and ours by Tahoe's,
through one backup database, skipping what has not changed.

Both CLIs run against a Tahoe 1.20 client of the session's Tahoe grid, with
that client's node directory (its ``private/backupdb.sqlite``), so each sees
the other's rows: unchanged files and directories are reused, not uploaded
again, only if our database keeps Tahoe's schema and values (whole-second
times, caps and directory hashes as BLOBs, the same directory hash).
"""
from __future__ import annotations

import json
import os
import random
import re
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.support.grid import ClientFactory, Grid
from tests.support.nodes import our_tahoe

pytestmark = pytest.mark.interop

_COUNTS = re.compile(r"^ (\d+) files uploaded \((\d+) reused\), (\d+) files skipped, (\d+)"
                     r" directories created \((\d+) reused\), (\d+) directories skipped$",
                     re.MULTILINE)


def backup(exe: Path, nodedir: Path, *args: str) -> tuple[int, ...]:
    """Run ``tahoe -d NODEDIR backup ARGS``; the six counts of its summary line."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run([str(exe), "-d", str(nodedir), "backup", *args],
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=300, env=env)
    assert result.returncode == 0, (exe, result.stdout, result.stderr)
    match = _COUNTS.search(result.stdout)
    assert match, result.stdout
    assert re.search(r"^Backing up \d+/\d+\.\.\. \dh \dm \ds elapsed\.\.\.$", result.stdout,
                     re.MULTILINE)
    assert re.search(r"^ backup done, elapsed time: \d+:\d\d:\d\d$", result.stdout,
                     re.MULTILINE)
    return tuple(map(int, match.groups()))


def children(url: str, dircap: str, path: str) -> dict[str, list]:
    """The children of ``dircap/path`` (``t=json``)."""
    quoted = urllib.parse.quote(dircap, safe="") + "/" + urllib.parse.quote(path)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{url}uri/{quoted}?t=json", timeout=60) as response:
        return json.loads(response.read())[1]["children"]  # type: ignore[no-any-return]


def test_backups_continue_across_implementations(tahoe120: Path, tahoe_grid: Grid,
                                                 tahoe_client: ClientFactory,
                                                 tmp_path: Path) -> None:
    """Tahoe's first backup, ours unchanged (all reused), ours after a change (only the
    change uploaded), Tahoe's unchanged (all reused), and Latest holds the tree."""
    client = tahoe_client(tahoe_grid.introducer_furl)
    nodedir = client.node.basedir
    rng = random.Random(f"backup-interop-{time.time()}")
    tree = tmp_path / "tree"
    for path in ("docs/a.txt", "docs/b.txt", "docs/sub/c.bin", "pics/p1.bin", "pics/p2.bin",
                 "top.txt"):
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_bytes(rng.randbytes(rng.choice([30, 2000])))
    alias = f"bk{rng.randrange(10 ** 6)}"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run([str(tahoe120), "-d", str(nodedir), "create-alias", alias], check=True,
                   capture_output=True, env=env, timeout=120)
    target = f"{alias}:backups"

    assert backup(tahoe120, nodedir, str(tree), target) == (6, 0, 0, 4, 0, 0)
    assert backup(our_tahoe(), nodedir, str(tree), target) == (0, 6, 0, 0, 4, 0)
    (tree / "docs" / "a.txt").write_bytes(rng.randbytes(100))
    (tree / "docs" / "new.txt").write_bytes(rng.randbytes(100))
    assert backup(our_tahoe(), nodedir, str(tree), target) == (2, 5, 0, 2, 2, 0)
    assert backup(tahoe120, nodedir, str(tree), target) == (0, 7, 0, 0, 4, 0)

    aliases = (nodedir / "private" / "aliases").read_text()
    dircap = re.search(rf"^{alias}: (\S+)$", aliases, re.MULTILINE).group(1)  # type: ignore[union-attr]
    latest = children(client.url, dircap, "backups/Latest")
    assert set(latest) == {"docs", "pics", "top.txt"}
    docs = children(client.url, dircap, "backups/Latest/docs")
    assert set(docs) == {"a.txt", "b.txt", "new.txt", "sub"}
    assert docs["a.txt"][1]["size"] == 100 and "mtime" in docs["a.txt"][1]["metadata"]
    assert len(children(client.url, dircap, "backups/Archives")) >= 2

"""``tahoe debug``, ``admin generate-keypair/derive-pubkey``, ``status`` and ``webopen``:
our output against Tahoe-LAFS 1.20's own CLI, on the same share files and nodes.

Share files come from both session grids: made by our storage servers (from
our client) and by Tahoe's (from Tahoe's client), CHK, SDMF and MDMF. Tahoe's
CLI costs over a second a call, so its calls run together in threads. Lease
lines count seconds down, so their numbers are compared within a minute.
"""
from __future__ import annotations

import os
import random
import re
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tahoe.caps.parse import parse_cap
from tahoe.util import base32
from tests.support.dirapi import WebAPI, cli_directory
from tests.support.grid import Grid, in_parallel
from tests.support.nodes import our_tahoe

pytestmark = pytest.mark.interop

_SECONDS = re.compile(r"(expires? in |^\w+ \S+ \S+ \S+ \S+ )(\d+)", re.MULTILINE)


def run(exe: Path, *args: str | os.PathLike[str],
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``exe ARGS`` (a ``tahoe``) with stdin from /dev/null; its output as text."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(exe), *map(os.fspath, args)], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300, env={**base, **(env or {})})


def both(tahoe120: Path, *args: str | os.PathLike[str],
         env: dict[str, str] | None = None) -> Callable[[], tuple[str, str]]:
    """A call giving (ours, Tahoe's) stdout of ``tahoe ARGS``; each must exit 0."""
    def call() -> tuple[str, str]:
        results = [run(exe, *args, env=env) for exe in (our_tahoe(), tahoe120)]
        for result in results:
            assert result.returncode == 0, (result.args, result.stdout, result.stderr)
        return results[0].stdout, results[1].stdout
    return call


def same_within_a_minute(ours: str, theirs: str) -> None:
    """The texts are equal once lease countdowns (seconds) are set aside, and those
    differ by less than a minute."""
    assert _SECONDS.sub(r"\1N", ours) == _SECONDS.sub(r"\1N", theirs)
    for a, b in zip(_SECONDS.findall(ours), _SECONDS.findall(theirs), strict=True):
        assert abs(int(a[1]) - int(b[1])) < 60


def share_paths(grid: Grid, cap: str) -> list[Path]:
    """Every share file of ``cap`` on the grid's storage nodes."""
    si = base32.b2a(parse_cap(cap).storage_index)  # type: ignore[union-attr]
    return sorted(p for node in grid.storage_nodes
                  for p in (node.node.basedir / "storage" / "shares" / si[:2] / si).glob("*"))


def upload_three(url: str, seed: str) -> dict[str, str]:
    """A CHK, an SDMF and an MDMF file through the gateway at ``url``; kind -> cap."""
    api = WebAPI(url)
    rng = random.Random(seed + str(time.time()))
    return {"chk": api.ok("PUT", "/uri", rng.randbytes(30_000)).text,
            "sdmf": api.create_mutable(rng.randbytes(5000), "SDMF"),
            "mdmf": api.create_mutable(rng.randbytes(7000), "MDMF")}


@pytest.fixture(scope="module")
def caps(our_grid: Grid, tahoe_grid: Grid) -> dict[str, tuple[Grid, str]]:
    """Files on both grids: ``ours-chk``, ``tahoe-sdmf``… -> (grid, cap)."""
    made = {}
    for name, grid in (("ours", our_grid), ("tahoe", tahoe_grid)):
        for kind, cap in upload_three(grid.storage_nodes[0].url, f"debug-{name}").items():
            made[f"{name}-{kind}"] = (grid, cap)
    return made


def test_debug_commands_match_tahoe(tahoe120: Path, caps: dict[str, tuple[Grid, str]],
                                    our_grid: Grid, tahoe_grid: Grid) -> None:
    """dump-share (with --offsets and --leases-only), catalog-shares, find-shares and
    dump-cap print what Tahoe 1.20's print, on shares written by either implementation."""
    path = {name: share_paths(grid, cap)[0] for name, (grid, cap) in caps.items()}
    storage_dirs = [n.node.basedir for grid in (our_grid, tahoe_grid) for n in grid.storage_nodes]
    chk_si = base32.b2a(parse_cap(caps["tahoe-chk"][1]).storage_index)  # type: ignore[union-attr]
    secret = base32.b2a(b"s" * 32)
    nodeid = base32.b2a(b"n" * 20)
    calls = {
        "dump ours-chk": both(tahoe120, "debug", "dump-share", "--offsets", path["ours-chk"]),
        "dump ours-mdmf": both(tahoe120, "debug", "dump-share", "--offsets", path["ours-mdmf"]),
        "dump tahoe-sdmf": both(tahoe120, "debug", "dump-share", "--offsets",
                                path["tahoe-sdmf"]),
        "leases tahoe-chk": both(tahoe120, "debug", "dump-share", "--leases-only",
                                 path["tahoe-chk"]),
        "catalog": both(tahoe120, "debug", "catalog-shares", *storage_dirs),
        "find": both(tahoe120, "debug", "find-shares", chk_si, *storage_dirs),
        "cap sdmf": both(tahoe120, "debug", "dump-cap", "-n", nodeid, "-c", secret,
                         caps["ours-sdmf"][1]),
        "cap chk": both(tahoe120, "debug", "dump-cap", "-c", secret, caps["tahoe-chk"][1]),
    }
    results = dict(zip(calls, in_parallel(list(calls.values())), strict=True))
    for name, (ours, theirs) in results.items():
        if name == "find":  # Tahoe lists a directory in the file system's order; we sort
            assert sorted(ours.splitlines()) == sorted(theirs.splitlines())
            assert len(ours.splitlines()) == 3
        else:
            same_within_a_minute(ours, theirs)
    assert "verify-cap: URI:CHK-Verifier:" in results["dump ours-chk"][0]
    assert " MDMF contents:" in results["dump ours-mdmf"][0]
    assert " write_enabler: " in results["cap sdmf"][0]
    assert len(results["catalog"][0].splitlines()) >= 18


def test_corrupt_share_flips_the_bit_it_names(caps: dict[str, tuple[Grid, str]],
                                               tmp_path: Path) -> None:
    """corrupt-share flips exactly the one bit it reports, inside the block data, for
    immutable, SDMF and MDMF shares; a file that is no share is refused with a message."""
    for name in ("ours-chk", "tahoe-sdmf", "ours-mdmf"):
        grid, cap = caps[name]
        copy = tmp_path / name
        copy.write_bytes(share_paths(grid, cap)[0].read_bytes())
        before = copy.read_bytes()
        result = run(our_tahoe(), "debug", "corrupt-share", copy)
        assert result.returncode == 0, result.stderr
        match = re.fullmatch(r"\[(\d+)\.\.(\d+)\):  (\d+)\.b(\d)\n", result.stdout)
        assert match, result.stdout
        start, end, offset, bit = map(int, match.groups())
        after = copy.read_bytes()
        assert start <= offset < end <= len(before)
        assert [i for i in range(len(before)) if before[i] != after[i]] == [offset]
        assert before[offset] ^ after[offset] == 1 << bit
    (tmp_path / "junk").write_bytes(b"not a share at all" * 10)
    refused = run(our_tahoe(), "debug", "dump-share", tmp_path / "junk")
    assert refused.returncode == 1 and refused.stderr.startswith("Error: ")
    assert "Traceback" not in refused.stderr


def test_admin_keys_match_tahoe(tahoe120: Path) -> None:
    """generate-keypair makes a pair that Tahoe's derive-pubkey agrees with, and ours
    derives the same public key from it."""
    generated = run(our_tahoe(), "admin", "generate-keypair")
    assert generated.returncode == 0
    private = re.fullmatch(r"private: (priv-v0-[a-z2-7]{52})\npublic: (pub-v0-[a-z2-7]{52})\n",
                           generated.stdout)
    assert private, generated.stdout
    ours, theirs = both(tahoe120, "admin", "derive-pubkey", private.group(1))()
    assert ours == theirs == generated.stdout
    refused = run(our_tahoe(), "admin", "derive-pubkey", "priv-v0-nonsense")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr


def test_status_matches_tahoe_on_our_node(tahoe120: Path, our_grid: Grid) -> None:
    """Our node writes private/api_auth_token (0600) at start, so Tahoe's `tahoe status`
    works on it, and ours prints the same report, with -v too."""
    node = our_grid.storage_nodes[1]
    token = node.node.basedir / "private" / "api_auth_token"
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}=\n", token.read_text())
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    WebAPI(node.url).ok("PUT", "/uri", random.Random(f"status{time.time()}").randbytes(3000))
    mutable = WebAPI(node.url).create_mutable(b"status mutable " * 10, "SDMF")
    assert WebAPI(node.url).read(mutable) == b"status mutable " * 10
    uptime = re.compile(r"for last \d+ \w+")
    for args in (["status"], ["status", "-v"]):
        ours, theirs = both(tahoe120, "-d", node.node.basedir, *args)()
        assert uptime.sub("", ours) == uptime.sub("", theirs)
        assert "Recent operations:" in ours and " put " in ours
    assert " pub " in ours and "mapup" in ours and "retr " in ours, ours
    private = WebAPI(node.url)
    refused = private.request("GET", "/private/logs/v1")
    assert refused.status == 401
    assert refused.headers["www-authenticate"] == 'tahoe-lafs realm="tahoe-lafs"'
    assert private.request("GET", "/private/logs/v1", headers={
        "Authorization": "tahoe-lafs wrong"}).status == 401
    assert private.request("GET", "/private/logs/v1", headers={
        "Authorization": "tahoe-lafs " + token.read_text().strip()}).status == 404


def test_webopen_opens_the_urls_tahoe_opens(tahoe120: Path, our_grid: Grid,
                                            tmp_path: Path) -> None:
    """webopen hands the browser the same URLs as Tahoe's: the welcome page, a path under
    an alias, and its t=info page; with no browser it says so and prints the URL."""
    node = our_grid.storage_nodes[0]
    cli = cli_directory(tmp_path / "cli", node.url, "web")
    browser = tmp_path / "browser"
    opened = tmp_path / "opened"
    browser.write_text(f"#!/bin/sh\necho \"$1\" >> {opened}\n")
    browser.chmod(0o755)
    env = {"BROWSER": str(browser)}
    for args in ([], ["-i", "web:sub dir/file.txt"]):
        opened.write_text("")
        both(tahoe120, "-d", cli, "webopen", *args, env=env)()
        ours, theirs = opened.read_text().splitlines()
        assert ours == theirs, args
    assert ours.endswith("/sub%20dir/file.txt?t=info") and "uri/URI%3ADIR2%3A" in ours
    (tmp_path / "empty").mkdir()
    none = run(our_tahoe(), "-d", cli, "webopen", "web:",
               env={"BROWSER": "/nonexistent", "PATH": str(tmp_path / "empty")})
    assert none.returncode == 1 and "no web browser" in none.stderr
    assert none.stdout.strip().startswith(node.url + "uri/URI%3ADIR2%3A")


"""Repair replaces shares a verify found corrupt, not only missing ones (Tahoe 1.20 leaves
them), on the session's local grid, driven by our CLI as a user would."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tahoe.caps.parse import parse_cap
from tahoe.util import base32
from tests.support.dirapi import WebAPI
from tests.support.nodes import our_tahoe
from tests.support.proxied_grid import ProxiedGrid


def tahoe(*args: str | os.PathLike[str]) -> str:
    """Our ``tahoe ARGS``; its stdout (it must exit 0)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run([str(our_tahoe()), *map(str, args)], stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def check(grid: ProxiedGrid, cap: str, *flags: str) -> dict:
    """``tahoe check --raw FLAGS CAP`` through the local grid's gateway."""
    return json.loads(tahoe("check", "-u", grid.client.url, "--raw", *flags, cap))  # type: ignore[no-any-return]


def a_share_file(grid: ProxiedGrid, cap: str) -> Path:
    """One share file of ``cap`` (``tahoe debug find-shares`` over the storage nodes)."""
    si = base32.b2a(parse_cap(cap).storage_index)  # type: ignore[union-attr]
    found = tahoe("debug", "find-shares", si, *(n.node.basedir for n in grid.storage_nodes))
    return Path(found.splitlines()[0])


@pytest.mark.parametrize("kind", ["CHK", "SDMF", "MDMF"])
def test_verify_then_repair_replaces_a_corrupt_share(local_grid: ProxiedGrid,
                                                     kind: str) -> None:
    """corrupt-share, then check --verify finds it; check --verify --repair replaces it (an
    immutable share is moved aside by its server, to corrupt-shares/); a following
    --verify is clean and the file reads back intact."""
    api = WebAPI(local_grid.client.url)
    data = os.urandom(250_000)
    cap = (api.ok("PUT", "/uri", data).text if kind == "CHK"
           else api.create_mutable(data, kind))
    share = a_share_file(local_grid, cap)
    tahoe("debug", "corrupt-share", share)

    found = check(local_grid, cap, "--verify")["results"]
    assert found["healthy"] is False and len(found["list-corrupt-shares"]) == 1
    repaired = check(local_grid, cap, "--verify", "--repair")
    assert repaired["repair-attempted"] is True and repaired["repair-successful"] is True
    after = check(local_grid, cap, "--verify")["results"]
    assert after["healthy"] is True and after["list-corrupt-shares"] == []
    assert after["count-good-share-hosts"] == 10 and after["count-shares-good"] == 10
    if kind == "CHK":
        quarantined = share.parents[3] / "corrupt-shares"
        assert any(p.name.startswith(share.parent.name + "." + share.name + ".")
                   for p in quarantined.iterdir())
        assert share.exists()  # the replacement
    assert api.read(cap) == data

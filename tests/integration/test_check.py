"""``t=check`` (and ``add-lease``) through our gateway on the local grid of ten servers.

Shares are looked at on the servers' disks: a check counts what is there,
and ``add-lease=true`` moves the expiration of the client's lease on every
share forward (same renew secret, so no new lease record).
"""
from __future__ import annotations

import random
import subprocess
import time
from pathlib import Path

import pytest

from tahoe.storage import paths
from tahoe.storage.containers import open_container
from tahoe.storage.disk import open_file
from tahoe.util import base32
from tests.support.dirapi import WebAPI
from tests.support.nodes import our_tahoe
from tests.support.proxied_grid import ProxiedGrid


@pytest.fixture
def api(local_grid: ProxiedGrid) -> WebAPI:
    return WebAPI(local_grid.client.url)


def _unique(size: int) -> bytes:
    return random.Random(f"check-{time.time()}").randbytes(size)


def _share_files(grid: ProxiedGrid, si_b32: str) -> list[Path]:
    si = base32.a2b(si_b32)
    return [path for node in grid.storage_nodes
            for path in sorted((node.node.basedir / "storage" /
                                paths.as_text(paths.share_dir_parts(si))).glob("[0-9]*"))]


def _expirations(files: list[Path]) -> list[list[int]]:
    out = []
    for path in files:
        with open_file(str(path)) as file:
            out.append([lease.expiration for lease in open_container(file).leases()])
    return out


def _check(api: WebAPI, cap: str, path: str = "", extra: str = "") -> dict:
    answer = api.post(cap, path, "t=check&output=JSON" + extra)
    assert answer.status == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return answer.json()


def test_check_an_immutable_file_and_renew_its_leases(api: WebAPI, local_grid: ProxiedGrid) -> None:
    cap = api.ok("PUT", "/uri", _unique(5000)).text.strip()
    result = _check(api, cap)
    details = result["results"]
    assert result["summary"] == "Healthy" and details["healthy"] and details["recoverable"]
    assert (details["count-shares-good"], details["count-shares-needed"],
            details["count-shares-expected"]) == (10, 3, 10)
    assert details["count-happiness"] == 10 and details["count-good-share-hosts"] == 10
    assert len(details["servers-responding"]) == 10
    assert sorted(details["sharemap"], key=int) == [str(n) for n in range(10)]
    assert all(s.startswith("v0-") for servers in details["sharemap"].values() for s in servers)
    files = _share_files(local_grid, result["storage-index"])
    assert len(files) == 10
    before = _expirations(files)
    time.sleep(1.1)
    _check(api, cap, extra="&add-lease=true")
    after = _expirations(files)
    assert all(len(leases) == 1 for leases in after)  # renewed, not added
    assert all(a[0] > b[0] for a, b in zip(after, before))


def test_check_a_directory_renews_its_mutable_shares(api: WebAPI, local_grid: ProxiedGrid) -> None:
    root = api.mkdir()
    api.put(root, "file.bin", _unique(3000))
    result = _check(api, root)
    details = result["results"]
    assert result["summary"] == "Healthy"
    assert details["count-recoverable-versions"] == 1
    assert details["count-unrecoverable-versions"] == 0
    assert all(key.startswith("seq") and "-sh" in key for key in details["sharemap"])
    assert len(details["sharemap"]) == 10
    files = _share_files(local_grid, result["storage-index"])
    before = _expirations(files)
    time.sleep(1.1)
    _check(api, root, extra="&add-lease=true")
    after = _expirations(files)
    assert all(max(a) > max(b) for a, b in zip(after, before))
    child = _check(api, root, "file.bin")
    assert child["results"]["count-shares-good"] == 10


def test_a_missing_share_makes_a_file_unhealthy(api: WebAPI, local_grid: ProxiedGrid) -> None:
    cap = api.ok("PUT", "/uri", _unique(4000)).text.strip()
    si_b32 = _check(api, cap)["storage-index"]
    _share_files(local_grid, si_b32)[0].unlink()
    result = _check(api, cap)
    assert result["summary"] == "Not Healthy: 9 shares (enc 3-of-10)"
    assert result["results"]["healthy"] is False and result["results"]["recoverable"] is True


def test_literal_html_and_refusals(api: WebAPI) -> None:
    lit = api.ok("PUT", "/uri", b"tiny").text.strip()
    assert _check(api, lit) == {"storage-index": "", "results": {"healthy": True}}
    cap = api.ok("PUT", "/uri", _unique(2000)).text.strip()
    page = api.post(cap, "", "t=check&return_to=/somewhere")
    assert page.status == 200 and "File Check Results" in page.text
    assert 'href="/somewhere"' in page.text and "count-shares-good" in page.text
    refused = api.post(cap, "", "t=check&verify=true")
    assert refused.status == 400 and "not supported" in refused.text


def test_tahoe_check_cli(api: WebAPI, local_grid: ProxiedGrid) -> None:
    cap = api.ok("PUT", "/uri", _unique(3000)).text.strip()
    si_b32 = _check(api, cap)["storage-index"]
    result = subprocess.run([str(our_tahoe()), "-d", str(local_grid.client.node.basedir),
                             "check", "--add-lease", cap],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"Summary: Healthy\n storage index: {si_b32}\n"
                             " good-shares: 10 (encoding is 3-of-10)\n wrong-shares: 0\n")
    raw = subprocess.run([str(our_tahoe()), "-d", str(local_grid.client.node.basedir),
                          "check", "--raw", "URI:LIT:ozsw4zjsmvzw4"],
                         capture_output=True, text=True, timeout=60)
    assert raw.returncode == 0 and '"healthy": true' in raw.stdout

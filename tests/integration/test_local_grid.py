"""Files through a real local grid of our nodes: round trips, ranges, dead and corrupt servers.

Ten storage nodes each sit behind a test proxy (``conftest.local_grid``);
the client is 3-of-10 with happiness 7.
"""
from __future__ import annotations

import os
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tahoe.caps.parse import parse_cap
from tahoe.util import base32
from tests.integration.conftest import DEFAULT_SHARES
from tests.support.grid import Gateway
from tests.support.nodes import TahoeTool, our_tahoe
from tests.support.processes import ProcessSet, wait_until
from tests.support.proxied_grid import ProxiedGrid, start_static_client
from tests.support.webapi import WebError

MB = 1_000_000


def url(grid: ProxiedGrid, path: str) -> str:
    """An absolute URL on the client's gateway."""
    return grid.client.url.rstrip("/") + path


def get(grid: ProxiedGrid, path: str, headers: dict[str, str] | None = None,
        method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """GET (or ``method``) a gateway path; return status, headers and body (errors included)."""
    request = urllib.request.Request(url(grid, path), headers=headers or {}, method=method)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def share_files(grid: ProxiedGrid, cap: str) -> list[Path]:
    """Every share file of ``cap`` on every storage node."""
    si = base32.b2a(parse_cap(cap).storage_index)  # type: ignore[union-attr]
    return sorted(p for node in grid.storage_nodes
                  for p in (Path(node.node.basedir) / "storage" / "shares" / si[:2] / si).glob("*"))


@pytest.fixture
def all_servers_back(local_grid: ProxiedGrid) -> Iterator[ProxiedGrid]:
    """Revive every proxy after the test and wait until the client sees all ten servers."""
    yield local_grid
    for proxy in local_grid.proxies:
        proxy.disarm()
        proxy.revive()
    local_grid.client.wait_for_servers(len(local_grid.servers), 60)


@pytest.mark.parametrize("size", [0, 55, 56, 1000, 2 ** 20 + 1, 20 * MB])
def test_round_trip(local_grid: ProxiedGrid, size: int) -> None:
    """A file of each size comes back intact; LIT files never touch the servers."""
    data = os.urandom(size)
    cap = local_grid.client.upload(data)
    assert cap.startswith("URI:LIT:" if size <= 55 else "URI:CHK:")
    assert local_grid.client.download(cap) == data
    if size > 55:
        files = share_files(local_grid, cap)
        assert sorted(p.name for p in files) == [str(n) for n in range(10)]
        assert len({p.parent.parent.parent.parent.parent for p in files}) == 10


def test_ranged_reads(local_grid: ProxiedGrid) -> None:
    """Ranges return exactly their bytes with 206; past the end is 416."""
    data = os.urandom(5 * MB + 7)
    cap = local_grid.client.upload(data)
    path = "/uri/" + cap
    for first, last in [(0, 0), (1_000_000, 1_001_023), (2_500_000, 2_600_000),
                        (len(data) - 10, len(data) - 1)]:
        status, headers, body = get(local_grid, path, {"Range": f"bytes={first}-{last}"})
        assert status == 206
        assert body == data[first:last + 1]
        assert headers["Content-Range"] == f"bytes {first}-{last}/{len(data)}"
    status, _, body = get(local_grid, path, {"Range": "bytes=-100"})
    assert (status, body) == (206, data[-100:])
    status, _, body = get(local_grid, path, {"Range": f"bytes={len(data) + 5}-{len(data) + 9}"})
    assert status == 416


def test_upload_again_of_a_large_file(local_grid: ProxiedGrid) -> None:
    """Uploading again a file whose shares (larger than the upload window) every server
    already holds finishes at once with the same cap (it used to wait for good)."""
    data = os.urandom(15 * MB)
    cap = local_grid.client.upload(data)
    started = time.monotonic()
    assert local_grid.client.upload(data, timeout=60) == cap
    assert time.monotonic() - started < 30


def test_head_with_range(local_grid: ProxiedGrid) -> None:
    """HEAD honours Range as GET does: 206 with Content-Range and the range's length, or 416,
    for immutable, literal and mutable files."""
    data = os.urandom(300_000)
    paths = {"chk": "/uri/" + local_grid.client.upload(data),
             "lit": "/uri/" + local_grid.client.upload(data[:40])}
    request = urllib.request.Request(url(local_grid, "/uri?format=MDMF"), data=data,
                                     method="PUT")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=60) as response:
        paths["mdmf"] = "/uri/" + response.read().decode("ascii")
    for kind, path in paths.items():
        size = 40 if kind == "lit" else len(data)
        status, headers, body = get(local_grid, path, {"Range": "bytes=10-19"}, method="HEAD")
        assert (status, body) == (206, b""), kind
        assert headers["Content-Range"] == f"bytes 10-19/{size}", kind
        assert headers["Content-Length"] == "10", kind
        status, headers, _ = get(local_grid, path, {"Range": "bytes=-5"}, method="HEAD")
        assert (status, headers["Content-Length"]) == (206, "5"), kind
        status, headers, _ = get(local_grid, path, method="HEAD")
        assert (status, headers["Content-Length"]) == (200, str(size)), kind
        status, headers, _ = get(local_grid, path, {"Range": f"bytes={size + 100}-{size + 200}"},
                                 method="HEAD")
        assert status == 416, kind
        assert headers["Content-Range"] == f"bytes */{size}", kind


def test_status_page_lists_operations(local_grid: ProxiedGrid) -> None:
    """After an upload and a download, /status?t=json lists both as done."""
    data = os.urandom(20_000)
    cap = local_grid.client.upload(data)
    assert local_grid.client.download(cap) == data
    status, headers, body = get(local_grid, "/status?t=json")
    assert status == 200 and headers["X-Frame-Options"] == "DENY"
    si = base32.b2a(parse_cap(cap).storage_index)  # type: ignore[union-attr]
    import json
    recent = json.loads(body)["recent"]
    kinds = {op["type"] for op in recent if op["storage-index-string"] == si
             and op["status"] == "done"}
    assert kinds == {"upload", "download"}


def test_json_info_and_errors(local_grid: ProxiedGrid) -> None:
    """t=json describes the file; malformed caps are 400; a file with no shares is 410."""
    data = os.urandom(5000)
    cap = local_grid.client.upload(data)
    status, headers, body = get(local_grid, f"/uri/{cap}?t=json")
    assert status == 200 and b'"filenode"' in body and cap.encode() in body
    assert headers["ETag"].endswith("-json")
    status, _, body = get(local_grid, f"/uri/{cap}?t=info")
    assert status == 200 and b"Storage index" in body
    key = cap.split(":")[2]
    status, _, body = get(local_grid, f"/uri/{cap.replace(key, key[:-1] + 'b')}?t=json")
    assert status == 400 and b"Invalid capability" in body
    missing = cap.replace(cap.split(":")[2], "a" * 25 + "a")
    status, _, body = get(local_grid, f"/uri/{missing}")
    assert status == 410 and b"NoSharesError" in body


def test_download_with_seven_servers_down(all_servers_back: ProxiedGrid) -> None:
    """Any three servers suffice to read a file."""
    grid = all_servers_back
    data = os.urandom(3 * MB)
    cap = grid.client.upload(data)
    for proxy in grid.proxies[:7]:
        proxy.kill()
    assert grid.client.download(cap) == data


def test_corrupt_shares_are_bypassed(all_servers_back: ProxiedGrid) -> None:
    """With seven shares corrupted on disk, the three good ones serve the file; bad ones are reported."""
    grid = all_servers_back
    data = os.urandom(300_000)
    cap = grid.client.upload(data)
    files = share_files(grid, cap)
    damaged = files[:7]
    for path in damaged:
        raw = bytearray(path.read_bytes())
        raw[12 + 0x24 + 1000] ^= 0xFF  # a byte of the first block (container header + share header)
        path.write_bytes(bytes(raw))
    assert grid.client.download(cap) == data

    def advisories() -> int:
        return sum(len(list((Path(n.node.basedir) / "storage" / "corruption-advisories").glob("*")))
                   for n in grid.storage_nodes)
    wait_until(lambda: advisories() >= 1, 10, "a corruption advisory")
    for path in files[7:8]:
        raw = bytearray(path.read_bytes())
        raw[12 + 0x24 + 1000] ^= 0xFF
        path.write_bytes(bytes(raw))
    with pytest.raises(WebError) as info:
        grid.client.download(cap)
    assert info.value.status == 410


def test_upload_survives_three_servers_dying(all_servers_back: ProxiedGrid) -> None:
    """Three servers cut off mid-upload: the upload still meets happiness 7."""
    grid = all_servers_back
    data = os.urandom(6 * MB)
    for proxy in grid.proxies[:3]:
        proxy.cut_after(300_000, kill=True)
    cap = grid.client.upload(data)
    assert all(p.cuts for p in grid.proxies[:3])
    assert grid.client.download(cap) == data
    assert len({p.name for p in share_files(grid, cap)}) >= 7


def test_upload_fails_cleanly_when_four_servers_die(all_servers_back: ProxiedGrid) -> None:
    """Four servers cut off mid-upload: a clear unhappiness error, and no share left behind."""
    grid = all_servers_back
    data = os.urandom(6 * MB)
    for proxy in grid.proxies[:4]:
        proxy.cut_after(300_000, kill=True)
    with pytest.raises(WebError) as info:
        grid.client.upload(data)
    assert info.value.status == 500
    assert "happiness 7" in info.value.body and "UploadUnhappinessError" in info.value.body

    def no_incoming() -> bool:
        return not [p for n in grid.storage_nodes
                    for p in (Path(n.node.basedir) / "storage" / "shares" / "incoming").rglob("*")
                    if p.is_file()]
    wait_until(no_incoming, 15, "incoming shares to be aborted", ignore=(FileNotFoundError,))


@pytest.fixture(scope="module")
def foolscap_client(local_grid: ProxiedGrid, tmp_path_factory: pytest.TempPathFactory
                    ) -> Iterator[Gateway]:
    """A second client on the same proxied servers, with ``[client]force_foolscap``."""
    workdir = tmp_path_factory.mktemp("foolscap-client")
    with ProcessSet() as processes:
        yield start_static_client(TahoeTool(our_tahoe(), workdir / "logs"), workdir / "client",
                                  processes, local_grid.servers, shares=DEFAULT_SHARES,
                                  force_foolscap=True)


def _upload_turns(grid: ProxiedGrid, client: Gateway) -> tuple[float, list[int]]:
    """Upload 1 kB with 200 ms each way: the time, and per proxy the number of times the
    traffic turned from client-to-server to server-to-client (each such turn is a round
    trip the upload waited for)."""
    client.upload(os.urandom(1000))  # warm up every connection
    elapsed, turns, _ = grid.round_trips_while(lambda: client.upload(os.urandom(1000)))
    return elapsed, turns


def test_small_upload_takes_one_round_trip_over_https(all_servers_back: ProxiedGrid) -> None:
    """Over warm HTTPS connections with 200 ms each way, a 1 kB upload takes one round trip:
    the allocation and the share's write go out together, and both answers come back."""
    elapsed, turns = _upload_turns(all_servers_back, all_servers_back.client)
    rtt = 0.4
    assert rtt <= elapsed < 2 * rtt, elapsed
    assert turns == [1] * len(all_servers_back.proxies), turns


def test_small_upload_takes_two_round_trips_over_foolscap(all_servers_back: ProxiedGrid,
                                                         foolscap_client: Gateway) -> None:
    """Over Foolscap the writes must wait for the writers the allocation returns: two round trips."""
    elapsed, turns = _upload_turns(all_servers_back, foolscap_client)
    rtt = 0.4
    assert 2 * rtt <= elapsed < 3 * rtt, elapsed
    assert turns == [2] * len(all_servers_back.proxies), turns


def test_small_download_takes_two_round_trips(all_servers_back: ProxiedGrid) -> None:
    """A 1 kB download over warm HTTPS connections: one round trip to find the shares, one to
    read k of them whole."""
    grid = all_servers_back
    data = os.urandom(1000)
    cap = grid.client.upload(data)
    got: list[bytes] = []
    elapsed, turns, _ = grid.round_trips_while(lambda: got.append(grid.client.download(cap)))
    assert got == [data]
    rtt = 0.4
    assert 2 * rtt <= elapsed < 3 * rtt, elapsed
    assert max(turns) == 2 and sorted(turns).count(2) >= 3, turns


def test_ranged_read_of_an_open_file_takes_one_round_trip(all_servers_back: ProxiedGrid) -> None:
    """Once a large file is open, a ranged read in it costs one round trip (the blocks)."""
    grid = all_servers_back
    data = os.urandom(3 * MB)
    cap = grid.client.upload(data)
    path = "/uri/" + cap
    assert get(grid, path, {"Range": "bytes=0-9"})[2] == data[:10]  # opens it
    answers: list[tuple[int, dict[str, str], bytes]] = []
    elapsed, turns, _ = grid.round_trips_while(lambda: answers.append(
        get(grid, path, {"Range": "bytes=2000000-2001023"})))
    assert answers[0][0] == 206 and answers[0][2] == data[2_000_000:2_001_024]
    rtt = 0.4
    assert rtt <= elapsed < 2 * rtt, elapsed
    assert max(turns) == 1, turns


def test_slow_server_is_bypassed(all_servers_back: ProxiedGrid) -> None:
    """A server that turns slow mid-download is replaced by another, not waited for."""
    grid = all_servers_back
    data = os.urandom(12 * MB)
    cap = grid.client.upload(data)
    fast, spare, dead = grid.proxies[:3], grid.proxies[3], grid.proxies[4:]
    for proxy in dead:
        proxy.kill()
    spare.delay = 0.5  # answers get_buckets last, so the download starts with the fast three
    request = urllib.request.Request(url(grid, "/uri/" + cap))
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    started = time.monotonic()
    with opener.open(request, timeout=120) as response:
        first = response.read(1_000_000)
        fast[0].delay = 5.0  # now one of the three in use turns very slow
        spare.delay = 0.0
        rest = response.read()
    elapsed = time.monotonic() - started
    fast[0].delay = 0.0
    assert first + rest == data
    assert elapsed < 30, elapsed

"""``/statistics`` on a live local grid: counters and latencies move as files go up and down."""
from __future__ import annotations

import random
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.statistics_support import STORAGE_NODES, StatsGrid, start_stats_grid
from tests.support.webapi import download, upload


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StatsGrid]:
    """Three storage nodes (shares 2/3/3) and a client, for this module."""
    yield from start_stats_grid(tmp_path_factory.mktemp("stats-grid") / "grid")


def fetch(url: str, method: str = "GET") -> tuple[str, bytes]:
    """(content type, body) of a request."""
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=30) as response:
        return response.headers["Content-Type"], response.read()


def test_node_values(grid: StatsGrid) -> None:
    """Every node reports uptime, CPU and memory; storage nodes their space and shares."""
    client = grid.statistics("client")["stats"]
    for key in ("node.uptime", "cpu_monitor.total", "node.memory.rss", "node.memory.vmsize"):
        assert isinstance(client[key], (int, float)) and client[key] >= 0, key
    assert not any(key.startswith("storage_server.") for key in client)
    storage = grid.statistics("storage1")["stats"]
    for key in ("allocated", "reserved_space", "disk_total", "disk_used", "disk_free_for_root",
                "disk_free_for_nonroot", "disk_avail", "accepting_immutable_shares",
                "total_bucket_count", "total_share_count"):
        assert isinstance(storage[f"storage_server.{key}"], int), key
    assert storage["storage_server.reserved_space"] == 100_000_000
    assert storage["storage_server.accepting_immutable_shares"] == 1
    assert storage["storage_server.disk_avail"] == max(
        0, storage["storage_server.disk_free_for_nonroot"] - 100_000_000)


def test_upload_moves_counters(grid: StatsGrid) -> None:
    """An upload counts on the client and on every storage server, with latencies."""
    before_client = grid.statistics("client")["counters"]
    before_allocate = grid.storage_total("storage_server.allocate")
    before_close = grid.storage_total("storage_server.close")
    before_added = grid.storage_total("storage_server.bytes_added")
    before_shares = grid.storage_total("storage_server.total_share_count", "stats")
    data = random.Random("upload-moves").randbytes(200_000)
    cap = upload(grid.client, data)
    assert cap.startswith("URI:CHK:")

    after = grid.statistics("client")
    assert after["counters"]["uploader.files_uploaded"] == \
        before_client.get("uploader.files_uploaded", 0) + 1
    assert after["counters"]["uploader.bytes_uploaded"] == \
        before_client.get("uploader.bytes_uploaded", 0) + len(data)
    assert after["stats"]["uploader.latencies.upload.samplesize"] >= 1
    assert after["stats"]["uploader.rates.upload.samplesize"] >= 1
    # the cap comes back only after every server answered close()
    assert grid.storage_total("storage_server.allocate") == before_allocate + 3
    assert grid.storage_total("storage_server.close") == before_close + 3
    assert grid.storage_total("storage_server.bytes_added") > before_added + len(data) / 2
    assert grid.storage_total("storage_server.total_share_count", "stats") == before_shares + 3
    for node in STORAGE_NODES:
        stats = grid.statistics(node)["stats"]
        for op in ("allocate", "write", "close"):
            assert stats[f"storage_server.latencies.{op}.samplesize"] >= 1, (node, op)
        assert stats["storage_server.total_bucket_count"] >= 1


def test_lit_upload_counts_without_latency(grid: StatsGrid) -> None:
    """A LIT upload counts as an upload but gives no latency sample and touches no server."""
    before = grid.statistics("client")
    before_allocate = grid.storage_total("storage_server.allocate")
    assert upload(grid.client, b"tiny literal file").startswith("URI:LIT:")
    after = grid.statistics("client")
    assert after["counters"]["uploader.files_uploaded"] == \
        before["counters"].get("uploader.files_uploaded", 0) + 1
    assert after["counters"]["uploader.bytes_uploaded"] == \
        before["counters"].get("uploader.bytes_uploaded", 0) + 17
    assert after["stats"].get("uploader.latencies.upload.samplesize") == \
        before["stats"].get("uploader.latencies.upload.samplesize")
    assert grid.storage_total("storage_server.allocate") == before_allocate


def test_download_moves_counters(grid: StatsGrid) -> None:
    """Each read (whole or ranged) counts with its bytes; servers count get and read."""
    data = random.Random("download-moves").randbytes(150_000)
    cap = upload(grid.client, data)
    before = grid.statistics("client")["counters"]
    before_get = grid.storage_total("storage_server.get")
    before_read = grid.storage_total("storage_server.read")
    assert download(grid.client, cap) == data
    url = grid.client + "uri/" + urllib.request.quote(cap, safe="")
    ranged = urllib.request.Request(url, headers={"Range": "bytes=1000-1999"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(ranged,
                                                                           timeout=30) as r:
        assert r.status == 206 and r.read() == data[1000:2000]

    after = grid.statistics("client")
    assert after["counters"]["downloader.files_downloaded"] == \
        before.get("downloader.files_downloaded", 0) + 2
    assert after["counters"]["downloader.bytes_downloaded"] == \
        before.get("downloader.bytes_downloaded", 0) + len(data) + 1000
    assert after["stats"]["downloader.latencies.read.samplesize"] >= 2
    assert after["stats"]["downloader.latencies.read.mean"] > 0
    grid.wait_for(lambda: grid.storage_total("storage_server.get") >= before_get + 2,
                  "get_buckets counted on the servers")
    assert grid.storage_total("storage_server.read") >= before_read + 2
    stats = [grid.statistics(node)["stats"] for node in STORAGE_NODES]
    assert any("storage_server.latencies.read.samplesize" in s for s in stats)
    assert all(s["storage_server.latencies.get.samplesize"] >= 1 for s in stats)


def test_percentiles_after_ten_uploads(grid: StatsGrid) -> None:
    """With ten samples the median and 90th percentile appear; the 99th stays null."""
    rng = random.Random("ten-uploads")
    for _ in range(10):
        upload(grid.client, rng.randbytes(2000))
    stats = grid.statistics("client")["stats"]
    assert stats["uploader.latencies.upload.samplesize"] >= 10
    assert 0 < stats["uploader.latencies.upload.50_0_percentile"] <= \
        stats["uploader.latencies.upload.90_0_percentile"]
    storage: dict[str, Any] = grid.statistics("storage1")["stats"]
    assert storage["storage_server.latencies.allocate.50_0_percentile"] is not None
    assert storage["storage_server.latencies.allocate.99_0_percentile"] is None


def test_formats(grid: StatsGrid) -> None:
    """t=json is text/plain, t=openmetrics OpenMetrics, no t an HTML page; POST works too."""
    base = grid.urls["storage1"] + "statistics"
    content_type, body = fetch(base + "?t=json")
    assert content_type == "text/plain; charset=utf-8" and body.startswith(b'{\n "counters"')
    content_type, body = fetch(base + "?t=OpenMetrics")
    assert content_type.startswith("application/openmetrics-text; version=1.0.0")
    assert body.endswith(b"# EOF\n") and b"tahoe_stats_storage_server_disk_avail " in body
    content_type, body = fetch(base, method="POST")
    assert content_type.startswith("text/html") and b"Operational Statistics" in body


def test_mutable_files_are_counted_and_listed(grid: StatsGrid) -> None:
    """Publishing and reading a mutable file moves the mutable.* counters, shows on the
    HTML page, and /status lists its mapupdate, publish and retrieve operations."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    before = grid.statistics("client")["counters"]
    data = random.Random("mutable-counted").randbytes(3000)
    request = urllib.request.Request(grid.client + "uri?format=MDMF", data=data, method="PUT")
    with opener.open(request, timeout=30) as response:
        cap = response.read().decode("ascii")
    with opener.open(grid.client + "uri/" + urllib.request.quote(cap, safe=""),
                     timeout=30) as response:
        assert response.read() == data

    counters = grid.statistics("client")["counters"]
    for name, files, size in (("published", 1, len(data)), ("retrieved", 1, len(data))):
        assert counters[f"mutable.files_{name}"] >= before.get(f"mutable.files_{name}", 0) + files
        assert counters[f"mutable.bytes_{name}"] >= before.get(f"mutable.bytes_{name}", 0) + size
    _, page = fetch(grid.client + "statistics")
    assert b"Mutable files published</th><td>0 files" not in page

    with opener.open(grid.client + "status?t=json", timeout=30) as response:
        import json
        recent = json.loads(response.read())["recent"]
    from tahoe.caps.parse import parse_cap
    from tahoe.util import base32
    si = base32.b2a(parse_cap(cap).storage_index)  # type: ignore[union-attr]
    mine = [op for op in recent if op["storage-index-string"] == si]
    assert {op["type"] for op in mine} >= {"publish", "retrieve", "mapupdate"}
    assert all(op["status"] == "done" for op in mine)
    (publish,) = [op for op in mine if op["type"] == "publish"]
    assert publish["total-size"] == len(data)
    modes = {op["mode"] for op in mine if op["type"] == "mapupdate"}
    assert modes == {"MODE_READ"}
    assert all(op["total-size"] == "-NA-" for op in mine if op["type"] == "mapupdate")

"""The statistics shells: CPU sampler, /proc and statvfs readers, share counts, the node's
document and the /statistics resource, against a task Clock and temporary directories."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from twisted.internet import defer, task
from twisted.web.test.requesthelper import DummyRequest

from tahoe.stats.host import (ShareCount, ShareCounter, count_shares, disk_usage, memory_usage,
                              parse_proc_status)
from tahoe.stats.monitor import CPUMonitor
from tahoe.stats.node import NodeStatistics
from tahoe.storage.server import StorageStats
from tahoe.web.statistics import StatisticsResource

PROC_STATUS = """Name:\tpython3
VmPeak:\t  200000 kB
VmSize:\t  150000 kB
VmRSS:\t   60000 kB
Threads:\t4
"""


def result_of(d: Any) -> Any:
    """The result of a Deferred (or coroutine) that has already fired."""
    if not isinstance(d, defer.Deferred):
        d = defer.Deferred.fromCoroutine(d)
    results: list[Any] = []
    d.addBoth(results.append)
    assert results, "the Deferred has not fired"
    if isinstance(results[0], Exception) or hasattr(results[0], "raiseException"):
        results[0].raiseException()
    return results[0]


def run_now(function: Any, *args: Any) -> defer.Deferred:
    """A stand-in for the thread pool: runs at once."""
    return defer.succeed(function(*args))


class FakeStorageServer:
    """Answers ``stats()`` like the domain StorageServer."""

    def __init__(self) -> None:
        self.allocated = 0

    def stats(self) -> StorageStats:
        return StorageStats(self.allocated, 5000, 1000, 0, True)


# -- CPU sampler


def test_cpu_monitor_samples_at_start_and_every_minute() -> None:
    """The first sample is taken at start, then one every 60 s, until stopped."""
    clock = task.Clock()
    cpu = iter(range(100))
    monitor = CPUMonitor(clock, lambda: float(next(cpu)))
    monitor.start()
    assert monitor.usage.stats() == {"cpu_monitor.total": 0.0}
    clock.advance(59)
    assert "cpu_monitor.1min_avg" not in monitor.usage.stats()
    clock.advance(1)
    assert monitor.usage.stats()["cpu_monitor.1min_avg"] == pytest.approx(1 / 60)
    clock.pump([60] * 4)
    assert "cpu_monitor.5min_avg" in monitor.usage.stats()
    monitor.stop()
    assert not monitor.running and clock.getDelayedCalls() == []


# -- memory, disk, shares


def test_parse_proc_status() -> None:
    """VmRSS and VmSize are read in kB and reported in bytes."""
    assert parse_proc_status(PROC_STATUS) == {"node.memory.rss": 60000 * 1024,
                                              "node.memory.vmsize": 150000 * 1024}
    assert parse_proc_status("VmRSS: lots\n") == {}


def test_memory_usage_reads_a_status_file(tmp_path: Path) -> None:
    """The file is read when asked; a missing one gives no keys."""
    status = tmp_path / "status"
    status.write_text(PROC_STATUS)
    assert memory_usage(str(status))["node.memory.rss"] == 60000 * 1024
    assert memory_usage(str(tmp_path / "missing")) == {}


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="no /proc on this platform")
def test_memory_usage_of_this_process() -> None:
    """This process has a resident set of some megabytes, below its virtual size."""
    values = memory_usage()
    assert 1 << 20 < values["node.memory.rss"] <= values["node.memory.vmsize"]


def test_disk_usage(tmp_path: Path) -> None:
    """Total = used + free for root, and non-root users get no more than root."""
    values = disk_usage(str(tmp_path))
    assert values["storage_server.disk_total"] == (values["storage_server.disk_used"]
                                                   + values["storage_server.disk_free_for_root"])
    assert 0 <= values["storage_server.disk_free_for_nonroot"] <= \
        values["storage_server.disk_free_for_root"]
    assert disk_usage(str(tmp_path / "missing")) == {}


def make_shares(shares: Path, layout: dict[str, list[str]]) -> None:
    """Create ``shares/<prefix>/<si>/<name>`` for every SI and names."""
    for si, names in layout.items():
        directory = shares / si[:2] / si
        directory.mkdir(parents=True, exist_ok=True)
        for name in names:
            (directory / name).write_bytes(b"x")


def test_count_shares(tmp_path: Path) -> None:
    """Buckets with at least one numbered share count; incoming/ and other files do not."""
    shares = tmp_path / "shares"
    make_shares(shares, {"aaaaaaaaaa": ["0", "3"], "aabbbbbbbb": ["1"], "ccdddddddd": ["9"],
                         "eeempty000": [], "ffjunk0000": ["notes.txt"]})
    make_shares(shares / "incoming", {"ggincoming": ["0", "1"]})
    assert count_shares(str(shares)) == ShareCount(buckets=3, shares=4)
    assert count_shares(str(tmp_path / "missing")) == ShareCount(0, 0)


class FakeWalk:
    """Counts walks; each takes ``duration`` seconds of the task Clock."""

    def __init__(self, clock: task.Clock, duration: float) -> None:
        self.clock = clock
        self.duration = duration
        self.walks = 0

    def __call__(self, path: str) -> ShareCount:
        assert path == "/shares"
        self.walks += 1
        self.clock.advance(self.duration)
        return ShareCount(self.walks, self.walks)


def test_share_counter_walks_again_after_changes_when_cheap() -> None:
    """A cheap walk is redone as soon as shares may have changed, else after 60 s."""
    clock = task.Clock()
    walk = FakeWalk(clock, 0.001)
    changes = [0]
    counter = ShareCounter("/shares", clock, run_now, lambda: changes[0], walk, clock.seconds)
    assert counter.current() is None
    assert result_of(counter.refresh()) == ShareCount(1, 1)
    clock.advance(59)
    assert result_of(counter.refresh()) == ShareCount(1, 1)
    changes[0] += 1
    assert result_of(counter.refresh()) == ShareCount(2, 2)
    assert result_of(counter.refresh()) == ShareCount(2, 2)
    clock.advance(60)
    assert result_of(counter.refresh()) == ShareCount(3, 3)
    assert walk.walks == 3 and counter.current() == ShareCount(3, 3)


def test_share_counter_limits_dear_walks() -> None:
    """A walk of half a second is reused for 50 s even after changes."""
    clock = task.Clock()
    walk = FakeWalk(clock, 0.5)
    changes = [0]
    counter = ShareCounter("/shares", clock, run_now, lambda: changes[0], walk, clock.seconds)
    result_of(counter.refresh())
    changes[0] += 1
    clock.advance(49)
    assert result_of(counter.refresh()) == ShareCount(1, 1)
    clock.advance(1)
    assert result_of(counter.refresh()) == ShareCount(2, 2)


def test_share_counter_does_not_walk_while_the_index_is_rebuilt() -> None:
    """While the share index is being rebuilt nothing is walked (the answer would wait for
    a walk of every bucket): no counts until the index has them."""
    clock = task.Clock()
    walk = FakeWalk(clock, 0.001)
    totals: list[ShareCount | None] = [None]
    counter = ShareCounter("/shares", clock, run_now, lambda: 0, walk, clock.seconds,
                           index_totals=lambda: totals[0], index_pending=lambda: totals[0] is None)
    assert result_of(counter.refresh()) is None and counter.current() is None
    assert walk.walks == 0
    totals[0] = ShareCount(7, 9)
    assert result_of(counter.refresh()) == ShareCount(7, 9) == counter.current()
    assert walk.walks == 0


# -- the node's document


def node_statistics(clock: task.Clock) -> NodeStatistics:
    """NodeStatistics on a task Clock, with fixed memory and a synchronous walk."""
    return NodeStatistics(clock, timer=clock.seconds, process_time=lambda: 0.25,
                          memory=lambda: {"node.memory.rss": 1, "node.memory.vmsize": 2},
                          run_in_thread=run_now)


def test_client_node_document() -> None:
    """A client node reports uptime, CPU and memory, and no storage keys."""
    clock = task.Clock()
    clock.advance(1000)
    stats = node_statistics(clock)
    stats.start()
    clock.advance(8)
    document = result_of(stats.document())
    assert document == {"counters": {},
                        "stats": {"cpu_monitor.total": 0.25, "node.memory.rss": 1,
                                  "node.memory.vmsize": 2, "node.uptime": 8.0}}
    stats.stop()
    assert clock.getDelayedCalls() == []


def test_storage_node_document(tmp_path: Path) -> None:
    """A storage node adds space, disk and share counts; the counts follow the disk."""
    clock = task.Clock()
    stats = node_statistics(clock)
    server = FakeStorageServer()
    stats.add_storage_server(server, tmp_path)
    (tmp_path / "shares").mkdir()
    values = result_of(stats.document())["stats"]
    assert values["storage_server.allocated"] == 0
    assert values["storage_server.reserved_space"] == 1000
    assert values["storage_server.disk_avail"] == 5000
    assert values["storage_server.accepting_immutable_shares"] == 1
    assert values["storage_server.total_bucket_count"] == 0
    assert values["storage_server.total_share_count"] == 0
    for key in ("disk_total", "disk_used", "disk_free_for_root", "disk_free_for_nonroot"):
        assert isinstance(values[f"storage_server.{key}"], int)
    make_shares(tmp_path / "shares", {"aaaaaaaaaa": ["0", "1"]})
    server.allocated = 77
    values = result_of(stats.document())["stats"]
    assert values["storage_server.total_share_count"] == 0  # no change seen: reused
    assert values["storage_server.allocated"] == 77
    stats.statistics.count("storage_server.close")  # what the RPC adapter counts
    values = result_of(stats.document())["stats"]
    assert values["storage_server.total_bucket_count"] == 1
    assert values["storage_server.total_share_count"] == 2
    assert values["storage_server.allocated"] == 77


# -- the resource


def render(resource: StatisticsResource, t: str | None = None,
           method: bytes = b"GET") -> DummyRequest:
    """Render a request for ``/statistics`` (with ``?t=``) and return it once finished."""
    request = DummyRequest([b""])
    request.method = method
    request.startedWriting = False  # DummyRequest lacks it; the error path reads it
    if t is not None:
        request.args[b"t"] = [t.encode()]
    resource.render(request)
    assert request.finished
    return request


@pytest.fixture
def resource() -> StatisticsResource:
    """A /statistics resource over a small fixed document."""
    document = {"counters": {"uploader.files_uploaded": 2, "uploader.bytes_uploaded": 3000},
                "stats": {"node.uptime": 8.5,
                          "storage_server.latencies.get.50_0_percentile": None}}

    async def get() -> dict:
        return document
    return StatisticsResource(get)


def test_statistics_json(resource: StatisticsResource) -> None:
    """t=json (any case, any method) is text/plain JSON with one-space indents."""
    for t, method in (("json", b"GET"), ("JSON", b"GET"), ("json", b"POST")):
        request = render(resource, t, method)
        body = b"".join(request.written)
        assert request.responseHeaders.getRawHeaders(b"content-type") == [
            b"text/plain; charset=utf-8"]
        assert json.loads(body)["counters"]["uploader.files_uploaded"] == 2
        assert body.startswith(b'{\n "counters"') and body.endswith(b"\n")
        assert request.responseHeaders.getRawHeaders(b"x-frame-options") == [b"DENY"]


def test_statistics_openmetrics(resource: StatisticsResource) -> None:
    """t=openmetrics gives the OpenMetrics text and content type."""
    request = render(resource, "openmetrics")
    body = b"".join(request.written).decode()
    assert request.responseHeaders.getRawHeaders(b"content-type") == [
        b"application/openmetrics-text; version=1.0.0; charset=utf-8"]
    assert 'tahoe_stats_storage_server_latencies_get{quantile="0.500"} NaN' in body
    assert body.startswith("tahoe_counters_uploader_bytes_uploaded 3000\n")
    assert body.endswith("# EOF\n")


def test_statistics_page(resource: StatisticsResource) -> None:
    """Without t, an HTML page with the totals and the raw values."""
    request = render(resource)
    body = b"".join(request.written).decode()
    assert "Operational Statistics" in body
    assert "2 files" in body and "3000 bytes" in body and "node.uptime" in body


def test_statistics_unknown_t(resource: StatisticsResource) -> None:
    """Another t is a 400."""
    assert render(resource, "xml").responseCode == 400


def test_node_statistics_keys_are_in_documented_list() -> None:
    """Every key our nodes may produce is documented in docs/munin.md."""
    doc = (Path(__file__).parent.parent.parent / "docs" / "munin.md").read_text()
    for key in ("node.memory.rss", "node.memory.vmsize", "storage_server.total_share_count",
                "uploader.latencies.upload", "uploader.rates.upload",
                "downloader.latencies.read", "downloader.rates.read"):
        assert key in doc, key
    assert os.path.exists(Path(__file__).parent.parent.parent / "misc" / "munin" /
                          "tahoe.plugin-conf")

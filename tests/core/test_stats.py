"""The pure statistics core: sample summaries, counters, CPU averages, OpenMetrics."""
from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.stats.cpu import CPUUsage
from tahoe.stats.openmetrics import CONTENT_TYPE, metric_name, render_openmetrics
from tahoe.stats.registry import Statistics, storage_operation
from tahoe.stats.samples import PERCENTILES, SUMMARY_KEYS, WINDOW_SIZE, SampleWindow, summarize

SRC = Path(__file__).parent.parent.parent / "src" / "tahoe" / "stats"
CORE = ["__init__.py", "samples.py", "registry.py", "cpu.py", "openmetrics.py"]
FORBIDDEN = {"twisted", "foolscap", "socket", "os", "time", "random", "subprocess", "io",
             "pathlib", "shutil", "tempfile", "threading", "asyncio", "urllib", "http"}


class FakeTime:
    """A ``now`` callable that moves only when told."""

    def __init__(self) -> None:
        self.value = 100.0

    def __call__(self) -> float:
        return self.value


@pytest.mark.parametrize("name", CORE)
def test_core_modules_are_pure(name: str) -> None:
    """The statistics core imports nothing that does I/O or reads the clock."""
    tree = ast.parse((SRC / name).read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and not n.level and n.module}
    assert not {m.split(".")[0] for m in names} & FORBIDDEN


# -- samples


def test_one_sample_has_no_mean_and_no_percentiles() -> None:
    """A single sample gives its size only; the mean needs two."""
    summary = summarize([0.5])
    assert summary["samplesize"] == 1
    assert all(summary[key] is None for key in SUMMARY_KEYS if key != "samplesize")


def test_summary_keys_are_tahoes() -> None:
    """The keys are samplesize, mean and the seven percentiles Tahoe reports."""
    assert set(summarize([1.0, 2.0])) == {
        "samplesize", "mean", "01_0_percentile", "10_0_percentile", "50_0_percentile",
        "90_0_percentile", "95_0_percentile", "99_0_percentile", "99_9_percentile"}


@pytest.mark.parametrize("count,present", [
    (2, {"mean"}),
    (9, {"mean"}),
    (10, {"mean", "10_0_percentile", "50_0_percentile", "90_0_percentile"}),
    (19, {"mean", "10_0_percentile", "50_0_percentile", "90_0_percentile"}),
    (20, {"mean", "10_0_percentile", "50_0_percentile", "90_0_percentile", "95_0_percentile"}),
    (99, {"mean", "10_0_percentile", "50_0_percentile", "90_0_percentile", "95_0_percentile"}),
    (100, {"mean", "01_0_percentile", "10_0_percentile", "50_0_percentile", "90_0_percentile",
           "95_0_percentile", "99_0_percentile"}),
    (1000, {key for key in SUMMARY_KEYS if key != "samplesize"}),
])
def test_percentiles_need_enough_samples(count: int, present: set[str]) -> None:
    """Each percentile is null until its minimum number of samples (10, 20, 100, 1000)."""
    summary = summarize([float(i) for i in range(count)])
    assert {key for key, value in summary.items() if value is not None} == present | {"samplesize"}


def test_percentile_picks_the_sample_at_int_p_times_n() -> None:
    """The p-th percentile of n sorted samples is the one at index int(p * n)."""
    samples = [float(i) for i in range(100)]
    summary = summarize(list(reversed(samples)))
    assert summary["01_0_percentile"] == 1.0
    assert summary["10_0_percentile"] == 10.0
    assert summary["50_0_percentile"] == 50.0
    assert summary["90_0_percentile"] == 90.0
    assert summary["95_0_percentile"] == 95.0
    assert summary["99_0_percentile"] == 99.0
    assert summary["mean"] == pytest.approx(49.5)
    assert summarize([3.0] * 5 + [7.0] * 5)["50_0_percentile"] == 7.0


def test_window_keeps_the_last_thousand() -> None:
    """Only the last 1000 samples count."""
    window = SampleWindow()
    for value in range(1500):
        window.add(float(value))
    summary = window.summary()
    assert summary is not None
    assert len(window) == WINDOW_SIZE == summary["samplesize"]
    assert summary["mean"] == pytest.approx(sum(range(500, 1500)) / 1000)
    assert summary["99_9_percentile"] == 1499.0
    assert SampleWindow().summary() is None


def test_summarize_refuses_no_samples() -> None:
    """An empty set has no summary (its keys are left out of the document instead)."""
    with pytest.raises(ValueError):
        summarize([])


@settings(deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1,
                max_size=1200))
def test_percentiles_are_ordered_samples(samples: list[float]) -> None:
    """Every reported percentile is one of the samples, and they never decrease."""
    summary = summarize(samples)
    reported = [summary[key] for _, key, _ in PERCENTILES if summary[key] is not None]
    assert all(value in samples for value in reported)
    assert reported == sorted(reported)


# -- the registry


def test_fresh_statistics_document_is_empty() -> None:
    """A fresh node has no counters and no stats."""
    assert Statistics(FakeTime()).document() == {"counters": {}, "stats": {}}


def test_counters_only_go_up() -> None:
    """Counters add up from zero; a negative amount is refused."""
    stats = Statistics(FakeTime())
    stats.count("uploader.files_uploaded")
    stats.count("uploader.files_uploaded")
    stats.count("uploader.bytes_uploaded", 1234)
    stats.count("uploader.bytes_uploaded", 0)
    assert stats.counters() == {"uploader.files_uploaded": 2, "uploader.bytes_uploaded": 1234}
    with pytest.raises(ValueError):
        stats.count("uploader.bytes_uploaded", -1)


def test_producers_booleans_and_missing_values() -> None:
    """Producer values appear as given; booleans become 1/0 and None leaves the key out."""
    stats = Statistics(FakeTime())
    stats.add_producer(lambda: {"storage_server.accepting_immutable_shares": True,
                                "storage_server.disk_avail": None,
                                "storage_server.allocated": 0})
    stats.add_producer(lambda: {"node.uptime": 1.5})
    document = stats.document()
    assert document["stats"] == {"node.uptime": 1.5, "storage_server.accepting_immutable_shares": 1,
                                 "storage_server.allocated": 0}
    assert type(document["stats"]["storage_server.accepting_immutable_shares"]) is int
    assert list(document["stats"]) == sorted(document["stats"])


def test_operation_counts_at_start_and_times_on_success() -> None:
    """An operation is counted when it starts; its latency is kept only if it succeeds."""
    clock = FakeTime()
    stats = Statistics(clock)
    with stats.operation("storage_server.get", "storage_server.latencies.get"):
        clock.value += 0.25
    with pytest.raises(RuntimeError):
        with stats.operation("storage_server.get", "storage_server.latencies.get"):
            raise RuntimeError("refused")
    assert stats.counters() == {"storage_server.get": 2}
    assert stats.stats()["storage_server.latencies.get.samplesize"] == 1
    with stats.operation("storage_server.get", "storage_server.latencies.get"):
        clock.value += 0.75
    assert stats.stats()["storage_server.latencies.get.mean"] == pytest.approx(0.5)


def test_storage_operation_names() -> None:
    """Storage operations count storage_server.<op>; abort is counted but not timed."""
    stats = Statistics(FakeTime())
    for operation in ("allocate", "write", "close", "abort", "get", "read", "readv", "writev",
                      "add-lease"):
        with storage_operation(stats, operation):
            pass
    assert set(stats.counters()) == {f"storage_server.{op}" for op in (
        "allocate", "write", "close", "abort", "get", "read", "readv", "writev", "add-lease")}
    timed = {key.split(".")[2] for key in stats.stats()}
    assert timed == {"allocate", "write", "close", "get", "read", "readv", "writev", "add-lease"}
    with storage_operation(None, "get"):
        pass


def test_timer_records_latency_and_rate() -> None:
    """A timer adds its duration and, given a size, the bytes per second."""
    clock = FakeTime()
    stats = Statistics(clock)
    timer = stats.timer()
    clock.value += 2.0
    assert timer.done("uploader.latencies.upload", "uploader.rates.upload", 1000) == 2.0
    values = stats.stats()
    assert values["uploader.latencies.upload.samplesize"] == 1
    assert values["uploader.rates.upload.samplesize"] == 1
    stats.timer().done("uploader.latencies.upload", "uploader.rates.upload", 10)
    values = stats.stats()
    assert values["uploader.latencies.upload.mean"] == pytest.approx(1.0)
    assert values["uploader.rates.upload.samplesize"] == 1  # zero duration: no rate sample


# -- CPU


def test_cpu_averages_appear_after_2_6_16_samples() -> None:
    """1, 5 and 15 minute averages need 2, 6 and 16 samples a minute apart."""
    usage = CPUUsage()
    assert usage.stats() == {}
    for minute in range(16):
        usage.add(60.0 * minute, 6.0 * minute)  # 10 % of one CPU
        keys = set(usage.stats())
        assert ("cpu_monitor.1min_avg" in keys) == (minute >= 1)
        assert ("cpu_monitor.5min_avg" in keys) == (minute >= 5)
        assert ("cpu_monitor.15min_avg" in keys) == (minute >= 15)
    values = usage.stats()
    assert values["cpu_monitor.total"] == 90.0
    for key in ("cpu_monitor.1min_avg", "cpu_monitor.5min_avg", "cpu_monitor.15min_avg"):
        assert values[key] == pytest.approx(0.1)


def test_cpu_average_uses_the_right_window() -> None:
    """The 1-minute average sees only the last interval; old samples are forgotten."""
    usage = CPUUsage()
    for minute in range(20):
        usage.add(60.0 * minute, 0.0 if minute < 19 else 30.0)
    assert usage.average(1) == pytest.approx(0.5)
    assert usage.average(15) == pytest.approx(30.0 / 900)
    assert usage.average(16) is None


# -- OpenMetrics


def test_openmetrics_names() -> None:
    """Dots become underscores, hyphens stay, a trailing percentile becomes a quantile label."""
    assert (metric_name("tahoe_stats_", "storage_server.latencies.get.50_0_percentile")
            == 'tahoe_stats_storage_server_latencies_get{quantile="0.500"}')
    assert (metric_name("tahoe_stats_", "storage_server.latencies.add-lease.99_9_percentile")
            == 'tahoe_stats_storage_server_latencies_add-lease{quantile="0.999"}')
    assert (metric_name("tahoe_stats_", "storage_server.latencies.get.01_0_percentile")
            == 'tahoe_stats_storage_server_latencies_get{quantile="0.010"}')
    assert metric_name("tahoe_counters_", "storage_server.add-lease") == \
        "tahoe_counters_storage_server_add-lease"


def test_openmetrics_document() -> None:
    """Counters then stats, each sorted, NaN for null, ending with # EOF."""
    text = render_openmetrics({
        "counters": {"uploader.files_uploaded": 2, "storage_server.allocate": 3},
        "stats": {"storage_server.latencies.get.50_0_percentile": 0.000218,
                  "storage_server.latencies.get.mean": None, "node.uptime": 8.11}})
    assert text == (
        "tahoe_counters_storage_server_allocate 3\n"
        "tahoe_counters_uploader_files_uploaded 2\n"
        "tahoe_stats_node_uptime 8.11\n"
        'tahoe_stats_storage_server_latencies_get{quantile="0.500"} 0.000218\n'
        "tahoe_stats_storage_server_latencies_get_mean NaN\n"
        "# EOF\n")
    assert render_openmetrics({"counters": {}, "stats": {}}) == "# EOF\n"
    assert CONTENT_TYPE == "application/openmetrics-text; version=1.0.0; charset=utf-8"


def test_openmetrics_values_are_numbers() -> None:
    """Every line but the last is a name and a number (or NaN)."""
    stats = Statistics(FakeTime())
    for value in range(200):
        stats.add_sample("storage_server.latencies.read", value / 1000)
    stats.count("storage_server.read", 200)
    lines = render_openmetrics(stats.document()).splitlines()
    assert lines[-1] == "# EOF"
    for line in lines[:-1]:
        name, value = line.rsplit(" ", 1)
        assert name.startswith(("tahoe_counters_", "tahoe_stats_"))
        float(value)
    assert any(line.endswith(" NaN") and "0.999" in line for line in lines)
    assert not any(math.isnan(float(line.rsplit(" ", 1)[1])) for line in lines[:-1]
                   if "samplesize" in line)

"""The node's share-scanning processes (``ScanProcesses``): pipelined, in order, and safe
when a child fails.

A small population written in Tahoe's layout by the benchmark's generator is
scanned prefix by prefix, from many threads at once, by real child processes
(``python -m tahoe.storage.scan_worker``); every answer must be the one the
same scan gives in this process.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tahoe.storage import paths
from tahoe.storage.leases import ExpiryPolicy
from tahoe.storage.share_index import ShareIndex, open_reader, prefix_value
from tahoe.storage.share_scan import (WHOLE_READ, PrefixScan, ScanProcesses, plan_from_index,
                                      scan_prefix_for_walk)

REPOSITORY = Path(__file__).resolve().parents[2]
GENERATOR = REPOSITORY / "misc" / "bench" / "storage_population.py"


@pytest.fixture(scope="module")
def population(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, float]:
    """A storage directory of 600 shares (half expired by age): its shares directory and
    the generator's ``now``."""
    storage = tmp_path_factory.mktemp("scan") / "storage"
    subprocess.run([sys.executable, str(GENERATOR), str(storage), "600"], check=True,
                   stdout=subprocess.DEVNULL)
    now = json.loads((storage / "population.json").read_text())["now"]
    return str(storage / paths.SHARES_DIR), now


@pytest.fixture
def scanners() -> Iterator[ScanProcesses]:
    scanners = ScanProcesses(processes=3)
    yield scanners
    scanners.stop()


def _args(population: tuple[str, float], prefix: str) -> tuple:
    shares, now = population
    return shares, prefix, True, None, now, ExpiryPolicy("age"), True


def _same(a: PrefixScan, b: PrefixScan) -> bool:
    return (a.rows, a.figures, a.delete, a.trim, a.empty) == (b.rows, b.figures, b.delete,
                                                                b.trim, b.empty)


def _children(scanners: ScanProcesses) -> list[int]:
    return [child._process.pid for child in scanners._children]


def test_many_calls_at_once_get_their_own_answers(population: tuple[str, float],
                                                  scanners: ScanProcesses) -> None:
    """Sixteen threads ask for all 1,024 prefixes; each answer is its own prefix's, as
    this process would scan it, and the work was spread over three children."""
    prefixes = paths.all_prefixes()
    with ThreadPoolExecutor(16) as threads:
        answers = list(threads.map(lambda p: scanners(*_args(population, p)), prefixes))
    assert len(_children(scanners)) == 3
    rows = 0
    for prefix, answer in zip(prefixes, answers):
        assert _same(answer, scan_prefix_for_walk(*_args(population, prefix))), prefix
        rows += len(answer.rows)
    assert rows == 600
    assert sum(len(a.delete) for a in answers) > 100  # the expired half is planned


def test_rest_ends_the_children_and_a_later_call_starts_them_again(
        population: tuple[str, float], scanners: ScanProcesses) -> None:
    prefix = paths.all_prefixes()[7]
    expected = scan_prefix_for_walk(*_args(population, prefix))
    assert _same(scanners(*_args(population, prefix)), expected)
    (pid,) = _children(scanners)
    scanners.rest()
    assert _children(scanners) == []
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not os.path.exists(f"/proc/{pid}"), "the rested child is still running"
    assert _same(scanners(*_args(population, prefix)), expected)
    assert _children(scanners) and _children(scanners) != [pid]


def test_an_error_in_a_scan_comes_back_as_that_error(population: tuple[str, float],
                                                     scanners: ScanProcesses) -> None:
    """A scan that raises in the child raises the same in the caller; the child goes on."""
    shares, now = population
    prefix = next(p for p in paths.all_prefixes() if os.listdir(os.path.join(shares, p)))
    with pytest.raises(TypeError):
        scanners(shares, prefix, True, None, "not a time", ExpiryPolicy("age"), True)
    assert _same(scanners(*_args(population, prefix)),
                 scan_prefix_for_walk(*_args(population, prefix)))


@pytest.mark.parametrize("program", [
    "pass",                                      # exits at once
    "import sys; sys.stdin.buffer.read(8); sys.stdout.buffer.write(b'\\0' * 7)",  # garbage
])
def test_a_failing_child_means_scanning_here(population: tuple[str, float],
                                             program: str) -> None:
    """A child that cannot answer: every call still gets the right answer (scanned in this
    process), and no child is started again."""
    scanners = ScanProcesses(processes=2, command=[sys.executable, "-c", program])
    try:
        prefixes = paths.all_prefixes()[:40]
        with ThreadPoolExecutor(8) as threads:
            answers = list(threads.map(lambda p: scanners(*_args(population, p)), prefixes))
        for prefix, answer in zip(prefixes, answers):
            assert _same(answer, scan_prefix_for_walk(*_args(population, prefix)))
        assert _children(scanners) == []
    finally:
        scanners.stop()


@pytest.fixture(scope="module")
def indexed(population: tuple[str, float], tmp_path_factory: pytest.TempPathFactory) -> str:
    """An index of the population's rows (as the rebuild leaves it): its path."""
    shares, now = population
    path = str(tmp_path_factory.mktemp("index") / "share-index.sqlite")
    index = ShareIndex(path)
    for prefix in paths.all_prefixes():
        rows = scan_prefix_for_walk(*_args(population, prefix)).rows
        index.replace_prefix(prefix_value(prefix), rows)
    index.close()
    return path


def _read_so_far(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar")


def test_plan_from_the_index_in_a_child(population: tuple[str, float], indexed: str,
                                        scanners: ScanProcesses) -> None:
    """A child plans a prefix from the index as this process does (the same figures and
    shares to collect as a scan of the files), and reads the files to collect before it
    answers; a failing child answers None (the caller plans itself)."""
    shares, now = population
    storage = os.path.dirname(shares)
    reader = open_reader(indexed)
    policy = ExpiryPolicy("age")
    planned = 0
    for prefix in paths.all_prefixes()[:200]:
        here = plan_from_index(reader, prefix, None, now, policy, True)
        files = scan_prefix_for_walk(*_args(population, prefix))
        # (the index orders buckets by storage index, the directory by name)
        assert (here.figures, sorted(here.delete), sorted(here.trim)) == (
            files.figures, sorted(files.delete), sorted(files.trim)), prefix
        before = _read_so_far(_children(scanners)[0]) if _children(scanners) else 0
        there = scanners.plan(indexed, storage, prefix, None, now, policy, True)
        assert there is not None
        assert (there.figures, there.delete, there.trim) == (here.figures, here.delete,
                                                             here.trim), prefix
        (pid,) = _children(scanners)[:1]
        size = sum(min(WHOLE_READ, os.path.getsize(os.path.join(storage, paths.share_path(
            si, shnum)))) for si, shnum in there.delete + there.trim)
        assert _read_so_far(pid) - before >= size
        planned += len(there.delete)
    reader.connection.close()
    assert planned > 20
    failing = ScanProcesses(processes=1, command=[sys.executable, "-c", "pass"])
    try:
        assert failing.plan(indexed, storage, "aa", None, now, policy, True) is None
        assert failing.plan(indexed, storage, "ab", None, now, policy, True) is None
        assert _children(failing) == []
    finally:
        failing.stop()


def test_stopped_processes_refuse_calls(population: tuple[str, float]) -> None:
    scanners = ScanProcesses(processes=1)
    prefix = paths.all_prefixes()[0]
    scanners(*_args(population, prefix))
    (pid,) = _children(scanners)
    scanners.stop()
    assert not os.path.exists(f"/proc/{pid}")
    with pytest.raises(RuntimeError, match="stopped"):
        scanners(*_args(population, prefix))

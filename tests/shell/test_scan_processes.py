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
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tahoe.storage import paths
from tahoe.storage.bucket_locks import LOCK_NAME, BucketLocks
from tahoe.storage.containers import open_container
from tahoe.storage.disk import open_file
from tahoe.storage.leases import ExpiryPolicy
from tahoe.storage.share_index import INDEX_NAME, ShareIndex, open_reader, prefix_value
from tahoe.storage.lease_checker import LeaseCheckingCrawler
from tahoe.storage.share_scan import (PrefixScan, ScanProcesses, bucket_inodes, map_in_slices,
                                      plan_from_index, scan_prefix_for_walk)
from tests.shell.storage_support import assert_index_in_step, clock_at, make_server

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
    scanners = ScanProcesses(processes=3, small_prefix=0)
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


def test_a_prefix_of_few_buckets_is_scanned_here(population: tuple[str, float]) -> None:
    """Below ``small_prefix`` buckets (none, or a prefix directory never made) a prefix is
    scanned in this process, with the same answer and no child started; a prefix with
    enough buckets goes to a child."""
    shares, _ = population
    buckets = {prefix: len(bucket_inodes(os.path.join(shares, prefix)))
               for prefix in paths.all_prefixes()}
    few = [prefix for prefix, count in buckets.items() if count < 2]
    many = next(prefix for prefix, count in buckets.items() if count >= 2)
    assert any(buckets[p] == 0 for p in few) and any(buckets[p] == 1 for p in few)
    scanners = ScanProcesses(processes=1, small_prefix=2)
    try:
        for prefix in few:
            assert _same(scanners(*_args(population, prefix)),
                         scan_prefix_for_walk(*_args(population, prefix))), prefix
        assert _children(scanners) == []
        assert _same(scanners(*_args(population, many)),
                     scan_prefix_for_walk(*_args(population, many)))
        assert len(_children(scanners)) == 1
    finally:
        scanners.stop()


def test_a_small_store_is_checked_without_starting_a_child(tmp_path: Path) -> None:
    """The node's lease checker on 600 shares (at most a few buckets a prefix), with
    the default ``small_prefix``: both the rebuilding cycle and the one from the index
    collect exactly what a checker scanning in its own process collects on a copy, and
    no scanning process is ever asked (its command would fail: it is never started)."""
    storage = tmp_path / "storage"
    subprocess.run([sys.executable, str(GENERATOR), str(storage), "600"], check=True,
                   stdout=subprocess.DEVNULL)
    now = json.loads((storage / "population.json").read_text())["now"]
    shutil.copytree(storage, tmp_path / "control")
    results = []
    for root, scanner in ((storage, ScanProcesses(command=[sys.executable, "-c", "exit(3)"])),
                          (tmp_path / "control", scan_prefix_for_walk)):
        for cycle, day in enumerate((0, 20)):  # the rebuilding cycle, then one from the index
            clock = clock_at(now + day * 86400)
            server = make_server(root, clock)
            assert server.index.fresh == (cycle == 1)
            checker = LeaseCheckingCrawler(root, clock, server.index, ExpiryPolicy("age"),
                                           True, slow_start=0, scanner=scanner)
            checker.start()
            clock.advance(checker.first_delay())
            assert checker.state["last-cycle-finished"] == cycle
            assert_index_in_step(server)
            results.append((checker.deleted_shares, sorted(
                str(p.relative_to(root)) for p in (root / paths.SHARES_DIR).rglob("*"))))
            checker.stop()
            server.close()
        if isinstance(scanner, ScanProcesses):
            assert not scanner._broken and _children(scanner) == []
            scanner.stop()
    assert results[0] == results[2] and results[1] == results[3]
    assert results[0][0] > 200 and results[1][0] > 0


@pytest.mark.parametrize("program", [
    "pass",                                      # exits at once
    "import sys; sys.stdin.buffer.read(8); sys.stdout.buffer.write(b'\\0' * 7)",  # garbage
])
def test_a_failing_child_means_scanning_here(population: tuple[str, float],
                                             program: str) -> None:
    """A child that cannot answer: every call still gets the right answer (scanned in this
    process), and no child is started again."""
    scanners = ScanProcesses(processes=2, command=[sys.executable, "-c", program],
                               small_prefix=0)
    try:
        prefixes = paths.all_prefixes()[:40]
        with ThreadPoolExecutor(8) as threads:
            answers = list(threads.map(lambda p: scanners(*_args(population, p)), prefixes))
        for prefix, answer in zip(prefixes, answers):
            assert _same(answer, scan_prefix_for_walk(*_args(population, prefix)))
        assert _children(scanners) == []
    finally:
        scanners.stop()


@pytest.fixture
def indexed(population: tuple[str, float], tmp_path: Path) -> str:
    """A copy of the population with its index (as the rebuild leaves it): the storage
    directory."""
    shares, _ = population
    storage = tmp_path / "storage"
    shutil.copytree(os.path.dirname(shares), storage)
    index = ShareIndex(storage / INDEX_NAME)
    for prefix in paths.all_prefixes():
        rows = scan_prefix_for_walk(*_args((str(storage / paths.SHARES_DIR), 0), prefix)).rows
        index.replace_prefix(prefix_value(prefix), rows)
    index.close()
    return str(storage)


def _collect_args(storage: str, prefix: str, now: float) -> tuple:
    return (os.path.join(storage, INDEX_NAME), os.path.join(storage, LOCK_NAME), storage,
            prefix, None, now, ExpiryPolicy("age"), True)


def _leases(path: str) -> int:
    with open_file(path) as file:
        return len(open_container(file).lease_expirations())


def test_collect_from_the_index_in_a_child(population: tuple[str, float], indexed: str,
                                           scanners: ScanProcesses) -> None:
    """A child examines a prefix's rows as this process does (the same figures) and
    collects what they plan: the shares whose leases all expired are deleted, the
    expired leases of the others trimmed, the rest left alone; it says what it did."""
    _, now = population
    reader = open_reader(os.path.join(indexed, INDEX_NAME))
    deleted = trimmed = 0
    for prefix in paths.all_prefixes():
        plan = plan_from_index(reader, prefix, None, now, ExpiryPolicy("age"), True)
        before = {(si, shnum): _leases(os.path.join(indexed, paths.share_path(si, shnum)))
                  for si, shnum in plan.trim}
        answer = scanners.collect(*_collect_args(indexed, prefix, now))
        assert answer is not None and answer.figures == plan.figures, prefix
        done = {(si, shnum): action for si, shnum, action, _ in answer.collected}
        assert done == {**{key: "deleted" for key in plan.delete},
                        **{key: "trimmed" for key in plan.trim}}, prefix
        for si, shnum in plan.delete:
            assert not os.path.exists(os.path.join(indexed, paths.share_path(si, shnum)))
        for (si, shnum), leases in before.items():
            assert _leases(os.path.join(indexed, paths.share_path(si, shnum))) < leases
        deleted += len(plan.delete)
        trimmed += len(plan.trim)
    reader.connection.close()
    assert deleted > 200 and trimmed > 0
    left = sum(len(files) for _, _, files in os.walk(os.path.join(indexed, paths.SHARES_DIR)))
    assert left == 600 - deleted


def test_a_child_collects_only_under_the_bucket_lock(population: tuple[str, float],
                                                     indexed: str,
                                                     scanners: ScanProcesses) -> None:
    """While this process holds a bucket's lock, the child cannot collect its share: it
    answers only once the lock is let go, and then deletes it."""
    _, now = population
    reader = open_reader(os.path.join(indexed, INDEX_NAME))
    prefix, plan = next((p, plan) for p in paths.all_prefixes()
                        if (plan := plan_from_index(reader, p, None, now, ExpiryPolicy("age"),
                                                    True)).delete)
    reader.connection.close()
    si, shnum = plan.delete[0]
    path = os.path.join(indexed, paths.share_path(si, shnum))
    locks = BucketLocks(os.path.join(indexed, LOCK_NAME))
    try:
        with ThreadPoolExecutor(1) as thread:
            with locks.lock(si):
                answer = thread.submit(scanners.collect, *_collect_args(indexed, prefix, now))
                time.sleep(1.0)
                assert not answer.done() and os.path.exists(path)
            assert (si, shnum, "deleted", "") in answer.result(timeout=30).collected
        assert not os.path.exists(path)
    finally:
        locks.close()


def test_a_share_the_disk_refuses_to_delete_comes_back_failed(
        population: tuple[str, float], indexed: str, scanners: ScanProcesses) -> None:
    """A deletion the disk refuses (ext4's immutable attribute: not even root may) is said
    as failed, with the reason; the rest of the prefix is collected."""
    _, now = population
    reader = open_reader(os.path.join(indexed, INDEX_NAME))
    prefix, plan = next((p, plan) for p in paths.all_prefixes()
                        if len((plan := plan_from_index(reader, p, None, now,
                                                        ExpiryPolicy("age"), True)).delete) > 1)
    reader.connection.close()
    (si, shnum), rest = plan.delete[0], plan.delete[1:]
    path = os.path.join(indexed, paths.share_path(si, shnum))
    subprocess.run(["chattr", "+i", path], check=True)
    try:
        answer = scanners.collect(*_collect_args(indexed, prefix, now))
    finally:
        subprocess.run(["chattr", "-i", path], check=True)
    assert answer is not None
    outcomes = {(s, n): (action, error) for s, n, action, error in answer.collected}
    action, error = outcomes[(si, shnum)]
    assert action == "failed" and path in error and "not permitted" in error
    assert all(outcomes[key][0] == "deleted" for key in rest)
    assert os.path.exists(path)


def test_a_failing_child_collects_nothing(population: tuple[str, float], indexed: str) -> None:
    """A child that cannot answer: ``collect`` says None (the node collects itself) and no
    share is touched."""
    _, now = population
    failing = ScanProcesses(processes=1, command=[sys.executable, "-c", "pass"], small_prefix=0)
    try:
        assert failing.collect(*_collect_args(indexed, "aa", now)) is None
        assert failing.collect(*_collect_args(indexed, "ab", now)) is None
        assert _children(failing) == []
    finally:
        failing.stop()
    left = sum(len(files) for _, _, files in os.walk(os.path.join(indexed, paths.SHARES_DIR)))
    assert left == 600


def test_map_in_slices_keeps_the_order_and_uses_one_task_a_slice() -> None:
    threads_seen: set[str] = set()

    def square(n: int) -> int:
        threads_seen.add(threading.current_thread().name)
        return n * n
    with ThreadPoolExecutor(4, thread_name_prefix="slice") as executor:
        submitted = []
        original = executor.submit

        def counting(*args: object, **kwargs: object) -> object:
            submitted.append(1)
            return original(*args, **kwargs)
        executor.submit = counting  # type: ignore[method-assign]
        assert map_in_slices(square, list(range(103)), executor) == [n * n for n in range(103)]
        assert len(submitted) == 4 and all(name.startswith("slice") for name in threads_seen)
        assert map_in_slices(square, [5], executor) == [25]
        assert map_in_slices(square, [2, 3], executor) == [4, 9]
    assert map_in_slices(square, [1, 2, 3], None) == [1, 4, 9]

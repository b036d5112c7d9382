"""Bucket locks shared by processes: a stripe held in one process keeps the others out,
and threads of two processes waiting on each other's stripes are no deadlock.

The other process is a real one (``python -c``), taking locks on the same lock
file as this one.
"""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from tahoe.storage.bucket_locks import STRIPES, BucketLocks

REPOSITORY = Path(__file__).resolve().parents[2]
FIRST, SECOND = b"first storage ix", b"second storage i"

_HOLDER = """
import sys, time
from tahoe.storage.bucket_locks import BucketLocks
locks = BucketLocks(sys.argv[1])
with locks.lock(bytes.fromhex(sys.argv[2])):
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
print("released", flush=True)
"""

# Thread 1 holds FIRST, then (after a pause) lets it go; thread 2 meanwhile waits for
# SECOND, which the other process holds while its own thread waits for FIRST.
_CROSSED = """
import sys, threading, time
from tahoe.storage.bucket_locks import BucketLocks
locks = BucketLocks(sys.argv[1])
mine, theirs = bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3])
held = threading.Event()
def hold():
    with locks.lock(mine):
        held.set()
        time.sleep(0.5)
def wait():
    held.wait()
    time.sleep(0.2)
    with locks.lock(theirs):
        pass
errors = []
def run(t):
    try:
        t()
    except Exception as e:
        errors.append(e)
threads = [threading.Thread(target=run, args=(f,)) for f in (hold, wait)]
for t in threads: t.start()
for t in threads: t.join()
print("errors", errors, flush=True)
sys.exit(1 if errors else 0)
"""


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=REPOSITORY,
                            stdout=subprocess.PIPE, text=True)


def test_a_stripe_held_by_another_process_keeps_this_one_out(tmp_path: Path) -> None:
    path = tmp_path / "share-index.lock"
    locks = BucketLocks(path)
    other = _python(_HOLDER, str(path), FIRST.hex(), "1.0")
    try:
        assert other.stdout is not None and other.stdout.readline() == "held\n"
        started = time.monotonic()
        with locks.lock(FIRST):
            waited = time.monotonic() - started
        assert waited > 0.5
        with locks.lock(SECOND):  # another stripe was never held up
            pass
        assert other.wait(10) == 0
    finally:
        other.kill()
        locks.close()


def test_another_stripe_is_not_held_up(tmp_path: Path) -> None:
    path = tmp_path / "share-index.lock"
    locks = BucketLocks(path)
    assert BucketLocks.stripe(FIRST) != BucketLocks.stripe(SECOND)
    other = _python(_HOLDER, str(path), FIRST.hex(), "2.0")
    try:
        assert other.stdout is not None and other.stdout.readline() == "held\n"
        started = time.monotonic()
        with locks.lock(SECOND):
            pass
        assert time.monotonic() - started < 0.5
    finally:
        other.kill()
        other.wait()
        locks.close()


def test_threads_of_two_processes_waiting_crosswise_are_no_deadlock(tmp_path: Path) -> None:
    """Seen as whole processes, each waits for the other (classic POSIX record locks fail
    with EDEADLK here); seen as threads, nobody waits for a thread that waits: both end."""
    path = tmp_path / "share-index.lock"
    one = _python(_CROSSED, str(path), FIRST.hex(), SECOND.hex())
    two = _python(_CROSSED, str(path), SECOND.hex(), FIRST.hex())
    assert (one.wait(20), two.wait(20)) == (0, 0)


def test_threads_of_one_process_exclude_each_other(tmp_path: Path) -> None:
    locks = BucketLocks(tmp_path / "share-index.lock")
    inside, most = [0], [0]

    def work() -> None:
        for _ in range(200):
            with locks.lock(FIRST):
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                time.sleep(0)
                inside[0] -= 1
    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1
    assert locks.in_use() == 0  # a stripe nobody holds or waits for takes no memory
    locks.close()
    with locks.lock(FIRST):  # once closed, the thread locks go on alone
        pass
    assert 0 <= BucketLocks.stripe(FIRST) < STRIPES


def test_a_stripe_waited_for_stays_one_lock_until_its_last_user_leaves(tmp_path: Path) -> None:
    locks = BucketLocks(tmp_path / "share-index.lock")
    first = locks.lock(FIRST)
    order: list[str] = []
    with first:

        def wait_then_enter() -> None:
            with locks.lock(FIRST):
                order.append("second")
        waiter = threading.Thread(target=wait_then_enter)
        waiter.start()
        time.sleep(0.2)
        assert order == [] and locks.in_use() == 1
        order.append("first")
    waiter.join(5)
    assert order == ["first", "second"] and locks.in_use() == 0
    with first:  # a handle is entered again, after its exit
        assert locks.in_use() == 1
    assert locks.in_use() == 0
    locks.close()

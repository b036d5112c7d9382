"""Reading what the share index keeps from a share file itself (the truth).

Used wherever the index is brought in step with a file: after every change
the storage server makes, and by the lease checker's walk over a prefix the
index does not hold (:func:`scan_prefix_for_walk`, which the node runs in
child processes, :class:`ScanProcesses`: reading a million files is mostly short
system calls, and threads of one process only take turns at them).
"""
from __future__ import annotations

import collections
import contextlib
import os
import pickle
import struct
import subprocess
import sys
import threading
from concurrent.futures import Executor, Future
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from attrs import define, field
from twisted.logger import Logger

from . import disk, paths
from .expirer import CycleTally, bucket_rows
from .leases import ExpiryPolicy
from .containers import open_container
from .errors import ContainerError
from .immutable_container import ImmutableContainer
from .randomaccess import MemoryFile, RandomAccessFile
from .share_index import CORRUPT, IMMUTABLE, MUTABLE, IndexedShare, IndexReader, prefix_value

T = TypeVar("T")
R = TypeVar("R")


def disk_bytes(path: str) -> int:
    """Bytes of disk a file or directory uses (``st_blocks`` × 512), 0 if it is gone."""
    try:
        return getattr(os.stat(path), "st_blocks", 0) * 512
    except OSError:
        return 0


#: Files up to this size are read whole, in one call, to be parsed in memory.
WHOLE_READ = 64 * 1024


def scan_share(path: str, storage_index: bytes, shnum: int,
               bucket_disk_bytes: int | None = None) -> IndexedShare | None:
    """The index row of the share file at ``path``; None if the file is gone.

    A file that is not a readable container is indexed as ``CORRUPT`` (no leases).

    :param bucket_disk_bytes: the bucket directory's disk use, if known already.
    """
    try:
        fd = disk.open_fd(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        stat = os.fstat(fd)
        if stat.st_size <= WHOLE_READ:
            # one read for the whole small file (most shares), parsed in memory
            kind, length, expirations = _examine(MemoryFile(os.pread(fd, stat.st_size, 0)))
        else:
            kind, length, expirations = _examine(disk.DiskFile(fd))
    finally:
        os.close(fd)
    if bucket_disk_bytes is None:
        bucket_disk_bytes = disk_bytes(os.path.dirname(path))
    return IndexedShare(storage_index, shnum, kind, stat.st_size,
                        getattr(stat, "st_blocks", 0) * 512, bucket_disk_bytes, length,
                        expirations)


def _examine(file: RandomAccessFile) -> tuple[int, int, tuple[int, ...]]:
    """(kind, data length, lease expirations) of a container."""
    try:
        container = open_container(file)
    except ContainerError:
        return CORRUPT, 0, ()
    kind = IMMUTABLE if isinstance(container, ImmutableContainer) else MUTABLE
    return kind, container.data_length, container.lease_expirations()


def scan_bucket(bucket: str, storage_index: bytes) -> list[IndexedShare]:
    """The rows of every share file in a bucket directory, in share-number order
    (none if the directory is gone or unreadable)."""
    try:
        found = disk.list_shares(bucket)
    except OSError:
        return []
    shares = []
    bucket_disk_bytes = None
    for shnum, path in sorted(found.items()):
        if bucket_disk_bytes is None:
            bucket_disk_bytes = disk_bytes(bucket)
        share = scan_share(path, storage_index, shnum, bucket_disk_bytes)
        if share is not None:
            shares.append(share)
    return shares


def bucket_inodes(prefix_dir: str) -> dict[str, int]:
    """The entries of a prefix directory (bucket directory names) and their inode numbers,
    from one listing (none if it cannot be listed): reading buckets in inode order reads
    neighbours on disk, with fewer seeks."""
    with contextlib.suppress(OSError), os.scandir(prefix_dir) as entries:
        return {entry.name: entry.inode() for entry in entries}
    return {}


#: Slices a list of reads is cut into for the reader threads (:func:`map_in_slices`).
SLICES = 4


def map_in_slices(function: Callable[[T], R], items: Sequence[T],
                  executor: Executor | None, slices: int = SLICES) -> list[R]:
    """``[function(item) for item in items]``, the items dealt into ``slices`` interleaved
    slices run at once by ``executor`` (one task a slice: a task of its own for each
    short read cost the scanning processes more of their interpreter than the reads)."""
    if executor is None or len(items) < 2:
        return [function(item) for item in items]
    count = min(slices, len(items))
    done = executor.map(lambda part: [function(item) for item in part],
                        [items[start::count] for start in range(count)])
    results: list[R] = [None] * len(items)  # type: ignore[list-item]
    for start, part in enumerate(done):
        results[start::count] = part
    return results


@define
class PrefixScan:
    """What reading one prefix directory's share files found.

    :ivar rows: the index row (:meth:`IndexedShare.row`) of every share read.
    :ivar figures: the lease checker's figures of its buckets (None if not counted).
    :ivar delete: shares whose leases all expired (to collect, if enabled).
    :ivar trim: shares with some expired leases (to trim, if enabled).
    :ivar empty: buckets (storage indexes) whose directory holds no share (garbage
        collection stopped between a delete and its ``rmdir``?).
    :ivar collected: where the scanning process also collected
        (:func:`~.collector.plan_and_collect`): ``(storage index, share number, action)``
        of each share it deleted or trimmed.
    """

    rows: list[tuple[Any, ...]] = field(factory=list)
    figures: dict[str, Any] | None = None
    delete: list[tuple[bytes, int]] = field(factory=list)
    trim: list[tuple[bytes, int]] = field(factory=list)
    empty: list[bytes] = field(factory=list)
    collected: list[Any] | None = None


def scan_prefix_for_walk(shares_dir: str, prefix: str, counts: bool, after_bucket: str | None,
                         now: float, policy: ExpiryPolicy | None, enabled: bool,
                         readers: Executor | None = None) -> PrefixScan:
    """Read every share of one prefix directory for the lease checker's walk: the index
    rows, the cycle figures of the buckets after ``after_bucket`` (if ``counts``), and what
    garbage collection should do there. Only reads: fit for another process (the caller
    collects, under each bucket's lock, reading each file again).

    :param readers: threads to read buckets with, several at once (a cold disk answers
        many reads at a time faster than one after the other).
    """
    scan = PrefixScan()
    tally = CycleTally(now, policy, enabled) if counts else None
    prefix_dir = os.path.join(shares_dir, prefix)
    inodes = bucket_inodes(prefix_dir)
    buckets = []
    for si_b32 in inodes:
        try:
            buckets.append((si_b32, paths.storage_index_from_b32(si_b32)))
        except ValueError:
            continue
    # read in inode order (neighbours on disk, fewer seeks), then go on in name order
    buckets.sort(key=lambda bucket: inodes[bucket[0]])

    def read(bucket: tuple[str, bytes]) -> list[IndexedShare]:
        return scan_bucket(os.path.join(prefix_dir, bucket[0]), bucket[1])
    found = sorted(zip(buckets, map_in_slices(read, buckets, readers)),
                   key=lambda item: item[0][0])
    for (si_b32, storage_index), shares in found:
        if not shares:
            scan.empty.append(storage_index)
        rows = [share.row() for share in shares]
        scan.rows.extend(rows)
        if tally is not None and (after_bucket is None or si_b32 > after_bucket):
            tally.bucket(storage_index, rows, si_b32)
    if tally is not None:
        _take_tally(scan, tally)
    return scan


def _take_tally(scan: PrefixScan, tally: CycleTally) -> None:
    scan.figures = tally.figures()
    scan.delete = tally.delete
    scan.trim = tally.trim


def plan_from_index(reader: IndexReader, prefix: str, after_bucket: str | None, now: float,
                    policy: ExpiryPolicy | None, enabled: bool) -> PrefixScan:
    """The lease checker's work on a prefix the index holds, from its rows alone: the
    cycle figures of the buckets after ``after_bucket`` and what to collect (no rows
    handed back: the index has them)."""
    scan = PrefixScan()
    tally = CycleTally(now, policy, enabled)
    for storage_index, rows in bucket_rows(reader.rows_in_prefix(prefix_value(prefix))):
        if after_bucket is None or paths.storage_index_to_b32(storage_index) > after_bucket:
            tally.bucket(storage_index, rows)
    _take_tally(scan, tally)
    return scan


class ScanProcesses:
    """:func:`scan_prefix_for_walk` run by child processes (``python -m
    tahoe.storage.scan_worker``, started at the first call), so that reading a million
    share files uses every core and not only the reactor's, and no thread of the node
    competes for its interpreter lock.

    Called from worker threads, each waiting there for its answer. Calls are pipelined:
    each request goes at once to the child with the fewest requests under way, which
    works on two prefixes together and answers in the order asked. :meth:`rest` ends
    the children when a walk is over (they start again when needed). If a child cannot
    be started or fails, the scans run in this process from then on (said once in the
    log).

    A prefix directory of fewer than ``small_prefix`` buckets (or none) is scanned in
    this process instead: starting three interpreters costs about two seconds of CPU,
    far more than reading a few files, and a node with few shares (a new one, most of
    a test grid's) would pay it at every cycle of its lease checker.

    :param processes: children started (three keep two cores busy with twelve reads in
        flight, measured in ``docs/performance.md``).
    :param small_prefix: buckets a prefix directory must hold for its work to go to a
        child.
    """

    _log = Logger()

    def __init__(self, processes: int = 3, command: list[str] | None = None,
                 small_prefix: int = 4) -> None:
        self._command = command or [sys.executable, "-m", "tahoe.storage.scan_worker"]
        self._processes = processes
        self._small_prefix = small_prefix
        self._children: list[_Child] = []
        self._lock = threading.Lock()
        self._stopped = False
        self._broken = False

    def __call__(self, *args: Any) -> PrefixScan:
        shares_dir, prefix = args[0], args[1]
        if self.small(os.path.join(shares_dir, prefix)):
            return scan_prefix_for_walk(*args)
        try:
            answer = self._ask(("scan", args)).result()
        except _ChildFailed as failure:
            self._fail(failure.__cause__)
            if self._stopped:
                raise RuntimeError("the scanning processes have stopped") from failure
        else:
            if isinstance(answer, BaseException):
                raise answer
            return answer  # type: ignore[no-any-return]
        return scan_prefix_for_walk(*args)

    def collect(self, *args: Any) -> PrefixScan | None:
        """:func:`~.collector.plan_and_collect` in a child; None if the children failed
        (the caller plans and collects in its own process, as it should for a prefix
        that is :meth:`small`)."""
        try:
            answer = self._ask(("collect", args)).result()
        except _ChildFailed as failure:
            self._fail(failure.__cause__)
            return None
        if isinstance(answer, BaseException):
            raise answer
        return answer  # type: ignore[no-any-return]

    def small(self, prefix_dir: str) -> bool:
        """Whether ``prefix_dir`` holds fewer than ``small_prefix`` entries (a directory
        that cannot be listed holds none)."""
        if self._small_prefix <= 0:
            return False
        with contextlib.suppress(OSError), os.scandir(prefix_dir) as entries:
            for count, _ in enumerate(entries, 1):
                if count >= self._small_prefix:
                    return False
        return True

    def _ask(self, request: tuple[str, tuple[Any, ...]]) -> Future[Any]:
        with self._lock:
            if self._stopped:
                raise RuntimeError("the scanning processes have stopped")
            if self._broken:
                waiter: Future[Any] = Future()
                waiter.set_exception(_ChildFailed())
                return waiter
            self._children = [c for c in self._children if c.alive]
            if len(self._children) < self._processes:
                try:
                    self._children.append(_Child(self._command))
                except OSError as error:
                    waiter = Future()
                    _fail_waiter(waiter, error)
                    return waiter
            child = min(self._children, key=lambda c: c.under_way)
            return child.ask(request)

    def _fail(self, error: BaseException | None) -> None:
        """A child failed: say so once and end them all; scans run here from now on."""
        with self._lock:
            said, self._broken = self._broken, True
        if not said:
            self._log.warn("share scanning process failed ({error}); scanning in "
                           "the node's own process", error=repr(error))
            self.rest()

    def rest(self) -> None:
        """End the children once they have answered what they were asked (they start
        again at the next call). Does not wait."""
        with self._lock:
            children, self._children = self._children, []
        for child in children:
            child.end()

    def stop(self) -> None:
        """End the children and wait for them; later calls fail."""
        with self._lock:
            self._stopped = True
            children, self._children = self._children, []
        for child in children:
            child.end()
        for child in children:
            child.wait()


class _Child:
    """One scanning process: requests written at once, answers matched in order by a
    thread of its own, which reaps the process at the end of its output."""

    def __init__(self, command: list[str]) -> None:
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._waiting: collections.deque[Future[Any]] = collections.deque()
        self._lock = threading.Lock()
        self._ended = False
        self._answers = threading.Thread(target=self._read_answers, name="scan-answers",
                                         daemon=True)
        self._answers.start()

    @property
    def alive(self) -> bool:
        return not self._ended

    @property
    def under_way(self) -> int:
        return len(self._waiting)

    def ask(self, request: tuple[str, tuple[Any, ...]]) -> Future[Any]:
        """Send one request; the future of its answer (``_ChildFailed`` if the child fails)."""
        waiter: Future[Any] = Future()
        stdin = self._process.stdin
        assert stdin is not None
        with self._lock:
            try:
                if self._ended:
                    raise BrokenPipeError("the scanning process was ended")
                self._waiting.append(waiter)
                write_message(stdin, request)
                stdin.flush()
            except (OSError, ValueError, pickle.PickleError) as error:
                self._ended = True
                if waiter in self._waiting:
                    self._waiting.remove(waiter)
                _fail_waiter(waiter, error)
        return waiter

    def _read_answers(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        while True:
            try:
                answer = read_message(stdout)
            except Exception as error:  # noqa: BLE001 - whatever broke, the child is gone
                with self._lock:
                    self._ended = True
                    waiting, self._waiting = list(self._waiting), collections.deque()
                for waiter in waiting:
                    _fail_waiter(waiter, error)
                break
            with self._lock:
                waiter = self._waiting.popleft() if self._waiting else None
            if waiter is not None:
                waiter.set_result(answer)
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        stdout.close()

    def end(self) -> None:
        """Close its input: it answers what it was asked, then exits."""
        with self._lock:
            self._ended = True
            if self._process.stdin is not None:
                with contextlib.suppress(OSError):
                    self._process.stdin.close()

    def wait(self) -> None:
        """Wait until it has exited (killed after 10 s) and its answers are handed out."""
        self._answers.join()


def _fail_waiter(waiter: Future[Any], cause: BaseException) -> None:
    failed = _ChildFailed()
    failed.__cause__ = cause
    waiter.set_exception(failed)


class _ChildFailed(Exception):
    """A scanning process could not be asked or did not answer (the cause says why)."""


_LENGTH = struct.Struct(">Q")


def write_message(stream: Any, value: Any) -> None:
    """One length-prefixed pickle (between the node and its own scanning process)."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)) + data)


def read_message(stream: Any) -> Any:
    """The next message :func:`write_message` wrote; EOFError at the end of the stream."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError("the scanning process closed its output")
    (length,) = _LENGTH.unpack(head)
    data = stream.read(length)
    if len(data) < length:
        raise EOFError("the scanning process stopped mid-answer")
    return pickle.loads(data)

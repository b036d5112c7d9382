"""Reading what the share index keeps from a share file itself (the truth).

Used wherever the index is brought in step with a file: after every change
the storage server makes, and by the lease checker's walk over a prefix the
index does not hold (:func:`scan_prefix_for_walk`, which the node runs in a
child process, :class:`ScanProcess`: reading a million files is mostly short
system calls, and threads of one process only take turns at them).
"""
from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import threading
from concurrent.futures import Executor
from typing import Any

from attrs import define, field
from twisted.logger import Logger

from . import disk, paths
from .crawl_state import empty_cycle
from .expirer import examine_bucket
from .leases import ExpiryPolicy
from .containers import open_container
from .errors import ContainerError
from .immutable_container import ImmutableContainer
from .randomaccess import MemoryFile, RandomAccessFile
from .share_index import CORRUPT, IMMUTABLE, MUTABLE, IndexedShare


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
        fd = os.open(path, os.O_RDONLY)
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


@define
class PrefixScan:
    """What reading one prefix directory's share files found.

    :ivar rows: the index row (:meth:`IndexedShare.row`) of every share read.
    :ivar figures: the lease checker's figures of its buckets (None if not counted).
    :ivar delete: shares whose leases all expired (to collect, if enabled).
    :ivar trim: shares with some expired leases (to trim, if enabled).
    :ivar empty: buckets (storage indexes) whose directory holds no share (garbage
        collection stopped between a delete and its ``rmdir``?).
    """

    rows: list[tuple[Any, ...]] = field(factory=list)
    figures: dict[str, Any] | None = None
    delete: list[tuple[bytes, int]] = field(factory=list)
    trim: list[tuple[bytes, int]] = field(factory=list)
    empty: list[bytes] = field(factory=list)


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
    scan = PrefixScan(figures=empty_cycle() if counts else None)
    prefix_dir = os.path.join(shares_dir, prefix)
    try:
        names = sorted(os.listdir(prefix_dir))
    except OSError:
        return scan
    buckets = []
    for si_b32 in names:
        try:
            buckets.append((si_b32, paths.storage_index_from_b32(si_b32)))
        except ValueError:
            continue

    def read(bucket: tuple[str, bytes]) -> list[IndexedShare]:
        return scan_bucket(os.path.join(prefix_dir, bucket[0]), bucket[1])
    found = readers.map(read, buckets) if readers is not None else map(read, buckets)
    for (si_b32, storage_index), shares in zip(buckets, found):
        if not shares:
            scan.empty.append(storage_index)
        scan.rows.extend(share.row() for share in shares)
        if scan.figures is None or (after_bucket is not None and si_b32 <= after_bucket):
            continue
        plan = examine_bucket(shares, si_b32, scan.figures, now, policy, enabled)
        scan.delete.extend((storage_index, share.shnum) for share in plan.delete)
        scan.trim.extend((storage_index, share.shnum) for share in plan.trim)
    return scan


class ScanProcess:
    """:func:`scan_prefix_for_walk` run by a child process (``python -m
    tahoe.storage.scan_worker``, started at the first call), so that reading a million
    share files uses another core than the reactor's. Called from a worker thread, it
    waits for the answer there; one call at a time. If the child cannot be started or
    fails, the scans run in this process from then on (said once in the log)."""

    _log = Logger()

    def __init__(self) -> None:
        self._child: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._stopped = False
        self._broken = False

    def __call__(self, *args: Any) -> PrefixScan:
        with self._lock:
            if self._stopped:
                raise RuntimeError("the scanning process has stopped")
            if not self._broken:
                try:
                    return self._ask(args)
                except (OSError, EOFError, pickle.PickleError, struct.error) as error:
                    self._broken = True
                    self._log.warn("share scanning process failed ({error}); scanning in "
                                   "the node's own process", error=repr(error))
                    self._end_child()
        return scan_prefix_for_walk(*args)

    def _ask(self, args: tuple[Any, ...]) -> PrefixScan:
        if self._child is None:
            self._child = subprocess.Popen(
                [sys.executable, "-m", "tahoe.storage.scan_worker"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        child = self._child
        assert child.stdin is not None and child.stdout is not None
        write_message(child.stdin, args)
        child.stdin.flush()
        answer = read_message(child.stdout)
        if isinstance(answer, BaseException):
            raise answer
        return answer  # type: ignore[no-any-return]

    def _end_child(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            if child.stdin is not None:
                child.stdin.close()  # the worker ends at end of input
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            if child.stdout is not None:
                child.stdout.close()

    def stop(self) -> None:
        """End the child process (after the scan under way, if any)."""
        with self._lock:
            self._stopped = True
            self._end_child()


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

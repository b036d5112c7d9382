"""The storage server at 10 k, 100 k and 1 M shares: ``make bench-storage``.

For each scale, a population written straight into Tahoe's layout
(``storage_population.py``: half the leases expired, immutable and mutable
shares) becomes the storage directory of one of our nodes, run as a separate
``tahoe run`` process with garbage collection on:

1. first start, never indexed (caches dropped): node start time; time until
   the lease checker's first cycle (rebuild + collection) has finished;
   request latency meanwhile (HTTPS ``list shares`` on the storage port,
   ``/statistics`` and ``/storage`` on the gateway);
2. clean stop, start again with ``cutoff-date`` mode (cutoff 10 days back):
   start time with a fresh index, a collection cycle from the index, latency
   meanwhile and at rest;
3. in this process, on the stopped node's directory: ``get_buckets``,
   ``read`` and ``allocate`` latency, warm and cold (page cache dropped
   before each cold sample, then the 1,024 prefix directories looked up
   again, as a running server keeps them; disk read requests counted on the
   device, pages read from ``/proc/self/io``), hits and
   misses, against a control doing what a server without an index does
   (list the bucket directory, open each share);
4. Tahoe-LAFS 1.20's lease crawler on the same files (scales up to
   ``--tahoe-max``; its slow start set to 0 and its CPU limit lifted, so its
   own work is timed; its default rate, 10 % of a core, makes it ten times
   longer, after a 6-minute slow start);
5. the layout knob: bucket directories per prefix directory at 1 M and 10 M
   shares, and what a lookup and a delete cost at each;
6. as root, controls on the same files in the same run: the disk work of a
   rebuild done plainly (list every bucket, read the start of every share,
   16 threads, cold) and of the collection from the index (read the start of
   each share it will delete, 16 threads, cold; and the same with each
   share deleted, on a copy of the file system taken frozen), so that the
   cycles are stated as ratios to what this machine's disk gives that day.

As root the populations go on a fresh ext4 file system in a loop file
(``--image``, mounted for the run; the machine's root file system is mounted
with ``discard``, which makes each delete several times dearer). Prints a
table and writes ``--json``.
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import datetime
import http.client
import json
import os
import random
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parents[1]
sys.path[:0] = [str(REPOSITORY), str(REPOSITORY / "src")]

import attrs  # noqa: E402
from twisted.internet.task import Clock  # noqa: E402

from tahoe.node.values import parse_date  # noqa: E402
from tahoe.storage import disk, paths  # noqa: E402
from tahoe.storage.collector import delete_share_file  # noqa: E402
from tahoe.storage.server import StorageServer  # noqa: E402
from tahoe.storage.leases import ExpiryPolicy  # noqa: E402
from tahoe.storage.share_index import IMMUTABLE, INDEX_NAME, open_reader  # noqa: E402
from tahoe.storage.share_scan import WHOLE_READ, bucket_inodes  # noqa: E402
from tahoe.util.furl import parse_furl  # noqa: E402
from tests.support.nodes import TahoeTool, edit_tahoe_cfg, our_tahoe  # noqa: E402
from tests.support.ournodes import create_storage_node  # noqa: E402
from tests.support.processes import ProcessSet  # noqa: E402

DAY = 86400
#: Rounds of warm look-ups over the same keys (see ``lookups``).
WARM_ROUNDS = 5
TAHOE_PYTHON = Path.home() / ".cache/tahoe-lafs-py/tahoe-1.20.0/bin/python"
#: Each control, and the node's cycle it is the floor of.
CONTROLS = (("control_read_all", "first_start"), ("control_read_expired", "indexed_start"),
            ("control_delete_expired", "indexed_start"))
TARGETS = {"first_gc_s": 120.0, "indexed_gc_s": 30.0, "page_ms": 50.0,
           "get_buckets_warm_ratio": 1.2, "get_buckets_cold_disk_reads": 2}


# -- the disk


def is_root() -> bool:
    return os.geteuid() == 0


def drop_caches(keep_prefixes: Path | None = None) -> bool:
    """Empty the page, dentry and inode caches (root only); False if not possible.

    :param keep_prefixes: a storage directory whose 1,024 prefix directories are looked
        up again at once, as a running server keeps them (every request passes there):
        what stays cold is the buckets and the shares.
    """
    if not is_root():
        return False
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    if keep_prefixes is not None:
        shares = keep_prefixes / paths.SHARES_DIR
        for prefix in paths.all_prefixes():
            with contextlib.suppress(FileNotFoundError):
                os.stat(shares / prefix)
    return True


@attrs.frozen
class LoopDisk:
    """An ext4 image mounted through a loop device: where, and its device's counters."""

    image: Path
    mountpoint: Path
    stat: Path  # /sys/block/<device>/stat


#: The loop disk the figures are taken on (the last: a copy while a control runs there).
DISKS: list[LoopDisk] = []


@contextlib.contextmanager
def loop_mounted(image: Path) -> Iterator[LoopDisk]:
    """``image`` mounted through a loop device doing direct I/O: the loop device passes
    each read to the disk as it comes, several at once, as a disk would take them
    (buffered, it goes through the image file's own page cache and reads came out 40 %
    slower, docs/performance.md). Counted by :func:`disk_reads` while mounted."""
    mountpoint = Path(tempfile.mkdtemp(prefix="bench-storage-"))
    device = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", str(image)],
                            check=True, capture_output=True, text=True).stdout.strip()
    try:
        subprocess.run(["mount", device, str(mountpoint)], check=True)
        DISKS.append(LoopDisk(image, mountpoint, Path("/sys/block") / Path(device).name / "stat"))
        try:
            yield DISKS[-1]
        finally:
            DISKS.pop()
            subprocess.run(["umount", str(mountpoint)], check=False)
    finally:
        subprocess.run(["losetup", "-d", device], check=False)
        mountpoint.rmdir()


@contextlib.contextmanager
def bench_file_system(image: Path, size_gb: int, fallback: Path,
                      loop: bool = True) -> Iterator[tuple[Path, str]]:
    """A fresh ext4 in a loop file, mounted for the run (root, unless ``loop`` is
    False); else ``fallback``."""
    if not (loop and is_root()):
        fallback.mkdir(parents=True, exist_ok=True)
        yield fallback, "a directory on the machine's file system (no loop mount)"
        return
    image.parent.mkdir(parents=True, exist_ok=True)
    with open(image, "wb") as f:
        f.truncate(size_gb * 2 ** 30)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-i", "4096", "-E", "nodiscard", str(image)],
                   check=True)
    try:
        with loop_mounted(image) as disk_:
            yield disk_.mountpoint, (f"ext4 in a loop file ({size_gb} GiB, -i 4096, no "
                                     "discard, direct I/O)")
    finally:
        image.unlink(missing_ok=True)


@contextlib.contextmanager
def copy_of(path: Path) -> Iterator[Path]:
    """``path`` (under the loop disk) in a copy of the whole file system, mounted
    beside it: the image copied while the file system is frozen (every write flushed,
    none let in), so that a control may delete files the node is to collect next."""
    disk_ = DISKS[-1]
    copy = disk_.image.with_name(disk_.image.name + ".copy")
    os.sync()
    subprocess.run(["fsfreeze", "--freeze", str(disk_.mountpoint)], check=True)
    try:
        subprocess.run(["cp", "--sparse=always", str(disk_.image), str(copy)], check=True)
    finally:
        subprocess.run(["fsfreeze", "--unfreeze", str(disk_.mountpoint)], check=True)
    try:
        with loop_mounted(copy) as copied:
            yield copied.mountpoint / path.relative_to(disk_.mountpoint)
    finally:
        copy.unlink(missing_ok=True)


def disk_reads() -> tuple[int, int]:
    """(4 KiB pages this process has had read from disk, read requests the benchmark's
    device has completed) so far. One request may fetch many pages (read-ahead)."""
    pages = 0
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("read_bytes:"):
            pages = int(line.split()[1]) // 4096
    requests = int(DISKS[-1].stat.read_text().split()[0]) if DISKS else 0
    return pages, requests


# -- figures


def percentiles(samples: list[float]) -> dict[str, float | int]:
    if not samples:
        return {"n": 0}
    ordered = sorted(samples)
    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 3)
    return {"n": len(ordered), "p50_ms": at(0.5), "p99_ms": at(0.99), "max_ms": at(1.0)}


# -- controls: the same disk work done plainly, in the same run


#: Threads of the controls (a cold disk serves parallel reads faster than serial ones).
CONTROL_THREADS = 16


def _read_start(path: str) -> None:
    """What the collector and the rebuild read of a share: its start, in one call, opened
    as they open it (no access-time update)."""
    with contextlib.suppress(FileNotFoundError):
        fd = disk.open_fd(path)
        try:
            os.pread(fd, WHOLE_READ, 0)
        finally:
            os.close(fd)


def _buckets_in_inode_order(prefix_dir: str) -> list[str]:
    inodes = bucket_inodes(prefix_dir)
    return [os.path.join(prefix_dir, name) for name in sorted(inodes, key=inodes.__getitem__)]


def _timed_cold(work: Callable[[ThreadPoolExecutor], int]) -> dict[str, Any]:
    drop_caches()
    before = disk_reads()[1]
    started = time.perf_counter()
    with ThreadPoolExecutor(CONTROL_THREADS) as pool:
        files = work(pool)
    return {"s": round(time.perf_counter() - started, 2), "files": files,
            "device_reads": disk_reads()[1] - before, "threads": CONTROL_THREADS}


def control_read_all(storage: Path) -> dict[str, Any]:
    """The floor of a rebuild: list every bucket and read the start of every share file,
    cold, 16 buckets at a time, each prefix's buckets in inode order; no parsing, no
    index, no deletes."""
    shares = storage / paths.SHARES_DIR

    def read_bucket(bucket: str) -> int:
        names = os.listdir(bucket)
        for name in names:
            _read_start(os.path.join(bucket, name))
        return len(names)

    def work(pool: ThreadPoolExecutor) -> int:
        buckets = (bucket for prefix in paths.all_prefixes()
                   for bucket in _buckets_in_inode_order(str(shares / prefix)))
        return sum(pool.map(read_bucket, buckets, chunksize=1))
    return _timed_cold(work)


def control_read_expired(storage: Path, policy: ExpiryPolicy, now: float,
                         delete: bool = False) -> dict[str, Any]:
    """The floor of a collection from the index under ``policy``: read the start of every
    share it will delete (those whose leases all expired: found in the index, untimed),
    cold, 16 at a time, each prefix's in its buckets' inode order; with ``delete``, each
    is then deleted as the collector deletes it (with its bucket directory, once
    emptied)."""
    reader = open_reader(storage / INDEX_NAME)
    try:
        doomed: dict[str, list[str]] = {}
        for share in reader.all_shares():
            if all(policy.expired(e, now) for e in share.expirations):
                prefix = paths.prefix_of(paths.storage_index_to_b32(share.storage_index))
                doomed.setdefault(prefix, []).append(
                    str(storage / paths.share_path(share.storage_index, share.shnum)))
    finally:
        reader.connection.close()
    shares = storage / paths.SHARES_DIR

    def read_and_delete(path: str) -> None:
        _read_start(path)
        delete_share_file(path)

    def work(pool: ThreadPoolExecutor) -> int:
        files = []
        for prefix, paths_ in sorted(doomed.items()):
            order = {bucket: i for i, bucket in enumerate(
                _buckets_in_inode_order(str(shares / prefix)))}
            files += sorted(paths_, key=lambda p: order.get(os.path.dirname(p), 0))
        list(pool.map(read_and_delete if delete else _read_start, files))
        return len(files)
    return _timed_cold(work)


def control_delete_expired(storage: Path, policy: ExpiryPolicy, now: float) -> dict[str, Any]:
    """:func:`control_read_expired` with the deletes, on a copy of the file system
    (:func:`copy_of`): the reads the crash rule requires and the deletes themselves, the
    whole of a collection's disk work."""
    with copy_of(storage) as copied:
        return control_read_expired(copied, policy, now, delete=True)


# -- requests to a running node


class Requests:
    """The three requests timed against a running node: HTTPS ``list shares`` on its
    storage port (keep-alive), ``/statistics?t=json`` and ``/storage?t=json``."""

    def __init__(self, basedir: Path, node_url: str, hits: list[bytes]) -> None:
        furl = parse_furl((basedir / "private" / "storage.furl").read_text().strip())
        host, port = furl.hints[0].split(":")[-2:]
        self._storage = (host, int(port))
        self._auth = "Tahoe-LAFS " + base64.b64encode(furl.swissnum.encode()).decode()
        self._node_url = node_url.rstrip("/")
        self._hits = hits
        self._connection: http.client.HTTPSConnection | None = None
        self._rng = random.Random(7)

    def _https(self) -> http.client.HTTPSConnection:
        if self._connection is None:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE  # a benchmark: the pinning is tested elsewhere
            self._connection = http.client.HTTPSConnection(*self._storage, context=context,
                                                           timeout=60)
        return self._connection

    def list_shares(self) -> float:
        si = self._rng.choice(self._hits)
        path = f"/storage/v1/immutable/{paths.storage_index_to_b32(si)}/shares"
        start = time.perf_counter()
        connection = self._https()
        connection.request("GET", path, headers={"Authorization": self._auth})
        response = connection.getresponse()
        response.read()
        elapsed = time.perf_counter() - start
        if response.status != 200:
            raise RuntimeError(f"list shares: HTTP {response.status}")
        return elapsed

    def page(self, path: str) -> tuple[float, Any]:
        start = time.perf_counter()
        with urllib.request.urlopen(self._node_url + path, timeout=60) as response:
            body = response.read()
        return time.perf_counter() - start, json.loads(body)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()


def sample_while(requests: Requests, done: Callable[[dict[str, Any]], bool],
                 timeout: float) -> dict[str, Any]:
    """Time the three requests in turn (about 5 rounds a second) until ``done`` says so of
    ``/storage?t=json``; return the samples and the last page."""
    samples: dict[str, list[float]] = {"list_shares": [], "statistics": [], "storage": []}
    deadline = time.monotonic() + timeout
    while True:
        samples["list_shares"].append(requests.list_shares())
        elapsed, _ = requests.page("/statistics?t=json")
        samples["statistics"].append(elapsed)
        elapsed, storage = requests.page("/storage?t=json")
        samples["storage"].append(elapsed)
        if done(storage):
            return {"samples": samples, "storage": storage}
        if time.monotonic() > deadline:
            raise TimeoutError("the lease checker's cycle did not finish in time")
        time.sleep(0.2)


def cycle_done(number: int) -> Callable[[dict[str, Any]], bool]:
    return lambda storage: str(number) in storage["lease-checker"].get("history", {})


# -- one scale


def run_scale(base: Path, scale: int, tool: TahoeTool, processes: ProcessSet,
              args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"shares": scale}
    basedir = base / f"node-{scale}"
    create_storage_node(tool, basedir)
    storage = basedir / "storage"
    shutil.rmtree(storage, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, str(HERE / "storage_population.py"), str(storage),
                    str(scale)], check=True, stdout=subprocess.DEVNULL)
    result["generate_s"] = round(time.perf_counter() - started, 1)
    population = json.loads((storage / "population.json").read_text())
    result["population"] = population
    hits = _some_buckets(storage, 500)
    edit_tahoe_cfg(basedir, {"storage": {"expire.enabled": "true", "expire.mode": "age"}})
    if is_root():
        result["control_read_all"] = control_read_all(storage)

    # 1. first start on a directory never indexed
    cold = drop_caches()
    first = _run_node(tool, basedir, processes, hits, cycle=0, timeout=args.gc_timeout)
    result["first_start"] = first
    result["cold_start"] = cold
    deleted = scale - population["expected_live"]
    result["first_gc_deleted_expected"] = deleted
    # 2. again, with the index, collecting by cutoff date
    cutoff = datetime.datetime.fromtimestamp(population["now"] - 10 * DAY, datetime.UTC)
    cutoff_day = cutoff.strftime("%Y-%m-%d")
    edit_tahoe_cfg(basedir, {"storage": {"expire.mode": "cutoff-date",
                                         "expire.cutoff_date": cutoff_day}})
    if is_root():
        policy = ExpiryPolicy("cutoff-date", cutoff_date=parse_date(cutoff_day))
        result["control_read_expired"] = control_read_expired(storage, policy, time.time())
        if DISKS:
            result["control_delete_expired"] = control_delete_expired(storage, policy,
                                                                      time.time())
    drop_caches()
    second = _run_node(tool, basedir, processes, hits, cycle=1, timeout=args.gc_timeout)
    result["indexed_start"] = second
    result["indexed_gc_deleted_expected"] = (population["expected_live"]
                                            - population["expected_after_cutoff"])
    result["index_bytes"] = sum(p.stat().st_size for p in storage.glob("share-index.sqlite*"))
    # 3. lookups in this process
    result["lookups"] = lookups(storage, args.cold_samples)
    # 4. Tahoe 1.20's crawler
    if scale <= args.tahoe_max and TAHOE_PYTHON.exists():
        result["tahoe_crawler"] = tahoe_crawler(storage)
    result["buckets_per_prefix"] = round(_bucket_count(storage) / 1024, 1)
    shutil.rmtree(basedir, ignore_errors=True)
    return result


def _some_buckets(storage: Path, count: int) -> list[bytes]:
    """Storage indexes of immutable buckets present (from the population's files)."""
    rng = random.Random(3)
    shares = storage / paths.SHARES_DIR
    prefixes = sorted(p for p in os.listdir(shares) if len(p) == 2)
    found: list[bytes] = []
    while len(found) < count:
        prefix = rng.choice(prefixes)
        names = os.listdir(shares / prefix)
        if names:
            found.append(paths.storage_index_from_b32(rng.choice(names)))
    return found


def _bucket_count(storage: Path) -> int:
    shares = storage / paths.SHARES_DIR
    return sum(len(os.listdir(shares / p)) for p in os.listdir(shares) if len(p) == 2)


def _run_node(tool: TahoeTool, basedir: Path, processes: ProcessSet, hits: list[bytes],
              cycle: int, timeout: float) -> dict[str, Any]:
    (basedir / "node.url").unlink(missing_ok=True)
    start = time.time()
    node = tool.start(basedir, processes)
    url = node.node_url(120)
    out: dict[str, Any] = {"node_start_s": round(time.time() - start, 3)}
    requests = Requests(basedir, url, hits)
    try:
        during = sample_while(requests, cycle_done(cycle), timeout)
        checker = during["storage"]["lease-checker"]
        entry = checker["history"][str(cycle)]
        began, finished = entry["cycle-start-finish-times"]
        recovered = entry["space-recovered"]
        out.update({
            "cycle_s": round(finished - began, 2),
            "from_node_start_s": round(finished - start, 2),
            "deleted_shares": recovered.get("actual-shares"),
            "examined_shares": recovered.get("examined-shares"),
            "during": {name: percentiles(values)
                       for name, values in during["samples"].items()},
        })
        at_rest = sample_rest(requests, 50)
        out["at_rest"] = {name: percentiles(values) for name, values in at_rest.items()}
    finally:
        requests.close()
        processes.stop_all()
    return out


def sample_rest(requests: Requests, rounds: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"list_shares": [], "statistics": [], "storage": []}
    for _ in range(rounds):
        samples["list_shares"].append(requests.list_shares())
        samples["statistics"].append(requests.page("/statistics?t=json")[0])
        samples["storage"].append(requests.page("/storage?t=json")[0])
    return samples


# -- lookups in this process


def lookups(storage: Path, cold_samples: int) -> dict[str, Any]:
    """get_buckets / read / allocate on the server's index, and the listing control."""
    clock = Clock()
    clock.advance(time.time())
    server = StorageServer(storage, b"\x05" * 20, clock, application_version=b"bench")
    assert server.index.fresh, "the node stopped cleanly: its index should be fresh"
    rng = random.Random(11)
    rows = [s for s in server.index.index.all_shares() if s.kind == IMMUTABLE]
    hits = [rng.choice(rows).storage_index for _ in range(400)]
    misses = [rng.randbytes(16) for _ in range(400)]

    def cold_keys(kind: str) -> list[bytes]:
        """Keys no sample has used yet: one already looked up would still have its index
        page in SQLite's cache (in the process: dropping the kernel's caches keeps it)."""
        return [rng.choice(rows).storage_index if kind == "hit" else rng.randbytes(16)
                for _ in range(cold_samples)]

    def get_buckets(si: bytes) -> None:
        server.get_buckets(si)

    def index_lookup(si: bytes) -> None:  # get_buckets' index part alone, without its stats
        server.index.indexed_shares(si)

    def read(si: bytes) -> None:
        for reader in server.get_buckets(si).values():
            reader.read(0, 1000)
            break

    def control(si: bytes) -> None:  # what a server without an index does
        bucket = storage / paths.share_dir(si)
        try:
            names = os.listdir(bucket)
        except FileNotFoundError:
            return
        for name in names:
            with open(bucket / name, "rb") as f:
                f.read(100)

    def allocate(si: bytes) -> None:
        _, writers = server.allocate_buckets(si, b"r" * 32, b"c" * 32, {0}, 1000)
        for writer in writers.values():
            writer.abort()

    out: dict[str, Any] = {}
    cases: list[tuple[str, Callable[[bytes], None], list[bytes], str]] = [
        ("get_buckets_hit", get_buckets, hits, "hit"),
        ("get_buckets_miss", get_buckets, misses, "miss"),
        ("index_lookup_hit", index_lookup, hits, "hit"),
        ("read_hit", read, hits, "hit"), ("control_listdir_open_hit", control, hits, "hit"),
        ("control_listdir_miss", control, misses, "miss"),
        ("allocate_new", allocate, [rng.randbytes(16) for _ in range(400)], "new")]
    try:
        os.sync()  # the node's last deletes written back: not competing with the samples
        for name, call, keys, kind in cases:
            if name != "allocate_new":
                for si in keys:
                    call(si)  # warm: each key once before it is timed
            rounds = []
            for _ in range(WARM_ROUNDS if name != "allocate_new" else 1):
                samples = []
                for si in keys:
                    t = time.perf_counter()
                    call(si)
                    samples.append(time.perf_counter() - t)
                rounds.append(samples)
            warm = percentiles([x for samples in rounds for x in samples])
            # p50: the median of each round's median (a busy moment of the shared machine
            # moves one round, not the figure)
            warm["p50_ms"] = round(statistics.median(statistics.median(samples)
                                                     for samples in rounds) * 1000, 4)
            entry: dict[str, Any] = {"warm": warm}
            if cold_samples and is_root():
                cold, pages, reads = [], [], []
                for si in cold_keys(kind):
                    drop_caches(keep_prefixes=storage)
                    before = disk_reads()
                    t = time.perf_counter()
                    call(si)
                    cold.append(time.perf_counter() - t)
                    after = disk_reads()
                    pages.append(after[0] - before[0])
                    reads.append(after[1] - before[1])
                entry["cold"] = percentiles(cold)
                entry["cold_pages_read"] = {"p50": statistics.median(pages), "max": max(pages)}
                entry["cold_disk_reads"] = {"p50": statistics.median(reads), "max": max(reads)}
            out[name] = entry
    finally:
        server.close()
    return out


# -- Tahoe 1.20's lease crawler

_TAHOE_CRAWL = r"""
import sys, time, types
from twisted.internet import reactor, task
from allmydata.storage.expirer import LeaseCheckingCrawler
storage, state, history = sys.argv[1:4]
crawler = LeaseCheckingCrawler(types.SimpleNamespace(sharedir=storage + "/shares"), state,
                               history, False, "age", None, None, ("mutable", "immutable"))
crawler.slow_start = 0
crawler.allowed_cpu_percentage = 1.0  # no pause between slices: its own work is timed
start = [None]
def begin():
    start[0] = (time.perf_counter(), time.process_time())
    crawler.startService()
def check():
    if crawler.get_state().get("last-cycle-finished") is not None:
        print(time.perf_counter() - start[0][0], time.process_time() - start[0][1])
        reactor.stop()
reactor.callWhenRunning(begin)
task.LoopingCall(check).start(0.05, now=False)
reactor.run()
"""


def tahoe_crawler(storage: Path) -> dict[str, Any]:
    """One cycle of Tahoe 1.20's lease crawler (expiration off) over the same files, cold."""
    with tempfile.TemporaryDirectory() as tmp:
        drop_caches()
        answer = subprocess.run(
            [str(TAHOE_PYTHON), "-c", _TAHOE_CRAWL, str(storage), f"{tmp}/state",
             f"{tmp}/history"], check=True, capture_output=True, text=True, timeout=3600)
    wall, cpu = (float(x) for x in answer.stdout.split())
    return {"cycle_s_unthrottled": round(wall, 2), "cpu_s": round(cpu, 2),
            "cycle_s_at_default_rate": round(wall / 0.10, 1), "slow_start_s": 360}


# -- the layout knob


def layout_knob(base: Path, buckets_per_prefix: list[int]) -> dict[str, Any]:
    """Cold lookup and warm delete of bucket directories in one prefix directory of each size."""
    out = {}
    for entries in buckets_per_prefix:
        prefix = base / f"layout-{entries}" / "aa"
        prefix.mkdir(parents=True)
        names = [f"aa{n:024d}" for n in range(entries)]
        for name in names:
            (prefix / name).mkdir()
            (prefix / name / "0").write_bytes(b"x" * 1000)
        rng = random.Random(entries)
        cold, reads = [], []
        for name in rng.sample(names, min(20, entries)):
            drop_caches()
            os.stat(prefix)
            before = disk_reads()[1]
            t = time.perf_counter()
            os.listdir(prefix / name)
            cold.append(time.perf_counter() - t)
            reads.append(disk_reads()[1] - before)
        warm = []
        for name in rng.sample(names, min(200, entries)):
            t = time.perf_counter()
            os.listdir(prefix / name)
            warm.append(time.perf_counter() - t)
        deletes = []
        for name in rng.sample(names, min(200, entries)):
            t = time.perf_counter()
            os.unlink(prefix / name / "0")
            os.rmdir(prefix / name)
            deletes.append(time.perf_counter() - t)
        out[str(entries)] = {"lookup_cold": percentiles(cold),
                             "lookup_cold_disk_reads": statistics.median(reads),
                             "lookup_warm": percentiles(warm), "delete": percentiles(deletes)}
        shutil.rmtree(prefix.parent)
    return out


# -- report


def report(results: dict[str, Any]) -> str:
    lines = [f"file system: {results['file_system']}", ""]
    header = ("shares", "1st start s", "rebuild+GC s", "deleted", "idx start s", "idx GC s",
              "deleted", "list p99 ms (GC)", "/statistics p50", "/storage p50", "index MB")
    lines.append(" | ".join(header))
    for r in results["scales"]:
        first, second = r["first_start"], r["indexed_start"]
        lines.append(" | ".join(str(x) for x in (
            r["shares"], first["node_start_s"], first["from_node_start_s"],
            f"{first['deleted_shares']}/{r['first_gc_deleted_expected']}",
            second["node_start_s"], second["cycle_s"],
            f"{second['deleted_shares']}/{r['indexed_gc_deleted_expected']}",
            first["during"]["list_shares"]["p99_ms"],
            second["at_rest"]["statistics"]["p50_ms"], second["at_rest"]["storage"]["p50_ms"],
            round(r["index_bytes"] / 1e6, 1))))
    lines.append("")
    for r in results["scales"]:
        for control, run in CONTROLS:
            if control in r:
                c = r[control]
                lines.append(f"{r['shares']:>8} {control}: {c['s']} s, {c['files']} files, "
                             f"{c['device_reads']} device reads; {run} cycle "
                             f"{r[run]['cycle_s']} s = {r[run]['cycle_s'] / c['s']:.2f}x")
    lines.append("")
    for r in results["scales"]:
        for name, entry in r["lookups"].items():
            cold = entry.get("cold", {})
            lines.append(f"{r['shares']:>8} {name:<26} warm p50 {entry['warm']['p50_ms']} ms "
                         f"p99 {entry['warm']['p99_ms']} ms; cold p50 {cold.get('p50_ms')} ms, "
                         f"disk reads {entry.get('cold_disk_reads')} "
                         f"(pages {entry.get('cold_pages_read')})")
        if "tahoe_crawler" in r:
            lines.append(f"{r['shares']:>8} Tahoe 1.20 crawler: {r['tahoe_crawler']}")
    lines.append("")
    lines.append(f"layout: {json.dumps(results.get('layout'))}")
    lines.append(f"targets: {json.dumps(results['targets'])}")
    return "\n".join(lines)


def check_targets(results: dict[str, Any]) -> dict[str, Any]:
    by_scale = {r["shares"]: r for r in results["scales"]}
    top, small = by_scale[max(by_scale)], by_scale[min(by_scale)]
    warm_top = top["lookups"]["get_buckets_hit"]["warm"]["p50_ms"]
    warm_small = small["lookups"]["get_buckets_hit"]["warm"]["p50_ms"]
    pages = top["lookups"]["get_buckets_hit"].get("cold_disk_reads", {}).get("p50")
    index_pages = top["lookups"]["index_lookup_hit"].get("cold_disk_reads", {}).get("p50")
    page_ms = max(top["indexed_start"]["at_rest"][name]["p50_ms"]
                  for name in ("statistics", "storage"))
    ratios = {f"{run}_vs_{control}": round(top[run]["cycle_s"] / top[control]["s"], 2)
              for control, run in CONTROLS if control in top}
    return {
        **ratios,
        "scale": top["shares"],
        "first_gc_s": [top["first_start"]["from_node_start_s"], TARGETS["first_gc_s"]],
        "indexed_gc_s": [top["indexed_start"]["cycle_s"], TARGETS["indexed_gc_s"]],
        "get_buckets_warm_ratio": [round(warm_top / warm_small, 2),
                                   TARGETS["get_buckets_warm_ratio"]],
        "get_buckets_cold_disk_reads": [pages, TARGETS["get_buckets_cold_disk_reads"]],
        "index_lookup_cold_disk_reads": [index_pages, TARGETS["get_buckets_cold_disk_reads"]],
        "page_p50_ms": [page_ms, TARGETS["page_ms"]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="10000,100000,1000000")
    parser.add_argument("--json", default="bench-storage.json")
    parser.add_argument("--image", type=Path,
                        default=Path.home() / ".cache" / "tahoe-bench" / "storage.img")
    parser.add_argument("--image-gb", type=int, default=24)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "bench-storage")
    parser.add_argument("--cold-samples", type=int, default=20)
    parser.add_argument("--tahoe-max", type=int, default=100000)
    parser.add_argument("--gc-timeout", type=float, default=1800)
    parser.add_argument("--no-loop", action="store_true",
                        help="use --dir even as root (no loop file system)")
    parser.add_argument("--layout", type=int, nargs="*", default=None,
                        help="bucket directories per prefix to measure (default: the "
                             "largest population's, and ten times that)")
    args = parser.parse_args()
    os.environ["TAHOE_CRAWLER_SLOW_START"] = "0"
    results: dict[str, Any] = {"scales": []}
    with bench_file_system(args.image, args.image_gb, args.dir, loop=not args.no_loop) as (
            base, description):
        results["file_system"] = description
        tool = TahoeTool(our_tahoe(), base / "logs")
        with ProcessSet() as processes:
            for scale in (int(s) for s in args.scales.split(",")):
                print(f"-- {scale} shares", flush=True)
                results["scales"].append(run_scale(base, scale, tool, processes, args))
                print(json.dumps(results["scales"][-1], indent=1), flush=True)
        top = max(results["scales"], key=lambda r: r["shares"])
        per_prefix = top["population"]["buckets"] / 1024 * 1_000_000 / top["shares"]
        sizes = args.layout if args.layout is not None else [round(per_prefix),
                                                             round(per_prefix * 10)]
        results["layout"] = {"buckets_per_prefix_1M": round(per_prefix),
                             "buckets_per_prefix_10M": round(per_prefix * 10),
                             "measured": layout_knob(base, sizes)}
    results["targets"] = check_targets(results)
    Path(args.json).write_text(json.dumps(results, indent=1))
    print(report(results))


if __name__ == "__main__":
    main()

"""The storage crawlers on real share files: bucket counting, lease expiry, resuming, state files.

A ``twisted.internet.task.Clock`` drives time, and the crawlers' prefix work
runs at once on the test's thread (``run_here``), so a cycle runs whole
within one ``clock.advance``. Shares are made by the real
:class:`StorageServer` on a temporary directory, with leases dated by the
same clock. The lease checker's tests run twice: with the share index fresh
(rows read, only expired shares opened) and with it gone (the walk reads
every file and rebuilds the index as it goes).
"""
from __future__ import annotations

import contextlib
import json
import os
import pickle
import subprocess
import threading
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.web.test.requesthelper import DummyRequest

from tahoe.cli.main import run as tahoe
from tahoe.storage import paths
from tahoe.storage.containers import open_container
from tahoe.storage.crawler import BucketCountingCrawler
from tahoe.storage.lease_checker import LeaseCheckingCrawler
from tahoe.storage.disk import open_file
from tahoe.storage.leases import LEASE_DURATION, ExpiryPolicy
from tahoe.storage.server import StorageServer
from tahoe.storage.share_index import ShareIndex
from tahoe.web.storage_status import StorageStatusResource
from tests.shell.storage_support import assert_index_in_step, clock_at, make_server, numbered_si
from tests.support.leased import leased_bucket
from tests.vectors import load

START = 1_750_000_000.0
DAY = 86400


@pytest.fixture
def clock() -> Clock:
    return clock_at(START)


def _si(n: int) -> bytes:
    return numbered_si(n, 37, 1)


def _immutable(server: StorageServer, n: int, renew: bytes = b"r" * 32,
               shnums: frozenset[int] = frozenset({0, 1})) -> bytes:
    si = _si(n)
    _, writers = server.allocate_buckets(si, renew, b"c" * 32, set(shnums), 10)
    for writer in writers.values():
        writer.write(0, b"0123456789")
        writer.close()
    return si


def _mutable(server: StorageServer, n: int) -> bytes:
    si = _si(n)
    secrets = (b"w" * 32, b"m" * 32, b"n" * 32)
    ok, _ = server.slot_testv_and_readv_and_writev(si, secrets, {0: ([], [(0, b"data")], None)}, [])
    assert ok
    return si


def _share_path(root: Path, si: bytes, shnum: int) -> Path:
    return root / paths.share_path(si, shnum)


def _leases(path: Path) -> int:
    with open_file(str(path)) as file:
        return len(open_container(file).leases())


def _run_cycle(crawler: LeaseCheckingCrawler | BucketCountingCrawler, clock: Clock) -> None:
    crawler.start()
    clock.advance(crawler.first_delay())
    assert crawler.state["last-cycle-finished"] == 0
    assert crawler.keeper.fresh
    if isinstance(crawler, LeaseCheckingCrawler):
        # what the walk deleted, trimmed or read is in the index too
        assert_index_in_step(_servers[-1])


_servers: list[StorageServer] = []


@pytest.fixture(params=["indexed", "rebuilding"])
def mode(request: pytest.FixtureRequest) -> str:
    """Whether the lease checker finds the share index fresh or has to rebuild it."""
    return str(request.param)


def _checker(root: Path, clock: Clock, server: StorageServer | None, policy: ExpiryPolicy,
             enabled: bool, mode: str = "indexed", slow_start: float | None = 0,
             cls: type[LeaseCheckingCrawler] = LeaseCheckingCrawler) -> LeaseCheckingCrawler:
    """A lease checker for the server on ``root`` (made here if None); in "rebuilding" mode
    the server is restarted without its index first."""
    if server is None or mode == "rebuilding":
        if server is not None:
            server.close()
        if mode == "rebuilding":
            for path in root.glob("share-index.sqlite*"):
                path.unlink()
        server = make_server(root, clock)
        assert server.index.fresh == (mode == "indexed")
    _servers.append(server)
    return cls(root, clock, server.index, policy, enabled, slow_start=slow_start)


def test_bucket_counter_counts_every_bucket_and_saves_tahoe_keys(root: Path, clock: Clock) -> None:
    """One cycle counts the buckets; the state file holds Tahoe's keys; the next cycle waits an hour."""
    server = make_server(root, clock)
    for n in range(5):
        _immutable(server, n)
    _mutable(server, 9)
    counter = BucketCountingCrawler(root, clock, server.index, slow_start=10)
    _run_cycle(counter, clock)
    assert counter.last_complete_count == 6
    saved = json.loads((root / "bucket_counter.state.json").read_text())
    assert saved["last-complete-bucket-count"] == 6
    assert saved["version"] == 1 and saved["current-cycle"] is None
    assert sum(saved["bucket-counts"]["0"].values()) == 6
    _immutable(server, 6)
    assert counter.last_complete_count == 7  # the fresh index's count is always current
    clock.advance(30 * 60)
    assert counter.state["last-cycle-finished"] == 0  # at most one cycle an hour
    clock.advance(31 * 60)
    assert counter.state["last-cycle-finished"] == 1
    assert sum(counter.state["bucket-counts"]["1"].values()) == 7
    counter.stop()


def test_bucket_counter_without_a_fresh_index_counts_directories(root: Path, clock: Clock) -> None:
    """While the index is being rebuilt, the count is the last cycle's, from the directories."""
    first = make_server(root, clock)
    for n in range(4):
        _immutable(first, n)
    first.close()
    (root / "share-index.sqlite").unlink()
    server = make_server(root, clock)
    assert not server.index.fresh
    counter = BucketCountingCrawler(root, clock, server.index, slow_start=0)
    assert counter.last_complete_count is None
    counter.start()
    clock.advance(0)
    assert counter.last_complete_count == 4 and counter.state["last-cycle-finished"] == 0


def test_lease_checker_expires_leases_and_deletes_unleased_shares(root: Path, clock: Clock,
                                                                  mode: str) -> None:
    """Age mode, enabled: expired shares and their buckets go; a renewed share stays."""
    server = make_server(root, clock)
    old = [_immutable(server, n) for n in range(3)]
    old_slot = _mutable(server, 7)
    clock.advance(20 * DAY)
    renewed = _immutable(server, 4)
    server.add_lease(old[0], b"R" * 32, b"C" * 32)  # a second, newer lease on one share pair
    clock.advance(LEASE_DURATION - 10 * DAY)  # the first leases are now 10 days past expiry
    checker = _checker(root, clock, server, ExpiryPolicy("age"), True, mode, slow_start=5)
    _run_cycle(checker, clock)
    for si in old[1:]:
        assert not (root / paths.as_text(paths.share_dir_parts(si))).exists()
    assert not (root / paths.as_text(paths.share_dir_parts(old_slot))).exists()
    assert _leases(_share_path(root, old[0], 0)) == 1  # the expired lease was removed
    assert _leases(_share_path(root, renewed, 1)) == 1
    history = json.loads((root / "lease_checker.history.json").read_text())
    figures = history["0"]["space-recovered"]
    assert figures["examined-buckets"] == 5 and figures["examined-shares"] == 9
    assert figures["actual-shares"] == 5 and figures["actual-buckets"] == 3
    assert figures["actual-shares-mutable"] == 1 and figures["actual-shares-immutable"] == 4
    assert figures["actual-sharebytes"] > 0
    assert history["0"]["expiration-enabled"] is True
    assert history["0"]["configured-expiration-mode"] == ["age", None, None,
                                                          ["immutable", "mutable"]]
    assert history["0"]["leases-per-share-histogram"] == {"1": 7, "2": 2}
    assert checker.deleted_shares == 5
    assert sum(count for _, _, count in history["0"]["lease-age-histogram"]) == 11


def test_a_full_disk_does_not_stop_the_lease_checker(root: Path, clock: Clock,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """State and history files the disk refuses (ENOSPC): the cycle still expires the old
    shares (what frees the disk) and finishes, and the crawler goes on; once the disk
    takes writes again its state is saved. Before, the first refused save stopped the
    walk for good."""
    import errno

    from tahoe.storage import crawler as crawler_module
    server = make_server(root, clock)
    old = [_immutable(server, n) for n in range(3)]
    clock.advance(LEASE_DURATION + DAY)
    checker = _checker(root, clock, server, ExpiryPolicy("age"), True, slow_start=5)
    checker.save_interval = 0
    real_write = crawler_module.write_atomically

    def full(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(crawler_module, "write_atomically", full)
    _run_cycle(checker, clock)
    for si in old:
        assert not (root / paths.as_text(paths.share_dir_parts(si))).exists()
    assert checker.deleted_shares == 6
    assert not (root / "lease_checker.state.json").exists()
    monkeypatch.setattr(crawler_module, "write_atomically", real_write)
    clock.advance(checker.minimum_cycle_time)
    saved = json.loads((root / "lease_checker.state.json").read_text())
    assert saved["last-cycle-finished"] == 1
    checker.stop()


@contextlib.contextmanager
def _undeletable(path: Path) -> Iterator[None]:
    """The file cannot be deleted, not even by root, while this lasts (ext4's immutable
    attribute)."""
    subprocess.run(["chattr", "+i", str(path)], check=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_share_the_disk_refuses_to_delete_stays_and_stays_indexed(
        root: Path, clock: Clock, mode: str) -> None:
    """A deletion the disk refuses fails that share alone: it stays, its row says what its
    file holds, the other expired shares go, and the next cycle collects it."""
    server = make_server(root, clock)
    stuck, *others = [_immutable(server, n) for n in range(4)]
    clock.advance(LEASE_DURATION + DAY)
    checker = _checker(root, clock, server, ExpiryPolicy("age"), True, mode)
    with _undeletable(_share_path(root, stuck, 0)):
        _run_cycle(checker, clock)
    assert _share_path(root, stuck, 0).exists()
    assert not any((root / paths.share_dir(si)).exists() for si in others)
    assert checker.deleted_shares == 7
    clock.advance(checker.minimum_cycle_time)
    assert checker.state["last-cycle-finished"] == 1
    assert not (root / paths.share_dir(stuck)).exists()
    assert_index_in_step(_servers[-1])


def test_lease_checker_disabled_only_reports(root: Path, clock: Clock, mode: str) -> None:
    """With expire.enabled false nothing is removed, but what the rule would remove is counted."""
    server = make_server(root, clock)
    si = _immutable(server, 1)
    clock.advance(LEASE_DURATION + DAY)
    checker = _checker(root, clock, server, ExpiryPolicy("age"), False, mode)
    _run_cycle(checker, clock)
    assert _leases(_share_path(root, si, 0)) == 1
    figures = checker.history()["0"]["space-recovered"]
    assert figures["configured-shares"] == 2 and figures["original-shares"] == 2
    assert figures["actual-shares"] == 0 and checker.deleted_shares == 0


def test_cutoff_date_and_share_kinds(root: Path, clock: Clock, mode: str) -> None:
    """Cutoff-date mode removes leases granted before the date, only on the kinds allowed."""
    server = make_server(root, clock)
    immutable, slot = _immutable(server, 1), _mutable(server, 2)
    policy = ExpiryPolicy("cutoff-date", cutoff_date=int(START) + DAY, immutable=True,
                          mutable=False)
    checker = _checker(root, clock, server, policy, True, mode)
    _run_cycle(checker, clock)
    assert not _share_path(root, immutable, 0).exists()
    assert _share_path(root, slot, 0).exists()


def test_override_duration_removes_only_old_leases(root: Path, clock: Clock, mode: str) -> None:
    """Age mode with an override: the old lease goes, the share keeps its young one."""
    server = make_server(root, clock)
    si = _immutable(server, 3)
    clock.advance(10 * DAY)
    server.add_lease(si, b"R" * 32, b"C" * 32)
    policy = ExpiryPolicy("age", override_lease_duration=5 * DAY)
    checker = _checker(root, clock, server, policy, True, mode)
    _run_cycle(checker, clock)
    assert _leases(_share_path(root, si, 0)) == 1
    with open_file(str(_share_path(root, si, 0))) as file:
        (lease,) = open_container(file).leases()
    assert lease.owner_num == 1  # the add_lease one survived
    assert checker.history()["0"]["space-recovered"]["actual-shares"] == 0


def test_corrupt_share_is_reported_and_left_alone(root: Path, clock: Clock, mode: str) -> None:
    server = make_server(root, clock)
    si = _immutable(server, 5)
    bad = _share_path(root, si, 7)
    bad.write_bytes(b"not a share container at all")
    server.index.share_changed(si, 7)  # written by hand here: tell the index
    clock.advance(LEASE_DURATION + DAY)
    checker = _checker(root, clock, server, ExpiryPolicy("age"), True, mode)
    _run_cycle(checker, clock)
    assert bad.exists() and not _share_path(root, si, 0).exists()
    assert checker.history()["0"]["corrupt-shares"] == [[paths.storage_index_to_b32(si), 7]]


class _StoppingChecker(LeaseCheckingCrawler):
    """Stops itself once it has examined ``stop_after`` buckets."""

    stop_after = 2

    def apply_prefix(self, cycle, job, result) -> None:  # type: ignore[no-untyped-def]
        super().apply_prefix(cycle, job, result)
        if self.state["cycle-to-date"]["space-recovered"]["examined-buckets"] >= self.stop_after:
            self.stop()


def test_a_stopped_crawler_resumes_where_it_was(root: Path, clock: Clock, mode: str) -> None:
    """Stopped part way, the state on disk says where; a restart skips nothing and repeats
    nothing (and, rebuilding, still reads the prefixes it had done before)."""
    server = make_server(root, clock)
    for n in range(6):  # one bucket in each of six prefixes
        _immutable(server, n)
    first = _checker(root, clock, server, ExpiryPolicy("age"), False, mode, cls=_StoppingChecker)
    first.start()
    clock.advance(0)
    assert first.state["current-cycle"] == 0
    saved = json.loads((root / "lease_checker.state.json").read_text())
    assert saved["current-cycle"] == 0 and saved["last-complete-prefix"] is not None
    assert saved["cycle-to-date"]["space-recovered"]["examined-buckets"] == 2
    server = _servers[-1]
    if mode == "rebuilding":  # the node stops (cleanly, but the index is not complete yet)
        assert not server.index.fresh
        server.close()
        server = make_server(root, clock)
        assert not server.index.fresh
    _servers.append(server)
    second = LeaseCheckingCrawler(root, clock, server.index, ExpiryPolicy("age"), False,
                                  slow_start=0)
    second.start()
    clock.advance(0)
    assert second.state["last-cycle-finished"] == 0
    assert second.history()["0"]["space-recovered"]["examined-buckets"] == 6
    assert server.index.fresh
    assert_index_in_step(server)


def test_unreadable_state_starts_afresh(root: Path, clock: Clock) -> None:
    (root / "lease_checker.state.json").parent.mkdir(parents=True)
    (root / "lease_checker.state.json").write_text('{"version": 7}')
    checker = _checker(root, clock, None, ExpiryPolicy("age"), False)
    _run_cycle(checker, clock)


def test_history_keeps_ten_cycles(root: Path, clock: Clock) -> None:
    checker = _checker(root, clock, None, ExpiryPolicy("age"), False)
    checker.start()
    for _ in range(12):
        clock.advance(checker.minimum_cycle_time)
    assert sorted(map(int, checker.history())) == list(range(2, 12))


def _node(tmp_path: Path) -> Path:
    basedir = tmp_path / "node"
    out, err = StringIO(), StringIO()
    assert tahoe(["create-node", "--hostname=127.0.0.1", str(basedir)], out, err) == 0, err.getvalue()
    return basedir


def test_run_refuses_pickled_state_until_migrated(tmp_path: Path) -> None:
    """``tahoe run`` stops on a pre-1.17 pickle; ``tahoe admin migrate-crawler`` converts it."""
    basedir = _node(tmp_path)
    storage = basedir / "storage"
    storage.mkdir(exist_ok=True)
    old = {"version": 1, "last-cycle-finished": 3, "current-cycle": None,
           "last-complete-prefix": None, "last-complete-bucket": None,
           "cycle-to-date": {"lease-age-histogram": {(0, DAY): 4}, "corrupt-shares": [(b"si", 1)]}}
    (storage / "lease_checker.state").write_bytes(pickle.dumps(old, protocol=2))
    out, err = StringIO(), StringIO()
    assert tahoe(["run", "--allow-stdin-close", str(basedir)], out, err) == 1
    assert "lease_checker.state" in err.getvalue() and "migrate-crawler" in err.getvalue()
    out, err = StringIO(), StringIO()
    assert tahoe(["admin", "migrate-crawler", str(basedir)], out, err) == 0, err.getvalue()
    assert not (storage / "lease_checker.state").exists()
    converted = json.loads((storage / "lease_checker.state.json").read_text())
    assert converted["last-cycle-finished"] == 3
    assert converted["cycle-to-date"] == {"lease-age-histogram": {f"0,{DAY}": 4},
                                          "corrupt-shares": [["si", 1]]}
    out, err = StringIO(), StringIO()
    assert tahoe(["admin", "migrate-crawler", str(basedir)], out, err) == 0
    assert "Nothing to migrate" in out.getvalue()


def test_migrate_refuses_pickles_of_objects(tmp_path: Path) -> None:
    """A pickle naming any class but set/frozenset is refused and left in place."""
    basedir = _node(tmp_path)
    storage = basedir / "storage"
    storage.mkdir(exist_ok=True)
    (storage / "bucket_counter.state").write_bytes(pickle.dumps({"path": Path("/x")}))
    out, err = StringIO(), StringIO()
    assert tahoe(["-d", str(basedir), "admin", "migrate-crawler"], out, err) == 1
    assert "not plain data" in err.getvalue()
    assert (storage / "bucket_counter.state").exists()
    assert not os.path.exists(storage / "bucket_counter.state.json")


def _tahoe_layout(root: Path, vector: dict) -> None:
    """The three buckets of the Tahoe vector, leased at the same times."""
    for n, si_hex in vector["storage_indexes"].items():
        leased_bucket(root, bytes.fromhex(si_hex),
                      vector["granted_young" if n == "3" else "granted_old"])


def test_same_figures_and_deletions_as_tahoe(root: Path, mode: str) -> None:
    """On the layout of the captured Tahoe 1.20 run, our lease checker removes the same
    buckets and records the same history entry (disk-block figures aside, which
    depend on the file system)."""
    vector = load("crawler-state-tahoe120.json")
    _tahoe_layout(root, vector)
    clock = clock_at(vector["written_at"])
    policy = ExpiryPolicy("cutoff-date", cutoff_date=vector["cutoff_date"])
    checker = _checker(root, clock, make_server(root, clock), policy, True, mode)
    _run_cycle(checker, clock)
    left = sorted(p.name for p in (root / "shares").glob("*/*") if any(p.iterdir()))
    assert left == vector["remaining_buckets"]
    ours = checker.history()["0"]
    theirs = vector["files"]["lease_checker.history.json"]["0"]
    for key in ("expiration-enabled", "configured-expiration-mode", "lease-age-histogram",
                "leases-per-share-histogram", "corrupt-shares"):
        assert ours[key] == theirs[key], key
    assert {k: v for k, v in ours["space-recovered"].items() if "diskbytes" not in k} == \
        {k: v for k, v in theirs["space-recovered"].items() if "diskbytes" not in k}


def test_we_resume_from_the_state_tahoe_wrote(root: Path) -> None:
    """State files of a real Tahoe 1.20 node: the cycle numbers go on and its history stays."""
    vector = load("crawler-state-tahoe120.json")
    clock = clock_at(vector["written_at"] + DAY)
    first = make_server(root, clock)
    _immutable(first, 1)
    first.close()
    for name, content in vector["files"].items():
        (root / name).write_text(json.dumps(content))
    tahoe_cycle = vector["files"]["lease_checker.state.json"]["last-cycle-finished"]
    checker = _checker(root, clock, None, ExpiryPolicy("age"), False)
    counter = BucketCountingCrawler(root, clock, checker.keeper, slow_start=0)
    for crawler in (counter, checker):
        crawler.start()
        assert crawler.state["last-cycle-finished"] == \
            vector["files"][crawler.state_name]["last-cycle-finished"]
    clock.advance(0)
    assert checker.state["last-cycle-finished"] == tahoe_cycle + 1
    history = checker.history()
    assert history[str(tahoe_cycle)] == vector["files"]["lease_checker.history.json"][str(tahoe_cycle)]
    assert history[str(tahoe_cycle + 1)]["space-recovered"]["examined-buckets"] == 1
    assert counter.last_complete_count == 1


# -- /storage


def _render_storage(resource: StorageStatusResource, t: str | None = None) -> tuple[int, bytes]:
    request = DummyRequest([b""])
    request.startedWriting = False
    if t is not None:
        request.args[b"t"] = [t.encode()]
    resource.render(request)
    assert request.finished
    return request.responseCode or 200, b"".join(request.written)


def test_storage_page_shows_the_crawlers_as_tahoe_does(root: Path, clock: Clock) -> None:
    server = make_server(root, clock)
    for n in range(3):
        _immutable(server, n)
    counter = BucketCountingCrawler(root, clock, server.index, slow_start=0)
    checker = _checker(root, clock, server, ExpiryPolicy("age"), False)
    for crawler in (counter, checker):
        crawler.start()
    clock.advance(0)

    async def stats() -> dict:
        return {"counters": {}, "stats": {"storage_server.disk_avail": 5, "node.uptime": 1.0,
                                          "storage_server.accepting_immutable_shares": 1}}
    resource = StorageStatusResource(("nick", "v0-abc"), stats, (counter, checker), clock)
    code, body = _render_storage(resource, "json")
    page = json.loads(body)
    assert code == 200
    assert set(page) == {"stats", "bucket-counter", "lease-checker", "lease-checker-progress"}
    assert page["stats"] == {"storage_server.disk_avail": 5,
                             "storage_server.accepting_immutable_shares": 1}
    assert page["bucket-counter"]["last-complete-bucket-count"] == 3
    assert page["lease-checker"]["history"]["0"]["space-recovered"]["examined-buckets"] == 3
    assert "cycle-to-date" not in page["lease-checker"]  # between cycles, as Tahoe
    progress = page["lease-checker-progress"]
    assert progress["cycle-in-progress"] is False
    assert progress["remaining-wait-time"] == pytest.approx(checker.minimum_cycle_time)
    assert progress["estimated-time-per-cycle"] == 0.0
    assert body == (json.dumps(page, indent=1) + "\n").encode()  # Tahoe's text, byte for byte
    _immutable(server, 3)  # the counter's next cycle changes its state in place
    clock.advance(counter.minimum_cycle_time)
    again = _render_storage(resource, "json")[1]
    assert json.loads(again)["bucket-counter"]["last-complete-bucket-count"] == 4
    assert again == (json.dumps(json.loads(again), indent=1) + "\n").encode()
    assert _render_storage(resource, "json")[1] == again
    code, body = _render_storage(resource)
    text = body.decode()
    assert code == 200 and "Storage Server Status" in text and "v0-abc" in text
    assert "6 shares in 3 buckets examined" in text and "expiration disabled" in text
    assert _render_storage(resource, "xml")[0] == 400


def test_storage_page_without_a_storage_server(clock: Clock) -> None:
    async def stats() -> dict:
        return {"counters": {}, "stats": {}}
    code, body = _render_storage(StorageStatusResource(("n", "id"), stats, None, clock), "json")
    assert code == 404 and b"No storage server" in body


def test_only_the_cycles_end_waits_for_the_disk(root: Path, clock: Clock,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The state saved after each prefix during a walk is written and renamed into place
    but not synced (a sync there waits for every change the collection has made); the
    state at the cycle's end, and its history, are synced."""
    server = make_server(root, clock)
    for n in range(6):  # one bucket in each of six prefixes
        _immutable(server, n)
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    checker = _checker(root, clock, server, ExpiryPolicy("age"), False)
    checker.save_interval = 0  # a save after every prefix
    written: list[dict] = []
    save = checker._save

    def counting_save(*args, **kwargs):  # type: ignore[no-untyped-def]
        save(*args, **kwargs)
        written.append(json.loads((root / "lease_checker.state.json").read_text()))

    monkeypatch.setattr(checker, "_save", counting_save)
    _run_cycle(checker, clock)
    assert len(written) == len(paths.all_prefixes()) + 1  # one per prefix, then the end
    assert written[-1]["last-cycle-finished"] == 0
    names = [os.path.basename(path) for path in synced]
    assert sorted(names) == sorted([".lease_checker.history.json.tmp-%d" % os.getpid(),
                                    ".lease_checker.state.json.tmp-%d" % os.getpid()])


def _in_a_thread(function, *args):  # type: ignore[no-untyped-def]
    """A crawler's ``run_in_thread`` that really runs the work in another thread (and waits
    for it, so a cycle still runs whole within one ``clock.advance``)."""
    result: list = []
    worker = threading.Thread(target=lambda: result.append(function(*args)))
    worker.start()
    worker.join()
    return defer.succeed(result[0])


def test_a_rebuild_writes_each_prefix_in_the_worker_thread(
        root: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """A walk rebuilding the index puts each prefix's rows in from the worker thread that
    read them; the reactor thread then only reads again what the server changed meanwhile.
    The running totals come out as the rows' (no count over the table at the end)."""
    server = make_server(root, clock)
    for n in range(5):
        _immutable(server, n)
    clock.advance(LEASE_DURATION + DAY)
    live = _immutable(server, 8)
    main = threading.get_ident()
    writers: list[int] = []
    replace_prefix = ShareIndex.replace_prefix

    def recording(self: ShareIndex, prefix, rows):  # type: ignore[no-untyped-def]
        writers.append(threading.get_ident())
        return replace_prefix(self, prefix, rows)

    monkeypatch.setattr(ShareIndex, "replace_prefix", recording)
    checker = _checker(root, clock, server, ExpiryPolicy("age"), True, "rebuilding")
    monkeypatch.setattr(ShareIndex, "count_totals", None)  # not called from here on
    checker._run_in_thread = _in_a_thread
    _run_cycle(checker, clock)  # (checks the index and its totals against the files)
    assert len(writers) == len(paths.all_prefixes()) and main not in writers
    assert checker.deleted_shares == 10
    assert _servers[-1].index.index.totals.shares == 2
    assert set(_servers[-1].get_buckets(live)) == {0, 1}
    checker.stop()


def test_collection_from_the_index_writes_its_rows_in_the_worker_thread(
        root: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Garbage collection by the index brings the rows of what it deleted or trimmed in step
    in the worker thread that collected (on that thread's own connection), so the reactor
    thread never waits for the index's disk during a cycle; the index ends in step, and a
    share the server changes meanwhile (on the reactor thread) is written there as before."""
    server = make_server(root, clock)
    old = [_immutable(server, n) for n in range(4)]
    clock.advance(20 * DAY)
    kept = _immutable(server, 9)
    server.add_lease(old[0], b"R" * 32, b"C" * 32)  # one old bucket gets a second lease
    clock.advance(LEASE_DURATION - 10 * DAY)
    main = threading.get_ident()
    writers: list[tuple[int, int]] = []  # (thread, connection) of each index update
    update = ShareIndex.update

    def recording_update(self: ShareIndex, keys, read):  # type: ignore[no-untyped-def]
        writers.append((threading.get_ident(), id(self.connection)))
        return update(self, keys, read)

    monkeypatch.setattr(ShareIndex, "update", recording_update)

    checker = LeaseCheckingCrawler(root, clock, server.index, ExpiryPolicy("age"), True,
                                   run_in_thread=_in_a_thread, slow_start=0)
    _servers.append(server)
    _run_cycle(checker, clock)
    assert checker.deleted_shares == 6  # the three old buckets with one lease
    assert writers and all(thread != main for thread, _ in writers)
    assert all(connection != id(server.index.index._db) for _, connection in writers)
    assert set(server.get_buckets(old[0])) == {0, 1}
    assert server.get_buckets(old[1]) == {} and set(server.get_buckets(kept)) == {0, 1}
    writers.clear()
    server.add_lease(kept, b"S" * 32, b"D" * 32)  # the server's own change: its own thread
    assert writers == [(main, id(server.index.index._db))]
    assert_index_in_step(server)
    checker.stop()


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.text(max_size=6) | st.integers(), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(st.lists(_JSON | st.dictionaries(st.text(max_size=6), _JSON, max_size=5),
                min_size=1, max_size=4))
def test_the_storage_pages_json_is_the_standard_librarys_text(values: list) -> None:
    """One part of ``/storage?t=json`` shown several times as it changes (its members
    cached one by one): each time, the text ``json.dumps(document, indent=1)`` gives."""
    from tahoe.web.storage_status import _IndentedPart

    part = _IndentedPart()
    for value in values:
        assert part.text(value) == json.dumps(value, indent=1).replace("\n", "\n ")

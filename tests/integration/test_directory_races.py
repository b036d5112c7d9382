"""Directory reads racing writes of the same directory (issue 25, "mutable reads and writes").

A listing reads the directory's servermap, then fetches whole shares of the
version it chose. When another writer (a second gateway, or the same one's
coalesced batch) publishes a new version in between, the shares fetched are
of the new version. The read must then update its servermap and try again,
not fail with ``NotEnoughShares``, and must not report the replaced shares to
their servers as corrupt. A read-modify-write that loses a race is retried
with the change applied again, and counts as done only once a publish of it
met no conflict, so no entry is lost.

Against the session's local grid of ten storage servers behind proxies, with
a second gateway on the same servers, so writers on two nodes race each
other, not only batches coalesced in one node; and on five storage servers in
this process, where another client's write lands at a set point of a read or
a modify (the retry itself, deterministically).
"""
from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from twisted.internet import reactor

from tahoe.caps.dirnode import DirectoryCap
from tahoe.caps.mutable import SSKWriteCap
from tahoe.caps.parse import parse_cap
from tahoe.client.broker import StorageBroker
from tahoe.client.mapupdate import Probe
from tahoe.client.mutable import MutableClient, MutableFileNode
from tahoe.crypto.lease_secrets import ClientLeaseSecrets
from tahoe.mutable.errors import UnrecoverableFile
from tahoe.mutable.servermap import ServerMap
from tahoe.storage.paths import storage_index_to_b32
from tests.integration.conftest import DEFAULT_SHARES
from tests.integration.storage_fixtures import (StoragePair, connected_broker, start_pair,
                                                stop_pair)
from tests.support.dirapi import Response, WebAPI
from tests.support.nodes import TahoeTool, our_tahoe
from tests.support.processes import ProcessSet
from tests.support.proxied_grid import ProxiedGrid, start_static_client
from tests.support.reliability import fault_run, runs

FAULT_CLASS = "directory reads racing writes"
#: Children a directory starts with: enough that its shares outgrow the servermap's
#: 4000-byte probe (a gateway that has read it once then reads whole shares in its
#: servermap update), and enough that they outgrow that too (64 KiB), so every listing
#: reads them again in a second call: the race window of the issue.
BASE_CHILDREN = {"whole shares in the probe": 60, "shares read again": 700}


@pytest.fixture(scope="module")
def gateways(local_grid: ProxiedGrid, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[WebAPI, WebAPI]]:
    """The local grid's gateway and a second one on the same servers (stopped by PID)."""
    workdir = tmp_path_factory.mktemp("race-gateway")
    with ProcessSet() as processes:
        second = start_static_client(TahoeTool(our_tahoe(), workdir / "logs"),
                                     workdir / "client", processes, local_grid.servers,
                                     shares=DEFAULT_SHARES)
        yield WebAPI(local_grid.client.url), WebAPI(second.url)


def advisories(grid: ProxiedGrid, dircap: str) -> list[str]:
    """Corruption advisories any storage node holds for the directory's storage index."""
    cap = parse_cap(dircap)
    assert isinstance(cap, DirectoryCap)
    si = storage_index_to_b32(cap.file_cap.storage_index)
    return [p.name for node in grid.storage_nodes
            for p in (Path(node.node.basedir) / "storage" / "corruption-advisories").glob("*")
            if p.name.endswith(tuple(f"--{si}-{n}" for n in range(256)))]


def populated_directory(api: WebAPI, count: int) -> tuple[str, set[str]]:
    """A new directory holding ``count`` links (to one subdirectory), made in one change."""
    root = api.mkdir()
    sub = api.mkdir()
    names = {f"base-{i:03d}" for i in range(count)}
    body = json.dumps({name: ["dirnode", {"rw_uri": sub}] for name in names}).encode()
    api.ok("POST", api.object_path(root) + "?t=set_children", body)
    return root, names


def mkdir(api: WebAPI, parent: str, name: str) -> Response:
    """``POST /uri/$PARENT?t=mkdir&name=NAME``."""
    return api.post(parent, "", f"t=mkdir&name={name}")


@pytest.mark.parametrize("run_number", range(runs(1)))
@pytest.mark.parametrize("size", list(BASE_CHILDREN))
def test_listings_never_fail_while_two_gateways_write(local_grid: ProxiedGrid,
                                                      gateways: tuple[WebAPI, WebAPI],
                                                      size: str, run_number: int) -> None:
    """Listings through both gateways while both make children in the directory: every
    listing succeeds and holds the entries made before it began; every child is there at
    the end; no share is reported corrupt."""
    first, second = gateways
    with fault_run(FAULT_CLASS) as run:
        root, base = populated_directory(first, BASE_CHILDREN[size])
        made = {f"child-{i:03d}" for i in range(30)}
        done = threading.Event()
        failures: list[tuple[int, str]] = []
        listings = [0]

        def reader(api: WebAPI) -> None:
            while not done.is_set():
                answer = api.get(root, "", "t=json")
                if answer.status != 200:
                    failures.append((answer.status, answer.text[:500]))
                    continue
                names = set(answer.json()[1]["children"])
                if not base <= names:
                    failures.append((200, f"lost {sorted(base - names)[:5]}"))
                listings[0] += 1
                run.checked(answer.body)

        with ThreadPoolExecutor(max_workers=6) as readers, \
                ThreadPoolExecutor(max_workers=16) as writers:
            reading = [readers.submit(reader, api) for api in (first, second) * 3]
            answers = list(writers.map(
                lambda item: mkdir(gateways[item[0] % 2], root, item[1]),
                enumerate(sorted(made))))
            done.set()
            for future in reading:
                future.result()
        assert failures == []
        assert [(a.status, a.text[:300]) for a in answers if a.status != 200] == []
        assert listings[0] >= 6
        for api in gateways:
            assert set(api.children(root)) == base | made
        assert advisories(local_grid, root) == []


@pytest.mark.parametrize("run_number", range(runs(1)))
def test_256_directories_made_in_parallel_through_two_gateways(
        local_grid: ProxiedGrid, gateways: tuple[WebAPI, WebAPI], run_number: int) -> None:
    """restic's ``data/00`` .. ``data/ff``: 256 mkdirs at once in one parent, half through
    each gateway. All succeed and all 256 are listed afterwards."""
    with fault_run(FAULT_CLASS) as run:
        parent = gateways[0].mkdir()
        names = [f"{i:02x}" for i in range(256)]
        with ThreadPoolExecutor(max_workers=32) as pool:
            answers = list(pool.map(lambda i: mkdir(gateways[i % 2], parent, names[i]),
                                    range(256)))
        assert [(n, a.status, a.text[:300]) for n, a in zip(names, answers)
                if a.status != 200] == []
        for api in gateways:
            children = api.children(parent)
            missing = sorted(set(names) - set(children))
            assert missing == [], (api.url, missing, [api.children(parent).keys() >= set(names)
                                                      for api in gateways])
            assert sorted(children) == names
            assert {kind for kind, _ in children.values()} == {"dirnode"}
            run.checked(len(json.dumps(children)))
        assert {children[n][1]["rw_uri"] for n in names} == {a.text for a in answers}
        assert advisories(local_grid, parent) == []


# -- the retrieve's retry, on in-process storage servers over Foolscap, with the rival
# writes landing at set points of a read or a modify


Rival = Callable[[], Awaitable[Any]]


class RacedNode(MutableFileNode):
    """A mutable file node of one client where another client's writes land at set points:
    ``after_survey[i]`` right after the i-th servermap update (before any share is fetched),
    ``before_keys[i]`` at the i-th time the private key is wanted (after the read)."""

    def __init__(self, client: MutableClient, cap: Any) -> None:
        super().__init__(client, cap)
        self.after_survey: list[Rival] = []
        self.before_keys: list[Rival] = []
        self.surveys = 0

    async def _servermap(self, want_private_key: bool) -> tuple[ServerMap, Probe]:
        result = await super()._servermap(want_private_key)
        self.surveys += 1
        if self.after_survey:
            await self.after_survey.pop(0)()
        return result

    async def _keys(self, smap: ServerMap, probe: Probe) -> Any:
        if self.before_keys:
            await self.before_keys.pop(0)()
        return await super()._keys(smap, probe)


class NarrowBroker:
    """The broker, except that once ``limit`` is set, new shares may go to the first
    ``limit`` servers of the ring only: set between a client's read and its publish, the
    publish reaches those servers only."""

    def __init__(self, broker: StorageBroker) -> None:
        self._broker = broker
        self.limit: int | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._broker, name)

    def upload_candidates(self, storage_index: bytes) -> list[Any]:
        return self._broker.upload_candidates(storage_index)[:self.limit]


class SmallGrid:
    """Five storage servers in this process, and three clients (3-of-5) of them."""

    def __init__(self, pairs: list[StoragePair], writer: MutableClient,
                 reader: MutableClient, narrow: MutableClient) -> None:
        self.pairs = pairs
        self.writer = writer
        self.reader = reader
        self.narrow = narrow

    def advisories(self) -> list[str]:
        """Every corruption advisory the servers hold."""
        return [p.name for pair in self.pairs
                for p in (pair.storage_dir / "corruption-advisories").glob("*")]


@pytest_twisted.async_yield_fixture(scope="module")
async def small_grid(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SmallGrid]:
    """Five in-process storage servers and a broker connected to all of them."""
    workdir = tmp_path_factory.mktemp("small-grid")
    pairs = [await start_pair(workdir / f"storage{i}") for i in range(5)]
    tub, broker = await connected_broker(pairs)
    try:
        writer, reader, narrow = [
            MutableClient(kind, ClientLeaseSecrets.from_lease_secret(secret), 3, 5, reactor)
            for kind, secret in ((broker, b"w" * 32), (broker, b"r" * 32),
                                 (NarrowBroker(broker), b"n" * 32))]
        yield SmallGrid(pairs, writer, reader, narrow)
    finally:
        await tub.stopService()
        for pair in pairs:
            await stop_pair(pair)


def lines(count: int, tag: str) -> bytes:
    """``count`` numbered lines: 30 kB makes shares of 10 kB, past the 4000-byte probe."""
    return b"".join(f"{tag} {i:05d} {'.' * 50}\n".encode() for i in range(count))


@pytest_twisted.ensureDeferred
async def test_a_read_whose_version_is_replaced_updates_its_servermap(
        small_grid: SmallGrid) -> None:
    """Between the reader's servermap update and its fetch, another client publishes: every
    share the reader fetches holds the new version. It reads again (the new contents) and
    reports none of those shares corrupt. Before: NotEnoughShares, found 0."""
    with fault_run(FAULT_CLASS) as run:
        cap = await small_grid.writer.create(lines(500, "first"))
        assert isinstance(cap, SSKWriteCap)
        writer = small_grid.writer.open(cap)
        reader = RacedNode(small_grid.reader, cap.readonly())
        reader.after_survey.append(lambda: writer.overwrite(lines(520, "second")))
        assert await reader.read() == lines(520, "second")
        run.checked(lines(520, "second"))
        assert reader.surveys == 2
        assert small_grid.advisories() == []


@pytest.mark.parametrize("races", [("read",), ("write",), ("read", "write")])
@pytest_twisted.ensureDeferred
async def test_a_modify_raced_at_its_read_and_its_write_loses_nothing(
        small_grid: SmallGrid, races: tuple[str, ...]) -> None:
    """A modify through a client without the file's key in hand. A rival write lands
    between its servermap update and its fetch ("read"), or after its read ("write"),
    which moves the encrypted private key it still has to read and makes its publish
    lose. The modify reads again, finds the key where it moved, applies its change again
    after a lost test-and-set, and wins: every change is there, no share reported
    corrupt. Before: NotEnoughShares ("read"); "bad private key" reported for every
    share, then no usable key ("write")."""
    with fault_run(FAULT_CLASS) as run:
        cap = await small_grid.writer.create(lines(500, "base"))
        writer = small_grid.writer.open(cap)

        def append(tag: str) -> Rival:
            return lambda: writer.modify(lambda old, first: old + lines(10, tag))

        racer = RacedNode(small_grid.reader, cap)
        expected = lines(500, "base")
        if "read" in races:
            racer.after_survey.append(append("w1"))
            expected += lines(10, "w1")
        if "write" in races:
            racer.before_keys.append(append("w2"))
            expected += lines(10, "w2")
        expected += lines(10, "mine")
        calls: list[bool] = []

        def mine(old: bytes, first: bool) -> bytes:
            calls.append(first)
            return old + lines(10, "mine")

        assert await racer.modify(mine) == expected
        # applied again after a lost test-and-set only
        assert calls == ([True, False] if "write" in races else [True])
        assert racer.surveys == 1 + len(races)
        assert await small_grid.writer.open(cap).read() == expected
        run.checked(expected)
        assert small_grid.advisories() == []


@pytest_twisted.ensureDeferred
async def test_a_modify_whose_lost_publish_won_applies_its_change_once(
        small_grid: SmallGrid) -> None:
    """A rival publishes to two servers of five only (its own publish then fails), after
    our read. Our publish wins on the other three and loses on those two: an uncoordinated
    write, yet our contents are the best version. The retry reads them back and publishes
    them again, without applying the change again. Before: the modifier ran twice (an
    append twice)."""
    with fault_run(FAULT_CLASS) as run:
        cap = await small_grid.writer.create(lines(500, "base"))
        narrow = small_grid.narrow.broker
        assert isinstance(narrow, NarrowBroker)
        narrow.limit = None
        rival = RacedNode(small_grid.narrow, cap)

        async def narrowed() -> None:
            narrow.limit = 2
        rival.before_keys.append(narrowed)

        async def rival_write() -> None:
            with pytest.raises(UnrecoverableFile, match="only 2 shares could be written"):
                await rival.modify(lambda old, first: old + lines(10, "rival"))
            narrow.limit = None

        ours = RacedNode(small_grid.reader, cap)
        ours.before_keys.append(rival_write)
        calls: list[bool] = []

        def mine(old: bytes, first: bool) -> bytes:
            calls.append(first)
            return old + lines(10, "mine")

        expected = lines(500, "base") + lines(10, "mine")
        assert await ours.modify(mine) == expected
        assert calls == [True]
        assert ours.surveys == 2
        assert await small_grid.writer.open(cap).read() == expected
        run.checked(expected)
        assert small_grid.advisories() == []


@pytest_twisted.ensureDeferred
async def test_a_modify_from_what_this_node_wrote_last_loses_no_rival_write(
        small_grid: SmallGrid) -> None:
    """A node's next modify starts from what its last publish wrote, without a servermap
    update. When nothing came between, that is all; when a rival wrote in between, the
    test-and-set fails and the change is applied again on a read of the rival's version;
    and a change that finds nothing to do in what this node wrote is tried again on a read
    (no publish would confirm that what it wrote is still there)."""
    with fault_run(FAULT_CLASS) as run:
        cap = await small_grid.writer.create(lines(500, "base"))
        ours = RacedNode(small_grid.reader, cap)
        rival = small_grid.writer.open(cap)
        calls: list[tuple[str, bool]] = []

        def append(tag: str) -> Callable[[bytes, bool], bytes]:
            def change(old: bytes, first: bool) -> bytes:
                calls.append((tag, first))
                return old + lines(10, tag)
            return change

        expected = lines(500, "base") + lines(10, "a")
        assert await ours.modify(append("a")) == expected
        expected += lines(10, "b")
        assert await ours.modify(append("b")) == expected
        assert ours.surveys == 1  # the second started from what the first wrote

        await rival.modify(lambda old, first: old + lines(10, "rival"))
        expected += lines(10, "rival") + lines(10, "c")
        calls.clear()
        assert await ours.modify(append("c")) == expected
        assert calls == [("c", True), ("c", False)]  # lost on what it wrote, then read
        assert ours.surveys == 2

        await rival.modify(lambda old, first: old + lines(10, "later"))
        expected += lines(10, "later")
        seen: list[bool] = []

        def after_later(old: bytes, first: bool) -> bytes | None:
            seen.append(old.endswith(lines(10, "later")))
            return old + lines(10, "d") if seen[-1] else None
        expected += lines(10, "d")
        assert await ours.modify(after_later) == expected
        assert seen == [False, True] and ours.surveys == 3
        assert await small_grid.writer.open(cap).read() == expected
        run.checked(expected)
        assert small_grid.advisories() == []

"""A storage server (``tahoe run``, its own process) SIGKILLed at seeded points of a workload.

Each run drives a seeded mix of immutable uploads (allocate, writes, close),
mutable test-and-set writes (each version replaces the whole slot with bytes
that name the version) and lease renewals over real Foolscap, sends the
calls of one operation without waiting for their answers, kills the server
with SIGKILL a seeded moment later, restarts it, and checks
(``reference/storage-protocol.md`` §2-§5):

* every share whose close was answered reads back intact, and a share whose
  close was in flight is either absent or intact, never partial;
* nothing is left under ``shares/incoming``;
* a mutable slot holds the last answered version or the one in flight,
  byte for byte, never a mix;
* lease records of answered renewals are on disk, and every share file
  still parses.

``make test`` runs a few seeds; ``make test-faults`` many more
(``$TAHOE_FAULT_RUNS``).
"""
from __future__ import annotations

import os
import random
import signal
import struct
import time
from pathlib import Path
from typing import Any

import attrs
import pytest_twisted
from foolscap.api import Referenceable, Tub
from twisted.internet.defer import Deferred

from tahoe.storage.disk import open_file
from tahoe.storage.immutable_container import ImmutableContainer
from tahoe.storage.leases import renew_secret_matches
from tahoe.storage.mutable_container import MutableContainer
from tahoe.storage.paths import share_path
from tests.integration.storage_fixtures import new_tub
from tests.integration.test_node_processes import connect, disconnected, tool  # noqa: F401
from tests.support.nodes import RunningNode, TahoeTool
from tests.support.ournodes import create_storage_node, incoming_files, start_node, storage_furl
from tests.support.processes import ProcessSet, wait_until
from tests.support.reliability import FaultRun, fault_run, seeds

CANCEL = b"c" * 32
WE = b"w" * 32
CHUNK = 40_000
OPERATIONS = 6


def version_bytes(version: int, size: int) -> bytes:
    """Version ``version`` of a slot: its number, then a fill byte that also names it."""
    return struct.pack(">Q", version) + bytes([version % 251 + 1]) * (size - 8)


@attrs.define
class Expectations:
    """What the server answered before the kill, and what was in flight."""

    closed: dict[tuple[bytes, int], bytes] = attrs.Factory(dict)
    in_flight: dict[tuple[bytes, int], bytes] = attrs.Factory(dict)
    slot_versions: dict[bytes, list[bytes]] = attrs.Factory(dict)  # answered, then in flight
    renewed: list[tuple[bytes, bytes]] = attrs.Factory(list)


def _quiet(d: Deferred) -> Deferred:
    """An in-flight call: its failure (the server died) is expected."""
    return d.addErrback(lambda _: None)


async def _immutable(rref: Any, rng: random.Random, expect: Expectations, wait: bool) -> None:
    si = rng.randbytes(16)
    size = rng.randint(1, 200_000)
    shares = {n: rng.randbytes(size) for n in range(rng.randint(1, 3))}
    _, writers = await rref.callRemote("allocate_buckets", si, rng.randbytes(32), CANCEL,
                                       set(shares), size, Referenceable())
    calls = []
    for shnum, data in shares.items():
        for offset in range(0, size, CHUNK):
            calls.append(writers[shnum].callRemote("write", offset, data[offset:offset + CHUNK]))
        calls.append(writers[shnum].callRemote("close"))
    if wait:
        for call in calls:
            await call
        expect.closed.update({(si, n): data for n, data in shares.items()})
    else:
        for call in calls:
            _quiet(call)
        expect.in_flight.update({(si, n): data for n, data in shares.items()})


async def _mutable(rref: Any, rng: random.Random, expect: Expectations, slot: bytes,
                   wait: bool) -> None:
    versions = expect.slot_versions.setdefault(slot, [])
    new = version_bytes(len(versions) + 1, rng.randint(16, 300_000))
    test = [(0, 8, b"eq", versions[-1][:8])] if versions else []
    d = rref.callRemote("slot_testv_and_readv_and_writev", slot, (WE, b"r" * 32, CANCEL),
                        {0: (test, [(0, new)], len(new))}, [])
    versions.append(new)
    if wait:
        ok, _ = await d
        assert ok
    else:
        _quiet(d)


async def _lease(rref: Any, rng: random.Random, expect: Expectations, wait: bool) -> None:
    if not expect.closed:
        return
    si, _ = rng.choice(sorted(expect.closed))
    secret = rng.randbytes(32)
    d = rref.callRemote("add_lease", si, secret, CANCEL)
    if wait:
        await d
        expect.renewed.append((si, secret))
    else:
        _quiet(d)


async def workload(rref: Any, rng: random.Random, kill_at: int) -> Expectations:
    """Run operations up to ``kill_at`` (answered), then send that one without waiting."""
    expect = Expectations()
    slots = [rng.randbytes(16) for _ in range(2)]
    for index in range(kill_at + 1):
        wait = index < kill_at
        kind = rng.choice(["immutable", "mutable", "mutable", "lease"])
        if kind == "immutable" or (kind == "lease" and not expect.closed):
            await _immutable(rref, rng, expect, wait)
        elif kind == "mutable":
            await _mutable(rref, rng, expect, rng.choice(slots), wait)
        else:
            await _lease(rref, rng, expect, wait)
    return expect


async def _sleep(seconds: float) -> None:
    from twisted.internet import reactor
    from twisted.internet.task import deferLater
    await deferLater(reactor, seconds, lambda: None)


def _kill(node: RunningNode) -> None:
    os.kill(node.process.pid, signal.SIGKILL)
    wait_until(lambda: node.process.returncode is not None, 30, "the killed node to exit")


async def check_after_restart(rref: Any, storage: Path, expect: Expectations,
                              run: FaultRun) -> None:
    """The promises of the module docstring, on the restarted server."""
    assert incoming_files(storage) == []
    by_si: dict[bytes, dict[int, bytes]] = {}
    for (si, shnum), data in {**expect.in_flight, **expect.closed}.items():
        by_si.setdefault(si, {})[shnum] = data
    for si, shares in by_si.items():
        readers = await rref.callRemote("get_buckets", si)
        for shnum, data in shares.items():
            if (si, shnum) in expect.closed:
                assert shnum in readers, f"closed share {shnum} of {si.hex()} lost"
            if shnum in readers:
                got = await readers[shnum].callRemote("read", 0, len(data) + 1)
                assert got == data, f"share {shnum} of {si.hex()}: {len(got)} bytes, not intact"
                run.checked(got)
    for slot, versions in expect.slot_versions.items():
        answer = await rref.callRemote("slot_readv", slot, [], [(0, 400_000)])
        if not answer:
            assert len(versions) == 1, "an answered slot write is gone"
            continue
        got = answer[0][0]
        assert got in versions[-2:], (
            f"slot {slot.hex()} holds {len(got)} bytes of version "
            f"{struct.unpack('>Q', got[:8])[0] if len(got) >= 8 else '?'}, "
            f"not version {len(versions) - 1} or {len(versions)} whole")
        run.checked(got)
        with open_file(str(storage / share_path(slot, 0))) as file:
            MutableContainer.open(file).leases()
    for si, secret in expect.renewed:
        for shnum in range(3):
            path = storage / share_path(si, shnum)
            if path.exists():
                with open_file(str(path)) as file:
                    container = ImmutableContainer.open(file)
                    assert any(renew_secret_matches(lease, secret, container.hashed)
                               for lease in container.leases())


@pytest_twisted.ensureDeferred
async def test_sigkill_schedules(tool: TahoeTool, tmp_path: Path,  # noqa: F811
                                 processes: ProcessSet) -> None:
    """Seeded workloads cut by SIGKILL: closed shares intact, incomplete ones gone, every
    mutable slot one whole version, leases kept."""
    basedir = create_storage_node(tool, tmp_path / "server", reserved_space="1M")
    node = start_node(tool, basedir, processes).node
    furl = storage_furl(basedir)
    client: Tub = new_tub()
    try:
        for seed in seeds(2, base=1300):
            rng = random.Random(seed)
            with fault_run("storage server SIGKILL mid-write/lease/test-and-set") as run:
                rref = await connect(client, furl)
                lost = disconnected(rref)
                expect = await workload(rref, rng, kill_at=rng.randrange(1, OPERATIONS))
                await _sleep(rng.uniform(0.0, 0.05))
                _kill(node)
                await lost
                started = time.monotonic()
                node = start_node(tool, basedir, processes).node
                rref = await connect(client, furl)
                run.recovered(time.monotonic() - started)
                await check_after_restart(rref, basedir / "storage", expect, run)
    finally:
        await client.stopService()

"""A storage server whose clock jumps (an injected ``task.Clock``), over real Foolscap.

Leases are time-based (``reference/storage-protocol.md`` §5): a jump back must
not shorten a lease already granted, a jump forward must not break
allocation, and expiry follows the clock.  Found by this test and fixed: with
the clock past early 2106 (2**32 - 31 days), every allocation failed, because
the lease's 4-byte expiration overflowed (``expiration_for`` now clamps).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest_twisted
from foolscap.api import Referenceable
from twisted.internet.task import Clock

from tahoe.storage.disk import open_file
from tahoe.storage.immutable_container import ImmutableContainer
from tahoe.storage.leases import LEASE_DURATION, MAX_EXPIRATION, ExpiryPolicy, Lease
from tahoe.storage.mutable_container import MutableContainer
from tahoe.storage.paths import share_path
from tests.integration.storage_fixtures import StoragePair, start_pair, stop_pair
from tests.support.reliability import fault_run, record_limit

T0 = 1_700_000_000
RENEW, CANCEL, WE = b"r" * 32, b"c" * 32, b"w" * 32


def leases_on_disk(pair: StoragePair, storage_index: bytes, shnum: int,
                   mutable: bool = False) -> list[Lease]:
    """The lease records of a share file, read from disk."""
    path = pair.storage_dir / share_path(storage_index, shnum)
    kind: Any = MutableContainer if mutable else ImmutableContainer
    with open_file(str(path)) as file:
        return list(kind.open(file).leases())


async def store(pair: StoragePair, storage_index: bytes, data: bytes) -> None:
    """Allocate, write and close share 0."""
    _, writers = await pair.rref.callRemote("allocate_buckets", storage_index, RENEW, CANCEL,
                                            {0}, len(data), Referenceable())
    await writers[0].callRemote("write", 0, data)
    await writers[0].callRemote("close")


@pytest_twisted.ensureDeferred
async def test_leases_follow_a_jumping_clock(tmp_path: Path) -> None:
    """Back ten years, then forward past 2106: leases never shrink, allocation keeps working,
    expiry follows the clock."""
    clock = Clock()
    clock.advance(T0)
    pair = await start_pair(tmp_path / "storage", clock=clock)
    try:
        with fault_run("clock jumps (injected clock)") as run:
            await store(pair, b"A" * 16, b"a" * 1000)
            (lease,) = leases_on_disk(pair, b"A" * 16, 0)
            assert lease.expiration == T0 + LEASE_DURATION

            clock.advance(-10 * 365 * 86400)  # back ten years
            await pair.rref.callRemote("add_lease", b"A" * 16, RENEW, CANCEL)
            assert leases_on_disk(pair, b"A" * 16, 0) == [lease]  # not shortened
            await store(pair, b"B" * 16, b"b" * 1000)
            assert leases_on_disk(pair, b"B" * 16, 0)[0].expiration == \
                clock.seconds() + LEASE_DURATION

            clock.advance(2 ** 32 + 10 ** 6 - clock.seconds())  # past early 2106
            await store(pair, b"C" * 16, b"c" * 1000)
            assert leases_on_disk(pair, b"C" * 16, 0)[0].expiration == MAX_EXPIRATION
            await pair.rref.callRemote("add_lease", b"A" * 16, RENEW, CANCEL)
            assert leases_on_disk(pair, b"A" * 16, 0)[0].expiration == MAX_EXPIRATION
            ok, _ = await pair.rref.callRemote("slot_testv_and_readv_and_writev", b"M" * 16,
                                               (WE, RENEW, CANCEL),
                                               {0: ([], [(0, b"mutable")], None)}, [])
            assert ok
            assert leases_on_disk(pair, b"M" * 16, 0, mutable=True)[0].expiration == \
                MAX_EXPIRATION
            for storage_index, letter in ((b"A" * 16, b"a"), (b"B" * 16, b"b"),
                                          (b"C" * 16, b"c")):
                readers = await pair.rref.callRemote("get_buckets", storage_index)
                assert await readers[0].callRemote("read", 0, 2000) == letter * 1000
                run.checked(1000)

            policy = ExpiryPolicy("age")
            assert not policy.lease_expired(lease, T0)
            assert policy.lease_expired(lease, T0 + LEASE_DURATION + 1)
            assert not policy.lease_expired(lease, T0 - 10 * 365 * 86400)
        record_limit("lease expiration", f"granted time + 31 days, at most {MAX_EXPIRATION} "
                                         "(2**32 - 1, early 2106)")
    finally:
        await stop_pair(pair)

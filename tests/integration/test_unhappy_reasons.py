"""An upload that cannot reach happiness says why: servers without room, servers that
refused the shares they were asked for.

In-process: real storage servers over Foolscap on 127.0.0.1 whose free space the test
sets, a broker and an uploader (1-of-2, happiness 2).
"""
from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet import reactor

from tahoe.client.errors import UploadUnhappinessError
from tahoe.client.uploadable import BytesUploadable
from tahoe.client.uploader import Uploader
from tahoe.crypto.lease_secrets import ClientLeaseSecrets
from tahoe.immutable.params import EncodingParameters
from tests.integration.storage_fixtures import (StoragePair, connected_broker, start_pair,
                                                stop_pair)

PARAMS = EncodingParameters(needed=1, happy=2, total=2)


class _Disk:
    """Free space as the test says."""

    def __init__(self, free: int) -> None:
        self.free = free

    def __call__(self, path: str) -> int:
        return self.free


@pytest_twisted.async_yield_fixture
async def grid(tmp_path: Path) -> AsyncIterator[tuple[Uploader, list[_Disk], list[StoragePair]]]:
    """Two storage servers (the first with room, the second full from the start) and an
    uploader connected to both."""
    disks = [_Disk(10**9), _Disk(0)]
    pairs = [await start_pair(tmp_path / f"storage{i}", disk_stats=disk)
             for i, disk in enumerate(disks)]
    tub, broker = await connected_broker(pairs)
    try:
        yield (Uploader(broker, ClientLeaseSecrets.from_lease_secret(b"s" * 32), b"c" * 32,
                        PARAMS, reactor), disks, pairs)
    finally:
        await tub.stopService()
        for pair in pairs:
            await stop_pair(pair)


@pytest_twisted.ensureDeferred
async def test_servers_without_room_are_named_as_such(grid: tuple) -> None:
    """A server that said it has no room is not asked, and the error counts it."""
    uploader, _, _ = grid
    with pytest.raises(UploadUnhappinessError) as error:
        await uploader.upload(BytesUploadable(os.urandom(5000)))
    assert "could only be placed on 1 servers (of 2 known)" in str(error.value)
    assert re.search(r"requires 2: 1 with no room for a share of 5,\d{3} bytes \(full or"
                     r" read-only\)\Z", str(error.value))


@pytest_twisted.ensureDeferred
async def test_servers_that_refuse_shares_are_counted(grid: tuple) -> None:
    """A server that had room when the client learnt of it, and has none when asked,
    refuses the shares: the error says so."""
    uploader, disks, pairs = grid
    broker = uploader._broker  # noqa: SLF001 (the client's view of the servers)
    disks[1].free = 10**9
    for handle in broker.servers.values():  # as a client that asked when both had room
        handle.version = await handle.storage.get_version()
    disks[0].free = 0
    with pytest.raises(UploadUnhappinessError) as error:
        await uploader.upload(BytesUploadable(os.urandom(5000)))
    assert "1 server refused shares (no room left, read-only, or busy" in str(error.value)
    for pair in pairs:  # no partial share left (a whole one stays, as in Tahoe)
        assert not [p for p in (pair.storage_dir / "shares" / "incoming").rglob("*")
                    if p.is_file()]

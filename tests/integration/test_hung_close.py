"""An upload whose closes one server never answers completes on the others.

In-process: three real storage servers over Foolscap on 127.0.0.1 and an uploader
(1-of-3, happiness 2). The third server takes its share's writes, then never answers
``close`` (a server hung at that moment; Foolscap has no answer timeout, so the upload
waited for ever). The upload now gives up on it 5 s without progress after, since it is
happy without it, and the share map leaves it out.
"""
from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from twisted.internet import reactor
from twisted.internet.defer import Deferred

from tahoe.client.stragglers import STRAGGLER_GRACE
from tahoe.client.uploadable import BytesUploadable
from tahoe.client.uploader import Uploader
from tahoe.crypto.lease_secrets import ClientLeaseSecrets
from tahoe.immutable.params import EncodingParameters
from tahoe.storage.rpc import BucketWriterRPC
from tests.integration.storage_fixtures import (StoragePair, connected_broker, start_pair,
                                                stop_pair)

PARAMS = EncodingParameters(needed=1, happy=2, total=3)


@pytest_twisted.async_yield_fixture
async def grid(tmp_path: Path) -> AsyncIterator[tuple[Uploader, list[StoragePair]]]:
    pairs = [await start_pair(tmp_path / f"storage{i}") for i in range(3)]
    tub, broker = await connected_broker(pairs)
    try:
        yield (Uploader(broker, ClientLeaseSecrets.from_lease_secret(b"s" * 32), b"c" * 32,
                        PARAMS, reactor), pairs)
    finally:
        await tub.stopService()
        for pair in pairs:
            await stop_pair(pair)


@pytest_twisted.ensureDeferred
async def test_a_close_never_answered_is_given_up(grid: tuple,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    uploader, pairs = grid
    hung_dir = str(pairs[2].storage_dir)
    held: list[Deferred] = []
    close = BucketWriterRPC.remote_close

    def hung_close(self: BucketWriterRPC) -> Any:
        if str(self._writer._incoming).startswith(hung_dir):  # noqa: SLF001
            held.append(Deferred())
            return held[-1]
        return close(self)

    monkeypatch.setattr(BucketWriterRPC, "remote_close", hung_close)
    started = time.monotonic()
    upload = Deferred.fromCoroutine(uploader.upload(BytesUploadable(os.urandom(400_000))))
    upload.addTimeout(STRAGGLER_GRACE + 20, reactor)
    result = await upload
    took = time.monotonic() - started
    assert held, "the hung server was not asked to close"
    assert STRAGGLER_GRACE - 0.5 < took < STRAGGLER_GRACE + 5, took
    assert result.happiness == 2
    assert {server for holders in result.sharemap.values() for server in holders} == \
        {"v0-server0", "v0-server1"}

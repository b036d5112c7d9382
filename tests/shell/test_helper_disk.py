"""The helper refuses a file its disk has no room for, before fetching any of it; a late
caller of an upload that ended gets its outcome.

In-process, over real Foolscap on 127.0.0.1: our helper on one Tub (with a
broker that knows no storage server, and the free space it sees given), our
client's side of the protocol on another.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import pytest_twisted
from foolscap.api import Tub

from tahoe.client.broker import StorageBroker
from tahoe.client.uploadable import BytesUploadable
from tahoe.client.uploader import Uploader
from tahoe.crypto.lease_secrets import ClientLeaseSecrets
from tahoe.helper.assisted import EncryptedUploadable, upload_through_helper
from tahoe.helper.service import RESERVED_SPACE, Helper
from tahoe.immutable.params import EncodingParameters
from tahoe.util.hashutil import storage_index_from_key
from tests.integration.storage_fixtures import new_tub
from tests.support.ports import free_port

PARAMS = EncodingParameters(needed=1, happy=1, total=1)
FREE = 2_000_000


async def start_helper(basedir: Path) -> tuple[Helper, list[Tub], object]:
    """Our helper on a listening Tub, seeing :data:`FREE` bytes free; a client reference."""
    from twisted.internet import reactor
    helper_tub = new_tub()
    port = free_port()
    helper_tub.listenOn(f"tcp:{port}:interface=127.0.0.1")
    helper_tub.setLocation(f"tcp:127.0.0.1:{port}")
    broker_tub = new_tub()
    broker = StorageBroker(broker_tub, reactor)
    uploader = Uploader(broker, ClientLeaseSecrets.from_lease_secret(b"s" * 32), b"c" * 32,
                        PARAMS, reactor)
    helper = Helper(basedir, broker, uploader, free_space=lambda path: FREE)
    furl = helper_tub.registerReference(helper)
    client_tub = new_tub()
    reference = await client_tub.getReference(furl)
    return helper, [client_tub, helper_tub, broker_tub], reference


@pytest_twisted.ensureDeferred
async def test_a_file_too_big_for_the_disk_is_refused(tmp_path: Path) -> None:
    """1.5 MB does not fit in 2 MB less the 1 MB kept free: refused, nothing fetched; 0.9 MB
    does: fetched whole, then kept in CHK_encoding when no server takes its shares."""
    helper, tubs, reference = await start_helper(tmp_path / "helper")
    try:
        big = os.urandom(FREE - RESERVED_SPACE + 1)
        with pytest.raises(Exception, match="bytes of disk free"):
            await upload_through_helper(reference, BytesUploadable(big), b"c" * 32, PARAMS)
        assert list((tmp_path / "helper" / "CHK_incoming").iterdir()) == []
        assert helper.counters["chk_upload_helper.fetched_bytes"] == 0

        fits = os.urandom(FREE - RESERVED_SPACE)
        with pytest.raises(Exception, match="happiness"):
            await upload_through_helper(reference, BytesUploadable(fits), b"c" * 32, PARAMS)
        assert helper.counters["chk_upload_helper.fetched_bytes"] == len(fits)
        kept = list((tmp_path / "helper" / "CHK_encoding").iterdir())
        assert [p.stat().st_size for p in kept] == [len(fits)]
        assert helper.active == {}
    finally:
        for tub in tubs:
            await tub.stopService()


@pytest_twisted.ensureDeferred
async def test_a_late_call_on_an_ended_upload_gets_its_outcome(tmp_path: Path) -> None:
    """A client calling ``upload`` on an upload helper whose upload already ended (here,
    refused for lack of disk) gets that outcome at once, and nothing is fetched."""
    helper, tubs, reference = await start_helper(tmp_path / "helper")
    try:
        source = BytesUploadable(os.urandom(FREE))
        key = b"k" * 16
        results, upload = await reference.callRemote("upload_chk", storage_index_from_key(key))
        assert results is None and upload is not None
        for _ in range(2):
            with pytest.raises(Exception, match="bytes of disk free"):
                await upload.callRemote("upload", EncryptedUploadable(source, key, PARAMS))
        assert helper.counters["chk_upload_helper.fetched_bytes"] == 0
    finally:
        for tub in tubs:
            await tub.stopService()

"""A multipart upload's convergent key, hashed while its parts come, is the one Complete
would compute, and the uploader uses it instead of hashing the file again.

In-process: a real storage server over Foolscap on 127.0.0.1, a broker and an
uploader (1-of-1, 4 KiB segments), the S3 gateway's staging on disk.
"""
from __future__ import annotations

import hashlib
import io
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet import reactor

from tahoe.client.uploadable import BytesUploadable
from tahoe.client.uploader import Uploader
from tahoe.crypto.lease_secrets import ClientLeaseSecrets
from tahoe.immutable.keys import KnownKey, convergent_key
from tahoe.immutable.params import EncodingParameters
from tahoe.s3.key_ahead import LARGE_FILE, KeyAhead
from tahoe.s3.staging import PartsUploadable, Staging
from tests.integration.storage_fixtures import connected_broker, start_pair, stop_pair

PARAMS = EncodingParameters(needed=1, happy=1, total=1, max_segment_size=4096)
CONVERGENCE = b"c" * 32


@pytest_twisted.async_yield_fixture
async def uploader(tmp_path: Path) -> AsyncIterator[Uploader]:
    """An uploader whose broker is connected to one fresh storage server."""
    pair = await start_pair(tmp_path / "storage")
    tub, broker = await connected_broker([pair])
    try:
        yield Uploader(broker, ClientLeaseSecrets.from_lease_secret(b"s" * 32), CONVERGENCE,
                       PARAMS, reactor)
    finally:
        await tub.stopService()
        await stop_pair(pair)


class _Known(BytesUploadable):
    def __init__(self, data: bytes, known_key: KnownKey) -> None:
        super().__init__(data)
        self.known_key = known_key


def _staged(tmp_path: Path, uploader: Uploader, parts: list[bytes], order: list[int]
            ) -> tuple[Staging, str, KeyAhead]:
    """An upload staged with its parts stored in ``order`` (part numbers from 1)."""
    staging = Staging(str(tmp_path / "s3-multipart"))
    upload = staging.create({"account": "AK", "bucket": "b", "key": "k", "initiated": 0.0})
    ahead = KeyAhead(uploader.key_hasher(LARGE_FILE),
                     lambda n: staging.part_path(upload, n))
    for number in order:
        _store(staging, upload, ahead, number, parts[number - 1])
    return staging, upload, ahead


def _store(staging: Staging, upload: str, ahead: KeyAhead, number: int, data: bytes) -> None:
    ahead.storing(number)
    staging.store_part(upload, number, io.BytesIO(data), len(data),
                       {"size": len(data), "md5": hashlib.md5(data).hexdigest()})
    ahead.stored(number, len(data), hashlib.md5(data).hexdigest())


def _listed(parts: list[bytes]) -> tuple[list[int], list[int], list[str]]:
    return (list(range(1, len(parts) + 1)), [len(p) for p in parts],
            [hashlib.md5(p).hexdigest() for p in parts])


@pytest_twisted.ensureDeferred
async def test_the_uploader_uses_a_key_that_fits_and_only_then(uploader: Uploader) -> None:
    """A source's known key that fits the file's geometry is the cap's key (here a made-up
    one, to see it used); one hashed for another segment size is not used."""
    data = os.urandom(20_000)
    geometry = PARAMS.geometry(len(data))
    made_up = KnownKey(1, 1, geometry.segment_size, b"K" * 16)
    result = await uploader.upload(_Known(data, made_up))
    assert result.cap.key == b"K" * 16
    other = KnownKey(1, 1, geometry.segment_size + 1, b"L" * 16)
    result = await uploader.upload(_Known(data, other))
    assert result.cap.key == convergent_key(CONVERGENCE, geometry, data)


@pytest_twisted.ensureDeferred
async def test_parts_hashed_out_of_order_give_the_convergent_cap(
        tmp_path: Path, uploader: Uploader) -> None:
    """Parts stored 3, 1, 4, 2 are hashed in order as each one's turn comes; the key of all
    four, and of the first two, is the convergent key of their concatenation, and the
    upload from the staged parts gets the cap of the same bytes uploaded whole."""
    parts = [os.urandom(n) for n in (9000, 8192, 5000, 123)]
    staging, upload, ahead = _staged(tmp_path, uploader, parts, [3, 1, 4, 2])
    numbers, sizes, md5s = _listed(parts)
    known = await ahead.key_for(numbers, sizes, md5s)
    whole = b"".join(parts)
    assert known is not None
    assert known.key == convergent_key(CONVERGENCE, PARAMS.geometry(len(whole)), whole)
    first_two = await ahead.key_for(numbers[:2], sizes[:2], md5s[:2])
    assert first_two is not None and first_two.key == convergent_key(
        CONVERGENCE, PARAMS.geometry(len(whole)), parts[0] + parts[1])
    source = PartsUploadable([staging.part_path(upload, n) for n in numbers], sizes, known)
    try:
        staged = await uploader.upload(source)
    finally:
        source.close()
    assert staged.cap == (await uploader.upload(BytesUploadable(whole))).cap


@pytest_twisted.ensureDeferred
async def test_no_key_for_what_was_not_hashed_as_listed(tmp_path: Path,
                                                         uploader: Uploader) -> None:
    """No key for a list that skips a part, names another MD5, or goes past the parts
    stored; none once a hashed part was stored again, or a part file was short."""
    parts = [os.urandom(6000) for _ in range(3)]
    staging, upload, ahead = _staged(tmp_path, uploader, parts, [1, 2, 3])
    numbers, sizes, md5s = _listed(parts)
    assert await ahead.key_for(numbers, sizes, md5s) is not None
    assert await ahead.key_for([1, 3], [sizes[0], sizes[2]], [md5s[0], md5s[2]]) is None
    assert await ahead.key_for(numbers, sizes, [md5s[0], "0" * 32, md5s[2]]) is None
    assert await ahead.key_for(numbers + [4], sizes + [1], md5s + ["1" * 32]) is None
    _store(staging, upload, ahead, 2, parts[1])  # the same bytes again: still not vouched for
    assert ahead.broken
    assert await ahead.key_for(numbers, sizes, md5s) is None

    staging, upload, ahead = _staged(tmp_path / "short", uploader, parts, [])
    ahead.storing(1)
    staging.store_part(upload, 1, io.BytesIO(parts[0]), len(parts[0]),
                       {"size": len(parts[0]), "md5": md5s[0]})
    ahead.stored(1, len(parts[0]) + 1, md5s[0])  # recorded longer than the file
    assert await ahead.key_for([1], [len(parts[0]) + 1], [md5s[0]]) is None
    assert ahead.broken


@pytest.mark.parametrize("size", [100, 4096])
def test_a_small_single_part_does_not_fit_the_large_geometry(size: int) -> None:
    """A one-part upload smaller than the maximum segment size has another segment size
    than the parts were hashed for: its key is computed at Complete instead."""
    hasher_params = PARAMS.geometry(LARGE_FILE)
    known = KnownKey(1, 1, hasher_params.segment_size, b"K" * 16)
    assert known.fits(PARAMS.geometry(size)) == (size >= PARAMS.max_segment_size)

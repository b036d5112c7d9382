"""The storage server over real Foolscap on 127.0.0.1: immutable and mutable shares, every error."""
from __future__ import annotations

import os
from typing import Any

import pytest
import pytest_twisted
from foolscap.api import Referenceable, RemoteException, Violation

from tahoe.storage.paths import share_path  # noqa: F401 (the layout the tests inspect)
from tests.integration.storage_fixtures import StoragePair, storage_pair  # noqa: F401

SI = bytes(range(16))
RENEW = b"r" * 32
CANCEL = b"c" * 32
WE = b"w" * 32
STORAGE_V1 = b"http://allmydata.org/tahoe/protocols/storage/v1"


def error_names(error: BaseException) -> list[str]:
    """The remote exception's class and base-class names (callers see only RemoteException)."""
    if isinstance(error, RemoteException):
        return [qualified.rsplit(".", 1)[-1] for qualified in error.failure.parents]
    return [cls.__name__ for cls in type(error).__mro__]


def error_name(error: BaseException) -> str:
    """The remote exception's own class name."""
    return error_names(error)[0]


async def failing(d: Any) -> BaseException:
    """Await a Deferred that must fail, and return its exception."""
    try:
        await d
    except (RemoteException, Violation) as error:
        return error
    raise AssertionError("the remote call succeeded")


async def allocate(pair: StoragePair, shnums: set[int], size: int, si: bytes = SI,
                   canary: Any = None) -> tuple[set[int], dict[int, Any]]:
    """allocate_buckets with fixed secrets."""
    result: tuple[set[int], dict[int, Any]] = await pair.rref.callRemote(
        "allocate_buckets", si, RENEW, CANCEL, shnums, size, canary or Referenceable())
    return result


@pytest_twisted.ensureDeferred
async def test_get_version(storage_pair: StoragePair) -> None:
    """get_version answers with bytes keys and the keys Tahoe clients read."""
    version = await storage_pair.rref.callRemote("get_version")
    v1 = version[STORAGE_V1]
    assert v1[b"maximum-immutable-share-size"] == v1[b"available-space"] > 0
    assert v1[b"tolerates-immutable-read-overrun"] is True
    assert isinstance(version[b"application-version"], bytes)


@pytest_twisted.ensureDeferred
async def test_immutable_round_trip(storage_pair: StoragePair) -> None:
    """Allocate, write in pieces, close, and read back; the share lands in the nested layout."""
    pair = storage_pair
    already, writers = await allocate(pair, {0, 1}, 100)
    assert already == set() and sorted(writers) == [0, 1]
    for shnum, writer in writers.items():
        await writer.callRemote("write", 0, bytes([shnum]) * 60)
        await writer.callRemote("write", 60, bytes([shnum + 10]) * 40)
    assert await pair.rref.callRemote("get_buckets", SI) == {}
    for writer in writers.values():
        await writer.callRemote("close")
    readers = await pair.rref.callRemote("get_buckets", SI)
    assert sorted(readers) == [0, 1]
    assert await readers[1].callRemote("read", 55, 10) == b"\x01" * 5 + b"\x0b" * 5
    assert await readers[1].callRemote("read", 90, 1000) == b"\x0b" * 10
    assert await readers[1].callRemote("read", 500, 10) == b""
    prefix = "aaaqeayeaudaocajbifqydiob4"
    assert (pair.storage_dir / "shares" / prefix[:2] / prefix / "1").is_file()
    assert not list((pair.storage_dir / "shares" / "incoming").rglob("*[0-9]"))
    already, writers = await allocate(pair, {1, 2}, 100)
    assert already == {0, 1} and sorted(writers) == [2]
    await writers[2].callRemote("abort")


@pytest_twisted.ensureDeferred
async def test_mutable_test_and_set(storage_pair: StoragePair) -> None:
    """Create a mutable slot, update it only when the test matches, and read it."""
    rref = storage_pair.rref
    secrets = (WE, RENEW, CANCEL)
    ok, read = await rref.callRemote("slot_testv_and_readv_and_writev", SI, secrets,
                                     {0: ([(0, 1, b"eq", b"")], [(0, b"version one")], None)},
                                     [(0, 7)])
    assert ok is True and read == {}
    ok, read = await rref.callRemote("slot_testv_and_readv_and_writev", SI, secrets,
                                     {0: ([(0, 7, b"eq", b"wrong!!")], [(0, b"clobbered")], None)},
                                     [(0, 7)])
    assert ok is False and read == {0: [b"version"]}
    ok, _ = await rref.callRemote("slot_testv_and_readv_and_writev", SI, secrets,
                                  {0: ([(0, 11, b"eq", b"version one")], [(8, b"two")], None)}, [])
    assert ok is True
    assert await rref.callRemote("slot_readv", SI, [], [(0, 100)]) == {0: [b"version two"]}


@pytest_twisted.ensureDeferred
async def test_immutable_errors_change_nothing(storage_pair: StoragePair) -> None:
    """Writes past the end, conflicting rewrites and writes after close fail clearly, harmlessly."""
    pair = storage_pair
    _, writers = await allocate(pair, {0}, 10)
    writer = writers[0]
    await writer.callRemote("write", 0, b"0123456789")
    before = pair.tree()
    assert error_name(await failing(writer.callRemote("write", 8, b"abcd"))) == "DataTooLargeError"
    assert error_name(await failing(writer.callRemote("write", 2, b"XX"))) == "ConflictingWriteError"
    assert pair.tree() == before
    await writer.callRemote("write", 2, b"23")
    await writer.callRemote("close")
    closed = pair.tree()
    assert error_name(await failing(writer.callRemote("write", 0, b"0"))) == "BucketWriterClosed"
    assert error_name(await failing(writer.callRemote("close"))) == "BucketWriterClosed"
    assert pair.tree() == closed


@pytest.mark.parametrize("call,expected", [
    (("allocate_buckets", SI, RENEW, CANCEL, {256}, 10), "BadShareNumber"),
    (("allocate_buckets", SI, RENEW, CANCEL, {-1}, 10), "BadShareNumber"),
    (("allocate_buckets", SI, RENEW, CANCEL, {0}, -5), "BadAllocatedSize"),
    (("allocate_buckets", SI, RENEW, CANCEL, {0}, 2 ** 63), None),
    (("slot_testv_and_readv_and_writev", SI, (WE, RENEW, CANCEL),
      {0: ([(0, 1, b"lt", b"")], [(0, b"x")], None)}, []), "UnknownTestOperator"),
    (("slot_testv_and_readv_and_writev", SI, (WE, RENEW, CANCEL),
      {0: ([], [(-1, b"x")], None)}, []), "MalformedVector"),
    (("slot_testv_and_readv_and_writev", SI, (WE, RENEW, CANCEL),
      {300: ([], [(0, b"x")], None)}, []), "BadShareNumber"),
    (("slot_readv", SI, [0], [(0, -1)]), "BadRequest"),
])
@pytest_twisted.ensureDeferred
async def test_bad_requests_are_refused(storage_pair: StoragePair, call: tuple,
                                        expected: str | None) -> None:
    """Malformed share numbers, sizes and vectors get a clear error and leave no trace on disk."""
    pair = storage_pair
    before = pair.tree()
    name, *args = call
    if name == "allocate_buckets":
        args.append(Referenceable())
    try:
        result = await pair.rref.callRemote(name, *args)
    except (RemoteException, Violation) as error:
        assert expected is not None and expected in error_names(error)
    else:
        assert expected is None
        assert result == (set(), {})  # an absurd size simply does not fit
    assert pair.tree() == before


@pytest_twisted.ensureDeferred
async def test_wrong_write_enabler(storage_pair: StoragePair) -> None:
    """A second writer with another write enabler is refused, naming the server's node id."""
    rref = storage_pair.rref
    await rref.callRemote("slot_testv_and_readv_and_writev", SI, (WE, RENEW, CANCEL),
                          {0: ([], [(0, b"data")], None)}, [])
    before = storage_pair.tree()
    error = await failing(rref.callRemote("slot_testv_and_readv_and_writev", SI,
                                          (b"x" * 32, RENEW, CANCEL),
                                          {0: ([], [(0, b"evil")], None)}, []))
    assert error_name(error) == "BadWriteEnablerError"
    assert "The write enabler was recorded by nodeid" in str(error.failure)  # type: ignore[attr-defined]
    assert storage_pair.tree() == before


@pytest_twisted.ensureDeferred
async def test_dropped_connection_aborts_uploads(storage_pair: StoragePair) -> None:
    """When the uploader's connection drops before close, its incoming share is deleted."""
    from twisted.internet import reactor
    from twisted.internet.task import deferLater

    from tests.integration.storage_fixtures import new_tub
    pair = storage_pair
    tub = new_tub()
    rref = await tub.getReference(pair.furl)
    canary = Referenceable()
    _, writers = await rref.callRemote("allocate_buckets", SI, RENEW, CANCEL, {3}, 50, canary)
    await writers[3].callRemote("write", 0, b"x" * 20)
    incoming = pair.storage_dir / "shares" / "incoming"
    assert [p.name.split(".")[1] for p in incoming.iterdir()] == ["3"]
    await tub.stopService()
    for _ in range(100):
        if not list(incoming.iterdir()):
            break
        await deferLater(reactor, 0.02, lambda: None)
    assert not list(incoming.iterdir())
    assert await pair.rref.callRemote("get_buckets", SI) == {}
    _, writers = await allocate(pair, {3}, 50)
    assert sorted(writers) == [3]
    await writers[3].callRemote("abort")
    assert os.path.isdir(pair.storage_dir / "shares")

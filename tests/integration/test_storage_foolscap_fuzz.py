"""Hypothesis against a real storage server over real Foolscap: wrong types, sizes, share
numbers, offsets and write enablers get a storage error or a Foolscap Violation, never another
exception; a refused call changes no file; nothing is written outside the storage directory;
the server keeps answering.

The server and the client Tub run in this process (``storage_fixtures.storage_pair``); every
call crosses a real TCP connection on 127.0.0.1.  ``pytest_twisted.blockon`` lets the
synchronous hypothesis test wait on the reactor.
"""
from __future__ import annotations

from typing import Any

import pytest_twisted
from foolscap.api import Referenceable, RemoteException, Violation
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.storage_fixtures import StoragePair, storage_pair  # noqa: F401
from tests.integration.test_storage_protocol import error_names
from tests.support.reliability import record_fuzz, record_limit, runs


_SIZES = st.one_of(st.integers(-3, 3000), st.sampled_from(
    [2 ** 32 - 1, 2 ** 32, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, 2 ** 64 + 1, 2 ** 80]))
_ANY = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False), st.text(max_size=8),
                 st.integers(-2 ** 65, 2 ** 65), st.binary(max_size=40))
_SI = st.sampled_from([b"S" * 16, b"T" * 16]) | st.binary(max_size=20) | _ANY
_SECRET = st.sampled_from([b"r" * 32, b"c" * 32, b"w" * 32, b"x" * 32]) | st.binary(max_size=40)
_SHNUMS = st.sets(st.integers(-3, 300), max_size=4) | st.lists(st.integers(0, 5), max_size=3)
_OFFSETS = st.integers(-3, 5000) | _SIZES


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, tuple[Any, ...]]:
    """One remote call on the storage server, arguments near-valid or of the wrong type."""
    name = draw(st.sampled_from(["allocate_buckets", "get_buckets", "slot_readv",
                                 "slot_testv_and_readv_and_writev", "add_lease",
                                 "advise_corrupt_share", "write"]))
    si = draw(_SI)
    if name == "allocate_buckets":
        return name, (si, draw(_SECRET), draw(_SECRET), draw(_SHNUMS | _ANY), draw(_SIZES | _ANY))
    if name == "get_buckets":
        return name, (si,)
    readv = draw(st.lists(st.tuples(_OFFSETS, _OFFSETS), max_size=3) | _ANY)
    if name == "slot_readv":
        return name, (si, draw(st.lists(st.integers(-2, 300), max_size=3) | _ANY), readv)
    if name == "slot_testv_and_readv_and_writev":
        test = st.tuples(_OFFSETS, _OFFSETS, st.sampled_from([b"eq", b"lt", b"xx", b"ne"]),
                         st.binary(max_size=10))
        write = st.tuples(_OFFSETS, st.binary(max_size=50))
        vectors = st.dictionaries(st.integers(-2, 300), st.tuples(
            st.lists(test, max_size=2), st.lists(write, max_size=3),
            st.none() | _OFFSETS), max_size=3)
        return name, (si, (draw(_SECRET), draw(_SECRET), draw(_SECRET)), draw(vectors | _ANY),
                      readv)
    if name == "add_lease":
        return name, (si, draw(_SECRET), draw(_SECRET))
    if name == "advise_corrupt_share":
        return name, (draw(st.sampled_from([b"immutable", b"mutable", b"x"]) | _ANY), si,
                      draw(st.integers(-2, 300) | _ANY), draw(st.binary(max_size=100) | _ANY))
    return name, (draw(_OFFSETS), draw(st.binary(max_size=200) | _ANY))  # on a bucket writer


def unchecked(rref: Any) -> Any:
    """``rref`` with Foolscap's outbound argument check turned off, so that hostile
    arguments reach the server (whose inbound check and code are what is tested)."""
    interface = rref.tracker.interface
    interface_name = interface.__remote_name__ if interface else None
    rref._getMethodInfo = lambda name: (interface_name, name, None)
    return rref


def _outside_files(pair: StoragePair) -> list[str]:
    """Files under the test's tmp dir but outside the storage directory."""
    root = pair.storage_dir.parent
    return sorted(str(p) for p in root.rglob("*")
                  if p.is_file() and pair.storage_dir not in p.parents)


def drawn(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    """``count`` values drawn by hypothesis (derandomized: the same on every run).

    The calls are played on the reactor afterwards, so there is no shrinking: a
    failure names the exact call instead.
    """
    values: list[Any] = []

    @settings(max_examples=count, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value: Any) -> None:
        values.append(value)

    collect()
    return values


async def _play(server: Any, writers: list[Any], name: str, args: tuple[Any, ...]) -> Any:
    if name == "write":
        return await writers[-1].callRemote("write", *args) if writers else None
    if name == "allocate_buckets":
        result = await server.callRemote(name, *args, Referenceable())
        writers.extend(unchecked(writer) for writer in result[1].values())
        return result
    return await server.callRemote(name, *args)


@pytest_twisted.ensureDeferred
async def test_hostile_calls(storage_pair: StoragePair) -> None:
    """Each call succeeds or is refused with a storage error or Violation, changing nothing
    when refused; files appear only in the storage directory; get_version still answers."""
    pair = storage_pair
    server = unchecked(pair.rref)
    outside = _outside_files(pair)
    for sequence in drawn(st.lists(calls(), min_size=1, max_size=4), runs(150)):
        writers: list[Any] = []
        for name, args in sequence:
            record_fuzz("Foolscap storage calls")
            before = pair.tree()
            try:
                result = await _play(server, writers, name, args)
            except Violation:
                assert pair.tree() == before, (name, args)
            except RemoteException as error:
                names = error_names(error)
                assert "StorageError" in names or "Violation" in names, (name, args, names)
                assert pair.tree() == before, (name, args)
            else:
                assert result is None or isinstance(result, (tuple, dict, list, bool)), result
        for writer in writers:
            try:
                await writer.callRemote("abort")
            except (RemoteException, Violation):
                pass
        assert _outside_files(pair) == outside, sequence
        version = await server.callRemote("get_version")
        assert b"http://allmydata.org/tahoe/protocols/storage/v1" in version, sequence


@pytest_twisted.ensureDeferred
async def test_allocations_near_two_to_the_64(storage_pair: StoragePair) -> None:
    """``allocated_size`` up to 2**64 - 1 is refused as too large, or by the schema above it;
    no file is created and no memory reserved."""
    pair = storage_pair
    unchecked(pair.rref)
    for size in (2 ** 62, 2 ** 63, 2 ** 64 - 1):
        try:
            result = await pair.rref.callRemote("allocate_buckets", b"Z" * 16, b"r" * 32,
                                                b"c" * 32, {0, 1}, size, Referenceable())
        except (Violation, RemoteException):
            continue
        assert result == (set(), {}), (size, result)
    for size in (2 ** 64, 2 ** 70):
        try:
            await pair.rref.callRemote("allocate_buckets", b"Z" * 16, b"r" * 32, b"c" * 32,
                                       {0}, size, Referenceable())
        except (Violation, RemoteException) as error:
            assert "Violation" in error_names(error) or isinstance(error, Violation)
        else:
            raise AssertionError(f"allocated_size {size} was accepted")
    assert pair.tree() == {} or not any(k.startswith("shares/incoming/") and "Z" in k
                                        for k in pair.tree())
    record_limit("allocated_size", "free space minus reserved; above 2**64 - 1 a Violation")

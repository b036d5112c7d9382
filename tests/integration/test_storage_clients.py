"""One contract suite for both storage-client transports, against a real server on 127.0.0.1.

Every test runs twice: through ``FoolscapStorageClient`` (a real Tub) and
through ``HTTPSStorageClient`` (real TLS with the server's key pinned, the
server's port taking both protocols as a node's does). The layers above use
only this interface, so both must behave alike wherever the protocols allow.
"""
from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attr
import pytest_twisted
from foolscap.api import Tub
from twisted.internet.defer import Deferred, DeferredList

from tahoe.client.https_connector import endpoint_for
from tahoe.client.storage_api import (ServerGone, ServerRefused, ShareNotAllocated,
                                      StorageServerClient, WriteEnablerRefused)
from tahoe.client.storage_foolscap import FoolscapStorageClient
from tahoe.client.storage_https import HTTPSStorageClient
from tahoe.httpwire.client import ConnectionGone, PersistentConnection
from tahoe.httpwire.server import HTTP1ServerFactory
from tahoe.httpwire.threaded import PinMismatch, ThreadedConnection
from tahoe.httpwire.tls import TLSServerFactory, certificate_spki_hash, server_context
from tahoe.node.portswitch import PortSwitch, SwitchingEndpoint
from tahoe.node.tub import tubid_bytes
from tahoe.storage.containers import open_container
from tahoe.storage.disk import open_file
from tahoe.storage.http_api import StorageHTTPApplication
from tahoe.storage.rpc import StorageServerRPC
from tahoe.storage.server import StorageServer
from tahoe.util.furl import parse_furl
from tahoe.util.nurl import NURL
from tests.integration.storage_fixtures import new_tub, storage_tree
from tests.support.ports import free_port

SI = bytes(range(16))
OTHER_SI = bytes(range(1, 17))
RENEW = b"r" * 32
CANCEL = b"c" * 32
WE = b"w" * 32
STORAGE_V1 = b"http://allmydata.org/tahoe/protocols/storage/v1"


@attr.s(auto_attribs=True)
class Served:
    """A storage server listening for both protocols, and a client of one transport."""

    client: StorageServerClient
    server: StorageServer
    storage_dir: Path
    server_tub: Tub
    switch: PortSwitch
    stop_client: Any

    def tree(self) -> dict[str, bytes]:
        """Every file under the storage directory with its SHA-256 (for no-change checks)."""
        return storage_tree(self.storage_dir)

    def shares(self) -> list[str]:
        """Final share files as ``<SI dir>/<shnum>``."""
        return sorted(str(p.relative_to(self.storage_dir / "shares"))
                      for p in (self.storage_dir / "shares").glob("*/*/*")
                      if p.is_file() and p.parts[-3] != "incoming")


@pytest_twisted.async_yield_fixture(params=["foolscap", "https", "https+bulk"])
async def served(request: Any, tmp_path: Path) -> AsyncIterator[Served]:
    """A server on one port for both protocols (as a node runs it) and a client of each kind
    (HTTPS with and without its threaded connection for bulk data, which the tests' 300 kB
    shares use)."""
    from twisted.internet import reactor
    from twisted.internet.endpoints import serverFromString
    storage_dir = tmp_path / "storage"
    server_tub = new_tub()
    port = free_port()
    switch = PortSwitch(reactor)
    server_tub.listenOn(SwitchingEndpoint(
        serverFromString(reactor, f"tcp:{port}:interface=127.0.0.1"), switch))
    server_tub.setLocation(f"tcp:127.0.0.1:{port}")
    server = StorageServer(storage_dir, tubid_bytes(server_tub), reactor,
                           application_version=b"tahoe-lafs-py/test")
    furl = server_tub.registerReference(StorageServerRPC(server))
    swissnum = parse_furl(furl).swissnum
    certificate = server_tub.myCertificate
    switch.serve_https(TLSServerFactory(
        server_context(certificate),
        HTTP1ServerFactory(StorageHTTPApplication(server, swissnum.encode()), reactor)))
    if request.param == "foolscap":
        client_tub = new_tub()
        client: StorageServerClient = FoolscapStorageClient(await client_tub.getReference(furl))
        stop = client_tub.stopService
    else:
        nurl = NURL(certificate_spki_hash(certificate), "127.0.0.1", port, swissnum)
        connection = PersistentConnection(endpoint_for(nurl, reactor), b"127.0.0.1", reactor)
        https = HTTPSStorageClient(
            connection, swissnum.encode(), pipelining=True,
            bulk=(lambda: ThreadedConnection("127.0.0.1", port, nurl.spki_hash, reactor))
            if request.param == "https+bulk" else None)
        client = https

        async def stop() -> None:
            https.stop()
    yield Served(client, server, storage_dir, server_tub, switch, stop)
    await stop()
    if server_tub.running:
        await server_tub.stopService()
    switch.stop()


async def _failure(d: Deferred) -> Exception:
    try:
        await d
    except Exception as error:  # noqa: BLE001 - the test inspects it
        return error
    raise AssertionError("the call succeeded")


@pytest_twisted.ensureDeferred
async def test_version(served: Served) -> None:
    """The version has the v1 numbers, the flags Tahoe clients rely on, and our name."""
    version = await served.client.get_version()
    v1 = version[STORAGE_V1]
    assert v1[b"maximum-immutable-share-size"] == v1[b"available-space"] > 0
    assert v1[b"tolerates-immutable-read-overrun"] is True
    assert version[b"application-version"] == b"tahoe-lafs-py/test"


@pytest_twisted.ensureDeferred
async def test_immutable_round_trip(served: Served) -> None:
    """Writes given before the allocation answers are delivered; the share appears on close."""
    allocation = served.client.allocate_buckets(SI, RENEW, CANCEL, {0, 1}, 100)
    writes = [allocation.writers[n].write(0, bytes([n]) * 60) for n in (0, 1)]
    writes += [allocation.writers[n].write(60, bytes([n + 10]) * 40) for n in (0, 1)]
    assert await allocation.answer == (frozenset(), frozenset({0, 1}))
    await DeferredList(writes, fireOnOneErrback=True, consumeErrors=True)
    # Over Foolscap the share appears on close; over HTTPS, with its last byte.
    expected = {} if served.client.transport == "foolscap" else {0, 1}
    assert set(await served.client.get_buckets(SI)) == set(expected)
    await DeferredList([w.close() for w in allocation.writers.values()],
                       fireOnOneErrback=True, consumeErrors=True)
    readers = await served.client.get_buckets(SI)
    assert sorted(readers) == [0, 1]
    assert await readers[1].read(55, 10) == b"\x01" * 5 + b"\x0b" * 5
    assert await readers[1].read(90, 1000) == b"\x0b" * 10
    assert await readers[1].read(500, 10) == b""
    assert served.shares() == ["aa/aaaqeayeaudaocajbifqydiob4/0", "aa/aaaqeayeaudaocajbifqydiob4/1"]
    assert not list((served.storage_dir / "shares" / "incoming").rglob("*[0-9]"))


@pytest_twisted.ensureDeferred
async def test_reallocation_and_abort(served: Served) -> None:
    """Held shares come back as already-have; writes to them fail; an abort leaves nothing."""
    first = served.client.allocate_buckets(SI, RENEW, CANCEL, {0}, 10)
    await first.writers[0].write(0, b"0123456789")
    await first.writers[0].close()
    again = served.client.allocate_buckets(SI, RENEW, CANCEL, {0, 2}, 10)
    refused = again.writers[0].write(0, b"xxxxxxxxxx")
    assert await again.answer == (frozenset({0}), frozenset({2}))
    assert isinstance(await _failure(refused), ShareNotAllocated)
    await again.writers[0].abort()  # a no-op for a share never allocated
    await again.writers[2].write(0, b"abc")
    await again.writers[2].abort()
    assert not list((served.storage_dir / "shares" / "incoming").rglob("*[0-9]"))
    assert sorted(await served.client.get_buckets(SI)) == [0]


@pytest_twisted.ensureDeferred
async def test_allocate_and_write(served: Served) -> None:
    """Whole shares are allocated and written in one call: held ones come back as
    already-have, the others are complete and readable at once."""
    shares = {n: bytes([n]) * 10 for n in (0, 1)}
    assert await served.client.allocate_and_write(SI, RENEW, CANCEL, shares, 10) == (
        frozenset(), frozenset({0, 1}))
    readers = await served.client.get_buckets(SI)
    assert sorted(readers) == [0, 1]
    assert await readers[1].read(0, 100) == b"\x01" * 10
    again = {n: bytes([n]) * 10 for n in (0, 2)}
    already, written = await served.client.allocate_and_write(SI, RENEW, CANCEL, again, 10)
    assert (already & set(again), written) == ({0}, {2})  # Foolscap names share 1 as well
    assert sorted(await served.client.get_buckets(SI)) == [0, 1, 2]
    assert not list((served.storage_dir / "shares" / "incoming").rglob("*[0-9]"))


@pytest_twisted.ensureDeferred
async def test_allocate_and_write_failure_leaves_no_incoming_share(served: Served) -> None:
    """A share whose write is refused fails the call, and no share is left incoming (over
    HTTPS the refused share is not there either; a Foolscap close, sent without waiting for
    the write, completes it with its hole, as Tahoe's)."""
    shares = {0: b"0" * 10, 1: b"1" * 12}  # share 1 runs past its allocated size
    error = await _failure(served.client.allocate_and_write(SI, RENEW, CANCEL, shares, 10))
    assert isinstance(error, ServerRefused)
    assert not list((served.storage_dir / "shares" / "incoming").rglob("*[0-9]"))
    if served.client.transport == "https":
        assert set(await served.client.get_buckets(SI)) == {0}


@pytest_twisted.ensureDeferred
async def test_immutable_errors_change_nothing(served: Served) -> None:
    """Writes past the end and conflicting rewrites are refused and change nothing."""
    allocation = served.client.allocate_buckets(SI, RENEW, CANCEL, {0}, 10)
    writer = allocation.writers[0]
    await writer.write(0, b"01234")
    before = served.tree()
    assert isinstance(await _failure(writer.write(8, b"abcd")), ServerRefused)
    assert isinstance(await _failure(writer.write(2, b"XX")), ServerRefused)
    assert served.tree() == before
    await writer.write(2, b"23456789")
    await writer.close()
    assert await (await served.client.get_buckets(SI))[0].read(0, 100) == b"0123456789"


@pytest_twisted.ensureDeferred
async def test_incomplete_share_never_visible(served: Served) -> None:
    """A share with a hole is not listed, and its close does not make it visible."""
    allocation = served.client.allocate_buckets(SI, RENEW, CANCEL, {0}, 10)
    await allocation.writers[0].write(0, b"01234")
    assert await served.client.get_buckets(SI) == {}
    if served.client.transport == "https":
        # HTTP has no close: the server completes a share when its last byte arrives.
        assert isinstance(await _failure(allocation.writers[0].close()), ServerRefused)
        assert await served.client.get_buckets(SI) == {}


@pytest_twisted.ensureDeferred
async def test_mutable_test_and_set(served: Served) -> None:
    """Create, update only when the test matches, read any share or all; a wrong write
    enabler is refused and changes nothing."""
    client = served.client
    secrets = (WE, RENEW, CANCEL)
    ok, read = await client.slot_testv_and_readv_and_writev(
        SI, secrets, {0: ([(0, 1, b"eq", b"")], [(0, b"version one")], None),
                      1: ([], [(0, b"other share")], None)}, [(0, 7)])
    assert ok is True and read == {}
    ok, read = await client.slot_testv_and_readv_and_writev(
        SI, secrets, {0: ([(0, 7, b"eq", b"wrong!!")], [(0, b"clobbered")], None)}, [(0, 7)])
    assert ok is False and read == {0: [b"version"], 1: [b"other s"]}
    ok, _ = await client.slot_testv_and_readv_and_writev(
        SI, secrets, {0: ([(0, 11, b"eq", b"version one")], [(8, b"two")], None)}, [])
    assert ok is True
    assert await client.slot_readv(SI, [], [(0, 100), (8, 3)]) == {
        0: [b"version two", b"two"], 1: [b"other share", b"are"]}
    assert await client.slot_readv(SI, [1], [(6, 5)]) == {1: [b"share"]}
    assert await client.slot_readv(OTHER_SI, [], [(0, 10)]) == {}
    before = served.tree()
    error = await _failure(client.slot_testv_and_readv_and_writev(
        SI, (b"x" * 32, RENEW, CANCEL), {0: ([], [(0, b"evil")], None)}, []))
    assert isinstance(error, WriteEnablerRefused)
    assert served.tree() == before


@pytest_twisted.ensureDeferred
async def test_leases(served: Served) -> None:
    """add_lease renews ours and adds another's; on an unknown index it is a quiet no-op."""
    allocation = served.client.allocate_buckets(SI, RENEW, CANCEL, {0}, 5)
    await allocation.writers[0].write(0, b"hello")
    await allocation.writers[0].close()
    await served.client.add_lease(SI, RENEW, CANCEL)
    await served.client.add_lease(SI, b"R" * 32, b"C" * 32)
    await served.client.add_lease(OTHER_SI, RENEW, CANCEL)
    path = served.storage_dir / "shares" / served.shares()[0]
    with open_file(str(path)) as file:
        assert len(open_container(file).leases()) == 2


@pytest_twisted.ensureDeferred
async def test_corruption_advisory(served: Served) -> None:
    """A report on a held share is kept for the operator; one on an unknown share is ignored."""
    allocation = served.client.allocate_buckets(SI, RENEW, CANCEL, {0}, 5)
    await allocation.writers[0].write(0, b"hello")
    await allocation.writers[0].close()
    readers = await served.client.get_buckets(SI)
    await readers[0].advise_corrupt_share(b"block hash mismatch")
    await served.client.advise_corrupt_share(b"immutable", SI, 7, b"no such share")
    advisories = list((served.storage_dir / "corruption-advisories").iterdir())
    assert len(advisories) == 1
    assert b"block hash mismatch" in advisories[0].read_bytes()


@pytest_twisted.ensureDeferred
async def test_server_gone(served: Served) -> None:
    """Once the server stops, calls fail with ServerGone (not a transport's own error)."""
    await served.client.get_version()
    await served.server_tub.stopService()
    served.switch.stop()
    error = await _failure(served.client.get_buckets(SI))
    assert isinstance(error, ServerGone), error


@pytest_twisted.ensureDeferred
async def test_reading_every_share_follows_changes(served: Served) -> None:
    """Reading all shares again after others added and removed some gives exactly the shares
    held now (the HTTPS client reads the shares it saw last time before the list comes)."""
    client = served.client
    secrets = (WE, RENEW, CANCEL)
    await client.slot_testv_and_readv_and_writev(
        SI, secrets, {0: ([], [(0, b"zero")], None), 1: ([], [(0, b"one")], None)}, [])
    assert await client.slot_readv(SI, [], [(0, 10)]) == {0: [b"zero"], 1: [b"one"]}
    # Another client changes the slot behind this one's back.
    served.server.slot_testv_and_readv_and_writev(
        SI, secrets, {0: ([], [], 0), 2: ([], [(0, b"two")], None)}, [])
    assert await client.slot_readv(SI, [], [(0, 10)]) == {1: [b"one"], 2: [b"two"]}
    assert await client.slot_readv(SI, [], [(0, 2), (1, 2)]) == {
        1: [b"on", b"ne"], 2: [b"tw", b"wo"]}


@pytest_twisted.ensureDeferred
async def test_large_shares(served: Served) -> None:
    """A 300 kB share written in two pieces (after the allocation answered: over HTTPS with a
    bulk connection, the second piece goes on it) reads back whole and in ranges."""
    data = os.urandom(300_000)
    allocation = served.client.allocate_buckets(SI, RENEW, CANCEL, {4}, len(data))
    writer = allocation.writers[4]
    await writer.write(0, data[:1000])
    await allocation.answer
    await writer.write(1000, data[1000:])
    await writer.close()
    reader = (await served.client.get_buckets(SI))[4]
    assert await reader.read(0, 400_000) == data
    assert await reader.read(150_000, 140_000) == data[150_000:290_000]


@pytest_twisted.ensureDeferred
async def test_share_removed_by_hand(served: Served) -> None:
    """A share whose file an operator removed after it was listed: its read fails clearly
    (Foolscap: ShareGone; HTTPS, which lists again for each read: a 404), the others still
    read, and it is listed no more, by the index either."""
    data = os.urandom(1_200_000)  # past the server's inline reads: answered as a stream
    allocation = served.client.allocate_buckets(SI, RENEW, CANCEL, {0, 1}, len(data))
    for writer in allocation.writers.values():
        await writer.write(0, data)
        await writer.close()
    readers = await served.client.get_buckets(SI)
    assert sorted(readers) == [0, 1]
    (served.storage_dir / "shares" / served.shares()[1]).unlink()
    error = await _failure(readers[1].read(0, len(data)))
    assert isinstance(error, ServerRefused), error
    assert error.kind == ("ShareGone" if served.client.transport == "foolscap" else "404")
    if served.client.transport == "foolscap":
        assert "share 1 of storage index" in str(error) and "is gone" in str(error)
    assert await readers[0].read(0, len(data)) == data
    assert sorted(await served.client.get_buckets(SI)) == [0]
    assert served.server.index.fresh
    assert [s.shnum for s in served.server.index.index.all_shares()] == [0]


@pytest_twisted.ensureDeferred
async def test_connections_pin_the_key(tmp_path: Path) -> None:
    """The kept-open connection (TLS over memory BIOs) and the threaded one refuse a server
    whose key is not the pinned one; with the pinned key, requests reach it."""
    from twisted.internet import reactor
    from twisted.internet.endpoints import serverFromString
    tub = new_tub()
    port = free_port()
    switch = PortSwitch(reactor)
    tub.listenOn(SwitchingEndpoint(serverFromString(reactor, f"tcp:{port}:interface=127.0.0.1"),
                                   switch))
    server = StorageServer(tmp_path / "s", tubid_bytes(tub), reactor, application_version=b"x")
    switch.serve_https(TLSServerFactory(server_context(tub.myCertificate),
                                           HTTP1ServerFactory(StorageHTTPApplication(
                                               server, b"swiss"), reactor)))
    pinned = certificate_spki_hash(tub.myCertificate)
    try:
        wrong = ThreadedConnection("127.0.0.1", port, "A" * 43, reactor)
        assert isinstance(await _failure(wrong.request(b"GET", b"/storage/v1/version")),
                          PinMismatch)
        right = ThreadedConnection("127.0.0.1", port, pinned, reactor)
        answer = await right.request(b"GET", b"/storage/v1/version")
        assert answer.status == 401  # reached the server; no Authorization was sent
        right.stop()
        for spki_hash, refused in (("A" * 43, True), (pinned, False)):
            kept = PersistentConnection(endpoint_for(NURL(spki_hash, "127.0.0.1", port, "swiss"),
                                                     reactor), b"127.0.0.1", reactor)
            try:
                if refused:
                    error = await _failure(kept.request(b"GET", b"/storage/v1/version"))
                    assert isinstance(error, ConnectionGone)
                else:
                    assert (await kept.request(b"GET", b"/storage/v1/version")).status == 401
            finally:
                kept.stop()
    finally:
        await tub.stopService()
        switch.stop()


@pytest_twisted.ensureDeferred
async def test_stopped_https_client_fails_bulk_requests_at_once(tmp_path: Path) -> None:
    """Once its server is given up (stop), a client opens no new bulk connection: a bulk
    request fails with ServerGone at once (found by SIGKILLed servers mid-upload, whose
    late writes reached the restarted server), and so does one on a stopped bulk connection."""
    from twisted.internet import reactor
    made: list[ThreadedConnection] = []

    def bulk() -> ThreadedConnection:
        made.append(ThreadedConnection("127.0.0.1", free_port(), "A" * 43, reactor))
        return made[-1]

    endpoint = endpoint_for(NURL("A" * 43, "127.0.0.1", free_port(), "swiss"), reactor)
    client = HTTPSStorageClient(PersistentConnection(endpoint, b"127.0.0.1", reactor),
                                b"swiss", bulk=bulk)
    client.stop()
    error = await _failure(client.request(b"PUT", "/storage/v1/immutable/x/0", body=b"x" * 10,
                                          bulk=True))
    assert isinstance(error, ServerGone) and made == []
    stopped = ThreadedConnection("127.0.0.1", free_port(), "A" * 43, reactor)
    stopped.stop()
    assert "stopped" in str(await _failure(stopped.request(b"GET", b"/")))

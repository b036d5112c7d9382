"""A real storage server and a real client Tub, in-process, over Foolscap on 127.0.0.1."""
from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attr
import pytest_twisted
from foolscap.api import Tub

from tahoe.node.tub import TUB_OPTIONS, tubid_bytes
from tahoe.storage.rpc import StorageServerRPC
from tahoe.storage.server import StorageServer
from tests.support.ports import free_port


def new_tub() -> Tub:
    """A Tub with the options Tahoe uses, started."""
    tub = Tub()
    for name, value in TUB_OPTIONS.items():
        tub.setOption(name, value)
    tub.startService()
    return tub


@attr.s(auto_attribs=True)
class StoragePair:
    """The server's domain object, the client's remote reference, and the storage directory."""

    server: StorageServer
    rref: Any
    storage_dir: Path
    client_tub: Tub
    server_tub: Tub
    furl: str

    def tree(self) -> dict[str, bytes]:
        """Every file under the storage directory with its SHA-256 (for no-change checks)."""
        return storage_tree(self.storage_dir)


def storage_tree(storage_dir: Path) -> dict[str, bytes]:
    """Every file under a storage directory with its SHA-256, for no-change checks; the
    share index is left out (even a read may touch its shared-memory file)."""
    return {str(p.relative_to(storage_dir)): hashlib.sha256(p.read_bytes()).digest()
            for p in sorted(storage_dir.rglob("*"))
            if p.is_file() and not p.name.startswith("share-index.sqlite")}


async def start_pair(storage_dir: Path, clock: Any = None, **server_options: Any) -> StoragePair:
    """Start a storage server Tub listening on a free port and connect a client Tub to it.

    :param clock: the server's clock (lease times); the reactor unless given.
    """
    from twisted.internet import reactor
    server_tub = new_tub()
    port = free_port()
    server_tub.listenOn(f"tcp:{port}:interface=127.0.0.1")
    server_tub.setLocation(f"tcp:127.0.0.1:{port}")
    server = StorageServer(storage_dir, tubid_bytes(server_tub), clock or reactor,
                           application_version=b"tahoe-lafs-py/test", **server_options)
    furl = server_tub.registerReference(StorageServerRPC(server))
    client_tub = new_tub()
    rref = await client_tub.getReference(furl)
    return StoragePair(server, rref, storage_dir, client_tub, server_tub, furl)


async def connected_broker(pairs: list[StoragePair]) -> tuple[Tub, Any]:
    """A client's broker (on a new Tub, over Foolscap) connected to the servers of
    ``pairs``, as ``v0-server0``, ``v0-server1``... (nicknames ``storage0``...); stop the
    Tub to close it."""
    from twisted.internet import reactor

    from tahoe.client.broker import StorageBroker
    tub = new_tub()
    broker = StorageBroker(tub, reactor, prefer_https=False)
    for i, pair in enumerate(pairs):
        broker.add_server(f"v0-server{i}".encode(), {"anonymous-storage-FURL": pair.furl,
                                                     "nickname": f"storage{i}"},
                          tubid_bytes(pair.server_tub), bytes([i]) * 32, static=True)
    await broker.when_connected(len(pairs))
    return tub, broker


async def stop_pair(pair: StoragePair) -> None:
    """Stop both Tubs."""
    await pair.client_tub.stopService()
    await pair.server_tub.stopService()


@pytest_twisted.async_yield_fixture
async def storage_pair(tmp_path: Path) -> AsyncIterator[StoragePair]:
    """A fresh storage server (no reserved space) and a connected client."""
    pair = await start_pair(tmp_path / "storage")
    yield pair
    await stop_pair(pair)

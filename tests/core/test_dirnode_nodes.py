"""The directory nodes a client keeps: one per cap while in use, a bounded number at rest."""
from __future__ import annotations

import os

import pytest
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock

from tahoe.caps.dirnode import DirectoryCap
from tahoe.caps.mutable import SSKWriteCap
from tahoe.client import dirnode
from tahoe.client.dirnode import DirectoryClient
from tahoe.client.mutable import MutableClient
from tahoe.crypto.lease_secrets import ClientLeaseSecrets


def _cap() -> DirectoryCap:
    return DirectoryCap(SSKWriteCap(os.urandom(16), os.urandom(32)))


def test_nodes_past_the_limit_are_let_go_unless_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same cap opens the same node (its changes coalesce); past NODES_KEPT the least
    recently opened idle nodes are let go, never one with a change queued or in flight."""
    monkeypatch.setattr(dirnode, "NODES_KEPT", 8)
    mutable = MutableClient(None, ClientLeaseSecrets.from_lease_secret(b"s" * 32),  # type: ignore[arg-type]
                            3, 10, Clock())
    client = DirectoryClient(mutable, None)
    busy_cap, first_cap = _cap(), _cap()
    busy = client.open(busy_cap)
    busy._queue.append((lambda table, first: (None, None), Deferred()))  # a change waiting
    first = client.open(first_cap)
    assert client.open(first_cap) is first
    caps = [_cap() for _ in range(30)]
    nodes = [client.open(cap) for cap in caps]
    assert len(client._nodes) <= 8
    assert client.open(busy_cap) is busy  # kept: a change is queued
    assert client.open(caps[-1]) is nodes[-1]  # the most recent are kept
    assert client.open(first_cap) is not first  # let go at rest, opened anew


class _Contents:
    """The mutable file under a directory node: each ``read`` waits until answered here."""

    def __init__(self, storage_index: bytes) -> None:
        self.storage_index = storage_index
        self.reads: list[Deferred] = []

    def read(self) -> Deferred:
        d: Deferred = Deferred()
        self.reads.append(d)
        return d


def _node_with_contents() -> tuple[DirectoryClient, dirnode.DirectoryNode, _Contents]:
    mutable = MutableClient(None, ClientLeaseSecrets.from_lease_secret(b"s" * 32),  # type: ignore[arg-type]
                            3, 10, Clock())
    client = DirectoryClient(mutable, None)
    node = client.open(_cap())
    contents = _Contents(b"i" * 16)
    node.file = contents  # type: ignore[assignment]
    return client, node, contents


def _read(node: dirnode.DirectoryNode) -> list[object]:
    got: list[object] = []
    Deferred.fromCoroutine(node.read_bytes()).addBoth(got.append)
    return got


def test_reads_asked_together_are_one_read() -> None:
    _, node, contents = _node_with_contents()
    first, second, third = _read(node), _read(node), _read(node)
    assert len(contents.reads) == 1
    contents.reads[0].callback(b"packed")
    assert first == second == third == [b"packed"]
    later = _read(node)  # the read before ended: a new one
    assert len(contents.reads) == 2 and later == []
    contents.reads[1].callback(b"again")
    assert later == [b"again"]


def test_a_read_after_a_change_here_does_not_wait_for_one_begun_before_it() -> None:
    """A change made through this node that ended after a read began may be missing from
    that read's contents: a read asked for after it begins its own."""
    client, node, contents = _node_with_contents()
    before = _read(node)
    client.changes[contents.storage_index] = client.changes.get(contents.storage_index, 0) + 1
    after, with_it = _read(node), _read(node)
    assert len(contents.reads) == 2  # the second read is shared by the two asked after
    contents.reads[0].callback(b"old")
    assert before == [b"old"] and after == with_it == []
    contents.reads[1].callback(b"new")
    assert after == with_it == [b"new"]


def test_a_failed_read_fails_everyone_who_waited_for_it() -> None:
    _, node, contents = _node_with_contents()
    first, second = _read(node), _read(node)
    contents.reads[0].errback(RuntimeError("no recoverable version"))
    for got in (first, second):
        assert len(got) == 1 and got[0].check(RuntimeError)  # type: ignore[attr-defined]
        got[0].trap(RuntimeError)  # type: ignore[attr-defined]
    retry = _read(node)
    assert len(contents.reads) == 2 and retry == []

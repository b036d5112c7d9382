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

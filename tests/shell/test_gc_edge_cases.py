"""Garbage collection on shares the usual population lacks: shares holding no lease at
all, and shares changed or removed behind the share index's back.

Tahoe 1.20's lease checker deletes a share only by cancelling its expired leases, the
last one taking the file with it: a share with no lease is never deleted, though its
cycle figures count it as recoverable (no lease of it is valid). The index may run late
on a share (a crash, an operator's hand): a collection that reads the file and finds
something other than the index said brings the row in step.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from twisted.internet.task import Clock

from tahoe.storage import paths
from tahoe.storage.containers import open_container
from tahoe.storage.lease_checker import LeaseCheckingCrawler
from tahoe.storage.disk import open_file
from tahoe.storage.leases import LEASE_DURATION, ExpiryPolicy
from tahoe.storage.server import StorageServer
from tests.shell.storage_support import assert_index_in_step, make_server, shares_on_disk

START = 1_770_000_000.0
DAY = 86400
NOW = START + LEASE_DURATION + DAY
RENEW, CANCEL, WRITE_ENABLER = b"r" * 32, b"c" * 32, b"w" * 32
BARE_IMMUTABLE, BARE_MUTABLE, EXPIRED, LIVE = (bytes([n]) * 16 for n in (1, 2, 3, 4))


def _server(root: Path, now: float) -> StorageServer:
    clock = Clock()
    clock.advance(now)
    return make_server(root, clock)


def _cycle(root: Path, server: StorageServer, now: float) -> LeaseCheckingCrawler:
    clock = Clock()
    clock.advance(now)
    checker = LeaseCheckingCrawler(root, clock, server.index, ExpiryPolicy("age"), True,
                                   slow_start=0)
    checker.start()
    clock.advance(checker.first_delay())
    assert checker.state["last-cycle-finished"] is not None
    return checker


def _collect_nothing_from_the_index(root: Path, left: set[tuple[bytes, int]]) -> None:
    """A cycle from the (fresh) index deletes nothing, leaves ``left``, and the index in
    step with the files."""
    server = _server(root, NOW)
    assert server.index.fresh
    checker = _cycle(root, server, NOW)
    assert checker.deleted_shares == 0
    assert set(shares_on_disk(root)) == left
    assert_index_in_step(server)


def _upload(server: StorageServer, si: bytes) -> None:
    _, writers = server.allocate_buckets(si, RENEW, CANCEL, {0}, 8)
    writers[0].write(0, b"abcdefgh")
    writers[0].close()


def _strip_leases(root: Path, si: bytes) -> None:
    """Remove every lease of share 0 from its file, behind the server's back."""
    with open_file(str(root / paths.share_path(si, 0)), writable=True) as file:
        container = open_container(file)
        container.remove_leases(list(range(len(container.leases()))))
        assert container.leases() == []


@pytest.mark.parametrize("indexed", [True, False], ids=["from the index", "from the files"])
def test_a_share_with_no_lease_is_kept_and_counted_as_tahoe_does(
        tmp_path: Path, indexed: bool) -> None:
    root = tmp_path / "storage"
    server = _server(root, START)
    _upload(server, BARE_IMMUTABLE)
    _upload(server, EXPIRED)
    ok, _ = server.slot_testv_and_readv_and_writev(
        BARE_MUTABLE, (WRITE_ENABLER, RENEW, CANCEL), {0: ([], [(0, b"data")], None)}, [])
    assert ok
    server.close()
    for si in (BARE_IMMUTABLE, BARE_MUTABLE):
        _strip_leases(root, si)
    server = _server(root, NOW)
    if indexed:  # the index told, as a server's own change would tell it
        server.index.refresh([(BARE_IMMUTABLE, 0), (BARE_MUTABLE, 0)])
        assert server.index.fresh
    else:
        server.close()
        (root / "share-index.sqlite").unlink()
        server = _server(root, NOW)
        assert not server.index.fresh

    checker = _cycle(root, server, NOW)
    assert set(shares_on_disk(root)) == {(BARE_IMMUTABLE, 0), (BARE_MUTABLE, 0)}
    assert checker.deleted_shares == 1  # the share whose only lease expired
    recovered = checker.history()["0"]["space-recovered"]
    # Tahoe counts a share with no valid lease in every figure, though it deletes it not
    for figure in ("original", "configured", "actual"):
        assert recovered[f"{figure}-shares"] == 3, figure
        assert recovered[f"{figure}-shares-mutable"] == 1, figure
    assert recovered["examined-shares"] == 3
    assert checker.history()["0"]["leases-per-share-histogram"] == {"0": 2, "1": 1}
    assert_index_in_step(server)


def test_a_share_removed_by_hand_leaves_the_index(tmp_path: Path) -> None:
    """A fresh index planning the deletion of a share whose file is gone: nothing is
    deleted or counted as deleted, and the row goes."""
    root = tmp_path / "storage"
    server = _server(root, START)
    _upload(server, EXPIRED)
    server.close()
    server = _server(root, NOW - DAY)
    _upload(server, LIVE)
    server.close()
    os.remove(root / paths.share_path(EXPIRED, 0))
    _collect_nothing_from_the_index(root, left={(LIVE, 0)})
    assert not (root / paths.share_dir(EXPIRED)).exists()  # its emptied bucket went too


def test_a_lease_renewed_behind_the_index_is_read_into_it(tmp_path: Path) -> None:
    """The index says every lease expired; the file holds a live one (renewed by a server
    that stopped before telling the index): the share is kept and its row read again, so
    the next cycle does not plan its deletion anew."""
    root = tmp_path / "storage"
    server = _server(root, START)
    _upload(server, EXPIRED)
    server.close()
    renewer = _server(root, NOW - DAY)
    assert renewer.index.fresh
    path = str(root / paths.share_path(EXPIRED, 0))
    with open_file(path, writable=True) as file:  # the file changes, not the index
        open_container(file).add_or_renew_lease(0, RENEW, CANCEL, int(NOW - DAY + LEASE_DURATION),
                                                None)
    renewer.close()
    _collect_nothing_from_the_index(root, left={(EXPIRED, 0)})

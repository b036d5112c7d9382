"""Tahoe-LAFS 1.20 reads the crawler state our crawlers write (``storage-protocol.md`` §4.7).

Tahoe started on a storage directory whose crawler state and history our
crawlers wrote shows them on its ``/storage?t=json`` page. The other way
(our crawlers resuming from files a real Tahoe node wrote) runs from a
captured vector in ``tests/shell/test_crawlers.py``: Tahoe's first cycle
starts 5-6 minutes after its node, too late for a test.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from twisted.internet.task import Clock

from tahoe.storage.crawler import BucketCountingCrawler
from tahoe.storage.lease_checker import LeaseCheckingCrawler
from tahoe.storage.leases import ExpiryPolicy
from tahoe.storage.server import StorageServer
from tests.support import webapi
from tests.support.leased import leased_bucket
from tests.support.nodes import TahoeTool, our_tahoe
from tests.support.ournodes import create_storage_node, start_node
from tests.support.processes import ProcessSet

pytestmark = pytest.mark.interop

NOW = 1_790_000_000.0


def _crawled_storage_node(tool: TahoeTool, basedir: Path) -> Path:
    """A storage node (of ``tool``'s implementation) whose storage directory holds three
    buckets and the state files our crawlers wrote after one cycle over them."""
    create_storage_node(tool, basedir)
    storage = basedir / "storage"
    for n in (1, 2, 3):
        leased_bucket(storage, bytes([n]) * 16, NOW)
    clock = Clock()
    clock.advance(NOW)
    server = StorageServer(storage, b"\x01" * 20, clock, application_version=b"test")
    counter = BucketCountingCrawler(storage, clock, server.index, slow_start=0)
    checker = LeaseCheckingCrawler(storage, clock, server.index, ExpiryPolicy("age"),
                                   enabled=False, slow_start=0)
    for crawler in (counter, checker):
        crawler.start()
    clock.advance(0)
    for crawler in (counter, checker):
        crawler.stop()
    server.close()
    return basedir


def test_tahoe_shows_the_state_our_crawlers_wrote(tahoe120: Path, tmp_path: Path,
                                                 processes: ProcessSet) -> None:
    """Tahoe's /storage?t=json shows our files; ours has the same shape."""
    theirs_tool = TahoeTool(tahoe120, tmp_path / "logs")
    ours_tool = TahoeTool(our_tahoe(), tmp_path / "logs")
    gateways = [start_node(tool, _crawled_storage_node(tool, tmp_path / name), processes)
                for tool, name in ((theirs_tool, "tahoe-storage"), (ours_tool, "our-storage"))]
    theirs, ours = (webapi.get_json(g.url + "storage?t=json") for g in gateways)
    assert theirs["bucket-counter"]["last-complete-bucket-count"] == 3
    assert theirs["bucket-counter"]["last-cycle-finished"] == 0
    assert theirs["lease-checker"]["last-cycle-finished"] == 0
    cycle = theirs["lease-checker"]["history"]["0"]
    assert cycle["space-recovered"]["examined-shares"] == 6
    assert cycle["space-recovered"]["examined-buckets-immutable"] == 3
    assert cycle["leases-per-share-histogram"] == {"1": 6}
    assert cycle["expiration-enabled"] is False

    assert set(ours) == set(theirs)
    for part in ("bucket-counter", "lease-checker", "lease-checker-progress"):
        assert set(ours[part]) == set(theirs[part]), part
    assert set(theirs["stats"]) <= set(ours["stats"])
    assert ours["lease-checker"]["history"] == theirs["lease-checker"]["history"]

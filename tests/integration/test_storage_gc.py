"""Garbage collection in a running storage node: ``[storage]expire.*`` reaches the lease crawler.

A real ``tahoe run`` process over a storage directory that already holds
shares (written by the storage server code with leases dated by a test
clock), with ``expire.mode = cutoff-date`` and a cutoff of tomorrow: every
share leased before it goes, a share leased after it stays, the crawler
state and history files appear, and ``/statistics`` counts what is left.
``TAHOE_CRAWLER_SLOW_START=0`` makes the crawlers start at once instead of
after 5-6 minutes.
"""
from __future__ import annotations

import datetime
import json
import time
from pathlib import Path

import pytest
from tests.support.leased import leased_bucket
from tests.support.nodes import TahoeTool, edit_tahoe_cfg, our_tahoe
from tests.support.ournodes import create_storage_node, start_node
from tests.support.processes import ProcessSet, wait_until
from tests.support.webapi import get_json

GC_TIMEOUT = 60.0


def test_expiry_removes_shares_leased_before_the_cutoff(tmp_path: Path, processes: ProcessSet,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    tool = TahoeTool(our_tahoe(), tmp_path / "logs")
    basedir = create_storage_node(tool, tmp_path / "storage-node")
    tomorrow = datetime.datetime.now(datetime.timezone.utc).date() + datetime.timedelta(days=1)
    edit_tahoe_cfg(basedir, {"storage": {"expire.enabled": "true",
                                         "expire.mode": "cutoff-date",
                                         "expire.cutoff_date": tomorrow.isoformat()}})
    storage = basedir / "storage"
    old = [leased_bucket(storage, bytes([n]) * 16, time.time(), (0,))[0] for n in (1, 2, 3)]
    (young,) = leased_bucket(storage, b"\x09" * 16, time.time() + 3 * 86400, (0,))
    monkeypatch.setenv("TAHOE_CRAWLER_SLOW_START", "0")
    gateway = start_node(tool, basedir, processes)

    history_file = storage / "lease_checker.history.json"
    wait_until(lambda: history_file.exists() and not any(p.exists() for p in old), GC_TIMEOUT,
               "the lease crawler to finish a cycle and delete the old shares")
    assert young.exists()
    history = json.loads(history_file.read_text())
    recovered = history["0"]["space-recovered"]
    assert recovered["actual-shares"] == 3 and recovered["actual-buckets"] == 3
    assert history["0"]["configured-expiration-mode"][0] == "cutoff-date"
    # the state file is saved just after the history (another write: wait for it too; one
    # saved during the walk may be there before it, with the cycle not yet finished)
    state_file = storage / "lease_checker.state.json"

    def finished_state() -> dict | None:
        state = json.loads(state_file.read_text()) if state_file.exists() else {}
        return state if state.get("last-cycle-finished") is not None else None
    state = wait_until(finished_state, GC_TIMEOUT, "the lease crawler's state file")
    assert state["last-cycle-finished"] == 0 and state["current-cycle"] is None
    counter = storage / "bucket_counter.state.json"
    wait_until(lambda: counter.exists() and json.loads(counter.read_text())
               .get("last-complete-bucket-count") is not None, GC_TIMEOUT,
               "the bucket counter to finish a cycle")
    # both crawlers start at once: the counter saw the buckets before or after the GC
    assert json.loads(counter.read_text())["last-complete-bucket-count"] in (1, 4)
    stats = wait_until(lambda: get_json(gateway.url + "statistics?t=json")["stats"], GC_TIMEOUT,
                       "statistics")
    assert stats["storage_server.total_bucket_count"] == 1
    page = get_json(gateway.url + "storage?t=json")
    assert page["lease-checker"]["history"]["0"]["space-recovered"]["actual-shares"] == 3
    assert page["lease-checker"]["last-cycle-finished"] == 0
    assert page["stats"]["storage_server.accepting_immutable_shares"] == 1

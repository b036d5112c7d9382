"""The upload helper on a grid of our nodes, with a counting proxy in front of the helper.

Our client (``[client] helper.furl`` pointing at the proxy) uploads through
our helper (``[helper] enabled``): the file reads back, the client sends
little more than the file's size, a file already in the grid is answered
without its ciphertext, a connection cut part way leaves the partial
ciphertext in ``CHK_incoming`` and the next upload fetches only the rest,
and with the helper unreachable the client uploads directly.
"""
from __future__ import annotations

import os
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from tests.support.grid import SMALL_GRID_SHARES, Gateway, Grid, start_grid
from tests.support.nodes import TahoeTool, config_for_tests, edit_tahoe_cfg, our_tahoe
from tests.support.ports import free_port
from tests.support.processes import ProcessSet
from tests.support.proxy import ProxySet, TcpProxy
from tests.support.upload_helper import (DEADLINE, furl_port, furl_via, helper_counters,
                                         start_helper, wait_for_file)
from tests.support import webapi
from tests.support.webapi import WebError


@attrs.define
class HelperSetup:
    grid: Grid
    helper: Gateway
    client: Gateway
    proxy: TcpProxy
    helper_dir: Path
    tool: TahoeTool
    processes: ProcessSet


def client_sent(proxy: TcpProxy) -> int:
    """Bytes the client has sent through the proxy so far, over every connection."""
    return sum(c.c2s_received for c in proxy.connections())


def wait_idle_helper(setup: HelperSetup) -> dict[str, int]:
    """The helper's counters once it has no active upload."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        counters = helper_counters(setup.helper)
        if counters["chk_upload_helper.active_uploads"] == 0:
            return counters
        time.sleep(0.1)
    raise AssertionError("the helper kept an active upload")


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HelperSetup]:
    """Our grid (introducer, 3 servers), our helper, a proxy to it, and our client using it."""
    workdir = tmp_path_factory.mktemp("upload-helper")
    tool = TahoeTool(our_tahoe(), workdir / "logs")
    with ProcessSet() as processes, ProxySet() as proxies:
        grid = start_grid(tool, workdir, processes, storage_nodes=3, shares=SMALL_GRID_SHARES)
        helper_dir = workdir / "helper"
        helper = start_helper(tool, helper_dir, processes, grid)
        furl = wait_for_file(helper_dir / "private" / "helper.furl")
        proxy = proxies.start("127.0.0.1", furl_port(furl))
        proxied = furl_via(furl, proxy.port)
        basedir = workdir / "client"
        tool.create_client(basedir, introducer_furl=grid.introducer_furl,
                           shares=SMALL_GRID_SHARES, nickname="client", web_port=free_port())
        edit_tahoe_cfg(basedir, {**config_for_tests(storage=False),
                                 "client": {"helper.furl": proxied}})
        # One convergence secret with a storage node, so a file it uploaded has our cap.
        secret = Path(grid.storage_nodes[1].node.basedir, "private", "convergence")
        (basedir / "private" / "convergence").write_bytes(secret.read_bytes())
        node = tool.start(basedir, processes)
        client = Gateway(node, node.node_url(DEADLINE))
        client.wait_for_servers(3)
        yield HelperSetup(grid, helper, client, proxy, helper_dir, tool, processes)


def test_ten_megabytes_through_the_helper(setup: HelperSetup) -> None:
    """The client sends at most 1.05 x the file; it reads back; the helper fetched it once."""
    data = os.urandom(10_000_000)
    before_sent = client_sent(setup.proxy)
    before = helper_counters(setup.helper)
    started = time.monotonic()
    cap = setup.client.upload(data, timeout=120)
    elapsed = time.monotonic() - started
    sent = client_sent(setup.proxy) - before_sent
    print(f"10 MB through the helper: the client sent {sent:,} bytes "
          f"({sent / len(data):.4f}x) in {elapsed:.2f} s")
    after = helper_counters(setup.helper)
    assert after["chk_upload_helper.fetched_bytes"] - \
        before["chk_upload_helper.fetched_bytes"] == len(data)
    assert len(data) <= sent <= 1.05 * len(data), sent
    assert setup.client.download(cap, timeout=120) == data
    assert setup.grid.storage_nodes[0].download(cap, timeout=120) == data


def test_file_already_in_the_grid(setup: HelperSetup) -> None:
    """A file the servers hold (uploaded directly by a storage node's own client) is answered
    at once: same cap, no ciphertext fetched, hardly any bytes from the client."""
    data = os.urandom(300_000)
    cap = setup.grid.storage_nodes[1].upload(data)
    before = helper_counters(setup.helper)
    before_sent = client_sent(setup.proxy)
    assert setup.client.upload(data) == cap
    after = helper_counters(setup.helper)
    assert after["chk_upload_helper.upload_already_present"] == \
        before["chk_upload_helper.upload_already_present"] + 1
    assert after["chk_upload_helper.fetched_bytes"] == before["chk_upload_helper.fetched_bytes"]
    assert client_sent(setup.proxy) - before_sent < 20_000
    statistics = webapi.get_json(setup.helper.url + "statistics?t=json")
    assert statistics["stats"]["chk_upload_helper.upload_already_present"] == \
        after["chk_upload_helper.upload_already_present"]
    assert statistics["counters"]["chk_upload_helper.upload_already_present"] == \
        after["chk_upload_helper.upload_already_present"]


def test_resumes_after_a_cut(setup: HelperSetup) -> None:
    """Cut the client's connection to the helper after 1 MB: the upload fails, the partial
    ciphertext stays in CHK_incoming, and the next upload fetches only the rest."""
    data = os.urandom(3_000_000)
    before = helper_counters(setup.helper)
    setup.proxy.cut_after(1_000_000)
    with pytest.raises(WebError):
        setup.client.upload(data)
    setup.proxy.wait_for_cut(DEADLINE)
    cut = wait_idle_helper(setup)
    partial = cut["chk_upload_helper.fetched_bytes"] - before["chk_upload_helper.fetched_bytes"]
    assert 0 < partial < 1_000_000
    assert cut["chk_upload_helper.incoming_count"] == 1
    assert cut["chk_upload_helper.incoming_size"] == partial
    cap = setup.client.upload(data)
    done = helper_counters(setup.helper)
    assert done["chk_upload_helper.resumes"] == cut["chk_upload_helper.resumes"] + 1
    assert done["chk_upload_helper.fetched_bytes"] - cut["chk_upload_helper.fetched_bytes"] \
        == len(data) - partial
    assert done["chk_upload_helper.incoming_count"] == 0
    assert setup.client.download(cap) == data


def restart_helper(setup: HelperSetup) -> dict[str, int]:
    """Stop the helper node by its PID, start it again; its counters once it answers."""
    setup.helper.node.stop()
    node = setup.tool.start(setup.helper_dir, setup.processes)
    setup.helper = Gateway(node, setup.helper.url)
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        try:
            return helper_counters(setup.helper)
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the helper did not come back")


def test_resumes_after_the_helper_restarts(setup: HelperSetup) -> None:
    """A partial ciphertext in CHK_incoming survives the helper's restart: the next upload of
    the file sends only the rest."""
    data = os.urandom(3_000_000)
    setup.proxy.cut_after(1_000_000)
    with pytest.raises(WebError):
        setup.client.upload(data)
    setup.proxy.wait_for_cut(DEADLINE)
    wait_idle_helper(setup)
    incoming = list((setup.helper_dir / "helper" / "CHK_incoming").iterdir())
    assert len(incoming) == 1
    partial = incoming[0].stat().st_size
    assert 0 < partial < 1_000_000
    fresh = restart_helper(setup)
    assert fresh["chk_upload_helper.upload_requests"] == 0
    assert fresh["chk_upload_helper.incoming_size"] == partial
    cap = setup.client.upload(data)
    done = helper_counters(setup.helper)
    assert done["chk_upload_helper.resumes"] == 1
    assert done["chk_upload_helper.fetched_bytes"] == len(data) - partial
    assert done["chk_upload_helper.incoming_count"] == 0
    assert setup.client.download(cap) == data


def test_unreachable_helper_means_a_direct_upload(setup: HelperSetup) -> None:
    """With the helper's proxy killed, the upload goes straight to the servers."""
    data = os.urandom(200_000)
    before = helper_counters(setup.helper)
    setup.proxy.kill()
    try:
        cap = setup.client.upload(data)
    finally:
        setup.proxy.revive()
    assert helper_counters(setup.helper)["chk_upload_helper.upload_requests"] == \
        before["chk_upload_helper.upload_requests"]
    assert setup.grid.storage_nodes[2].download(cap) == data


def test_helper_status_pages(setup: HelperSetup) -> None:
    """The helper's page lists its counters; a node without a helper says so (``{}`` in JSON)."""
    with urllib.request.urlopen(setup.helper.url + "helper_status", timeout=30) as answer:
        page = answer.read().decode()
    counters = helper_counters(setup.helper)
    assert f"<td>chk_upload_helper.upload_requests</td><td>" \
           f"{counters['chk_upload_helper.upload_requests']}</td>" in page
    assert helper_counters(setup.client) == {}
    with urllib.request.urlopen(setup.client.url + "helper_status", timeout=30) as answer:
        assert b"No helper is running" in answer.read()

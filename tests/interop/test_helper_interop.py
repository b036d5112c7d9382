"""The upload helper across implementations, on Tahoe 1.20's grid.

Our client uploads through Tahoe 1.20's helper, and Tahoe's client through
ours; a second upload of the same file is answered from the grid, the
ciphertext not fetched again (each helper's ``/helper_status?t=json``
counters say so). Each file reads back through the other implementation.
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.grid import Grid
from tests.support.nodes import TahoeTool, our_tahoe
from tests.support.processes import ProcessSet
from tests.support.proxy import ProxySet
from tests.support.upload_helper import (DEADLINE, furl_port, furl_via, helper_counters,
                                         start_client, start_helper, wait_connected_to_helper,
                                         wait_for_file)
from tests.support.webapi import WebError

pytestmark = pytest.mark.interop

@pytest.fixture(scope="module")
def nodes(tahoe_grid: Grid, tahoe120: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Our helper and Tahoe's; our client using Tahoe's helper, Tahoe's client using ours."""
    workdir = tmp_path_factory.mktemp("helper-interop")
    ours = TahoeTool(our_tahoe(), workdir / "logs")
    theirs = TahoeTool(tahoe120, workdir / "logs")
    with ProcessSet() as processes, ProxySet() as proxies:
        our_helper = start_helper(ours, workdir / "our-helper", processes, tahoe_grid)
        tahoe_helper = start_helper(theirs, workdir / "tahoe-helper", processes, tahoe_grid)
        our_furl = wait_for_file(workdir / "our-helper" / "private" / "helper.furl")
        tahoe_furl = wait_for_file(workdir / "tahoe-helper" / "private" / "helper.furl")
        our_client = start_client(ours, workdir / "our-client", processes, tahoe_grid,
                                  tahoe_furl)
        # Tahoe's client reaches our helper through a proxy (to cut its connection).
        proxy = proxies.start("127.0.0.1", furl_port(our_furl))
        tahoe_client = start_client(theirs, workdir / "tahoe-client", processes, tahoe_grid,
                                    furl_via(our_furl, proxy.port))
        wait_connected_to_helper(tahoe_client)
        yield {"our_helper": our_helper, "tahoe_helper": tahoe_helper,
               "our_client": our_client, "tahoe_client": tahoe_client, "proxy": proxy}


@pytest.mark.parametrize("client,helper,reader", [
    ("tahoe_client", "our_helper", "our_client"),
    ("our_client", "tahoe_helper", "tahoe_client"),
])
def test_upload_through_the_other_helper(nodes: dict[str, Any], client: str, helper: str,
                                         reader: str) -> None:
    """The helper fetches the ciphertext once (its size), the file reads back through the
    other implementation, and a second upload is answered from the grid."""
    data = os.urandom(700_000)
    before = helper_counters(nodes[helper])
    cap = nodes[client].upload(data)
    assert cap.startswith("URI:CHK:")
    after = helper_counters(nodes[helper])
    assert after["chk_upload_helper.upload_need_upload"] == \
        before["chk_upload_helper.upload_need_upload"] + 1
    assert after["chk_upload_helper.fetched_bytes"] - \
        before["chk_upload_helper.fetched_bytes"] == len(data)
    assert after["chk_upload_helper.encoded_bytes"] - \
        before["chk_upload_helper.encoded_bytes"] == len(data)
    assert nodes[reader].download(cap) == data
    assert nodes[client].download(cap) == data

    again = nodes[client].upload(data)
    assert again == cap
    final = helper_counters(nodes[helper])
    assert final["chk_upload_helper.upload_already_present"] == \
        after["chk_upload_helper.upload_already_present"] + 1
    assert final["chk_upload_helper.fetched_bytes"] == after["chk_upload_helper.fetched_bytes"]
    assert final["chk_upload_helper.upload_requests"] == \
        before["chk_upload_helper.upload_requests"] + 2
    assert final["chk_upload_helper.active_uploads"] == 0
    assert final["chk_upload_helper.incoming_count"] == 0
    assert final["chk_upload_helper.encoding_count"] == 0


def test_tahoe_client_resumes_through_our_helper(nodes: dict[str, Any]) -> None:
    """Tahoe's client cut off after 1 MB: our helper keeps the partial ciphertext, and when
    Tahoe's client uploads the file again it reads only the rest from it (Tahoe's reader
    skips forward to the offset our helper asks for)."""
    helper, client, proxy = nodes["our_helper"], nodes["tahoe_client"], nodes["proxy"]
    data = os.urandom(3_000_000)
    before = helper_counters(helper)
    proxy.cut_after(1_000_000)
    with pytest.raises(WebError):
        client.upload(data)
    proxy.wait_for_cut(DEADLINE)
    deadline = time.monotonic() + DEADLINE
    while helper_counters(helper)["chk_upload_helper.active_uploads"]:
        assert time.monotonic() < deadline, "our helper kept the upload active"
        time.sleep(0.1)
    cut = helper_counters(helper)
    partial = cut["chk_upload_helper.fetched_bytes"] - before["chk_upload_helper.fetched_bytes"]
    assert 0 < partial < 1_000_000
    assert cut["chk_upload_helper.incoming_size"] == partial
    wait_connected_to_helper(client)
    cap = client.upload(data)
    done = helper_counters(helper)
    assert done["chk_upload_helper.resumes"] == cut["chk_upload_helper.resumes"] + 1
    assert done["chk_upload_helper.fetched_bytes"] - cut["chk_upload_helper.fetched_bytes"] \
        == len(data) - partial
    assert nodes["our_client"].download(cap) == data

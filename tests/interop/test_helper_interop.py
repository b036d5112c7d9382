"""The upload helper across implementations, on Tahoe 1.20's grid.

Our client uploads through Tahoe 1.20's helper, and Tahoe's client through
ours; a second upload of the same file is answered from the grid, the
ciphertext not fetched again (each helper's ``/helper_status?t=json``
counters say so). Each file reads back through the other implementation.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.grid import Gateway, Grid
from tests.support.nodes import TahoeTool, our_tahoe
from tests.support.processes import ProcessSet
from tests.support.upload_helper import (helper_counters, start_client, start_helper,
                                         wait_connected_to_helper, wait_for_file)

pytestmark = pytest.mark.interop

@pytest.fixture(scope="module")
def nodes(tahoe_grid: Grid, tahoe120: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Gateway]]:
    """Our helper and Tahoe's; our client using Tahoe's helper, Tahoe's client using ours."""
    workdir = tmp_path_factory.mktemp("helper-interop")
    ours = TahoeTool(our_tahoe(), workdir / "logs")
    theirs = TahoeTool(tahoe120, workdir / "logs")
    with ProcessSet() as processes:
        our_helper = start_helper(ours, workdir / "our-helper", processes, tahoe_grid)
        tahoe_helper = start_helper(theirs, workdir / "tahoe-helper", processes, tahoe_grid)
        our_furl = wait_for_file(workdir / "our-helper" / "private" / "helper.furl")
        tahoe_furl = wait_for_file(workdir / "tahoe-helper" / "private" / "helper.furl")
        our_client = start_client(ours, workdir / "our-client", processes, tahoe_grid,
                                  tahoe_furl)
        tahoe_client = start_client(theirs, workdir / "tahoe-client", processes, tahoe_grid,
                                    our_furl)
        wait_connected_to_helper(tahoe_client)
        yield {"our_helper": our_helper, "tahoe_helper": tahoe_helper,
               "our_client": our_client, "tahoe_client": tahoe_client}


@pytest.mark.parametrize("client,helper,reader", [
    ("tahoe_client", "our_helper", "our_client"),
    ("our_client", "tahoe_helper", "tahoe_client"),
])
def test_upload_through_the_other_helper(nodes: dict[str, Gateway], client: str, helper: str,
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

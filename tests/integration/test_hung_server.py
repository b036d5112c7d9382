"""A storage server that hangs with its connections open costs the client's operations a
few seconds once, not a minute each.

On the session's local grid (10 servers, 3-of-10, happy 7), one storage node is
stopped with SIGSTOP: the kernel still accepts its connections and keeps them open,
but nothing answers. Before, every directory listing, directory change, check and
upload waited for it until the connection's response timeout (60 s) or the
allocation timeout (30 s). Now the first operation gives up on it a few seconds
after the others answered (``client.stragglers``), the server is pinged and
dropped, and what follows does not wait for it at all; once it runs again, the
client connects to it again and gives it shares. A server stopped in the middle of
a large upload is given up 5 s after it stopped taking data, not after a minute.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

import pytest

from tahoe.client.broker import PING_TIMEOUT
from tahoe.client.stragglers import STRAGGLER_GRACE
from tests.integration.test_local_grid import all_servers_back, share_files  # noqa: F401
from tests.support.dirapi import WebAPI
from tests.support.ournodes import incoming_files
from tests.support.processes import wait_until
from tests.support.proxied_grid import ProxiedGrid

#: The first operation: the grace after the others' answers, and slack for a busy machine.
FIRST_LIMIT = STRAGGLER_GRACE + 7.0
#: Each operation once the server is suspected or dropped (before: 30 or 60 s).
LATER_LIMIT = 3.0


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.monotonic()
    result = action()
    return time.monotonic() - started, result


@pytest.mark.parametrize("first_operation", ["listing", "upload"])
def test_a_hung_server_holds_operations_up_once(all_servers_back: ProxiedGrid,  # noqa: F811
                                                first_operation: str) -> None:
    """The first operation: a directory listing (a servermap update that asks every
    server), or an upload (whose allocations go to every server)."""
    grid = all_servers_back
    api = WebAPI(grid.client.url)
    dircap = api.mkdir()
    api.put(dircap, "before", b"b" * 1000)
    index = 3 if first_operation == "listing" else 6
    hung = grid.servers[index].info
    pid = grid.storage_nodes[index].node.process.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        if first_operation == "listing":
            first, children = _timed(lambda: api.children(dircap))
            assert "before" in children
        else:
            data = os.urandom(1000)
            first, cap = _timed(lambda: grid.client.upload(data))
            assert grid.client.download(cap) == data
            assert len(share_files(grid, cap)) == 9
        assert first < FIRST_LIMIT, f"the first {first_operation} took {first:.1f} s"

        later: dict[str, float] = {}
        later["listing"], _ = _timed(lambda: api.children(dircap))
        later["link"], _ = _timed(lambda: api.put(dircap, "during", b"d" * 1000))
        later["mkdir"], subdir = _timed(api.mkdir)
        data = os.urandom(1000)
        later["upload"], cap = _timed(lambda: grid.client.upload(data))
        later["check"], _ = _timed(lambda: api.post(cap, query="t=check&output=JSON"))
        slow = {name: round(took, 2) for name, took in later.items() if took > LATER_LIMIT}
        assert not slow, f"operations that waited for the hung server: {slow}"
        assert grid.client.download(cap) == data
        assert set(api.children(dircap)) == {"before", "during"}
        assert api.children(subdir) == {}

        # The ping went unanswered: the server counts as not connected.
        status = wait_until(
            lambda: (s := grid.server_status()[hung.server_id]) and not s.startswith("Connected")
            and s, PING_TIMEOUT + 10, "the hung server to be dropped")
        assert "Connected" not in status
    finally:
        os.kill(pid, signal.SIGCONT)

    grid.client.wait_for_servers(len(grid.servers), 60)
    # Back, it is given shares again.
    cap = grid.client.upload(os.urandom(1000))
    holders = {path.parents[4].name for path in share_files(grid, cap)}
    assert hung.basedir.name in holders, holders


def test_a_server_hung_in_the_middle_of_an_upload_is_given_up(
        all_servers_back: ProxiedGrid) -> None:  # noqa: F811
    """Stopped once its share of a 40 MB upload is partly written: the upload completes on
    the nine others a few seconds later (before: the connection's timeout, 60 s)."""
    grid = all_servers_back
    node = grid.storage_nodes[8]
    storage = Path(node.node.basedir) / "storage"
    data = os.urandom(40_000_000)
    result: list[Any] = []
    started = time.monotonic()
    thread = threading.Thread(target=lambda: result.append(grid.client.upload(data, 120)),
                              daemon=True)
    thread.start()
    pid = node.node.process.pid
    try:
        wait_until(lambda: any(p.stat().st_size > 1_000_000 for p in incoming_files(storage)),
                   30, "the share to be partly written", ignore=(FileNotFoundError,))
        os.kill(pid, signal.SIGSTOP)
        stopped = time.monotonic()
        thread.join(120)
        took = time.monotonic() - stopped
        assert result, f"the upload did not end within {time.monotonic() - started:.0f} s"
        assert took < FIRST_LIMIT, f"the upload ended {took:.1f} s after the server stopped"
        (cap,) = result
        assert grid.client.download(cap) == data
        assert len(share_files(grid, cap)) == 9
    finally:
        os.kill(pid, signal.SIGCONT)
    grid.client.wait_for_servers(len(grid.servers), 60)

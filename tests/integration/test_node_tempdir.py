"""``[node]tempdir``: where a node spools large request bodies (``NODEDIR/tmp`` by default).

As in Tahoe 1.20, the web API's (and the S3 gateway's, and SFTP's) large
request bodies wait in the node's temporary directory while they arrive, not
in the system's ``/tmp`` (often small, or memory). Real nodes on 127.0.0.1:
while a 2 MB ``PUT`` is half sent, the node holds an open file in the
directory ``tempdir`` names; then the upload completes. A ``tempdir`` that
cannot be used stops ``tahoe run`` at once with a clear error.
"""
from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from tests.support.grid import Gateway, start_introducer
from tests.support.nodes import Shares, TahoeTool, config_for_tests, edit_tahoe_cfg, our_tahoe
from tests.support.ports import free_port
from tests.support.processes import ProcessSet

ONE = Shares(needed=1, happy=1, total=1)


def _open_files_under(pid: int, directory: Path) -> list[str]:
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(directory) + "/"):
            found.append(target)
    return found


def test_large_bodies_wait_in_the_nodes_tempdir(tmp_path: Path) -> None:
    tool = TahoeTool(our_tahoe(), tmp_path / "logs")
    spool = tmp_path / "spool here"
    with ProcessSet() as processes:
        _, furl = start_introducer(tool, tmp_path / "introducer", processes)
        tool.create_node(tmp_path / "node", introducer_furl=furl, shares=ONE, nickname="node",
                         web_port=free_port(), tub_port=free_port())
        changes = config_for_tests(storage=True)
        changes.setdefault("node", {})["tempdir"] = str(spool)
        edit_tahoe_cfg(tmp_path / "node", changes)
        running = tool.start(tmp_path / "node", processes)
        url = running.node_url(60)
        Gateway(running, url).wait_for_servers(1, 60)  # itself: the upload needs one
        host, port = url.split("//")[1].rstrip("/").split(":")
        body = os.urandom(2_000_000)
        with socket.create_connection((host, int(port)), timeout=60) as connection:
            connection.sendall(b"PUT /uri HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                              b"Content-Length: %d\r\n\r\n" % len(body) + body[:500_000])
            deadline = time.monotonic() + 30
            while not (held := _open_files_under(running.process.pid, spool)) \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            assert held, "no file of the half-sent body in the node's tempdir"
            connection.sendall(body[500_000:])
            answer = b""
            while chunk := connection.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
        assert answer.split(b"\r\n\r\n", 1)[1].strip().startswith(b"URI:CHK:")
        assert (spool.stat().st_mode & 0o777) == 0o700


def test_a_tempdir_that_cannot_be_used_stops_the_node_at_once(tmp_path: Path) -> None:
    tool = TahoeTool(our_tahoe(), tmp_path / "logs")
    tool.create_node(tmp_path / "node", introducer_furl=None, shares=ONE, nickname="node",
                     web_port=free_port(), tub_port=free_port())
    (tmp_path / "a file").write_text("not a directory")
    edit_tahoe_cfg(tmp_path / "node", {"node": {"tempdir": str(tmp_path / "a file" / "tmp"),
                                                "log_gatherer.furl": "pb://x@y/z"}})
    result = subprocess.run([tool.exe, "run", "--allow-stdin-close", str(tmp_path / "node")],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 1
    assert f"the temporary directory {tmp_path / 'a file' / 'tmp'} ([node]tempdir in" \
        " tahoe.cfg) cannot be used: Not a directory" in result.stderr, result.stderr
    assert not (tmp_path / "node" / "running.process").exists()
    assert "WARNING: " in result.stderr and "log_gatherer.furl is ignored" in result.stderr


def test_a_full_disk_stops_the_node_with_the_file_it_could_not_write(tmp_path: Path) -> None:
    """A node directory on a full 2 MiB tmpfs: ``tahoe run`` exits 1 at once, its error
    naming the file it could not write and the cause, no traceback on its standard error
    (before: a traceback from writing ``running.process``)."""
    from tests.support.sysfaults import fill, require_root, tmpfs
    require_root()
    tool = TahoeTool(our_tahoe(), tmp_path / "logs")
    with tmpfs(tmp_path / "disk", 2 * 1024 * 1024) as disk:
        tool.create_node(disk / "node", introducer_furl=None, shares=ONE, nickname="node",
                         web_port=free_port(), tub_port=free_port())
        fill(disk / "filler")
        result = subprocess.run([tool.exe, "run", "--allow-stdin-close", str(disk / "node")],
                                capture_output=True, text=True, timeout=60,
                                stdin=subprocess.DEVNULL)
        assert result.returncode == 1
        assert "ERROR: the node could not start: " in result.stderr, result.stderr
        assert "No space left on device" in result.stderr
        assert str(disk / "node") in result.stderr and "Traceback" not in result.stderr

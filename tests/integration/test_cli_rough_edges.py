"""Our ``tahoe`` CLI as a new user meets it, on the session's local grid: piped into
``head``, with ``-q``, on a terminal, and with the gateway down."""
from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest

from tahoe.util import base32
from tests.support.dirapi import WebAPI
from tests.support.nodes import our_tahoe
from tests.support.ports import free_port
from tests.support.proxied_grid import ProxiedGrid
from tests.support.sysfaults import require_root, tmpfs


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


@pytest.fixture
def cli_dir(local_grid: ProxiedGrid, tmp_path: Path) -> Path:
    """A CLI node directory pointing at the local grid's gateway, with a ``work:`` alias
    whose directory holds 1500 literal files (a manifest of about 200 kB)."""
    api = WebAPI(local_grid.client.url)
    children = {f"file-{i:04d}-{'x' * 40}":
                ["filenode", {"ro_uri": "URI:LIT:" + base32.b2a(b"%d" % i)}] for i in range(1500)}
    response = api.request("POST", "/uri?t=mkdir-with-children",
                           json.dumps(children).encode("utf-8"))
    assert response.status == 200, response
    directory = tmp_path / "cli"
    (directory / "private").mkdir(parents=True)
    (directory / "node.url").write_text(local_grid.client.url + "\n")
    (directory / "private" / "aliases").write_text(f"work: {response.text.strip()}\n")
    return directory


def tahoe(cli_dir: Path, *args: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    """Run our ``tahoe -d CLI_DIR ARGS`` and capture its output."""
    return subprocess.run([str(our_tahoe()), "-d", str(cli_dir), *args],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
                          env=_env(), **kwargs)  # type: ignore[call-overload]


@pytest.mark.parametrize("command", [["manifest", "work:"], ["deep-check", "-v", "work:"],
                                     ["ls", "-l", "work:"]])
def test_output_into_a_closed_pipe_is_quiet(cli_dir: Path, command: list[str]) -> None:
    """``tahoe manifest | head -1``: the command stops without a traceback once its reader
    is gone, with the status a shell gives a tool killed by SIGPIPE."""
    process = subprocess.Popen([str(our_tahoe()), "-d", str(cli_dir), *command],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=_env())
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()  # what `head -1` does after its line
    stderr = process.stderr.read()
    assert process.wait(timeout=60) == 141, stderr
    assert first.strip() and stderr == b""


def test_quiet_prints_results_only(cli_dir: Path, tmp_path: Path) -> None:
    """With -q, put prints only the cap and unlink, mv and create-alias nothing at all."""
    local = tmp_path / "f.txt"
    local.write_bytes(os.urandom(2000))
    put = tahoe(cli_dir, "-q", "put", str(local), "work:quiet.txt")
    assert (put.returncode, put.stderr) == (0, b"") and put.stdout.startswith(b"URI:CHK:")
    for args in (["mv", "work:quiet.txt", "work:moved.txt"], ["unlink", "work:moved.txt"],
                 ["create-alias", "quiet"]):
        result = tahoe(cli_dir, "-q", *args)
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b""), args
    loud = tahoe(cli_dir, "put", str(local), "work:loud.txt")
    assert loud.stderr == b"201 Created\n"


def test_gateway_down_shows_no_cap(cli_dir: Path) -> None:
    """With the gateway down, errors name the gateway but never the alias's write cap."""
    (cli_dir / "node.url").write_text(f"http://127.0.0.1:{free_port()}/\n")
    cap = (cli_dir / "private" / "aliases").read_text().split()[1]
    writekey = cap.split(":")[2]
    for args in (["ls", "work:"], ["put", "-", "work:x"], ["mkdir", "work:sub"],
                 ["manifest", "work:"], ["get", "work:file-0001-" + "x" * 40]):
        result = tahoe(cli_dir, *args)
        assert result.returncode != 0, args
        message = result.stderr.decode()
        assert "Error trying to connect to http://127.0.0.1:" in message, (args, message)
        assert writekey not in message and "URI" not in message, (args, message)


def test_put_progress_bar_on_a_terminal(cli_dir: Path, tmp_path: Path) -> None:
    """On a terminal, a put shows the bytes sent to the gateway, then a second bar that
    follows the gateway's upload to the servers, both ending at 100 %."""
    local = tmp_path / "big.bin"
    local.write_bytes(os.urandom(12_000_000))
    controller, terminal = pty.openpty()
    process = subprocess.Popen([str(our_tahoe()), "-d", str(cli_dir), "put", str(local)],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=terminal, env=_env())
    os.close(terminal)
    shown = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 1.0)
        if ready:
            try:
                piece = os.read(controller, 65536)
            except OSError:  # the terminal's last writer exited
                break
            if not piece:
                break
            shown += piece
        elif process.poll() is not None:
            break
    os.close(controller)
    assert process.wait(timeout=60) == 0
    text = shown.decode("utf-8", "replace")
    assert "put 100% |" in text and "upload 100% |" in text, text
    assert text.index("put 100% |") < text.index("upload")


def test_a_full_disk_leaves_local_files_as_they_were(cli_dir: Path, tmp_path: Path) -> None:
    """``tahoe get`` and ``tahoe cp`` (one file, and ``-r``) of 2 MB into a 1 MiB tmpfs:
    each fails naming the cause, the files they would have replaced keep their contents,
    and no file, whole or partial, is left behind by them."""
    require_root()
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(2_000_000))
    assert tahoe(cli_dir, "put", str(source), "work:big.bin").returncode == 0
    with tmpfs(tmp_path / "full", 1024 * 1024) as full:
        (full / "kept.bin").write_bytes(b"old contents")
        (full / "tree").mkdir()
        (full / "tree" / "big.bin").write_bytes(b"old tree file")
        for command in (["get", "work:big.bin", str(full / "kept.bin")],
                        ["cp", "work:big.bin", str(full / "kept.bin")],
                        ["cp", "-r", "work:", str(full / "tree")]):
            result = tahoe(cli_dir, *command)
            assert result.returncode == 1, command
            assert b"No space left on device" in result.stderr, (command, result.stderr)
            assert (full / "kept.bin").read_bytes() == b"old contents"
            assert (full / "tree" / "big.bin").read_bytes() == b"old tree file"
            assert not [p for p in full.rglob("*") if p.name.endswith(".tahoe-tmp")]

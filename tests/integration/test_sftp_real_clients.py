"""Backup and sync tools no one here wrote, over the SFTP frontend: restic and rclone.

Debian's restic (through OpenSSH's ``ssh -s sftp``) and rclone (its own Go
SSH client, the ``pkg/sftp`` library) against a client node of ours on the
session's local grid (:func:`tests.support.sftp.started_sftp_node`). Both
found faults (issue 25): rclone's last ``WRITE`` of a file carries bytes
past its data, on which Conch asserted and never answered (rclone hung);
restic makes its 256 ``data/xx`` directories at once in one parent, and its
``ssh`` exited with 255 at the end (no exit status for the subsystem). A
raw SFTP client sends 256 ``MKDIR`` requests at once, and replays rclone's
``WRITE``. Each run is a row of the reliability table ("SFTP real
clients"), and afterwards the node's log holds no unhandled error. Every
client run has a timeout; the node is stopped by PID.
"""
from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import DEFAULT_SHARES
from tests.support.dirapi import WebAPI
from tests.support.programs import require
from tests.support.proxied_grid import ProxiedGrid
from tests.support.reliability import fault_run
from tests.support.sftp import (CLIENT_TIMEOUT, FX_BAD_MESSAGE, FX_OK, RawSFTP, SFTPNode,
                                ssh_options, started_sftp_node)
from tests.support.trees import same_trees

FAULT_CLASS = "SFTP real clients"
#: What must never be in the node's log once real clients have used it (the last: a
#: request failed for a reason the frontend did not expect).
LOG_ERRORS = ("Unhandled Error", "Unhandled error", "AssertionError", "Could not adapt",
              "SFTP request failed")


@pytest.fixture(scope="module")
def node(local_grid: ProxiedGrid, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[SFTPNode]:
    """A client with the SFTP frontend on the local grid, for this module."""
    with started_sftp_node(local_grid, tmp_path_factory.mktemp("sftp-real"),
                           DEFAULT_SHARES) as started:
        yield started


def assert_log_clean(node: SFTPNode) -> None:
    """The node logged no unhandled error, failed assertion, failed adaptation or
    unexpected failure of a request."""
    text = node.log.read_text(encoding="utf-8", errors="replace")
    found = [error for error in LOG_ERRORS if error in text]
    assert not found, f"{found} in {node.log}"


def tool_env(home: Path) -> dict[str, str]:
    """The environment for restic and rclone: nothing read from, or written to, the
    machine's home directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RESTIC_", "RCLONE_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_CACHE_HOME=str(home / ".cache"), RESTIC_PASSWORD="correct horse",
               RESTIC_CACHE_DIR=str(home / "restic-cache"),
               RCLONE_CONFIG=str(home / "rclone.conf"))
    home.mkdir(parents=True, exist_ok=True)
    (home / "rclone.conf").write_text("")
    return env


def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """A client command that must succeed (its output in the message when it does not)."""
    result = subprocess.run(args, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=CLIENT_TIMEOUT)
    assert result.returncode == 0, (f"{args[:3]} exited with {result.returncode}:\n"
                                    f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result


def tree_with_duplicates(root: Path, seed: int, files: int) -> int:
    """``files`` files (60: about 1.5 MB) in a few subdirectories, copies of a handful of
    contents (empty, 1 byte, around the 32 KiB SFTP chunk, 180 kB) under odd names
    (spaces, accents, quotes, a leading dash); returns the bytes written."""
    rng = random.Random(seed)
    blobs = [rng.randbytes(size) for size in (0, 1, 700, 4_096, 33_000, 65_536 + 5, 180_000)]
    places = ["", "docs", "docs/ünï cødé", "a/b/c", "space dir", "-dash"]
    written = 0
    for n in range(files):
        blob = blobs[n % len(blobs)]
        path = root / places[n % len(places)] / f"{'file' if n % 3 else 'Copy of'} {n} 'q'.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(blob)
        written += len(blob)
    return written


def test_rclone_writes_past_their_data_are_answered(node: SFTPNode) -> None:
    """rclone 1.60's last WRITE of a file: a data string of the bytes read, then stale
    bytes up to the chunk's end. Answered (the data stored, the rest ignored, as OpenSSH's
    sftp-server does); a request too short for its fields gets FX_BAD_MESSAGE."""
    with fault_run(FAULT_CLASS) as fault, RawSFTP(node) as raw:
        handle = raw.open_for_writing(b"/rclone-tail.bin")
        first, tail = os.urandom(32_768), os.urandom(5_088)
        assert raw.write(handle, 0, first) == FX_OK
        assert raw.write(handle, 32_768, tail, past_data=os.urandom(32_768 - 5_088)) == FX_OK
        assert raw.close(handle) == FX_OK
        assert raw.status(14, RawSFTP.string(b"/cut-short")[:6]) == FX_BAD_MESSAGE  # MKDIR
        assert raw.status(16, b"") == FX_BAD_MESSAGE  # REALPATH with no path
        assert raw.mkdir(b"/after-the-bad-ones") == FX_OK  # the session goes on
        stored = WebAPI(node.gateway.url).read(node.root, "rclone-tail.bin")
        assert stored == first + tail
        fault.checked(stored)
    assert raw.exit_status == 0
    assert_log_clean(node)


def test_256_directories_at_once(node: SFTPNode) -> None:
    """256 MKDIRs sent together in one parent (each a new directory, linked by a change
    coalesced with the others): every one answered OK, all 256 listed by the web API."""
    names = [f"{i:02x}" for i in range(256)]
    with fault_run(FAULT_CLASS), RawSFTP(node) as raw:
        assert raw.mkdir(b"/parallel") == FX_OK
        statuses = raw.pipelined_mkdirs([f"/parallel/{name}".encode() for name in names])
        assert [name for name, code in zip(names, statuses) if code != FX_OK] == []
        children = WebAPI(node.gateway.url).children(node.root, "parallel")
        assert sorted(children) == names
        assert all(kind == "dirnode" for kind, _ in children.values())
    assert raw.exit_status == 0
    assert_log_clean(node)


def test_restic_backup_check_restore(node: SFTPNode, tmp_path: Path) -> None:
    """restic over SFTP: init (256 directories at once), backup of a tree full of
    duplicates, check --read-data, restore, and the restored tree equals the source."""
    require("restic")
    source = tmp_path / "tree"
    written = tree_with_duplicates(source, seed=25, files=60)
    env = tool_env(tmp_path / "home")
    ssh = " ".join(["ssh", *ssh_options(node.key), "-p", str(node.port), "alice@127.0.0.1",
                    "-s", "sftp"])
    restic = ["restic", "--repo", "sftp:alice@127.0.0.1:/restic-repo", "-o",
              f"sftp.command={ssh}"]
    with fault_run(FAULT_CLASS) as fault:
        run([*restic, "init"], env, tmp_path)
        data = WebAPI(node.gateway.url).children(node.root, "restic-repo/data")
        assert sorted(data) == [f"{i:02x}" for i in range(256)]
        run([*restic, "backup", "tree"], env, tmp_path)
        checked = run([*restic, "check", "--read-data"], env, tmp_path)
        assert "no errors were found" in checked.stdout
        run([*restic, "restore", "latest", "--target", "restored"], env, tmp_path)
        assert same_trees(source, tmp_path / "restored" / "tree")
        fault.checked(written)
    assert_log_clean(node)


def test_rclone_sync_and_check(node: SFTPNode, tmp_path: Path) -> None:
    """rclone over SFTP (its own SSH client; no shell commands tried): sync up, then
    check --download finds no difference, and the web API sees the same bytes."""
    require("rclone")
    source = tmp_path / "tree"
    written = tree_with_duplicates(source, seed=26, files=30)
    env = tool_env(tmp_path / "home")
    remote = (f":sftp,host=127.0.0.1,port={node.port},user=alice,key_file='{node.key}',"
              "shell_type=none:rclone-copy")
    with fault_run(FAULT_CLASS) as fault:
        run(["rclone", "sync", "tree", remote], env, tmp_path)
        run(["rclone", "check", "--download", "tree", remote], env, tmp_path)
        sample = next(p for p in sorted(source.rglob("*")) if p.is_file() and p.stat().st_size)
        relative = sample.relative_to(source).as_posix()
        assert WebAPI(node.gateway.url).read(node.root, f"rclone-copy/{relative}") \
            == sample.read_bytes()
        fault.checked(written)
    assert_log_clean(node)

"""The SFTP frontend with real clients: OpenSSH's ``sftp`` in batch mode, and ``sshfs``.

A client node of ours joins the session's local grid (its ten proxied
servers) with ``[sftpd]`` enabled and an accounts file of three accounts: a
public key, a password, and a password with a read-only root. Every client
run has a timeout: nothing may hang.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import DEFAULT_SHARES
from tests.support.dirapi import WebAPI
from tests.support.proxied_grid import ProxiedGrid
from tests.support.sftp import (CLIENT_TIMEOUT, FX_FAILURE, FX_OK, RawSFTP, SFTPNode, sftp,
                                ssh_options, started_sftp_node)
from tests.support.sysfaults import require_root, tmpfs


@pytest.fixture(scope="module")
def sftp_node(local_grid: ProxiedGrid, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[SFTPNode]:
    """A client with the SFTP frontend on the local grid, for this module."""
    with started_sftp_node(local_grid, tmp_path_factory.mktemp("sftp"), DEFAULT_SHARES) as node:
        yield node


def test_put_get_ls_mkdir_rename_rm(sftp_node: SFTPNode) -> None:
    """A whole session in batch mode: the files land in the account's root directory on
    the grid, come back byte for byte, and leave it as they found it."""
    local = sftp_node.workdir / "upload.bin"
    local.write_bytes(os.urandom(700_000))
    result = sftp(sftp_node, "alice", "mkdir docs\nput upload.bin docs/report.bin\n"
                  "ls -l docs\nget docs/report.bin back.bin\nrename docs/report.bin docs/r2.bin\n"
                  "ls docs\n")
    assert result.returncode == 0, result.stderr
    assert "700000" in result.stdout and "report.bin" in result.stdout
    assert "docs/r2.bin" in result.stdout.split("ls docs")[1]
    assert (sftp_node.workdir / "back.bin").read_bytes() == local.read_bytes()
    api = WebAPI(sftp_node.gateway.url)
    assert api.read(sftp_node.root, "docs/r2.bin") == local.read_bytes()
    result = sftp(sftp_node, "alice", "rm docs/r2.bin\nrmdir docs\nls -l\n")
    assert result.returncode == 0, result.stderr
    assert api.children(sftp_node.root) == {}


def test_large_file_round_trip(sftp_node: SFTPNode) -> None:
    """A 60 MB file goes up and comes back intact."""
    local = sftp_node.workdir / "large.bin"
    local.write_bytes(os.urandom(60_000_000))
    started = time.monotonic()
    result = sftp(sftp_node, "alice", "put large.bin\nget large.bin large.back\nrm large.bin\n")
    assert result.returncode == 0, result.stderr
    print(f"sftp put+get of 60 MB: {time.monotonic() - started:.1f} s")
    assert (sftp_node.workdir / "large.back").read_bytes() == local.read_bytes()


def test_a_cut_off_upload_replaces_nothing(sftp_node: SFTPNode) -> None:
    """When the client goes away in the middle of a put, the file it was writing over keeps
    its old contents (half a file is never stored)."""
    (sftp_node.workdir / "keep.bin").write_bytes(b"the old contents\n")
    assert sftp(sftp_node, "alice", "put keep.bin\n").returncode == 0
    log = sftp_node.log
    logouts = log.read_text().count("SFTP user 'alice' logged out")
    (sftp_node.workdir / "huge.bin").write_bytes(os.urandom(1_000_000) * 200)
    batch = sftp_node.workdir / "cut-batch"
    batch.write_text("put huge.bin keep.bin\n")
    client = subprocess.Popen(
        ["sftp", *ssh_options(sftp_node.key), "-P", str(sftp_node.port), "-b", str(batch),
         "alice@127.0.0.1"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        cwd=sftp_node.workdir)
    time.sleep(0.5)
    assert client.poll() is None, "the put ended before it could be cut off"
    client.kill()
    client.wait(timeout=60)
    deadline = time.monotonic() + 60
    while log.read_text().count("SFTP user 'alice' logged out") == logouts:
        assert time.monotonic() < deadline, "the node did not notice the lost connection"
        time.sleep(0.1)
    api = WebAPI(sftp_node.gateway.url)
    while api.ok("GET", "/status?t=json").json()["active"]:  # no store under way
        assert time.monotonic() < deadline, "the node stayed busy"
        time.sleep(0.1)
    assert api.read(sftp_node.root, "keep.bin") == b"the old contents\n"
    result = sftp(sftp_node, "alice", "ls -l\nrm keep.bin\n")
    assert result.returncode == 0 and "huge.bin" not in result.stdout


def test_passwords_and_wrong_credentials(sftp_node: SFTPNode, tmp_path: Path) -> None:
    """A password account logs in; a wrong password or an unknown key is refused by SSH
    (exit status 255, 'Permission denied') without hanging."""
    right = sftp(sftp_node, "bob", "pwd\n", password="sekrit")
    assert right.returncode == 0, right.stderr
    assert "Remote working directory: /" in right.stdout
    wrong = sftp(sftp_node, "bob", "ls\n", password="not the password")
    assert wrong.returncode == 255 and "Permission denied" in wrong.stderr
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)],
                   check=True, timeout=60)
    refused = sftp(sftp_node, "alice", "ls\n", key=stranger)
    assert refused.returncode == 255 and "Permission denied" in refused.stderr
    nobody = sftp(sftp_node, "mallory", "ls\n", password="sekrit")
    assert nobody.returncode == 255


def test_outside_root_and_read_only(sftp_node: SFTPNode) -> None:
    """A path above the root is refused; a read-only root can be read but not changed: each
    request gets an SFTP error status the client shows."""
    outside = sftp(sftp_node, "alice", "ls ..\n")
    assert outside.returncode == 1 and "Can't ls" in outside.stderr
    escape = sftp(sftp_node, "alice", "get ../../etc/passwd stolen\n")
    assert escape.returncode == 1 and not (sftp_node.workdir / "stolen").exists()
    readonly = sftp(sftp_node, "carol", "ls -l\nget notes.txt notes.copy\n-mkdir new\n"
                    "-put notes.copy again.txt\n-rm notes.txt\n-rename notes.txt n2\n",
                    password="visitor")
    assert readonly.returncode == 0, readonly.stderr
    assert "-r--r--r--" in readonly.stdout and "notes.txt" in readonly.stdout
    assert (sftp_node.workdir / "notes.copy").read_text() == "read-only notes\n"
    for what in ('remote mkdir "/new": Permission denied',
                 'dest open "/again.txt": Permission denied',
                 "remote delete /notes.txt: Permission denied",
                 'remote rename "/notes.txt" to "/n2": Permission denied'):
        assert what in readonly.stderr, readonly.stderr


def test_session_requests_besides_sftp(sftp_node: SFTPNode) -> None:
    """What OpenSSH asks for besides the subsystem: ``env`` (Debian's ssh_config sends LANG
    and LC_* on every login) is refused quietly and sftp goes on; a terminal and a shell, or
    a command, are told that only SFTP is offered (exit status 1); nothing hangs, and the
    node logs no error for any of it."""
    logged = sftp_node.log.stat().st_size
    with_env = ["-o", "SetEnv=LANG=C.UTF-8 LC_ALL=C.UTF-8"]
    listed = sftp(sftp_node, "alice", "pwd\n", options=with_env)
    assert listed.returncode == 0 and "Remote working directory: /" in listed.stdout, listed
    ssh = ["ssh", *ssh_options(sftp_node.key), *with_env, "-p", str(sftp_node.port)]
    for terminal, command in (([], ["ls", "-l"]), (["-tt"], []), (["-T"], [])):
        refused = subprocess.run([*ssh, *terminal, "alice@127.0.0.1", *command],
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 timeout=CLIENT_TIMEOUT)
        assert refused.returncode == 1, (terminal, command, refused)
        assert "only SFTP" in refused.stdout + refused.stderr, (terminal, command, refused)
    with open(sftp_node.log, encoding="utf-8", errors="replace") as log:
        log.seek(logged)
        written = log.read()
    assert "refused (only SFTP is offered)" in written
    for error in ("Could not adapt", "Unhandled", "Traceback", "Error handling"):
        assert error not in written, written


def test_sshfs_mount(sftp_node: SFTPNode) -> None:
    """Through sshfs: create, read, append, truncate, copy, rename and remove files and
    directories with ordinary file system calls."""
    if shutil.which("sshfs") is None or not os.path.exists("/dev/fuse"):
        pytest.skip("sshfs or /dev/fuse is missing on this machine")
    mount = sftp_node.workdir / "mnt"
    mount.mkdir()
    options = (f"IdentityFile={sftp_node.key},StrictHostKeyChecking=no,"
               "UserKnownHostsFile=/dev/null,BatchMode=yes,LogLevel=ERROR")
    result = subprocess.run(["sshfs", "-p", str(sftp_node.port), "-o", options,
                             "alice@127.0.0.1:/", str(mount)], capture_output=True, text=True,
                            timeout=CLIENT_TIMEOUT)
    if result.returncode != 0:
        pytest.skip(f"this machine cannot mount with sshfs: {result.stderr.strip()}")
    try:
        (mount / "hello.txt").write_text("hello, grid\n")
        assert (mount / "hello.txt").read_text() == "hello, grid\n"
        with open(mount / "hello.txt", "a") as f:
            f.write("and more\n")
        assert (mount / "hello.txt").read_text() == "hello, grid\nand more\n"
        os.truncate(mount / "hello.txt", 5)
        assert (mount / "hello.txt").read_text() == "hello"
        (mount / "sub").mkdir()
        data = os.urandom(2_000_000)
        (mount / "sub" / "blob.bin").write_bytes(data)
        (mount / "hello.txt").rename(mount / "sub" / "moved.txt")
        assert sorted(os.listdir(mount / "sub")) == ["blob.bin", "moved.txt"]
        assert (mount / "sub" / "blob.bin").read_bytes() == data
        assert os.stat(mount / "sub" / "blob.bin").st_size == 2_000_000
        for name in ("blob.bin", "moved.txt"):
            (mount / "sub" / name).unlink()
        (mount / "sub").rmdir()
        assert os.listdir(mount) == []
    finally:
        subprocess.run(["fusermount", "-u", str(mount)], capture_output=True, timeout=60)
    assert WebAPI(sftp_node.gateway.url).children(sftp_node.root) == {}


#: SFTP OPEN flags (draft-ietf-secsh-filexfer-02 §6.3).
FXF_READ, FXF_WRITE, FXF_APPEND = 0x01, 0x02, 0x04
#: The MDMF file of the in-place update tests.
SIZE = 3_000_000


def sent_to_servers(grid: ProxiedGrid) -> int:
    """Bytes the clients have sent to the storage servers so far."""
    return sum(c.c2s_forwarded for proxy in grid.proxies for c in proxy.connections())


def test_sftp_writes_update_mdmf_in_place(local_grid: ProxiedGrid, sftp_node: SFTPNode) -> None:
    """A 100-byte write in the middle of a 3 MB MDMF file, and then an append, each send
    well under what a whole publish sends (10 MB), and the file reads back right."""
    api = WebAPI(sftp_node.gateway.url)
    data = os.urandom(SIZE)
    api.ok("PUT", f"/uri/{sftp_node.root}/big.bin?format=MDMF", data)
    patch, extra = os.urandom(100), os.urandom(5000)
    with RawSFTP(sftp_node) as client:
        local_grid.wait_idle(0.2)
        before = sent_to_servers(local_grid)
        handle = client.open(b"big.bin", FXF_WRITE)
        assert client.write(handle, 1_500_000, patch) == FX_OK
        assert client.close(handle) == FX_OK
        local_grid.wait_idle(0.2)
        middle = sent_to_servers(local_grid) - before
        handle = client.open(b"big.bin", FXF_WRITE | FXF_APPEND)
        assert client.write(handle, 0, extra) == FX_OK  # the offset is ignored: appended
        assert client.close(handle) == FX_OK
        local_grid.wait_idle(0.2)
        both = sent_to_servers(local_grid) - before
    print(f"SFTP 100-byte write into 3 MB MDMF: {middle} bytes sent; with the append {both}")
    assert middle < 700_000
    assert both < 1_400_000
    expected = data[:1_500_000] + patch + data[1_500_100:] + extra
    assert api.read(sftp_node.root, "big.bin") == expected


def test_sftp_read_write_and_past_the_end(sftp_node: SFTPNode) -> None:
    """Writes into a file opened to read and write land where they were written; a write
    past the end leaves zeros between, as a file system does."""
    api = WebAPI(sftp_node.gateway.url)
    data = os.urandom(300_000)
    api.ok("PUT", f"/uri/{sftp_node.root}/rw.bin?format=MDMF", data)
    with RawSFTP(sftp_node) as client:
        handle = client.open(b"rw.bin", FXF_READ | FXF_WRITE)
        assert client.write(handle, 10, b"abc") == FX_OK
        assert client.write(handle, 300_010, b"tail") == FX_OK
        assert client.close(handle) == FX_OK
    expected = data[:10] + b"abc" + data[13:] + bytes(10) + b"tail"
    assert api.read(sftp_node.root, "rw.bin") == expected


def test_a_file_the_tempdir_cannot_hold_fails_cleanly(sftp_node: SFTPNode) -> None:
    """The node's temporary directory on a 1 MiB tmpfs: a 3 MB put (spooled there past
    the 1 MiB kept in memory) fails, and nothing of it is stored (before, the first MiB
    was stored under its name at the close that follows the failed write); the session
    goes on and a small put works. OpenSSH's ``sftp`` shows only the status ("Failure");
    the server's message names the cause (seen here through a raw client)."""
    require_root()
    local = sftp_node.workdir / "too-big.bin"
    local.write_bytes(os.urandom(3_000_000))
    (sftp_node.workdir / "small.bin").write_bytes(b"fits in memory\n")
    with tmpfs(sftp_node.workdir / "sftp-client" / "tmp", 1024 * 1024):
        result = sftp(sftp_node, "alice", "-put too-big.bin\nput small.bin\nls -l\n")
        assert 'write remote "/too-big.bin": Failure' in result.stderr, result.stderr
        with RawSFTP(sftp_node) as client:
            handle = client.open_for_writing(b"raw.bin")
            codes = [client.write(handle, offset, os.urandom(256 * 1024))
                     for offset in range(0, 2 * 1024 * 1024, 256 * 1024)]
            assert codes[:4] == [FX_OK] * 4 and FX_FAILURE in codes[4:], codes
            assert client.close(handle) == FX_FAILURE
            assert "not stored" in client.message and "No space left" in client.message
    api = WebAPI(sftp_node.gateway.url)
    children = api.children(sftp_node.root)
    assert "small.bin" in children
    assert "too-big.bin" not in children and "raw.bin" not in children
    assert api.read(sftp_node.root, "small.bin") == b"fits in memory\n"
    assert sftp(sftp_node, "alice", "rm small.bin\n").returncode == 0

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

import attrs
import pytest

from tahoe.caps.parse import parse_cap
from tests.integration.conftest import DEFAULT_SHARES
from tests.support.dirapi import WebAPI
from tests.support.grid import Gateway
from tests.support.nodes import TahoeTool, edit_tahoe_cfg, our_tahoe
from tests.support.ports import free_port
from tests.support.processes import ProcessSet
from tests.support.proxied_grid import ProxiedGrid, start_static_client

CLIENT_TIMEOUT = 120


@attrs.frozen
class SFTPNode:
    """The node, where it listens, and the accounts' keys and roots."""

    gateway: Gateway
    port: int
    workdir: Path
    key: Path
    root: str
    readonly_root: str


@pytest.fixture(scope="module")
def sftp_node(local_grid: ProxiedGrid, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[SFTPNode]:
    """A client with the SFTP frontend on the local grid, for this module."""
    workdir = tmp_path_factory.mktemp("sftp")
    api = WebAPI(local_grid.client.url)
    root = api.ok("POST", "/uri?t=mkdir").text
    shared = api.ok("POST", "/uri?t=mkdir").text
    api.put(shared, "notes.txt", b"read-only notes\n")
    readonly = parse_cap(shared).readonly().to_string()  # type: ignore[union-attr]
    key = workdir / "alice_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True,
                   timeout=60)
    basedir = workdir / "sftp-client"
    tool = TahoeTool(our_tahoe(), workdir / "logs")
    from tests.support.proxied_grid import create_static_client
    create_static_client(tool, basedir, shares=DEFAULT_SHARES)
    (basedir / "private" / "accounts").write_text(
        "# SFTP accounts\n"
        f"alice {key.with_suffix('.pub').read_text().strip()} {root}\n"
        f"bob sekrit {root}\n"
        f"carol visitor {readonly}\n")
    port = free_port()
    edit_tahoe_cfg(basedir, {"sftpd": {
        "enabled": "true", "port": f"tcp:{port}:interface=127.0.0.1",
        "host_pubkey_file": "private/ssh_host_key.pub",
        "host_privkey_file": "private/ssh_host_key", "accounts.file": "private/accounts"}})
    with ProcessSet() as processes:
        gateway = start_static_client(tool, basedir, processes, local_grid.servers,
                                      shares=DEFAULT_SHARES, create=False)
        yield SFTPNode(gateway, port, workdir, key, root, readonly)


def sftp(node: SFTPNode, user: str, commands: str, *, key: Path | None = None,
         password: str | None = None) -> subprocess.CompletedProcess[str]:
    """OpenSSH's ``sftp -b`` with ``commands``, logging in with a key or a password."""
    batch = node.workdir / f"batch-{time.monotonic_ns()}"
    batch.write_text(commands)
    env = dict(os.environ)
    options = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
               "-o", "LogLevel=ERROR", "-o", "NumberOfPasswordPrompts=1", "-P", str(node.port)]
    if password is not None:
        askpass = node.workdir / f"askpass-{time.monotonic_ns()}"
        askpass.write_text(f"#!/bin/sh\necho '{password}'\n")
        askpass.chmod(0o700)
        env.update(SSH_ASKPASS=str(askpass), SSH_ASKPASS_REQUIRE="force", DISPLAY=":0")
        # sftp -b turns BatchMode on (no password prompts) unless told otherwise first
        options = ["-o", "BatchMode=no", *options, "-o", "PubkeyAuthentication=no"]
    else:
        options += ["-o", "BatchMode=yes", "-i", str(key or node.key)]
    return subprocess.run(["sftp", *options, "-b", str(batch), f"{user}@127.0.0.1"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          cwd=node.workdir, env=env, timeout=CLIENT_TIMEOUT)


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
    log = sftp_node.workdir / "logs" / "sftp-client.log"
    logouts = log.read_text().count("SFTP user 'alice' logged out")
    (sftp_node.workdir / "huge.bin").write_bytes(os.urandom(1_000_000) * 200)
    batch = sftp_node.workdir / "cut-batch"
    batch.write_text("put huge.bin keep.bin\n")
    client = subprocess.Popen(
        ["sftp", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
         "-o", "LogLevel=ERROR", "-o", "BatchMode=yes", "-i", str(sftp_node.key),
         "-P", str(sftp_node.port), "-b", str(batch), "alice@127.0.0.1"],
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

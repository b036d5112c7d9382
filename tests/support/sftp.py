"""A client node of ours with the SFTP frontend, and OpenSSH's clients pointed at it.

The node joins a :class:`~tests.support.proxied_grid.ProxiedGrid`'s servers
with ``[sftpd]`` enabled and an accounts file of three accounts: ``alice``
with a public key, ``bob`` with a password, and ``carol`` with a password and
a read-only root. Every client run has a timeout: nothing may hang.
"""
from __future__ import annotations

import os
import select
import struct
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import attrs

from tahoe.caps.parse import parse_cap
from tests.support.dirapi import WebAPI
from tests.support.grid import Gateway
from tests.support.nodes import Shares, TahoeTool, edit_tahoe_cfg, our_tahoe
from tests.support.ports import free_port
from tests.support.processes import ProcessSet
from tests.support.proxied_grid import ProxiedGrid, create_static_client, start_static_client

__all__ = ["CLIENT_TIMEOUT", "FX_BAD_MESSAGE", "FX_FAILURE", "FX_OK", "RawSFTP", "SFTPNode",
           "sftp", "ssh_options", "started_sftp_node"]

CLIENT_TIMEOUT = 120
#: SFTP version 3 status codes (draft-ietf-secsh-filexfer-02 §7).
FX_OK, FX_FAILURE, FX_BAD_MESSAGE = 0, 4, 5
#: Packet types (§3) this client sends or reads.
_INIT, _VERSION, _OPEN, _CLOSE, _WRITE, _MKDIR = 1, 2, 3, 4, 6, 14
_STATUS, _HANDLE = 101, 102
#: OPEN flags: write, create, truncate.
_WRITE_CREATE_TRUNCATE = 0x02 | 0x08 | 0x10


@attrs.frozen
class SFTPNode:
    """The node, where it listens, and the accounts' keys and roots."""

    gateway: Gateway
    port: int
    workdir: Path
    key: Path
    root: str
    readonly_root: str

    @property
    def log(self) -> Path:
        """The node's log file."""
        return self.workdir / "logs" / "sftp-client.log"


@contextmanager
def started_sftp_node(grid: ProxiedGrid, workdir: Path, shares: Shares) -> Iterator[SFTPNode]:
    """Run a client with the SFTP frontend on ``grid``'s servers (stopped by PID on exit)."""
    api = WebAPI(grid.client.url)
    root = api.ok("POST", "/uri?t=mkdir").text
    shared = api.ok("POST", "/uri?t=mkdir").text
    api.put(shared, "notes.txt", b"read-only notes\n")
    readonly = parse_cap(shared).readonly().to_string()  # type: ignore[union-attr]
    key = workdir / "alice_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True,
                   timeout=60)
    basedir = workdir / "sftp-client"
    tool = TahoeTool(our_tahoe(), workdir / "logs")
    create_static_client(tool, basedir, shares=shares)
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
        gateway = start_static_client(tool, basedir, processes, grid.servers,
                                      shares=shares, create=False)
        yield SFTPNode(gateway, port, workdir, key, root, readonly)


def ssh_options(key: Path) -> list[str]:
    """OpenSSH options for a test login with ``key``: no host key check, no prompt."""
    return ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
            "-o", "LogLevel=ERROR", "-o", "BatchMode=yes", "-i", str(key)]


def sftp(node: SFTPNode, user: str, commands: str, *, key: Path | None = None,
         password: str | None = None, options: Sequence[str] = ()
         ) -> subprocess.CompletedProcess[str]:
    """OpenSSH's ``sftp -b`` with ``commands``, logging in with a key or a password (and
    more ``options``)."""
    batch = node.workdir / f"batch-{time.monotonic_ns()}"
    batch.write_text(commands)
    env = dict(os.environ)
    if password is not None:
        askpass = node.workdir / f"askpass-{time.monotonic_ns()}"
        askpass.write_text(f"#!/bin/sh\necho '{password}'\n")
        askpass.chmod(0o700)
        env.update(SSH_ASKPASS=str(askpass), SSH_ASKPASS_REQUIRE="force", DISPLAY=":0")
        # sftp -b turns BatchMode on (no password prompts) unless told otherwise first
        login = ["-o", "BatchMode=no", "-o", "StrictHostKeyChecking=no",
                   "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
                   "-o", "NumberOfPasswordPrompts=1", "-o", "PubkeyAuthentication=no"]
    else:
        login = ssh_options(key or node.key)
    return subprocess.run(["sftp", *login, *options, "-P", str(node.port), "-b", str(batch),
                           f"{user}@127.0.0.1"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          cwd=node.workdir, env=env, timeout=CLIENT_TIMEOUT)


class RawSFTP:
    """SFTP version 3 spoken by hand over OpenSSH's ``ssh -s sftp``, as user ``alice``:
    requests can be sent many at once, or malformed, as no ready-made client sends them.

    Use as a context manager; on exit stdin is closed and :attr:`exit_status` is what
    ``ssh`` exited with. Every read has a deadline of :data:`CLIENT_TIMEOUT`.
    """

    def __init__(self, node: SFTPNode) -> None:
        self._process = subprocess.Popen(
            ["ssh", *ssh_options(node.key), "-p", str(node.port), "-s", "alice@127.0.0.1",
             "sftp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._next_id = 1
        self._buffer = b""
        self.exit_status: int | None = None
        self._send(_INIT, struct.pack("!L", 3))
        kind, body = self._receive()
        assert kind == _VERSION and body[:4] == struct.pack("!L", 3), (kind, body)

    def __enter__(self) -> "RawSFTP":
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            self.exit_status = self._process.wait(timeout=CLIENT_TIMEOUT)
        finally:
            if self._process.poll() is None:
                self._process.kill()
                self._process.wait(timeout=60)
            assert self._process.stdout is not None
            self._process.stdout.close()

    @staticmethod
    def string(data: bytes) -> bytes:
        """An SFTP string: its length, then its bytes."""
        return struct.pack("!L", len(data)) + data

    def _send(self, kind: int, body: bytes) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(struct.pack("!LB", len(body) + 1, kind) + body)
        self._process.stdin.flush()

    def _read(self, size: int) -> bytes:
        assert self._process.stdout is not None
        deadline = time.monotonic() + CLIENT_TIMEOUT
        fd = self._process.stdout.fileno()
        while len(self._buffer) < size:
            left = deadline - time.monotonic()
            assert left > 0, "no answer from the SFTP server in time"
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 65536)
                assert chunk, "ssh ended the session"
                self._buffer += chunk
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def _receive(self) -> tuple[int, bytes]:
        length, kind = struct.unpack("!LB", self._read(5))
        return kind, self._read(length - 1)

    def _request(self, kind: int, fields: bytes) -> int:
        """Send a request with a new id; the id."""
        request_id = self._next_id
        self._next_id += 1
        self._send(kind, struct.pack("!L", request_id) + fields)
        return request_id

    def _answers(self, ids: Sequence[int]) -> dict[int, tuple[int, bytes]]:
        """The answers to ``ids`` (in any order): id -> (type, body after the id)."""
        answers: dict[int, tuple[int, bytes]] = {}
        while len(answers) < len(ids):
            kind, body = self._receive()
            (answered,) = struct.unpack("!L", body[:4])
            assert answered in ids and answered not in answers, (answered, kind)
            answers[answered] = (kind, body[4:])
        return answers

    def _code(self, answer: tuple[int, bytes]) -> int:
        """A status answer's code (its message kept in :attr:`message`)."""
        kind, body = answer
        assert kind == _STATUS, kind
        (code,) = struct.unpack("!L", body[:4])
        (length,) = struct.unpack("!L", body[4:8]) if len(body) >= 8 else (0,)
        self.message = body[8:8 + length].decode("utf-8", "replace")
        return int(code)

    def status(self, kind: int, fields: bytes) -> int:
        """Send a request of ``kind`` with ``fields`` after its id; its status code."""
        request_id = self._request(kind, fields)
        return self._code(self._answers([request_id])[request_id])

    def mkdir(self, path: bytes) -> int:
        """MKDIR; its status code."""
        return self.status(_MKDIR, self.string(path) + struct.pack("!L", 0))

    def pipelined_mkdirs(self, paths: Sequence[bytes]) -> list[int]:
        """MKDIR of every path, all sent before any answer is read; their status codes."""
        ids = [self._request(_MKDIR, self.string(path) + struct.pack("!L", 0))
               for path in paths]
        answers = self._answers(ids)
        return [self._code(answers[request_id]) for request_id in ids]

    def open_for_writing(self, path: bytes) -> bytes:
        """OPEN to write a new file (created or truncated); its handle."""
        return self.open(path, _WRITE_CREATE_TRUNCATE)

    def open(self, path: bytes, flags: int) -> bytes:
        """OPEN with SFTP ``flags`` (READ 0x01, WRITE 0x02, APPEND 0x04, CREAT 0x08,
        TRUNC 0x10); its handle."""
        request_id = self._request(_OPEN, self.string(path) + struct.pack("!LL", flags, 0))
        kind, body = self._answers([request_id])[request_id]
        assert kind == _HANDLE, (kind, body)
        (length,) = struct.unpack("!L", body[:4])
        return body[4:4 + length]

    def write(self, handle: bytes, offset: int, data: bytes, past_data: bytes = b"") -> int:
        """WRITE ``data`` at ``offset``, the packet going on with ``past_data``; the status."""
        return self.status(_WRITE, self.string(handle) + struct.pack("!Q", offset)
                           + self.string(data) + past_data)

    def close(self, handle: bytes) -> int:
        """CLOSE (a file written is stored first); the status."""
        return self.status(_CLOSE, self.string(handle))

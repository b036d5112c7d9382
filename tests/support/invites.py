"""Invites in tests: a real magic-wormhole mailbox server on 127.0.0.1, and ``tahoe invite``
run in the background (for either implementation) until it has said its code.

The mailbox is ``twist wormhole-mailbox`` from the ``magic-wormhole-mailbox-server``
package in our venv, started and stopped by PID through a
:class:`~tests.support.processes.ProcessSet`; both Tahoe 1.20 and our nodes
reach it with ``--wormhole-server ws://127.0.0.1:PORT/v1``.
"""
from __future__ import annotations

import re
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs

from tests.support.nodes import TahoeTool, child_env
from tests.support.ports import free_port
from tests.support.processes import ManagedProcess, ProcessSet, wait_until

__all__ = ["Invitation", "start_mailbox", "start_invite", "wait_for_exit"]

# Seconds for the mailbox to listen, and for `tahoe invite` to print its code
# (Tahoe 1.20's CLI alone takes about 1.4 s to start).
START_TIMEOUT = 60.0
_CODE = re.compile(r"Invite Code for client: (\S+)\n")


def start_mailbox(processes: ProcessSet, workdir: Path) -> str:
    """Start a mailbox server on a free 127.0.0.1 port; return its ``ws://`` URL once it listens."""
    port = free_port()
    twist = Path(sys.prefix) / "bin" / "twist"
    process = processes.start(
        [twist, "wormhole-mailbox", f"--port=tcp:{port}:interface=127.0.0.1",
         f"--channel-db={workdir / 'mailbox.sqlite'}"],
        log_path=workdir / "mailbox.log", cwd=workdir)

    def listening() -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    wait_until(listening, START_TIMEOUT, f"the mailbox server on port {port}",
               processes=[process])
    return f"ws://127.0.0.1:{port}/v1"


@attrs.frozen
class Invitation:
    """A running ``tahoe invite`` and the code it printed."""

    process: ManagedProcess
    code: str

    def output(self) -> str:
        """Everything it has written so far (stdout and stderr)."""
        return self.process.log_path.read_text()


def start_invite(tool: TahoeTool, nodedir: Path, mailbox_url: str, nickname: str,
                 processes: ProcessSet, *, log_path: Path,
                 options: Sequence[str] = ()) -> Invitation:
    """Run ``tahoe -d NODEDIR --wormhole-server URL invite [options] NICKNAME`` in the
    background; return once it has printed its code."""
    process = processes.start(
        [tool.exe, "-d", nodedir, f"--wormhole-server={mailbox_url}", "invite", *options,
         nickname],
        log_path=log_path, env=child_env())

    def code() -> str | None:
        match = _CODE.search(log_path.read_text())
        return match.group(1) if match else None

    return Invitation(process, wait_until(code, START_TIMEOUT, f"the invite code in {log_path}",
                                          processes=[process]))


def wait_for_exit(process: ManagedProcess, timeout: float = START_TIMEOUT) -> int:
    """Wait for a process to end by itself; return its exit status."""
    wait_until(lambda: not process.is_running(), timeout, f"{process!r} to exit")
    status = process.returncode
    assert status is not None
    return status

"""Invites between Tahoe-LAFS 1.20 and our nodes, through a real magic-wormhole mailbox
server on 127.0.0.1: Tahoe invites and our node joins; our node invites and Tahoe joins.
Each joined client then uploads a file to the inviter's grid and reads it back."""
from __future__ import annotations

import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.support.grid import SMALL_GRID_SHARES, Gateway, Grid
from tests.support.invites import start_invite, start_mailbox, wait_for_exit
from tests.support.nodes import (TahoeTool, child_env, config_for_tests, edit_tahoe_cfg,
                                 our_tahoe, read_tahoe_cfg)
from tests.support.ports import free_port
from tests.support.processes import ProcessSet

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def module_processes() -> Iterator[ProcessSet]:
    """The mailbox and the joined clients, stopped by PID at the module's end."""
    with ProcessSet() as started:
        yield started


@pytest.fixture(scope="module")
def mailbox(module_processes: ProcessSet, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The URL of a magic-wormhole mailbox server on 127.0.0.1."""
    return start_mailbox(module_processes, tmp_path_factory.mktemp("mailbox"))


def _join(exe: Path, mailbox: str, code: str, nodedir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(exe), f"--wormhole-server={mailbox}", "create-client", "--join", code,
         f"--webport=tcp:{free_port()}:interface=127.0.0.1", str(nodedir)],
        capture_output=True, text=True, env=child_env(), timeout=120, stdin=subprocess.DEVNULL)


def _check_joined(nodedir: Path, grid: Grid, nickname: str) -> None:
    config = read_tahoe_cfg(nodedir)
    assert config.get("node", "nickname") == nickname
    shares = [config.get("client", f"shares.{name}") for name in ("needed", "happy", "total")]
    assert shares == [str(SMALL_GRID_SHARES.needed), str(SMALL_GRID_SHARES.happy),
                      str(SMALL_GRID_SHARES.total)]
    introducers = yaml.safe_load((nodedir / "private" / "introducers.yaml").read_text())
    assert introducers["introducers"]["default"]["furl"] == grid.introducer_furl


def _upload_and_read_back(tool: TahoeTool, nodedir: Path, processes: ProcessSet,
                          grid: Grid, seed: str) -> None:
    edit_tahoe_cfg(nodedir, config_for_tests(storage=False))
    node = tool.start(nodedir, processes)
    gateway = Gateway(node, node.node_url())
    gateway.wait_for_servers(len(grid.storage_nodes))
    data = random.Random(seed).randbytes(30_000)
    cap = gateway.upload(data)
    assert cap.endswith(f":{SMALL_GRID_SHARES.needed}:{SMALL_GRID_SHARES.total}:30000")
    assert gateway.download(cap) == data


def test_tahoe_invites_and_our_client_joins(tahoe120: Path, tahoe_grid: Grid, mailbox: str,
                                            module_processes: ProcessSet,
                                            tmp_path: Path) -> None:
    """Tahoe 1.20's ``tahoe invite`` on its storage node; our ``create-client --join`` reads its
    settings (numbers sent as text), and our client stores on Tahoe's grid."""
    theirs = TahoeTool(tahoe120, tmp_path / "logs")
    invitation = start_invite(theirs, tahoe_grid.storage_nodes[0].node.basedir, mailbox,
                              "ours-invited", module_processes,
                              log_path=tmp_path / "logs" / "tahoe-invite.log")
    nodedir = tmp_path / "ours"
    joined = _join(our_tahoe(), mailbox, invitation.code, nodedir)
    assert joined.returncode == 0, joined.stderr
    assert wait_for_exit(invitation.process) == 0, invitation.output()
    assert "Completed successfully" in invitation.output()
    _check_joined(nodedir, tahoe_grid, "ours-invited")
    _upload_and_read_back(TahoeTool(our_tahoe(), tmp_path / "logs"), nodedir,
                          module_processes, tahoe_grid, "tahoe-invites")


def test_our_node_invites_and_tahoe_joins(tahoe120: Path, our_grid: Grid, mailbox: str,
                                          module_processes: ProcessSet,
                                          tmp_path: Path) -> None:
    """Our ``tahoe invite`` on our storage node; Tahoe 1.20's ``create-client --join`` writes a
    node that starts, and Tahoe's client stores on our grid."""
    ours = TahoeTool(our_tahoe(), tmp_path / "logs")
    invitation = start_invite(ours, our_grid.storage_nodes[0].node.basedir, mailbox,
                              "tahoe-invited", module_processes,
                              log_path=tmp_path / "logs" / "our-invite.log")
    nodedir = tmp_path / "theirs"
    joined = _join(tahoe120, mailbox, invitation.code, nodedir)
    assert joined.returncode == 0, joined.stderr
    assert "Encoding: 2 of 3 shares, on at least 3 servers" in joined.stdout
    assert wait_for_exit(invitation.process) == 0, invitation.output()
    _check_joined(nodedir, our_grid, "tahoe-invited")
    _upload_and_read_back(TahoeTool(tahoe120, tmp_path / "logs"), nodedir,
                          module_processes, our_grid, "ours-invite")

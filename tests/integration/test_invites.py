"""``tahoe invite`` and ``tahoe create-client/create-node --join`` between our own nodes,
through a real magic-wormhole mailbox server on 127.0.0.1 (``docs/invites.md``)."""
from __future__ import annotations

import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.support.grid import SMALL_GRID_SHARES, Gateway, Grid, start_grid
from tests.support.invites import start_invite, start_mailbox, wait_for_exit
from tests.support.nodes import (TahoeTool, child_env, config_for_tests, edit_tahoe_cfg,
                                 our_tahoe, read_tahoe_cfg)
from tests.support.ports import free_port
from tests.support.processes import ProcessSet, wait_until


@pytest.fixture(scope="module")
def processes() -> Iterator[ProcessSet]:
    """Every process this module starts, stopped by PID at its end."""
    with ProcessSet() as started:
        yield started


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's directory for the grid, the mailbox and the joined nodes."""
    return tmp_path_factory.mktemp("invites")


@pytest.fixture(scope="module")
def mailbox(processes: ProcessSet, workdir: Path) -> str:
    """The URL of a magic-wormhole mailbox server on 127.0.0.1."""
    return start_mailbox(processes, workdir)


@pytest.fixture(scope="module")
def tool(workdir: Path) -> TahoeTool:
    """Our ``tahoe``."""
    return TahoeTool(our_tahoe(), workdir / "logs")


@pytest.fixture(scope="module")
def grid(tool: TahoeTool, processes: ProcessSet, workdir: Path) -> Grid:
    """Our introducer and 3 storage nodes (k=2, happy=3, N=3)."""
    return start_grid(tool, workdir / "grid", processes, storage_nodes=3,
                      shares=SMALL_GRID_SHARES)


def _join(tool: TahoeTool, mailbox: str, code: str, nodedir: Path, command: str = "create-client",
          *options: str, app_id: str | None = None) -> subprocess.CompletedProcess[str]:
    global_options = [] if app_id is None else [f"--wormhole-invite-appid={app_id}"]
    return subprocess.run(
        [str(tool.exe), f"--wormhole-server={mailbox}", *global_options, command, "--join", code,
         f"--webport=tcp:{free_port()}:interface=127.0.0.1", *options, str(nodedir)],
        capture_output=True, text=True, env=child_env(), timeout=120, stdin=subprocess.DEVNULL)


def _introducer_of(nodedir: Path) -> str:
    data = yaml.safe_load((nodedir / "private" / "introducers.yaml").read_text())
    furl: str = data["introducers"]["default"]["furl"]
    return furl


def test_invited_client_joins_and_stores(tool: TahoeTool, grid: Grid, mailbox: str,
                                         processes: ProcessSet, workdir: Path) -> None:
    """A storage node invites, create-client --join gets the grid's introducer, encoding and
    nickname, and the new client, once started, uploads a file and reads it back."""
    inviter = grid.storage_nodes[0].node.basedir
    invitation = start_invite(tool, inviter, mailbox, "alice", processes,
                              log_path=workdir / "logs" / "invite-alice.log",
                              options=["--shares-total=3", "--shares-happy=3"])
    joined = workdir / "alice"
    result = _join(tool, mailbox, invitation.code, joined)
    assert result.returncode == 0, result.stderr
    assert "Encoding: 2 of 3 shares, on at least 3 servers" in result.stdout
    assert "  nickname: alice" in result.stdout
    assert grid.introducer_furl not in result.stdout  # the FURL is a secret: not printed
    assert wait_for_exit(invitation.process) == 0, invitation.output()
    assert "Completed successfully" in invitation.output()

    config = read_tahoe_cfg(joined)
    assert config.get("node", "nickname") == "alice"
    assert [config.get("client", f"shares.{name}") for name in ("needed", "happy", "total")] \
        == ["2", "3", "3"]
    assert config.get("storage", "enabled") == "false"
    assert _introducer_of(joined) == grid.introducer_furl
    assert {p.name for p in joined.parent.iterdir() if ".joining-" in p.name} == set()

    edit_tahoe_cfg(joined, config_for_tests(storage=False))
    node = tool.start(joined, processes)
    gateway = Gateway(node, node.node_url())
    gateway.wait_for_servers(3)
    data = random.Random("invite").randbytes(20_000)
    cap = gateway.upload(data)
    assert cap.endswith(":2:3:20000")
    assert gateway.download(cap) == data


def test_introducer_invites_a_storage_node(tool: TahoeTool, grid: Grid, mailbox: str,
                                           processes: ProcessSet, workdir: Path) -> None:
    """An introducer invites with its own FURL and its default encoding; create-node --join
    writes a storage node with them, and -n is overridden by the invite's nickname."""
    invitation = start_invite(tool, grid.introducer.basedir, mailbox, "bob", processes,
                              log_path=workdir / "logs" / "invite-bob.log")
    joined = workdir / "bob"
    port = free_port()
    result = _join(tool, mailbox, invitation.code, joined, "create-node", "--nickname=other",
                   f"--port=tcp:{port}:interface=127.0.0.1", f"--location=tcp:127.0.0.1:{port}")
    assert result.returncode == 0, result.stderr
    assert wait_for_exit(invitation.process) == 0, invitation.output()
    config = read_tahoe_cfg(joined)
    assert config.get("node", "nickname") == "bob"
    assert config.get("storage", "enabled") == "true"
    assert [config.get("client", f"shares.{name}") for name in ("needed", "happy", "total")] \
        == ["3", "7", "10"]
    assert _introducer_of(joined) == grid.introducer_furl


def test_wrong_words_fail_both_sides_and_leave_nothing(tool: TahoeTool, grid: Grid,
                                                       mailbox: str, processes: ProcessSet,
                                                       workdir: Path) -> None:
    """A code with the right number and wrong words fails the key exchange: the joiner says so
    and creates nothing, and the inviter stops with the same reason."""
    invitation = start_invite(tool, grid.storage_nodes[1].node.basedir, mailbox, "carol",
                              processes, log_path=workdir / "logs" / "invite-carol.log")
    number = invitation.code.split("-")[0]
    parent = workdir / "wrong-words"
    result = _join(tool, mailbox, f"{number}-wrong-words", parent / "carol")
    assert result.returncode == 1
    assert "different invite codes" in result.stderr
    assert "No node directory was created." in result.stderr
    assert not parent.exists()  # nor the parent it would have made
    assert wait_for_exit(invitation.process) == 1
    assert "different invite codes" in invitation.output()


def test_code_nobody_invites_with_times_out(tool: TahoeTool, mailbox: str,
                                            tmp_path: Path) -> None:
    """A code no inviter is waiting on (wrong number, or an invite already used) gets a clear
    error after --join-timeout, and the empty directory given stays as it was."""
    nodedir = tmp_path / "dave"
    nodedir.mkdir()
    result = _join(tool, mailbox, "9999-nobody-here", nodedir, "create-client",
                   "--join-timeout=1.5")
    assert result.returncode == 1
    assert "no invite arrived within 1.5 s" in result.stderr
    assert list(tmp_path.iterdir()) == [nodedir] and list(nodedir.iterdir()) == []


def test_used_code_does_not_work_twice(tool: TahoeTool, grid: Grid, mailbox: str,
                                       processes: ProcessSet, workdir: Path,
                                       tmp_path: Path) -> None:
    """After a successful join, the same code invites nobody else."""
    invitation = start_invite(tool, grid.storage_nodes[2].node.basedir, mailbox, "erin",
                              processes, log_path=workdir / "logs" / "invite-erin.log")
    assert _join(tool, mailbox, invitation.code, tmp_path / "erin").returncode == 0
    assert wait_for_exit(invitation.process) == 0
    again = _join(tool, mailbox, invitation.code, tmp_path / "erin2", "create-client",
                  "--join-timeout=1.5")
    assert again.returncode == 1, again.stdout
    assert not (tmp_path / "erin2").exists()


def test_application_ids_separate_invites(tool: TahoeTool, grid: Grid, mailbox: str,
                                          processes: ProcessSet, workdir: Path,
                                          tmp_path: Path) -> None:
    """An invite under another application id is invisible to a joiner with Tahoe's default
    one, and found by a joiner given the same id (the global option reaches --join)."""
    app_id = "example.org/invites-test"
    invitation = start_invite(tool, grid.storage_nodes[0].node.basedir, mailbox, "grace",
                              processes, log_path=workdir / "logs" / "invite-grace.log",
                              options=[f"--wormhole-invite-appid={app_id}"])
    default_id = _join(tool, mailbox, invitation.code, tmp_path / "g1", "create-client",
                       "--join-timeout=1.5")
    assert default_id.returncode == 1 and "no invite arrived" in default_id.stderr
    same_id = _join(tool, mailbox, invitation.code, tmp_path / "g2", app_id=app_id)
    assert same_id.returncode == 0, same_id.stderr
    assert wait_for_exit(invitation.process) == 0
    assert read_tahoe_cfg(tmp_path / "g2").get("node", "nickname") == "grace"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g2"]


def test_join_stopped_while_waiting_leaves_nothing(tool: TahoeTool, mailbox: str,
                                                   processes: ProcessSet,
                                                   tmp_path: Path) -> None:
    """A join stopped (SIGTERM) while it waits for the inviter says so and removes the
    directory it was building and the parent it made."""
    log_path = tmp_path / "join.log"
    joiner = processes.start(
        [tool.exe, f"--wormhole-server={mailbox}", "create-client", "--join", "9998-wait-here",
         tmp_path / "parent" / "henry"], log_path=log_path, env=child_env())
    wait_until(lambda: "Connected to wormhole server" in log_path.read_text(), 60,
               "the joiner to reach the mailbox", processes=[joiner])
    assert [p.name for p in (tmp_path / "parent").iterdir()][0].startswith(".henry.joining-")
    assert joiner.stop() == 1
    assert "cannot join: interrupted" in log_path.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["join.log"]


def test_unreachable_mailbox_and_bad_codes(tool: TahoeTool, tmp_path: Path) -> None:
    """A mailbox nobody listens on, and a malformed code, are clear errors that create nothing."""
    unreachable = _join(tool, f"ws://127.0.0.1:{free_port()}/v1", "3-some-words",
                        tmp_path / "n1")
    assert unreachable.returncode == 1
    assert "cannot reach the wormhole mailbox server" in unreachable.stderr
    malformed = _join(tool, "ws://127.0.0.1:1/v1", "three words", tmp_path / "n2")
    assert malformed.returncode == 1
    assert "is not an invite code" in malformed.stderr
    assert list(tmp_path.iterdir()) == []


def test_invite_needs_a_node_that_knows_a_grid(tool: TahoeTool, mailbox: str,
                                               tmp_path: Path) -> None:
    """``tahoe invite`` on a client without introducer, with a bad encoding, or on no node
    at all, says why and allocates no code."""
    tool.create_client(tmp_path / "lonely", introducer_furl=None, shares=SMALL_GRID_SHARES)
    lonely = subprocess.run([str(tool.exe), "-d", str(tmp_path / "lonely"),
                             f"--wormhole-server={mailbox}", "invite", "frank"],
                            capture_output=True, text=True, env=child_env(), timeout=60)
    assert lonely.returncode == 1
    assert "Can't find introducer FURL" in lonely.stderr and "Invite Code" not in lonely.stdout
    tool.create_client(tmp_path / "known", shares=SMALL_GRID_SHARES,
                       introducer_furl=f"pb://{'a' * 32}@tcp:127.0.0.1:1/swissnum")
    bad = subprocess.run([str(tool.exe), "-d", str(tmp_path / "known"),
                          f"--wormhole-server={mailbox}", "invite", "--shares-needed=5",
                          "--shares-total=3", "frank"],
                         capture_output=True, text=True, env=child_env(), timeout=60)
    assert bad.returncode == 1
    assert "1 <= needed <= happy <= total <= 256 (got 5, 3, 3)" in bad.stderr
    assert "Invite Code" not in bad.stdout
    missing = subprocess.run([str(tool.exe), "-d", str(tmp_path / "missing"),
                              f"--wormhole-server={mailbox}", "invite", "frank"],
                             capture_output=True, text=True, env=child_env(), timeout=60)
    assert missing.returncode == 1 and "is not a node directory" in missing.stderr
    assert not (tmp_path / "missing").exists()

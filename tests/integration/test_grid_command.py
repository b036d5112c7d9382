"""``tahoe grid start|run|status|stop``: a local grid of our nodes, run as separate programs.

One grid of 3 storage nodes is created per module (about 4 s) and restarted
by each test; every test leaves it stopped, and the fixture kills any node
PID still running at the end.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.grid_support import (GRID_TIMEOUT, kill_leftovers, process_alive,
                                            recorded_nodes, tahoe)
from tests.support import webapi
from tests.support.nodes import our_tahoe

STORAGE_NODES = 3
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def grid_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A grid directory (created by the first test that starts it); stopped at the end."""
    directory = tmp_path_factory.mktemp("grid") / "local-grid"
    yield directory
    if (directory / "grid.json").exists():
        tahoe("grid", "stop", directory, "--timeout=10")
        assert kill_leftovers(directory) == []


def live_pids(grid_dir: Path) -> list[int]:
    """PIDs recorded in grid.json whose processes still run."""
    return [int(node["pid"]) for node in recorded_nodes(grid_dir)  # type: ignore[call-overload]
            if isinstance(node.get("pid"), int)
            and process_alive(int(node["pid"]), node.get("start_time"))]  # type: ignore[arg-type]


def run_in_foreground(grid_dir: Path) -> subprocess.Popen[str]:
    """``tahoe grid run DIR`` of the module's grid (skipping the test if it was not made)."""
    if not (grid_dir / "grid.json").exists():
        pytest.skip("needs the grid made by test_start_status_stop")
    return subprocess.Popen([str(our_tahoe()), "grid", "run", str(grid_dir)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_start_status_stop(grid_dir: Path) -> None:
    """start creates and starts the grid, status shows it, stop ends every node process."""
    started = time.monotonic()
    result = tahoe("grid", "start", grid_dir, f"--storage-nodes={STORAGE_NODES}")
    elapsed = time.monotonic() - started
    out = result.stdout.decode()
    assert result.returncode == 0, out + result.stderr.decode()
    assert "Grid ready in" in out and "3 storage servers connected, shares 2/3/3" in out
    print(f"grid start (new, {STORAGE_NODES} storage nodes): {elapsed:.1f} s")

    document = json.loads((grid_dir / "grid.json").read_text())
    names = [node["name"] for node in document["nodes"]]
    assert names == ["introducer", "storage1", "storage2", "storage3", "client"]
    pids = live_pids(grid_dir)
    assert len(pids) == 5
    gateway = (grid_dir / "client" / "node.url").read_text().strip()
    assert gateway == document["gateway"] and f"Gateway (web API and browser): {gateway}" in out
    assert gateway.startswith("http://127.0.0.1:")
    servers = webapi.connected_servers(webapi.welcome(gateway))
    assert sorted(server["nickname"] for server in servers) == ["storage1", "storage2",
                                                                "storage3"]
    for node in ("storage1", "storage2", "storage3"):
        config = (grid_dir / node / "tahoe.cfg").read_text()
        assert "reserved_space = 100M" in config
        assert "interface=127.0.0.1" in config

    status = tahoe("grid", "status", grid_dir)
    assert status.returncode == 0, status.stdout
    assert f"Gateway: {gateway} (3 of 3 storage servers connected)" in status.stdout.decode()

    again = tahoe("grid", "start", grid_dir)
    assert again.returncode == 0 and b"already running" in again.stdout

    stop = tahoe("grid", "stop", grid_dir)
    assert stop.returncode == 0 and b"Stopped 5 nodes" in stop.stdout
    assert [pid for pid in pids if process_alive(pid)] == []
    assert all(node["pid"] is None for node in recorded_nodes(grid_dir))
    status = tahoe("grid", "status", grid_dir)
    assert status.returncode == 1 and b"The grid is not running." in status.stdout
    assert tahoe("grid", "stop", grid_dir).stdout.endswith(b"was not running.\n")


def test_run_in_foreground_until_sigint(grid_dir: Path) -> None:
    """grid run restarts the existing grid, serves until SIGINT, then stops every node."""
    runner = run_in_foreground(grid_dir)
    try:
        assert runner.stdout is not None
        lines = []
        for line in runner.stdout:
            lines.append(line)
            if line.startswith("Press Ctrl-C"):
                break
        assert any(line.startswith("Grid ready in") for line in lines), "".join(lines)
        print("grid run (restart):", next(line for line in lines if "ready" in line).strip())
        pids = live_pids(grid_dir)
        assert len(pids) == 5
        # a Ctrl-C from a terminal, and the same passed on by a parent (misc/run_demo.py)
        runner.send_signal(signal.SIGINT)
        time.sleep(0.05)
        runner.send_signal(signal.SIGINT)
        rest, errors = runner.communicate(timeout=GRID_TIMEOUT)
        assert runner.returncode == 0, errors
        assert "Traceback" not in errors
        assert "Stopping the grid...\nStopped.\n" in rest
        assert [pid for pid in pids if process_alive(pid)] == []
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_makes_the_next_ones_ignored(signum: int) -> None:
    """The grid's handler for a stop signal ignores the next ones before anything else
    runs: a second Ctrl-C must not break into the stopping of the nodes."""
    from tahoe.cli import grid
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.getsignal(s) for s in stops}
    try:
        expected = KeyboardInterrupt if signum == signal.SIGINT else grid._Terminated
        with pytest.raises(expected):
            grid._stop_requested(signum, None)
        assert [signal.getsignal(s) for s in stops] == [signal.SIG_IGN] * 3
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def test_node_failure_is_reported_with_its_log(grid_dir: Path) -> None:
    """A node that cannot start is named with the end of its log; no node is left running."""
    if not (grid_dir / "grid.json").exists():
        pytest.skip("needs the grid made by test_start_status_stop")
    config = grid_dir / "storage2" / "tahoe.cfg"
    original = config.read_text()
    config.write_text(original + "\n[client]\nbogus.key = 1\n")
    try:
        result = tahoe("grid", "start", grid_dir)
    finally:
        config.write_text(original)
    errors = result.stderr.decode()
    assert result.returncode == 1
    assert "Error: node storage2 exited with status 1 while the grid was starting." in errors
    assert "section [client] contains unknown option 'bogus.key'" in errors
    assert errors.endswith("Stopped the nodes of the grid.\n")
    assert live_pids(grid_dir) == []


def test_bad_options(tmp_path: Path) -> None:
    """Shares that need more servers than the grid has, and a non-grid directory, are refused."""
    result = tahoe("grid", "start", tmp_path / "g", "--storage-nodes=3", "--shares=3/7/10")
    assert result.returncode == 1
    assert b"needs at least 7 storage nodes" in result.stderr
    assert not (tmp_path / "g").exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "file").write_text("x")
    result = tahoe("grid", "start", tmp_path / "full")
    assert result.returncode == 1 and b"holds no local grid" in result.stderr
    result = tahoe("grid", "status", tmp_path / "full")
    assert result.returncode == 1 and b"holds no local grid (no grid.json)" in result.stderr
    result = tahoe("grid", "start", tmp_path / "g", "--shares=2-3-3")
    assert result.returncode == 1 and b"NEEDED/HAPPY/TOTAL" in result.stderr


def node_pid(grid_dir: Path, name: str) -> int:
    """The recorded PID of one node (it must be running)."""
    (entry,) = [node for node in recorded_nodes(grid_dir) if node["name"] == name]
    pid = entry["pid"]
    assert isinstance(pid, int) and process_alive(pid), entry
    return pid


def stop_one(grid_dir: Path, name: str) -> int:
    """SIGTERM one node by its recorded PID and wait until it is gone; its PID."""
    pid = node_pid(grid_dir, name)
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while process_alive(pid):
        assert time.monotonic() < deadline, f"{name} did not stop"
        time.sleep(0.05)
    return pid


def test_start_completes_a_partly_running_grid_and_restart(grid_dir: Path) -> None:
    """start on a grid of which a node died starts only that node; restart NODE brings one
    back (running or not); make run's script says once that a running grid runs."""
    if not (grid_dir / "grid.json").exists():
        pytest.skip("needs the grid made by test_start_status_stop")
    assert tahoe("grid", "start", grid_dir).returncode == 0
    try:
        others = {name: node_pid(grid_dir, name) for name in ("introducer", "storage1",
                                                               "storage3", "client")}
        stop_one(grid_dir, "storage2")
        status = tahoe("grid", "status", grid_dir)
        assert status.returncode == 1 and b"tahoe grid restart" in status.stdout
        again = tahoe("grid", "start", grid_dir)
        assert again.returncode == 0, again.stderr
        assert b"that are not running: storage2." in again.stdout
        assert {name: node_pid(grid_dir, name) for name in others} == others
        assert tahoe("grid", "status", grid_dir).returncode == 0

        before = node_pid(grid_dir, "storage1")
        restarted = tahoe("grid", "restart", grid_dir, "storage1")
        assert restarted.returncode == 0, restarted.stderr
        assert restarted.stdout.startswith(b"Stopped storage1.\nStarted storage1 (pid ")
        assert node_pid(grid_dir, "storage1") != before and not process_alive(before)
        assert tahoe("grid", "status", grid_dir).returncode == 0
        unknown = tahoe("grid", "restart", grid_dir, "storage9")
        assert unknown.returncode == 1 and b"has no node 'storage9'" in unknown.stderr

        demo = subprocess.run([sys.executable, str(ROOT / "misc" / "run_demo.py"),
                               str(grid_dir)], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=GRID_TIMEOUT)
        assert demo.returncode == 0, demo.stderr
        assert demo.stdout.startswith(f"The local grid in {grid_dir} is already running")
        assert demo.stdout.count("\n") == 1 and demo.stderr == ""
    finally:
        assert tahoe("grid", "stop", grid_dir).returncode == 0
    assert live_pids(grid_dir) == []


def test_foreground_grid_survives_a_node_and_takes_back_its_restart(grid_dir: Path) -> None:
    """grid run keeps serving when a storage node exits (naming it, with how to bring it
    back), takes over the node restart starts, and stops it with the rest on SIGINT."""
    runner = run_in_foreground(grid_dir)
    try:
        assert runner.stdout is not None and runner.stderr is not None
        for line in runner.stdout:
            if line.startswith("Press Ctrl-C"):
                break
        gateway = (grid_dir / "client" / "node.url").read_text().strip()
        cap = webapi.upload(gateway, b"still serving " * 100)
        stop_one(grid_dir, "storage3")
        report = ""
        while "Bring it back with" not in report:
            report += runner.stderr.readline()
        assert report.startswith("Node storage3 exited")
        assert f"tahoe grid restart {grid_dir} storage3" in report
        assert runner.poll() is None
        assert webapi.download(gateway, cap) == b"still serving " * 100  # 2 of 3 servers
        assert tahoe("grid", "restart", grid_dir, "storage3").returncode == 0
        restarted = node_pid(grid_dir, "storage3")
        assert runner.stdout.readline() == f"Node storage3 is running again (pid {restarted}).\n"
        pids = live_pids(grid_dir)
        assert len(pids) == 5
        runner.send_signal(signal.SIGINT)
        rest, _ = runner.communicate(timeout=GRID_TIMEOUT)
        assert runner.returncode == 0 and rest.endswith("Stopping the grid...\nStopped.\n")
        assert [pid for pid in pids if process_alive(pid)] == []
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()


def test_restarts_of_several_nodes_at_once_keep_every_pid(grid_dir: Path) -> None:
    """``tahoe grid restart`` of each storage node at the same time (separate processes):
    every one succeeds, and grid.json records each new PID, so that stop stops them all
    (before, the last to write dropped the others' PIDs, leaving processes no command
    knew of)."""
    if not (grid_dir / "grid.json").exists():
        pytest.skip("needs the grid made by test_start_status_stop")
    assert tahoe("grid", "start", grid_dir).returncode == 0
    names = [f"storage{i}" for i in range(1, STORAGE_NODES + 1)]
    started: dict[str, int] = {}
    try:
        restarts = {name: subprocess.Popen([str(our_tahoe()), "grid", "restart", str(grid_dir),
                                            name], stdin=subprocess.DEVNULL,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           text=True)
                    for name in names}
        for name, process in restarts.items():
            out, err = process.communicate(timeout=GRID_TIMEOUT)
            assert process.returncode == 0, err
            started[name] = int(out.rsplit("(pid ", 1)[1].split(")")[0])
        assert {name: node_pid(grid_dir, name) for name in names} == started
    finally:
        assert tahoe("grid", "stop", grid_dir).returncode == 0
    assert not [pid for pid in started.values() if process_alive(pid)]
    assert live_pids(grid_dir) == []

"""The munin plugins run by Debian's munin-run against a live local grid.

``munin-run --servicedir DIR --sconfdir DIR PLUGIN [config]`` runs each
plugin as munin-node would (environment from the plugin-conf, ``user
root`` because munin drops to ``nobody`` by default). No munin daemon is
started. munin-run comes with the Debian package munin-node; if it is
missing, ``misc/ci/install-system-packages.sh`` is run once to install it.
"""
from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.integration.statistics_support import StatsGrid, start_stats_grid
from tests.support.webapi import download, upload

ROOT = Path(__file__).parent.parent.parent
MUNIN = ROOT / "misc" / "munin"
INSTALL = ROOT / "misc" / "ci" / "install-system-packages.sh"
#: The plugins, and the wildcard instances linked for the test.
PLUGINS = ["tahoe_diskleft", "tahoe_diskused", "tahoe_disktotal", "tahoe_files",
           "tahoe_nodememory", "tahoe_cpu_watcher", "tahoe_upload_rate", "tahoe_download_rate",
           "tahoe_upload_latency", "tahoe_download_latency"]
WILDCARDS = {"tahoe_server_latency_allocate_mean": "tahoe_server_latency_",
             "tahoe_server_latency_get_50_0": "tahoe_server_latency_",
             "tahoe_server_latency_add-lease_99_9": "tahoe_server_latency_",
             "tahoe_server_operations_allocate": "tahoe_server_operations_",
             "tahoe_server_operations_get": "tahoe_server_operations_"}
VALUE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\.value (U|-?[0-9]+(\.[0-9]+)?)$")
CONFIG_LINE = re.compile(r"^(graph_[a-z]+|[A-Za-z_][A-Za-z0-9_]*\.[a-z]+) \S.*$")


def find_munin_run() -> str | None:
    """The munin-run program, if installed."""
    return shutil.which("munin-run") or next(
        (p for p in ("/usr/sbin/munin-run", "/usr/bin/munin-run") if os.access(p, os.X_OK)), None)


@pytest.fixture(scope="module")
def munin_run() -> str:
    """munin-run, installed by misc/ci/install-system-packages.sh if missing.

    Fails (rather than skips) under CI when it cannot be installed.
    """
    program = find_munin_run()
    if program is None:
        result = subprocess.run(["sh", str(INSTALL)], capture_output=True, text=True,
                                timeout=600, stdin=subprocess.DEVNULL)
        program = find_munin_run()
        if program is None:
            message = (f"munin-run (Debian package munin-node) is missing and {INSTALL} could "
                       f"not install it (exit {result.returncode}): {result.stderr.strip()}")
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)
    return program


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StatsGrid]:
    """Three storage nodes and a client, for this module."""
    yield from start_stats_grid(tmp_path_factory.mktemp("munin-grid") / "grid")


@pytest.fixture(scope="module")
def munin_dirs(grid: StatsGrid, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A plugin directory of links, as in /etc/munin/plugins, and a plugin-conf directory."""
    base = tmp_path_factory.mktemp("munin")
    plugins, conf = base / "plugins", base / "plugin-conf.d"
    plugins.mkdir()
    conf.mkdir()
    for name in PLUGINS:
        (plugins / name).symlink_to(MUNIN / name)
    for name, target in WILDCARDS.items():
        (plugins / name).symlink_to(MUNIN / target)
    urls = grid.urls
    (conf / "tahoe").write_text(
        "[tahoe_*]\n"
        "user root\n"
        f"env.url {urls['storage1']}\n"
        f"env.url_storage1 {urls['storage1']}statistics?t=json\n"
        f"env.url_storage2 {urls['storage2']}\n"
        f"env.basedir_storage3 {grid.directory / 'storage3'}\n"
        f"env.url_client {urls['client']}\n"
        "env.timeout 20\n"
        "\n"
        "[tahoe_nodememory]\n"
        "user root\n"
        f"env.nodememory_storage1 {grid.directory / 'storage1'}\n"
        f"env.nodememory_client {grid.directory / 'client'}\n"
        "env.timeout 20\n"
        "\n"
        "[tahoe_cpu_watcher]\n"
        "user root\n"
        f"env.url_client {urls['client']}\n"
        "env.average 1\n")
    return plugins, conf


def run(munin_run: str, dirs: tuple[Path, Path], plugin: str, *args: str) -> str:
    """munin-run PLUGIN [ARGS]; its standard output (it must succeed quietly)."""
    plugins, conf = dirs
    result = subprocess.run([munin_run, "--servicedir", str(plugins), "--sconfdir", str(conf),
                             plugin, *args], capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, f"munin-run {plugin} {args}: {result.stderr}"
    assert result.stderr == "", result.stderr
    return result.stdout


def config_fields(text: str) -> list[str]:
    """Check a config answer; return its fields in order."""
    fields: list[str] = []
    lines = text.splitlines()
    assert lines and all(CONFIG_LINE.match(line) for line in lines), text
    keys = {line.split(" ", 1)[0] for line in lines}
    assert {"graph_title", "graph_vlabel", "graph_category"} <= keys
    for line in lines:
        key = line.split(" ", 1)[0]
        if not key.startswith("graph_"):
            field = key.split(".", 1)[0]
            if field not in fields:
                fields.append(field)
    assert all(f"{field}.label" in keys for field in fields)
    return fields


def values(text: str) -> dict[str, str]:
    """Check a fetch answer; return field -> value."""
    result = {}
    for line in text.splitlines():
        match = VALUE.match(line)
        assert match, line
        result[match.group(1)] = match.group(2)
    return result


def fetch_all(munin_run: str, dirs: tuple[Path, Path]) -> dict[str, dict[str, str]]:
    """Every plugin's values, checked against its config's fields (four plugins at a time:
    each ``munin-run`` is a Perl and a Python start, about 0.3 s)."""
    def fetch(plugin: str) -> dict[str, str]:
        fields = config_fields(run(munin_run, dirs, plugin, "config"))
        got = values(run(munin_run, dirs, plugin))
        assert list(got) == fields, plugin
        return got

    plugins = [*PLUGINS, *WILDCARDS]
    with ThreadPoolExecutor(4) as pool:
        return dict(zip(plugins, pool.map(fetch, plugins)))


def number(value: str) -> float:
    """A munin value as a number (it must not be U)."""
    assert value != "U"
    return float(value)


def test_plugins_under_munin_run(munin_run: str, grid: StatsGrid,
                                 munin_dirs: tuple[Path, Path]) -> None:
    """Every plugin gives a valid config and values; the values move with uploads and
    downloads."""
    before = fetch_all(munin_run, munin_dirs)
    assert set(before["tahoe_files"]) == {"client", "storage1", "storage2", "storage3"}
    assert before["tahoe_server_operations_allocate"]["storage2"] == "0"
    assert number(before["tahoe_diskleft"]["disk_left"]) > 0
    assert number(before["tahoe_disktotal"]["disk_total"]) >= \
        number(before["tahoe_disktotal"]["disk_used"]) > 0
    assert number(before["tahoe_nodememory"]["storage1_VmRSS"]) > 1 << 20
    assert before["tahoe_upload_latency"]["client_mean"] == "U"

    rng = random.Random("munin")
    caps = [upload(grid.client, rng.randbytes(100_000)) for _ in range(3)]
    for cap in caps:
        download(grid.client, cap)
    after = fetch_all(munin_run, munin_dirs)

    for node in ("storage1", "storage2", "storage3"):
        assert number(after["tahoe_files"][node]) == number(before["tahoe_files"][node]) + 3
        assert number(after["tahoe_server_operations_allocate"][node]) == \
            number(before["tahoe_server_operations_allocate"][node]) + 3
        assert number(after["tahoe_server_latency_allocate_mean"][node]) > 0
    assert number(after["tahoe_upload_rate"]["client"]) == \
        number(before["tahoe_upload_rate"]["client"]) + 300_000
    assert number(after["tahoe_upload_rate"]["client_speed"]) > 0
    assert number(after["tahoe_download_rate"]["client"]) == \
        number(before["tahoe_download_rate"]["client"]) + 300_000
    assert number(after["tahoe_upload_latency"]["client_mean"]) > 0
    assert number(after["tahoe_download_latency"]["client_mean"]) > 0
    assert after["tahoe_server_latency_add-lease_99_9"]["storage1"] == "U"


def test_autoconf_and_suggest(munin_run: str, munin_dirs: tuple[Path, Path]) -> None:
    """autoconf says yes with the nodes up; the wildcards suggest their links."""
    assert run(munin_run, munin_dirs, "tahoe_files", "autoconf") == "yes\n"
    assert run(munin_run, munin_dirs, "tahoe_diskleft", "autoconf") == "yes\n"
    suggested = run(munin_run, munin_dirs, "tahoe_server_latency_get_50_0", "suggest").split()
    assert "allocate_mean" in suggested and "get_50_0" in suggested
    operations = run(munin_run, munin_dirs, "tahoe_server_operations_get", "suggest").split()
    assert "allocate" in operations and "add-lease" in operations


def test_no_munin_daemon_left(munin_run: str) -> None:
    """No munin-node daemon runs (munin-run starts none; the installer stops any)."""
    for pid_file in (Path("/run/munin/munin-node.pid"), Path("/var/run/munin/munin-node.pid")):
        if pid_file.exists():
            pid = pid_file.read_text().strip()
            cmdline = Path(f"/proc/{pid}/cmdline")
            assert not (cmdline.exists() and b"munin-node" in cmdline.read_bytes()), \
                f"a munin-node daemon runs as pid {pid}"

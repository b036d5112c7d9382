"""The munin plugins of misc/munin/: each one's config and render on fixture documents,
the shared helpers, and whole runs against a stdlib HTTP server."""
from __future__ import annotations

import http.server
import io
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

MUNIN = Path(__file__).parent.parent.parent / "misc" / "munin"
PLUGINS = ["tahoe_diskleft", "tahoe_diskused", "tahoe_disktotal", "tahoe_files",
           "tahoe_nodememory", "tahoe_cpu_watcher", "tahoe_server_latency_",
           "tahoe_server_operations_", "tahoe_upload_rate", "tahoe_download_rate",
           "tahoe_upload_latency", "tahoe_download_latency"]
SINGLE = {"tahoe_diskleft", "tahoe_diskused", "tahoe_disktotal"}
FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
VALUE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\.value (U|-?[0-9]+(\.[0-9]+)?)$")
GRAPH_KEYS = {"graph_title", "graph_vlabel", "graph_category", "graph_args", "graph_info"}
FIELD_KEYS = {"label", "draw", "type", "min", "graph", "info"}

STORAGE_DOC = {
    "counters": {"storage_server.allocate": 4, "storage_server.write": 12,
                 "storage_server.add-lease": 1, "storage_server.bytes_added": 9000},
    "stats": {"node.uptime": 400.5, "node.memory.rss": 60_000_000,
              "node.memory.vmsize": 150_000_000, "cpu_monitor.total": 3.5,
              "cpu_monitor.1min_avg": 0.02, "cpu_monitor.5min_avg": 0.0123,
              "storage_server.disk_total": 270_000_000_000,
              "storage_server.disk_used": 12_000_000_000,
              "storage_server.disk_avail": 84_000_000_000,
              "storage_server.total_share_count": 17, "storage_server.total_bucket_count": 9,
              "storage_server.latencies.get.samplesize": 12,
              "storage_server.latencies.get.mean": 0.0002,
              "storage_server.latencies.get.50_0_percentile": 0.000218,
              "storage_server.latencies.get.99_0_percentile": None,
              "storage_server.latencies.add-lease.mean": 0.5}}
CLIENT_DOC = {
    "counters": {"uploader.files_uploaded": 3, "uploader.bytes_uploaded": 3_000_000,
                 "downloader.files_downloaded": 2, "downloader.bytes_downloaded": 2_000_000},
    "stats": {"node.uptime": 10.0, "node.memory.rss": 50_000_000,
              "node.memory.vmsize": 140_000_000, "cpu_monitor.total": 1.0,
              "uploader.latencies.upload.mean": 0.25,
              "uploader.latencies.upload.50_0_percentile": None,
              "uploader.rates.upload.mean": 4_000_000.5,
              "downloader.latencies.read.mean": 0.125,
              "downloader.rates.read.mean": 8_000_000.0}}


def load(name: str) -> ModuleType:
    """Import a plugin file (it has no .py suffix) as a module."""
    loader = SourceFileLoader(name, str(MUNIN / name))
    spec = spec_from_loader(name, loader)
    assert spec is not None
    module = module_from_spec(spec)
    loader.exec_module(module)
    return module


def check_config(text: str) -> list[str]:
    """Assert ``text`` is a valid munin config answer; return its field names in order."""
    assert text.endswith("\n") and not text.endswith("\n\n")
    fields: list[str] = []
    graph = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        assert value.strip(), line
        if key.startswith("graph_"):
            assert key in GRAPH_KEYS, line
            graph[key] = value
        else:
            field, _, attribute = key.partition(".")
            assert FIELD.match(field) and attribute in FIELD_KEYS, line
            if field not in fields:
                fields.append(field)
    assert {"graph_title", "graph_vlabel", "graph_category"} <= set(graph)
    assert graph["graph_category"] == "tahoe"
    for field in fields:
        assert f"{field}.label " in text
    return fields


def parse_values(text: str) -> dict[str, str]:
    """Assert ``text`` is a valid fetch answer; return field -> value."""
    result = {}
    for line in text.splitlines():
        match = VALUE.match(line)
        assert match, line
        result[match.group(1)] = match.group(2)
    return result


# -- the shared module


def test_statistics_url() -> None:
    """A node URL or a statistics URL both lead to /statistics?t=json."""
    munin = load("tahoe_munin.py")
    for url in ("http://127.0.0.1:3456", "http://127.0.0.1:3456/",
                "http://127.0.0.1:3456/statistics", "http://127.0.0.1:3456/statistics?t=json",
                "http://127.0.0.1:3456/statistics/?t=html"):
        assert munin.statistics_url(url) == "http://127.0.0.1:3456/statistics?t=json"
    assert munin.statistics_url("https://h:1/prefix/") == "https://h:1/prefix/statistics?t=json"
    with pytest.raises(munin.PluginError):
        munin.statistics_url("file:///etc/passwd")


def test_node_sources() -> None:
    """url_/basedir_/nodememory_ variables name nodes; url alone is the node 'tahoe'."""
    munin = load("tahoe_munin.py")
    env = {"url_storage-1": "http://a/", "basedir_s2": "/var/lib/tahoe/s2",
           "nodememory_client": "/var/lib/tahoe/client", "url": "http://x/", "PATH": "/bin",
           "url_": "ignored", "timeout": "3"}
    assert munin.node_sources(env) == {"client": ("dir", "/var/lib/tahoe/client"),
                                       "s2": ("dir", "/var/lib/tahoe/s2"),
                                       "storage_1": ("url", "http://a/")}
    assert munin.node_sources({"url": "http://x/"}) == {"tahoe": ("url", "http://x/")}
    assert munin.node_sources({"basedir": "/n"}) == {"tahoe": ("dir", "/n")}
    assert munin.node_sources({}) == {}
    assert munin.field_name("9lives.node") == "_9lives_node"


def test_format_value() -> None:
    """Numbers as munin reads them (no exponents); None and junk as U."""
    munin = load("tahoe_munin.py")
    assert [munin.format_value(v) for v in (3, 0.000218, 2.5e-7, 1e-12, 5.0, True, None, "x",
                                            float("nan"), -0.0)] == [
        "3", "0.000218", "0.00000025", "0", "5", "1", "U", "U", "U", "0"]


# -- each plugin on fixtures


@pytest.mark.parametrize("name", PLUGINS)
def test_plugin_files(name: str) -> None:
    """Every plugin is executable, Python 3, and declares its munin capabilities."""
    path = MUNIN / name
    text = path.read_text()
    assert os.access(path, os.X_OK)
    assert text.startswith("#!/usr/bin/env python3\n")
    assert "#%# family=auto" in text
    capabilities = "autoconf suggest" if name.endswith("_") else "autoconf"
    assert f"#%# capabilities={capabilities}\n" in text
    assert not os.access(MUNIN / "tahoe_munin.py", os.X_OK)


def test_disk_plugins() -> None:
    """The three disk graphs read disk_avail, disk_used and disk_total."""
    expected = {"tahoe_diskleft": {"disk_left": "84000000000"},
                "tahoe_diskused": {"disk_used": "12000000000"},
                "tahoe_disktotal": {"disk_total": "270000000000", "disk_used": "12000000000"}}
    for name, values in expected.items():
        plugin = load(name)
        assert check_config(plugin.config()) == list(values)
        assert parse_values(plugin.render(STORAGE_DOC)) == values
        assert set(parse_values(plugin.render(None)).values()) == {"U"}
    assert "graph_title Tahoe Remaining Disk Space\n" in load("tahoe_diskleft").config()


def test_files_plugin() -> None:
    """tahoe_files graphs each node's share count."""
    plugin = load("tahoe_files")
    assert check_config(plugin.config(["s1", "s2"])) == ["s1", "s2"]
    assert parse_values(plugin.render({"s1": STORAGE_DOC, "s2": None})) == {"s1": "17", "s2": "U"}


def test_nodememory_plugin() -> None:
    """tahoe_nodememory graphs VmSize and VmRSS per node, as Tahoe's did."""
    plugin = load("tahoe_nodememory")
    config = plugin.config(["s1", "client"])
    assert check_config(config) == ["s1_VmSize", "s1_VmRSS", "client_VmSize", "client_VmRSS"]
    assert "s1_VmSize.label VmSize used by s1\n" in config
    assert parse_values(plugin.render({"s1": STORAGE_DOC, "client": CLIENT_DOC})) == {
        "s1_VmSize": "150000000", "s1_VmRSS": "60000000",
        "client_VmSize": "140000000", "client_VmRSS": "50000000"}


def test_cpu_watcher_plugin() -> None:
    """tahoe_cpu_watcher is 100 x the 5-minute average (2 decimals), U while absent."""
    plugin = load("tahoe_cpu_watcher")
    assert check_config(plugin.config(["s1", "client"])) == ["s1", "client"]
    assert parse_values(plugin.render({"s1": STORAGE_DOC, "client": CLIENT_DOC})) == {
        "s1": "1.23", "client": "U"}
    assert parse_values(plugin.render({"s1": STORAGE_DOC}, "1")) == {"s1": "2"}
    assert plugin.average_minutes({}) == "5"
    with pytest.raises(Exception, match="average"):
        plugin.average_minutes({"average": "3"})


def test_server_latency_plugin() -> None:
    """The wildcard name gives OP and PCT; a null or missing percentile is U."""
    plugin = load("tahoe_server_latency_")
    assert plugin.parse_name("tahoe_server_latency_get_50_0") == ("get", "50_0")
    assert plugin.parse_name("tahoe_server_latency_add-lease_mean") == ("add-lease", "mean")
    assert plugin.parse_name("tahoe_server_latency_add-lease_99_9") == ("add-lease", "99_9")
    for bad in ("tahoe_server_latency_", "tahoe_server_latency_get", "tahoe_server_latency_get_42",
                "other_get_50_0"):
        with pytest.raises(Exception, match="link this plugin"):
            plugin.parse_name(bad)
    config = plugin.config(["s1", "s2"], "get", "50_0")
    assert check_config(config) == ["s1", "s2"]
    assert "graph_title Tahoe Server 'get' Latency (50.0th percentile)\n" in config
    assert "graph_vlabel seconds\n" in config
    assert "(mean)" in plugin.config(["s1"], "get", "mean")
    docs = {"s1": STORAGE_DOC, "s2": CLIENT_DOC}
    assert parse_values(plugin.render(docs, "get", "50_0")) == {"s1": "0.000218", "s2": "U"}
    assert parse_values(plugin.render(docs, "get", "99_0")) == {"s1": "U", "s2": "U"}
    assert parse_values(plugin.render(docs, "add-lease", "mean")) == {"s1": "0.5", "s2": "U"}
    suggestions = plugin.suggest()
    assert "get_50_0" in suggestions and "add-lease_mean" in suggestions
    assert all(plugin.parse_name("tahoe_server_latency_" + s) for s in suggestions)


def test_server_operations_plugin() -> None:
    """Operation counters are DERIVE; one not counted yet is 0, a silent node U."""
    plugin = load("tahoe_server_operations_")
    assert plugin.parse_name("tahoe_server_operations_add-lease") == "add-lease"
    with pytest.raises(Exception, match="link this plugin"):
        plugin.parse_name("tahoe_server_operations_")
    config = plugin.config(["s1"], "allocate")
    assert check_config(config) == ["s1"]
    assert "s1.type DERIVE\n" in config and "s1.min 0\n" in config
    assert "graph_title Tahoe Server 'allocate' Operations\n" in config
    assert parse_values(plugin.render({"s1": STORAGE_DOC, "s2": None}, "allocate")) == {
        "s1": "4", "s2": "U"}
    assert parse_values(plugin.render({"s1": STORAGE_DOC}, "readv")) == {"s1": "0"}
    assert "abort" in plugin.suggest() and "add-lease" in plugin.suggest()


@pytest.mark.parametrize("name,traffic,speed", [
    ("tahoe_upload_rate", "3000000", "4000000.5"), ("tahoe_download_rate", "2000000", "8000000")])
def test_rate_plugins(name: str, traffic: str, speed: str) -> None:
    """Rate graphs: the byte counter as DERIVE, and the mean speed per operation."""
    plugin = load(name)
    config = plugin.config(["client"])
    assert check_config(config) == ["client", "client_speed"]
    assert "client.type DERIVE\n" in config and "client_speed.type" not in config
    assert parse_values(plugin.render({"client": CLIENT_DOC})) == {
        "client": traffic, "client_speed": speed}
    assert parse_values(plugin.render({"client": STORAGE_DOC})) == {
        "client": "0", "client_speed": "U"}


@pytest.mark.parametrize("name,mean", [("tahoe_upload_latency", "0.25"),
                                       ("tahoe_download_latency", "0.125")])
def test_latency_plugins(name: str, mean: str) -> None:
    """Latency graphs: mean, median, 90th and 99th percentile per node."""
    plugin = load(name)
    assert check_config(plugin.config(["c"])) == ["c_mean", "c_50_0", "c_90_0", "c_99_0"]
    assert parse_values(plugin.render({"c": CLIENT_DOC})) == {
        "c_mean": mean, "c_50_0": "U", "c_90_0": "U", "c_99_0": "U"}


# -- whole runs


class _Handler(http.server.BaseHTTPRequestHandler):
    documents: dict[str, dict] = {}

    def do_GET(self) -> None:  # noqa: N802 (http.server)
        node = self.path.split("/")[1]
        if node not in self.documents or "/statistics?t=json" not in self.path:
            self.send_error(404)
            return
        body = json.dumps(self.documents[node]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """A stdlib HTTP server on 127.0.0.1 serving /storage/statistics and /client/statistics."""
    _Handler.documents = {"storage": STORAGE_DOC, "client": CLIENT_DOC}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def run_plugin(name: str, args: list[str], env: dict[str, str],
               link_as: str | None = None, tmp_path: Path | None = None
               ) -> subprocess.CompletedProcess[str]:
    """Run a plugin file (or a symlink to it) as munin would, with ``env`` only."""
    path = MUNIN / name
    if link_as is not None:
        assert tmp_path is not None
        link = tmp_path / link_as
        link.symlink_to(path)
        path = link
    return subprocess.run([sys.executable, str(path), *args], env=env, capture_output=True,
                          text=True, timeout=60)


def test_run_nodes_in_process(server: str, tmp_path: Path) -> None:
    """run_nodes fetches every node; an unreachable one is U with a message."""
    munin = load("tahoe_munin.py")
    plugin = load("tahoe_files")
    (tmp_path / "node.url").write_text(f"{server}/storage/\n")
    env = {"basedir_s1": str(tmp_path), "url_gone": f"{server}/nothere/", "timeout": "5"}
    out, err = io.StringIO(), io.StringIO()
    assert munin.run_nodes(plugin.config, plugin.render, argv=["tahoe_files"], environ=env,
                           stdout=out, stderr=err) == 0
    assert parse_values(out.getvalue()) == {"gone": "U", "s1": "17"}
    assert "gone" in err.getvalue() and "404" in err.getvalue()
    out = io.StringIO()
    assert munin.run_nodes(plugin.config, plugin.render, argv=["tahoe_files", "autoconf"],
                           environ=env, stdout=out, stderr=err) == 0
    assert out.getvalue().startswith("no (")
    out, err = io.StringIO(), io.StringIO()
    assert munin.run_nodes(plugin.config, plugin.render, argv=["tahoe_files"], environ={},
                           stdout=out, stderr=err) == 1
    assert "no node configured" in err.getvalue() and out.getvalue() == ""


@pytest.mark.parametrize("name", PLUGINS)
def test_plugin_runs(name: str, server: str, tmp_path: Path) -> None:
    """Each plugin, run as a program: config, values and autoconf against the server."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if name in SINGLE:
        env["url"] = f"{server}/storage/"
    else:
        env.update({"url_storage": f"{server}/storage/statistics?t=json",
                    "url_client": f"{server}/client"})
    link_as = {"tahoe_server_latency_": "tahoe_server_latency_get_50_0",
               "tahoe_server_operations_": "tahoe_server_operations_allocate"}.get(name)
    config = run_plugin(name, ["config"], env, link_as, tmp_path)
    assert config.returncode == 0, config.stderr
    fields = check_config(config.stdout)
    if link_as is not None:
        (tmp_path / link_as).unlink()
    fetched = run_plugin(name, [], env, link_as, tmp_path)
    assert fetched.returncode == 0 and fetched.stderr == "", fetched.stderr
    values = parse_values(fetched.stdout)
    assert list(values) == fields
    assert any(value != "U" for value in values.values()) or name == "tahoe_cpu_watcher"
    if link_as is not None:
        (tmp_path / link_as).unlink()
    autoconf = run_plugin(name, ["autoconf"], env, link_as, tmp_path)
    assert (autoconf.returncode, autoconf.stdout) == (0, "yes\n")


def test_wildcards_suggest_and_refuse_bad_names(tmp_path: Path) -> None:
    """suggest works under the bare wildcard name; config there is an error."""
    env = {"url_s": "http://127.0.0.1:9/"}
    suggested = run_plugin("tahoe_server_latency_", ["suggest"], env)
    assert suggested.returncode == 0 and "get_50_0\n" in suggested.stdout
    bad = run_plugin("tahoe_server_latency_", ["config"], env)
    assert bad.returncode == 1 and "link this plugin" in bad.stderr
    operations = run_plugin("tahoe_server_operations_", ["suggest"], env)
    assert operations.stdout.split() == ["allocate", "write", "close", "abort", "get", "read",
                                         "readv", "writev", "add-lease"]

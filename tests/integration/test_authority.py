"""Authority: what a cap allows, where caps may show, where nodes listen and write.

* A read cap never gives write access: every way the web API changes a
  directory or a mutable file is refused for its read-only cap, and nothing
  changes.
* Caps never show in ``/status``, ``/statistics``, the welcome page, error
  messages or the access log's ``Referer``; pages tell browsers to send no
  ``Referer`` at all.  (A browser's error page under a directory links back
  to it, as the listing does: navigation, not a message.)
* The gateway listens on 127.0.0.1 unless told otherwise.
* A node's private files (secrets, FURLs, the alias file and backup database
  with caps) are the owner's only.  Found by this test and fixed:
  ``private/convergence``, ``private/secret``, ``introducers.yaml``, the
  introducer cache, ``private/aliases`` and ``backupdb.sqlite`` were created
  mode 0644 (the 0700 directory was their only protection).
* A storage server writes nothing outside its storage directory, whatever
  path or storage index a client sends over HTTPS.
"""
from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from tests.integration.http_storage_support import HTTPStorage, NodeAddress, http_node
from tests.support.dirapi import WebAPI, multipart
from tests.support.nodes import our_tahoe
from tests.support.proxied_grid import ProxiedGrid
from tests.support.reliability import record_fuzz, record_limit

__all__ = ["http_node"]


@pytest.fixture
def api(local_grid: ProxiedGrid) -> WebAPI:
    """The local grid's gateway."""
    return WebAPI(local_grid.client.url)


def _snapshot(api: WebAPI, dircap: str, sdmf: str, mdmf: str) -> tuple[object, ...]:
    return (api.json(dircap), api.read(dircap, "f"), api.children(dircap, "sub"),
            api.read(sdmf), api.read(mdmf))


def test_read_caps_never_write(api: WebAPI) -> None:
    """Every writing call through a directory's or mutable file's read cap is refused
    (4xx) and changes nothing."""
    dircap = api.mkdir()
    api.ok("PUT", api.object_path(dircap, "f"), b"file")
    api.ok("POST", api.object_path(dircap) + "?t=mkdir&name=sub")
    sdmf, mdmf = api.create_mutable(b"sdmf", "SDMF"), api.create_mutable(b"mdmf", "MDMF")
    ro_dir = api.json(dircap)[1]["ro_uri"]
    ro_sdmf, ro_mdmf = (api.json(cap)[1]["ro_uri"] for cap in (sdmf, mdmf))
    before = _snapshot(api, dircap, sdmf, mdmf)
    form, form_headers = multipart({"t": "upload"}, {"file": ("new", b"x")})
    children = json.dumps({"x": ["filenode", {"ro_uri": "URI:LIT:pa"}]}).encode()
    attempts = [
        ("PUT", api.object_path(ro_dir, "new"), b"x", {}),
        ("PUT", api.object_path(ro_dir, "f"), b"x", {}),
        ("PUT", api.object_path(ro_dir, "sub/new"), b"x", {}),
        ("PUT", api.object_path(ro_dir, "new") + "?t=mkdir", b"", {}),
        ("PUT", api.object_path(ro_dir, "new") + "?t=uri", b"URI:LIT:pa", {}),
        ("DELETE", api.object_path(ro_dir, "f"), None, {}),
        ("DELETE", api.object_path(ro_dir, "sub"), None, {}),
        ("POST", api.object_path(ro_dir) + "?t=mkdir&name=d", b"", {}),
        ("POST", api.object_path(ro_dir) + "?t=upload", form, form_headers),
        ("POST", api.object_path(ro_dir) + "?t=unlink&name=f", b"", {}),
        ("POST", api.object_path(ro_dir) + "?t=rename&from_name=f&to_name=g", b"", {}),
        ("POST", api.object_path(ro_dir) + "?t=relink&from_name=f&to_dir=" + dircap, b"", {}),
        ("POST", api.object_path(ro_dir) + "?t=uri&name=u&uri=URI:LIT:pa", b"", {}),
        ("POST", api.object_path(ro_dir) + "?t=set_children", children, {}),
        ("POST", api.object_path(ro_dir, "sub") + "?t=mkdir&name=d", b"", {}),
        ("PUT", api.object_path(ro_sdmf), b"overwrite", {}),
        ("PUT", api.object_path(ro_mdmf), b"overwrite", {}),
        ("PUT", api.object_path(ro_mdmf) + "?offset=1", b"patch", {}),
        ("POST", api.object_path(ro_sdmf) + "?t=upload", form, form_headers),
    ]
    for method, path, body, headers in attempts:
        answer = api.request(method, path, body, headers=headers)
        record_fuzz("authority: writes through read caps")
        assert 400 <= answer.status < 500, (method, path, answer.status, answer.text[:300])
    assert _snapshot(api, dircap, sdmf, mdmf) == before


def test_no_caps_in_status_pages_errors_or_referer(api: WebAPI, local_grid: ProxiedGrid) -> None:
    """Operation lists, statistics, the welcome page and error answers show no cap; every
    page asks browsers to send no Referer."""
    dircap = api.mkdir()
    filecap = api.ok("PUT", api.object_path(dircap, "f"), os.urandom(5000)).text.strip()
    mutable = api.create_mutable(b"m" * 100, "MDMF")
    api.read(filecap), api.read(mutable)
    secrets = [cap.split(":")[2] for cap in (dircap, filecap, mutable)]
    pages = ["/status", "/status?t=json", "/statistics", "/statistics?t=json", "/",
             "/?t=json", "/storage", "/storage?t=json"]
    errors = [api.object_path(dircap, "missing"), api.object_path(dircap, "f/below-a-file"),
              api.object_path(filecap) + "?t=bogus", api.object_path(dircap) + "?t=bogus",
              api.object_path(dircap, "f") + "?t=mkdir"]
    for path in pages + errors:
        for headers in ({}, {"Accept": "text/html"}):
            answer = api.request("GET", path, headers=headers)
            shown = answer.text
            if path in errors and headers:  # a browser's error page links back up: only its
                shown = "".join(re.findall(r'<pre class="message">(.*?)</pre>', shown, re.S))
            assert not any(s in shown for s in secrets), (path, answer.status, shown[:300])
            assert answer.headers.get("referrer-policy") == "no-referrer", path
    page = api.request("GET", api.object_path(dircap), headers={"Accept": "text/html"})
    assert page.status == 200 and page.headers["referrer-policy"] == "no-referrer"


def _listening_addresses(port: int) -> set[str]:
    """Local addresses of sockets listening on ``port`` (IPv4, from /proc/net/tcp)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        address, hex_port = fields[1].split(":")
        if int(hex_port, 16) == port and fields[3] == "0A":  # LISTEN
            found.add(".".join(str(int(address[i:i + 2], 16)) for i in (6, 4, 2, 0)))
    return found


def test_gateway_listens_on_loopback_by_default(local_grid: ProxiedGrid, tmp_path: Path) -> None:
    """``create-client`` writes a 127.0.0.1 web port, and a running gateway listens there only."""
    subprocess.run([str(our_tahoe()), "create-client", str(tmp_path / "c")], check=True,
                   capture_output=True, timeout=60)
    config = (tmp_path / "c" / "tahoe.cfg").read_text()
    assert "web.port = tcp:3456:interface=127.0.0.1" in config
    port = int(local_grid.client.url.rstrip("/").rsplit(":", 1)[1])
    assert _listening_addresses(port) == {"127.0.0.1"}
    record_limit("gateway address", "127.0.0.1 unless web.port names another interface")


#: Not created by a node: the README explains the directory; servers.yaml is the operator's
#: (here the test harness's).
NOT_NODE_FILES = {"README", "servers.yaml"}


def _loose_files(private: Path) -> list[str]:
    return [f"{p.relative_to(private)} {stat.S_IMODE(p.stat().st_mode):o}"
            for p in sorted(private.rglob("*"))
            if p.is_file() and p.name not in NOT_NODE_FILES
            and stat.S_IMODE(p.stat().st_mode) & 0o077]


def test_private_files_are_the_owners_only(local_grid: ProxiedGrid, tmp_path: Path) -> None:
    """Every file under private/ of a new client, a running client and storage node, and the
    alias file and backup database the CLI creates, is mode 0600."""
    tahoe = str(our_tahoe())
    fresh = tmp_path / "fresh"
    subprocess.run([tahoe, "create-client", "--introducer=pb://a@tcp:127.0.0.1:1/b", str(fresh)],
                   check=True, capture_output=True, timeout=60)
    cli = tmp_path / "cli"
    (cli / "private").mkdir(parents=True, mode=0o700)
    (cli / "node.url").write_text(local_grid.client.url + "\n")
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a").write_bytes(b"a")
    for argv in (["create-alias", "mine"], ["backup", str(tmp_path / "tree"), "mine:b"]):
        subprocess.run([tahoe, "-d", str(cli), *argv], check=True, capture_output=True,
                       timeout=120)
    assert (cli / "private" / "aliases").exists() and (cli / "private" / "backupdb.sqlite").exists()
    nodes = [fresh, cli, Path(local_grid.client.node.basedir),
             Path(local_grid.storage_nodes[0].node.basedir)]
    for basedir in nodes:
        assert stat.S_IMODE((basedir / "private").stat().st_mode) & 0o077 == 0, basedir
        assert _loose_files(basedir / "private") == [], basedir
    record_limit("private files", "mode 0600 in a 0700 private/")


HOSTILE_TARGETS = [
    "/storage/v1/immutable/../../../../../tmp/t13-escape",
    "/storage/v1/immutable/%2e%2e%2f%2e%2e%2f%2e%2e%2ft13-escape",
    "/storage/v1/immutable/..%2F..%2F..%2Ft13-escape/0",
    "/storage/v1/mutable/%2e%2e/read-test-write",
    "/storage/v1/immutable/aaaaaaaaaaaaaaaaaaaaaaaaaa/..%2f..%2f..%2ft13-escape",
    "/storage/v1/immutable/aaaaaaaaaaaaaaaaaaaaaaaaaa/corrupt",
    "/storage/v1/immutable//etc/passwd",
    "/storage/v1/lease/..%2F..%2Ft13-escape",
]


def test_storage_server_writes_only_in_its_storage_dir(http_node: NodeAddress) -> None:
    """Path tricks in every HTTPS storage endpoint leave every file outside storage/ as it
    was (logs aside), and create nothing outside the node directory."""
    basedir = http_node.basedir
    assert basedir is not None

    def outside() -> dict[str, int]:
        return {str(p): p.stat().st_mtime_ns for p in basedir.parent.rglob("*")
                if p.is_file() and basedir / "storage" not in p.parents
                and "logs" not in p.parts}

    before = outside()
    storage = HTTPStorage(http_node)
    try:
        for target in HOSTILE_TARGETS:
            for method in ("POST", "PUT", "PATCH", "GET"):
                answer = storage.send(method, target, [("Content-Range", "bytes 0-4/*")],
                                      b"evil!")
                record_fuzz("authority: storage paths over HTTPS")
                assert answer.status < 500, (method, target, answer.status)
    finally:
        storage.close()
    assert outside() == before
    assert not list(Path("/tmp").glob("t13-escape*"))

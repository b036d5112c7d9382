"""A storage node loads only what it uses: serving shares loads no gateway code.

Four of our nodes as processes on 127.0.0.1 (an introducer, two storage
nodes, a client; started and stopped by PID): storage node ``https`` offers
both protocols, ``foolscap`` only Foolscap, so the client reaches one over
HTTPS and the other over Foolscap. The client uploads, downloads, checks
(verify, add-lease) and writes directories and mutable files, 2-of-2, so
both servers store and serve every kind of share. Each storage node's
pages (welcome, ``/statistics``, ``/storage``, ``/status``) are read too.
Each node then says which modules it has loaded
(``GET /private/diagnostics?t=json`` with its API token,
:mod:`tahoe.web.private`): the storage nodes have none of the gateway's
upload, download, directory, mutable-file or CLI code, nor zfec or
pycryptodome; the client, which used them, has them all (so the check can
see them). Until its web port's first connection, a storage node that served
all those shares had not loaded the web server or its pages either.
"""
from __future__ import annotations

import functools
import json
import os
import time
import urllib.request
from pathlib import Path

from tests.support.dirapi import WebAPI
from tests.support.grid import Gateway, in_parallel, start_client, start_introducer, start_storage_node
from tests.support.nodes import Shares, TahoeTool, our_tahoe
from tests.support.ournodes import finished_shares
from tests.support.processes import ProcessSet

SHARES = Shares(needed=2, happy=2, total=2)

#: Code a node uses only as a gateway (module names and packages).
GATEWAY_ONLY = (
    "tahoe.client.uploader", "tahoe.client.downloader", "tahoe.client.checker",
    "tahoe.client.repairer", "tahoe.client.mutable", "tahoe.client.mapupdate",
    "tahoe.client.dirnode", "tahoe.client.deep",
    "tahoe.immutable.encoder", "tahoe.immutable.decoder", "tahoe.immutable.codec", "zfec",
    "tahoe.mutable", "tahoe.dirnode", "tahoe.crypto.rsa",
    "Crypto",  # pycryptodome: only the RSA keys of mutable files need it
    "tahoe.web.unlinked", "tahoe.web.directory", "tahoe.web.named", "tahoe.web.filenode",
    "tahoe.web.mutablefile", "tahoe.web.dirpost", "tahoe.web.traversal", "tahoe.web.linking",
    "tahoe.web.operations", "tahoe.web.common",
    "tahoe.frontends",
)
#: The CLI modules ``tahoe run`` needs (as a console script or ``python -m tahoe.cli.main``).
RUN_CLI = {"tahoe.cli", "tahoe.cli.main", "tahoe.cli.run", "tahoe.cli.create_node"}


#: The web server and pages, loaded at the web port's first connection.
WEB = ("twisted.web.server", "twisted.web.http", "tahoe.web.root", "tahoe.web.server",
       "tahoe.web.statistics", "tahoe.web.storage_status", "tahoe.web.page")


def loaded_modules(basedir: Path, node_url: str, key: str = "modules") -> set[str]:
    """``GET /private/diagnostics?t=json`` with the node's API token: its loaded modules
    (``key``: ``modules_before_web``, those loaded when its web site was built)."""
    token = (basedir / "private" / "api_auth_token").read_text().strip()
    request = urllib.request.Request(node_url.rstrip("/") + "/private/diagnostics?t=json",
                                     headers={"Authorization": f"tahoe-lafs {token}"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=30) as answer:
        return set(json.loads(answer.read())[key])


def named(modules: set[str], names: tuple[str, ...] | set[str]) -> set[str]:
    """The modules that are one of ``names`` or inside one of them."""
    return {m for m in modules if any(m == n or m.startswith(n + ".") for n in names)}


def drive_client(client: Gateway) -> None:
    """Every kind of share written and read through both servers."""
    api = WebAPI(client.url)
    data = os.urandom(200_000)
    cap = client.upload(data)
    assert cap.startswith("URI:CHK:")
    assert client.download(cap) == data
    check = api.post(cap, query="t=check&verify=true&add-lease=true&output=JSON")
    assert check.status == 200 and check.json()["results"]["healthy"], check.text
    directory = api.mkdir()
    api.ok("PUT", api.object_path(directory, "file"), data[:5000])
    assert api.read(directory, "file") == data[:5000]
    mutable = api.create_mutable(b"first", "MDMF")
    api.ok("PUT", api.object_path(mutable), b"second")
    assert api.read(mutable) == b"second"
    assert set(api.children(directory)) == {"file"}


def test_storage_node_serving_shares_loads_no_gateway_code(tmp_path: Path) -> None:
    tool = TahoeTool(our_tahoe(), tmp_path / "logs")
    with ProcessSet() as processes:
        _, furl = start_introducer(tool, tmp_path / "introducer", processes)
        names = ("https", "foolscap")
        servers = dict(zip(names, in_parallel([
            functools.partial(start_storage_node, tool, tmp_path / name, processes,
                              introducer_furl=furl, shares=SHARES,
                              force_foolscap=(name == "foolscap"))
            for name in names])))
        client = start_client(tool, tmp_path / "client", processes, introducer_furl=furl,
                              shares=SHARES, expected_servers=2)
        protocols = {s["nickname"]: s["connection_status"] for s in client.welcome()["servers"]}
        assert protocols["https"].endswith("via HTTPS"), protocols
        assert not protocols["foolscap"].endswith("via HTTPS"), protocols
        # A node without storage is a gateway: it loads its upload and download paths
        # just after it started, so that its first upload costs what later ones do; it
        # makes RSA keys for new mutable files only after its first POST or PUT had its
        # turn.
        upload_path = {"tahoe.client.uploader", "tahoe.client.downloader",
                       "tahoe.immutable.encoder", "tahoe.immutable.codec", "zfec",
                       "tahoe.web.unlinked"}
        deadline = time.monotonic() + 10
        while not named(warm := loaded_modules(tmp_path / "client", client.url),
                        GATEWAY_ONLY) >= upload_path and time.monotonic() < deadline:
            time.sleep(0.1)
        assert named(warm, GATEWAY_ONLY) >= upload_path, warm
        assert "Crypto.PublicKey.RSA" not in warm  # no RSA key made yet
        drive_client(client)
        for name, server in servers.items():
            # The first connection to the storage node's web port: this request.
            before_web = loaded_modules(tmp_path / name, server.url, "modules_before_web")
            assert "tahoe.storage.server" in before_web
            assert named(before_web, WEB) == set(), name
            api = WebAPI(server.url)
            for page in ("/", "/?t=json", "/statistics", "/statistics?t=json", "/storage",
                         "/storage?t=json", "/status"):
                api.ok("GET", page)

        client_modules = loaded_modules(tmp_path / "client", client.url)
        assert named(client_modules, GATEWAY_ONLY) >= {
            "tahoe.client.uploader", "tahoe.client.downloader", "tahoe.client.mutable",
            "tahoe.client.dirnode", "tahoe.immutable.codec", "zfec", "tahoe.web.unlinked",
            "Crypto.PublicKey.RSA"}
        for name, server in servers.items():
            basedir = tmp_path / name
            shares = finished_shares(basedir / "storage")
            assert len({share.split("/")[1] for share in shares}) >= 4, (name, shares)
            modules = loaded_modules(basedir, server.url)
            assert {"tahoe.storage.server", "tahoe.storage.crawler",
                    "tahoe.web.storage_status"} <= modules
            if name == "https":
                assert "tahoe.storage.http_api" in modules
            assert named(modules, GATEWAY_ONLY) == set(), (name, protocols)
            assert named(modules, ("tahoe.cli",)) <= RUN_CLI, name
            assert named(modules, ("tahoe.invite",)) == set(), name  # create-node --join's


def test_diagnostics_need_the_api_token(tmp_path: Path) -> None:
    """``/private/diagnostics`` answers only with the node's token, and only ``t=json``."""
    tool = TahoeTool(our_tahoe(), tmp_path / "logs")
    with ProcessSet() as processes:
        _, furl = start_introducer(tool, tmp_path / "introducer", processes)
        node = start_storage_node(tool, tmp_path / "storage", processes, introducer_furl=furl,
                                  shares=SHARES)
        api = WebAPI(node.url)
        token = (tmp_path / "storage" / "private" / "api_auth_token").read_text().strip()
        page = "/private/diagnostics?t=json"
        assert api.request("GET", page).status == 401
        assert api.request("GET", page, headers={"Authorization": "tahoe-lafs x"}).status == 401
        authorized = {"Authorization": f"tahoe-lafs {token}"}
        assert api.request("GET", "/private/diagnostics", headers=authorized).status == 400
        assert api.request("GET", "/private/other", headers=authorized).status == 404
        answer = api.ok("GET", page, headers=authorized)
        assert answer.headers["content-type"].startswith("application/json")
        modules = answer.json()["modules"]
        assert modules == sorted(modules) and "tahoe.node.service" in modules

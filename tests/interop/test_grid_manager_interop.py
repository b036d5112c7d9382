"""Grid Manager across implementations, on one small grid (our introducer):
our1 certified by Tahoe 1.20's ``grid-manager``, tahoe1 (a Tahoe 1.20 server)
certified by ours, our2 and tahoe2 uncertified. Tahoe's client and ours,
each trusting both managers, put shares on our1 and tahoe1 only: Tahoe's
client accepts the certificates our servers announce and ours signed, and
ours accepts Tahoe's."""
from __future__ import annotations

import functools
import random
import urllib.request
from pathlib import Path

import pytest

from tests.support.grid import Gateway, in_parallel, start_introducer
from tests.support.managed_grid import (GridManagerTool, configure_grid_managers,
                                        install_certificate, share_files)
from tests.support.nodes import Shares, TahoeTool, config_for_tests, edit_tahoe_cfg, our_tahoe
from tests.support.ournodes import create_storage_node, start_node
from tests.support.ports import free_port
from tests.support.processes import ProcessSet

pytestmark = pytest.mark.interop

#: two certified servers must hold the four shares (happy = 2): a client that
#: refused either manager's certificate fails the upload, one that ignored the
#: managers puts shares on all four servers
SHARES = Shares(needed=1, happy=2, total=4)


def _client(tool: TahoeTool, directory: Path, furl: str, managers: dict[str, str],
            processes: ProcessSet) -> Gateway:
    tool.create_client(directory, introducer_furl=furl, shares=SHARES, nickname=directory.name,
                       web_port=free_port())
    edit_tahoe_cfg(directory, config_for_tests(storage=False))
    configure_grid_managers(directory, managers)
    return start_node(tool, directory, processes)


def test_certificates_across_implementations(tmp_path: Path, tahoe120: Path) -> None:
    """Each implementation's client honours both managers' certificates on both
    implementations' servers, and gives the uncertified servers nothing."""
    ours = TahoeTool(our_tahoe(), tmp_path / "logs")
    theirs = TahoeTool(tahoe120, tmp_path / "logs")
    tahoe_gm = GridManagerTool(tahoe120.parent / "grid-manager", tmp_path / "tahoe-gm")
    our_gm = GridManagerTool(our_tahoe().parent / "grid-manager", tmp_path / "our-gm")
    with ProcessSet() as processes:
        _, furl = start_introducer(ours, tmp_path / "introducer", processes)
        nodes = {name: tmp_path / name for name in ("our1", "our2", "tahoe1", "tahoe2")}
        tools = {name: ours if name.startswith("our") else theirs for name in nodes}
        identities = in_parallel([tahoe_gm.create, our_gm.create] + [
            functools.partial(create_storage_node, tools[name], directory, introducer_furl=furl,
                              shares=SHARES) for name, directory in nodes.items()])[:2]
        managers = {"tahoe-gm": identities[0], "our-gm": identities[1]}
        # Tahoe's manager certifies our server; ours certifies Tahoe's; each node's
        # own tahoe installs its certificate.
        in_parallel([
            lambda: install_certificate(ours, nodes["our1"], "tahoe-gm",
                                        tahoe_gm.certify("our1", nodes["our1"])),
            lambda: install_certificate(theirs, nodes["tahoe1"], "our-gm",
                                        our_gm.certify("tahoe1", nodes["tahoe1"]))])
        in_parallel([functools.partial(start_node, tools[name], directory, processes)
                     for name, directory in nodes.items()])
        clients = in_parallel([
            functools.partial(_client, theirs, tmp_path / "tahoe-client", furl, managers,
                              processes),
            functools.partial(_client, ours, tmp_path / "our-client", furl, managers,
                              processes)])
        for client in clients:
            client.wait_for_servers(4)
            before = share_files(nodes.values())
            data = random.Random(client.url).randbytes(10_000)
            cap = client.upload(data)
            after = share_files(nodes.values())
            new = {name: after[name] - before[name] for name in after}
            assert {name for name, shares in new.items() if shares} == {"our1", "tahoe1"}, new
            assert sum(map(len, new.values())) == 4
            assert client.download(cap) == data

        # our client's mutable publish as well
        request = urllib.request.Request(clients[1].url + "uri?format=MDMF", data=b"m" * 5000,
                                         method="PUT")
        before = share_files(nodes.values())
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.read().startswith(b"URI:MDMF:")
        after = share_files(nodes.values())
        assert {name for name in after if after[name] - before[name]} == {"our1", "tahoe1"}

        servers = {s["nickname"]: s for s in clients[1].welcome()["servers"]}
        assert {n for n, s in servers.items() if s["grid_manager_certified"]} == {"our1",
                                                                                   "tahoe1"}

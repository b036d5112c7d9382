"""A managed grid of our nodes: one of three storage servers certified by our
``grid-manager``; clients with ``[grid_managers]`` (HTTPS and Foolscap) place
shares on it only, log why the other two are refused (an expired certificate,
a forged one and one for another server), and show it on the welcome page and
in ``tahoe status``."""
from __future__ import annotations

import functools
import random
import subprocess
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

from tahoe.crypto.ed25519 import SigningKey, parse_public_key
from tahoe.grid_manager.certificate import format_certificate_file, sign_certificate
from tahoe.grid_manager.config import parse_config
from tests.support.grid import Gateway, in_parallel, start_introducer
from tests.support.managed_grid import (GridManagerTool, certificate_expiry, configure_grid_managers,
                                        install_certificate, log_text, node_pubkey, share_files)
from tests.support.nodes import Shares, TahoeTool, edit_tahoe_cfg, our_tahoe
from tests.support.ournodes import create_storage_node, start_node
from tests.support.processes import ProcessSet, wait_until

#: every share of a file on the one certified server is possible, and all
#: three servers would get one if the client ignored the Grid Manager
SHARES = Shares(needed=1, happy=1, total=3)


def _mutable_upload(url: str, data: bytes) -> str:
    request = urllib.request.Request(url + "uri?format=MDMF", data=data, method="PUT")
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read().decode("ascii").strip()


def test_only_certified_servers_get_shares(tmp_path: Path) -> None:
    """Immutable and mutable uploads over HTTPS and Foolscap go to the certified server only;
    the expired, forged and other-server certificates are logged and shown."""
    tool = TahoeTool(our_tahoe(), tmp_path / "logs")
    gm = GridManagerTool(our_tahoe().parent / "grid-manager", tmp_path / "gm")
    with ProcessSet() as processes:
        _, furl = start_introducer(tool, tmp_path / "introducer", processes)
        storage = [tmp_path / f"storage{i}" for i in (1, 2, 3)]
        in_parallel([functools.partial(create_storage_node, tool, d, introducer_furl=furl,
                                       shares=SHARES) for d in storage])
        identity = gm.create()
        good = gm.certify("storage1", storage[0], days=30)
        install_certificate(tool, storage[0], "gm", good)
        # storage2: a certificate from our manager that expired in 2020
        manager_key = parse_config((tmp_path / "gm" / "config.json").read_text()).private_key
        expired = sign_certificate(manager_key, parse_public_key(node_pubkey(storage[1])),
                                   datetime(2020, 1, 2, tzinfo=timezone.utc))
        install_certificate(tool, storage[1], "gm", format_certificate_file(expired))
        # storage3: one signed by a key no client trusts, and storage1's own
        forged = sign_certificate(SigningKey(bytes(range(32))),
                                  parse_public_key(node_pubkey(storage[2])),
                                  datetime(2099, 1, 1, tzinfo=timezone.utc))
        install_certificate(tool, storage[2], "other", format_certificate_file(forged))
        install_certificate(tool, storage[2], "gm", good)
        in_parallel([functools.partial(start_node, tool, d, processes) for d in storage])

        directories = []
        for name, foolscap in (("client-https", False), ("client-foolscap", True)):
            directory = tmp_path / name
            tool.create_client(directory, introducer_furl=furl, shares=SHARES, nickname=name)
            configure_grid_managers(directory, {"gm": identity})
            if foolscap:
                edit_tahoe_cfg(directory, {"client": {"force_foolscap": "true"}})
            directories.append(directory)
        clients: list[Gateway] = in_parallel([functools.partial(start_node, tool, d, processes)
                                              for d in directories])
        ids = {d.name: "v0-" + node_pubkey(d).removeprefix("pub-v0-") for d in storage}
        for client in clients:
            client.wait_for_servers(3)
            before = share_files(storage)
            data = random.Random(client.url).randbytes(20_000)
            cap = client.upload(data)
            dircap = _mutable_upload(client.url, b"mutable " * 100)
            after = share_files(storage)
            new = {name: after[name] - before[name] for name in after}
            assert len(new["storage1"]) == 6, new  # 3 immutable + 3 mutable shares
            assert new["storage2"] == set() and new["storage3"] == set(), new
            assert client.download(cap) == data
            assert dircap.startswith("URI:MDMF:")

            servers = {s["nickname"]: s for s in client.welcome()["servers"]}
            assert servers["storage1"]["grid_manager_certified"] is True
            assert servers["storage1"]["grid_manager_certificate_expires"] == \
                certificate_expiry(good).timestamp()
            assert servers["storage2"]["grid_manager_certified"] is False
            assert servers["storage3"]["grid_manager_certified"] is False
            page = urllib.request.urlopen(client.url, timeout=30).read().decode()
            assert "Grid Manager" in page and "not certified" in page

            log = wait_until(lambda: (text := log_text(tool, client.node.basedir))
                             and "signed for another server" in text and text, 30,
                             "the client to log the refused certificates")
            assert f"{ids['storage2']} ('storage2') expired at 2020-01-02T00:00:00+00:00" in log
            assert f"{ids['storage3']} ('storage3') refused, forged" in log
            assert f"{ids['storage3']} ('storage3') refused, signed for another server" in log

        status = subprocess.run([str(our_tahoe()), "-d", str(tmp_path / "client-https"),
                                 "status"], capture_output=True, text=True, timeout=60)
        assert status.returncode == 0, status.stderr
        assert "storage1 (" in status.stdout and "certified until" in status.stdout
        assert status.stdout.count("not certified, no shares are placed on it") == 2


def test_bad_grid_manager_key_stops_the_client(tmp_path: Path) -> None:
    """A ``[grid_managers]`` value that is not a key is an error naming it, not a silent grid."""
    tool = TahoeTool(our_tahoe(), tmp_path / "logs")
    directory = tmp_path / "client"
    tool.create_client(directory, introducer_furl=None, shares=SHARES)
    configure_grid_managers(directory, {"gm": "pub-v0-notakey"})
    result = subprocess.run([str(our_tahoe()), "run", "--allow-stdin-close", str(directory)],
                            capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL)
    assert result.returncode != 0
    assert "grid_managers" in result.stdout + result.stderr
    assert "not a Grid Manager public key" in result.stdout + result.stderr


def test_missing_certificate_file_stops_the_server(tmp_path: Path) -> None:
    """A ``[grid_manager_certificates]`` entry whose file is gone stops the start, named."""
    tool = TahoeTool(our_tahoe(), tmp_path / "logs")
    directory = create_storage_node(tool, tmp_path / "storage", shares=SHARES)
    edit_tahoe_cfg(directory, {"storage": {"grid_management": "true"},
                               "grid_manager_certificates": {"gm": "gm.cert"}})
    result = subprocess.run([str(our_tahoe()), "run", "--allow-stdin-close", str(directory)],
                            capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "grid_manager_certificates" in output and "gm.cert' doesn't exist" in output

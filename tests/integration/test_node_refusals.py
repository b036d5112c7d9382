"""A node asked for what this implementation does not have does not start, and connects nowhere.

* To hide its IP address (Tor, I2P): Tahoe routes such a node's connections
  through Tor or I2P; this implementation has neither, so running it as
  configured would connect over plain TCP and reveal the address the
  operator meant to hide.
* Storage plugins (``[client]storage.plugins``, ``[storage]plugins``, and
  ``[storage]anonymous = false``, which offers storage through plugins
  only): Tahoe does not start without the plugins enabled; running without
  them would, on a server, serve storage that a plugin was meant to gate.

``tahoe run`` refuses, naming the setting. The introducer's FURL points at a
socket this test listens on: nothing ever connects to it.
"""
from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from tests.support.nodes import Shares, TahoeTool, edit_tahoe_cfg, our_tahoe
from tests.support.ports import free_port

CASES = {
    "tcp through Tor": ({"connections": {"tcp": "tor"}, "node": {"reveal-IP-address": "false"}},
                        None, "[connections]tcp = tor"),
    "tcp disabled": ({"connections": {"tcp": "disabled"}}, None, "[connections]tcp = disabled"),
    "a static server through Tor": ({}, "storage:\n  v0-aaaa:\n    ann:\n      nickname: x\n"
                                        "    connections:\n      tcp: tor\n",
                                    "server 'v0-aaaa' has connections tcp: tor"),
    "a client storage plugin": ({"client": {"storage.plugins": "tokens"},
                                 "storageclient.plugins.tokens": {"x": "y"}}, None,
                                "storage plugin 'tokens' ([client]storage.plugins)"),
    "a storage server plugin": ({"storage": {"enabled": "true", "plugins": "gate",
                                             "reserved_space": "1M"},
                                 "node": {"tub.port": f"tcp:{free_port()}:interface=127.0.0.1",
                                          "tub.location": "tcp:127.0.0.1:1"}}, None,
                                "storage server plugin 'gate' ([storage]plugins)"),
    "storage without anonymous access": ({"storage": {"enabled": "true", "anonymous": "false",
                                                      "reserved_space": "1M"},
                                          "node": {"tub.port": f"tcp:{free_port()}"
                                                               ":interface=127.0.0.1",
                                                   "tub.location": "tcp:127.0.0.1:1"}}, None,
                                         "[storage]anonymous = false"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_node_asked_for_what_is_not_here_refuses_to_start(case: str, tmp_path: Path) -> None:
    changes, servers_yaml, named = CASES[case]
    with socket.socket() as introducer:
        introducer.bind(("127.0.0.1", 0))
        introducer.listen(8)
        introducer.settimeout(0.5)
        port = introducer.getsockname()[1]
        furl = f"pb://{'a' * 32}@tcp:127.0.0.1:{port}/{'b' * 32}"
        tool = TahoeTool(our_tahoe(), tmp_path / "logs")
        basedir = tmp_path / "node"
        tool.create_client(basedir, introducer_furl=furl, shares=Shares(1, 1, 1),
                           nickname="hidden", web_port=free_port())
        edit_tahoe_cfg(basedir, changes)
        if servers_yaml:
            (basedir / "private" / "servers.yaml").write_text(servers_yaml)
        result = subprocess.run([tool.exe, "run", "--allow-stdin-close", str(basedir)],
                                capture_output=True, text=True, timeout=60,
                                stdin=subprocess.DEVNULL)
        assert result.returncode == 1, result.stdout + result.stderr
        assert named in result.stderr and "does not start" in result.stderr, result.stderr
        assert not (basedir / "running.process").exists()
        with pytest.raises(socket.timeout):
            introducer.accept()  # no connection was made

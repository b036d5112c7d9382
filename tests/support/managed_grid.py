"""Managed grids for tests: a Grid Manager (either implementation's ``grid-manager``)
certifying storage nodes (either implementation's), and where their shares went.

Facts: ``docs/formats/grid-manager.md``. Every command runs as a separate
program; nodes are started and stopped by the caller's ProcessSet.
"""
from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path

from tahoe.crypto.ed25519 import SigningKey
from tests.support.nodes import TahoeTool, edit_tahoe_cfg

__all__ = ["GridManagerTool", "certificate_expiry", "install_certificate", "node_pubkey", "share_files",
           "configure_grid_managers", "log_text"]

CLI_TIMEOUT = 60.0


class GridManagerTool:
    """One ``grid-manager`` executable working on one configuration directory."""

    def __init__(self, exe: Path, config_dir: Path) -> None:
        self.exe = exe
        self.config_dir = config_dir

    def run(self, *args: str, stdin: str | None = None) -> str:
        """Run ``grid-manager --config DIR ARGS``; its stdout (raises with stderr on failure)."""
        result = subprocess.run([str(self.exe), "--config", str(self.config_dir), *args],
                                input=stdin, capture_output=True, text=True,
                                timeout=CLI_TIMEOUT)
        if result.returncode != 0:
            raise RuntimeError(f"{self.exe} {' '.join(args)} -> {result.returncode}:"
                               f" {result.stderr}")
        return result.stdout

    def create(self) -> str:
        """Create the manager; its public identity (``pub-v0-…``)."""
        self.run("create")
        return self.run("public-identity").strip()

    def certify(self, name: str, node_dir: Path, days: int = 30) -> str:
        """``add NAME <node.pubkey>`` and ``sign NAME DAYS``; the certificate's JSON text."""
        self.run("add", name, node_pubkey(node_dir))
        return self.run("sign", name, str(days))


def node_pubkey(node_dir: Path) -> str:
    """A node's ``pub-v0-…`` key: from its ``node.pubkey``, or, for a node not
    started yet, from a new key pair written as its ``private/node.privkey`` and
    ``node.pubkey`` (which both implementations load rather than make one)."""
    pubkey = node_dir / "node.pubkey"
    if not pubkey.exists():
        key = SigningKey(os.urandom(32))
        (node_dir / "private" / "node.privkey").write_bytes(key.to_file_bytes())
        os.chmod(node_dir / "private" / "node.privkey", 0o600)
        pubkey.write_bytes(key.public_key.to_file_bytes())
    return pubkey.read_text().strip()


def install_certificate(tool: TahoeTool, node_dir: Path, name: str, text: str) -> None:
    """``tahoe admin add-grid-manager-cert --name NAME --filename FILE`` with ``tool``'s tahoe."""
    path = node_dir.parent / f"{node_dir.name}-{name}.cert.json"
    path.write_text(text)
    tool.cli("-d", node_dir, "admin", "add-grid-manager-cert", "--name", name,
             "--filename", path)


def configure_grid_managers(node_dir: Path, managers: Mapping[str, str]) -> None:
    """Give a client ``[grid_managers]`` (name = ``pub-v0-…``)."""
    edit_tahoe_cfg(node_dir, {"grid_managers": dict(managers)})


def share_files(storage_dirs: Iterable[Path]) -> dict[str, set[str]]:
    """Node directory name → its finished share files (``<SI>/<shnum>``)."""
    result = {}
    for node_dir in storage_dirs:
        shares = node_dir / "storage" / "shares"
        result[node_dir.name] = {f"{p.parent.name}/{p.name}" for p in shares.glob("*/*/*")
                                 if p.is_file() and p.parts[-3] != "incoming"}
    return result


def log_text(tool: TahoeTool, node_dir: Path) -> str:
    """What a node started by ``tool`` has logged so far (its ``tahoe run`` output)."""
    path = tool.log_dir / f"{node_dir.name}.log"
    return path.read_text(errors="replace") if path.exists() else ""


def certificate_expiry(text: str) -> datetime:
    """The expiry a certificate file's JSON text states."""
    return datetime.fromisoformat(json.loads(json.loads(text)["certificate"])["expires"])

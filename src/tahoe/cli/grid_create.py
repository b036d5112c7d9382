"""Making a local grid for ``tahoe grid``: its settings, free ports and node directories.

The node directories are made in-process by our own create commands
(``tahoe.cli.create_node``, imported only when a grid is created): an
introducer, ``storage1`` … ``storageN`` and a client, every port on 127.0.0.1,
``[storage]reserved_space`` lowered, and ``grid.json`` written with the plan.
Standard library only; no Twisted.
"""
from __future__ import annotations

import argparse
import io
import os
import random
import socket
from collections.abc import Mapping
from typing import Any, TextIO

from .errors import CLIError, UsageError
from .grid_processes import GRID_FILE, NodeRecord, write_grid_file

__all__ = ["DEFAULT_STORAGE_NODES", "GridError", "PortSource", "create_node_directory",
           "default_shares", "new_grid", "parse_shares", "plan_nodes", "set_config_value",
           "write_introducer"]

DEFAULT_STORAGE_NODES = 10


class GridError(CLIError):
    """The grid cannot be created, started or stopped (the message says why)."""


def default_shares(storage_nodes: int) -> tuple[int, int, int]:
    """Tahoe's 3/7/10, shrunk to fit ``storage_nodes`` servers (needed/happy/total).

    1 server: 1/1/1; 2: 1/2/2; 3: 2/3/3; 4: 3/4/4; … 7: 3/7/7; 10 and more: 3/7/10.
    """
    total = min(10, storage_nodes)
    happy = min(7, total)
    needed = min(3, max(1, happy - 1))
    return needed, happy, total


def parse_shares(text: str) -> tuple[int, int, int]:
    """``K/H/N`` (needed/happy/total) with 1 <= K <= H <= N <= 256.

    :raises ValueError: otherwise.
    """
    parts = text.split("/")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"--shares must look like NEEDED/HAPPY/TOTAL (e.g. 3/7/10), not {text!r}")
    needed, happy, total = (int(p) for p in parts)
    if not 1 <= needed <= happy <= total <= 256:
        raise ValueError("--shares must satisfy 1 <= needed <= happy <= total <= 256")
    return needed, happy, total


class PortSource:
    """Hands out TCP ports that are free on 127.0.0.1, each once.

    :param base_port: hand out ``base_port``, ``base_port + 1``, … (a busy one is
        an error); without it, random ports below the kernel's ephemeral range,
        so that no ``bind(0)`` or outgoing connection takes one before its node
        binds it.
    """

    def __init__(self, base_port: int | None = None, seed: int | None = None) -> None:
        self._next = base_port
        self._random = random.Random(seed)
        self._given: set[int] = set()
        low = 32768
        try:
            with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
                low = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
        self._range = (10000, low - 1) if low - 10000 >= 2000 else (20000, 32767)

    @staticmethod
    def _free(port: int) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                return False
        return True

    def take(self) -> int:
        """The next port.

        :raises GridError: if a ``--base-port`` port is busy or none is found.
        """
        if self._next is not None:
            port, self._next = self._next, self._next + 1
            if port > 65535 or not self._free(port):
                raise GridError(f"Error: port {port} on 127.0.0.1 is not available; choose"
                                " another --base-port")
            return port
        for _ in range(1000):
            port = self._random.randint(*self._range)
            if port not in self._given and self._free(port):
                self._given.add(port)
                return port
        raise GridError("Error: found no free TCP port on 127.0.0.1")


def set_config_value(path: str, section: str, key: str, value: str) -> None:
    """Set ``key = value`` in ``[section]`` of the ``tahoe.cfg`` at ``path``, keeping the rest.

    Replaces the key where it stands, or adds it right after the section's header
    (appending the section if needed).
    """
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    current, header_at, done = None, None, False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            current = stripped[1:-1].strip()
            if current == section:
                header_at = i
            continue
        name = stripped.split("=", 1)[0].strip().lower() if "=" in stripped else None
        if current == section and name == key.lower() and not stripped.startswith("#"):
            lines[i] = f"{key} = {value}"
            done = True
    if not done:
        if header_at is None:
            lines += ["", f"[{section}]", f"{key} = {value}"]
        else:
            lines.insert(header_at + 1, f"{key} = {value}")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


# ---------------------------------------------------------------- creating


def plan_nodes(storage_nodes: int, ports: PortSource) -> list[NodeRecord]:
    client = NodeRecord("client", "client", web_port=ports.take(), tub_port=None)
    introducer = NodeRecord("introducer", "introducer", web_port=None, tub_port=ports.take())
    storage = [NodeRecord(f"storage{i}", "storage", web_port=ports.take(), tub_port=ports.take())
               for i in range(1, storage_nodes + 1)]
    return [introducer, *storage, client]


def create_node_directory(node: NodeRecord, shares: tuple[int, int, int], reserved_space: str,
                 env: Mapping[str, str]) -> None:
    """Make ``node``'s directory with our create command, run in-process."""
    from . import create_node  # imported only when a grid is created
    listen = [f"--port=tcp:{node.tub_port}:interface=127.0.0.1",
              f"--location=tcp:127.0.0.1:{node.tub_port}"]
    common = [f"--nickname={node.name}", f"--webport=tcp:{node.web_port}:interface=127.0.0.1",
              *(f"--shares-{name}={value}"
                for name, value in zip(("needed", "happy", "total"), shares))]
    argv = {"introducer": ["create-introducer", *listen],
            "storage": ["create-node", *listen, *common],
            "client": ["create-client", *common]}[node.role]
    out, err = io.StringIO(), io.StringIO()
    code = create_node.run_create(argv[0], [*argv[1:], node.basedir], out, err, env)
    if code != 0:
        raise GridError(f"Error: tahoe {' '.join(argv)} {node.basedir} failed:\n"
                        f"{err.getvalue()}{out.getvalue()}")
    if node.role == "storage":
        set_config_value(os.path.join(node.basedir, "tahoe.cfg"), "storage",
                         "reserved_space", reserved_space)


def write_introducer(node: NodeRecord, furl: str) -> None:
    from ..node.nodedir import render_introducers_yaml
    path = os.path.join(node.basedir, "private", "introducers.yaml")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(render_introducers_yaml({"default": furl}))
    os.replace(path + ".tmp", path)


def new_grid(grid_dir: str, args: argparse.Namespace,
              stdout: TextIO) -> tuple[dict[str, Any], list[NodeRecord]]:
    """Plan a new grid in ``grid_dir`` (which must be missing or empty) and write grid.json."""
    if os.path.exists(grid_dir) and (not os.path.isdir(grid_dir) or os.listdir(grid_dir)):
        raise GridError(f"Error: {grid_dir} exists, is not empty and holds no local grid"
                        f" ({GRID_FILE}); choose another directory")
    count = args.storage_nodes or DEFAULT_STORAGE_NODES
    shares = args.shares or default_shares(count)
    if shares[1] > count:
        raise UsageError(f"Error: --shares {'/'.join(map(str, shares))} needs at least"
                         f" {shares[1]} storage nodes (happy), but the grid has {count}")
    nodes = plan_nodes(count, PortSource(args.base_port))
    os.makedirs(os.path.join(grid_dir, "logs"), exist_ok=True)
    settings = {"storage_nodes": count, "shares": list(shares),
                "reserved_space": args.reserved_space, "introducer_furl": None,
                "gateway": f"http://127.0.0.1:{nodes[-1].web_port}/"}
    for node in nodes:
        node.grid_dir = grid_dir
    write_grid_file(grid_dir, settings, nodes)
    stdout.write(f"Creating a local grid in {grid_dir}: an introducer, {count} storage"
                 f" node{'s' if count > 1 else ''} and a client; shares"
                 f" {'/'.join(map(str, shares))} (needed/happy/total), reserved_space"
                 f" {args.reserved_space}.\n")
    stdout.flush()
    return settings, nodes

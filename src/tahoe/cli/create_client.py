"""``tahoe create-client``: create a client-only node directory (no storage server).

Like ``create-node`` with storage off and ``--listen=none`` (``tub.port`` and
``tub.location`` are ``disabled``); it takes only ``-n``, ``-i``, ``-p``,
``--shares-*``, ``--join``, ``--hide-ip`` and ``-C`` (``reference/frontends.md`` §1.2).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TextIO

from .create_node import run_create


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe create-client [options] [NODEDIR]``: 0 on success, 1 on a usage
    error, 255 if the directory is not empty."""
    return run_create("create-client", argv, stdout, stderr, env)

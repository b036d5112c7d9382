"""``tahoe ln FROM TO``: make an additional link, as ``tahoe mv`` without removing FROM.

See :mod:`tahoe.cli.mv` (``reference/frontends.md`` §2.3).  Standard library only.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TextIO

from .mv import run_mode

__all__ = ["run"]


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe ln``: 0 on success, 1 on any error."""
    return run_mode("link", argv, stdout, stderr, env)

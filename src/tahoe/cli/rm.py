"""``tahoe rm PATH``: the same as ``tahoe unlink PATH`` (which see).

Tahoe-LAFS 1.20's docs call ``rm`` a synonym but its parser rejects it
(``reference/frontends.md`` §8); users expect it, so it is accepted here and
behaves (and prints) exactly as ``unlink``.  Standard library only.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TextIO

from .unlink import run_as

__all__ = ["run"]


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe rm``: 0 on success, 1 on any error."""
    return run_as("rm", argv, stdout, stderr, env)

"""``tahoe manifest``: see :mod:`tahoe.cli.deep`."""
from __future__ import annotations

from .deep import run_manifest as run

__all__ = ["run"]

"""``tahoe deep-check``: see :mod:`tahoe.cli.deep`."""
from __future__ import annotations

from .deep import run_deep_check as run

__all__ = ["run"]

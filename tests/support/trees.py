"""Comparing local directory trees (after a ``tahoe cp -r`` up and back down)."""
from __future__ import annotations

import filecmp
from pathlib import Path

__all__ = ["same_trees"]


def same_trees(left: Path, right: Path) -> bool:
    """Whether two local trees hold the same names and the same bytes, at every depth."""
    pending = [filecmp.dircmp(left, right)]
    while pending:
        current = pending.pop()
        if current.left_only or current.right_only or current.funny_files:
            return False
        _, mismatch, errors = filecmp.cmpfiles(current.left, current.right,
                                               current.common_files, shallow=False)
        if mismatch or errors:
            return False
        pending.extend(current.subdirs.values())
    return True

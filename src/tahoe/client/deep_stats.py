"""The deep-stats of a directory tree (``reference/frontends.md`` §3.7), as Tahoe 1.20 counts.

Pure: the walker (:mod:`.deep`) calls :meth:`DeepStats.add_node` for every
object it reaches and :meth:`DeepStats.enter_directory` for every directory
it lists. Mutable files are counted but not sized (as in Tahoe);
``size-files-histogram`` has two buckets per decade: ``[0,0]``, ``[1,3]``,
``[4,10]``, ``[11,31]``, ``[32,100]``, ``[101,316]``, …
"""
from __future__ import annotations

import math
from typing import Any

__all__ = ["DeepStats", "size_bucket"]

API_VERSION = 1
_ROOT = math.sqrt(10)
_KEYS = ("count-immutable-files", "count-mutable-files", "count-literal-files", "count-files",
         "count-directories", "count-unknown", "size-immutable-files", "size-literal-files",
         "size-directories", "largest-directory", "largest-directory-children",
         "largest-immutable-file")


def size_bucket(size: int) -> tuple[int, int]:
    """The histogram bucket ``(low, high)`` holding ``size`` (bytes, ≥ 0)."""
    if size < 0:
        raise ValueError("a size cannot be negative")
    low, high = 0, 0
    while not low <= size <= high:
        low = high + 1
        exponent = math.ceil(math.log(low, _ROOT) - 1e-9) if low > 1 else 1
        while _ROOT ** exponent < low:
            exponent += 1
        high = int(_ROOT ** exponent)
    return low, high


class DeepStats:
    """Counts and sizes of everything a walk reached."""

    def __init__(self) -> None:
        self.stats: dict[str, int] = {key: 0 for key in _KEYS}
        self._histogram: dict[tuple[int, int], int] = {}

    def add_node(self, kind: str, size: int | None = None, literal: bool = False) -> None:
        """Count one object.

        :param kind: ``"directory"``, ``"mutable"`` (file), ``"immutable"`` (file, CHK or
            LIT) or ``"unknown"``.
        :param size: an immutable file's size.
        :param literal: whether an immutable file is a LIT file.
        """
        if kind == "unknown":
            self.stats["count-unknown"] += 1
        elif kind == "directory":
            self.stats["count-directories"] += 1
        elif kind == "mutable":
            self.stats["count-files"] += 1
            self.stats["count-mutable-files"] += 1
        else:
            assert size is not None
            self.stats["count-files"] += 1
            bucket = size_bucket(size)
            self._histogram[bucket] = self._histogram.get(bucket, 0) + 1
            prefix = "literal" if literal else "immutable"
            self.stats[f"count-{prefix}-files"] += 1
            self.stats[f"size-{prefix}-files"] += size
            if not literal:
                self.stats["largest-immutable-file"] = max(self.stats["largest-immutable-file"],
                                                           size)

    def enter_directory(self, size: int | None, children: int) -> None:
        """Count a listed directory: its size in bytes and its number of children."""
        if size is not None:
            self.stats["size-directories"] += size
            self.stats["largest-directory"] = max(self.stats["largest-directory"], size)
        self.stats["largest-directory-children"] = max(self.stats["largest-directory-children"],
                                                       children)

    def results(self) -> dict[str, Any]:
        """The deep-stats dictionary."""
        return {"api-version": API_VERSION, **self.stats,
                "size-files-histogram": [[low, high, count] for (low, high), count
                                         in sorted(self._histogram.items())]}

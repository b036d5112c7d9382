"""Recent and active uploads and downloads, for the ``/status`` pages (pure bookkeeping).

Shapes follow ``reference/frontends.md`` §3.9 (``GET /status?t=json``).
The caller passes times in; nothing here reads a clock.
"""
from __future__ import annotations

from collections import deque
from typing import Any

from attrs import define

from ..util import base32

#: How many finished operations are remembered.
RECENT = 50


@define
class Operation:
    """One upload or download."""

    number: int
    kind: str
    storage_index: bytes | None
    size: int | None
    started: float
    finished: float | None = None
    status: str = "started"
    progress: float = 0.0

    @property
    def active(self) -> bool:
        """Still running."""
        return self.finished is None

    @property
    def rate(self) -> float | None:
        """Bytes per second of a finished operation with a size (None otherwise)."""
        if self.finished is None or not self.size or self.finished <= self.started:
            return None
        return self.size / (self.finished - self.started)

    def as_json(self) -> dict[str, Any]:
        """Tahoe's JSON for one operation."""
        data: dict[str, Any] = {
            "storage-index-string": base32.b2a(self.storage_index) if self.storage_index else None,
            "total-size": self.size,
            "status": self.status,
            "type": self.kind,
            "started": self.started,
        }
        if self.finished is not None:
            data["elapsed"] = self.finished - self.started
        if self.kind == "upload":
            data.update({"progress-hash": 1.0 if self.progress else 0.0,
                         "progress-ciphertext": self.progress,
                         "progress-encode-push": self.progress})
        else:
            data["progress"] = self.progress
        return data


class OperationHistory:
    """The active operations and the last :data:`RECENT` finished ones."""

    def __init__(self) -> None:
        self._next = 1
        self._active: dict[int, Operation] = {}
        self._recent: deque[Operation] = deque(maxlen=RECENT)

    def start(self, kind: str, storage_index: bytes | None, size: int | None,
              now: float) -> Operation:
        """Record an operation that begins now."""
        op = Operation(self._next, kind, storage_index, size, now)
        self._next += 1
        self._active[op.number] = op
        return op

    def finish(self, op: Operation, now: float, status: str = "done",
               storage_index: bytes | None = None) -> None:
        """Record the end of an operation (``status`` says how it ended)."""
        op.finished = now
        op.status = status
        op.progress = 1.0 if status == "done" else op.progress
        if storage_index is not None:
            op.storage_index = storage_index
        self._active.pop(op.number, None)
        self._recent.appendleft(op)

    def active(self) -> list[Operation]:
        """Running operations, newest first."""
        return sorted(self._active.values(), key=lambda op: -op.number)

    def recent(self) -> list[Operation]:
        """Finished operations, newest first."""
        return list(self._recent)

    def as_json(self) -> dict[str, list[dict[str, Any]]]:
        """``{"active": [...], "recent": [...]}``."""
        return {"active": [op.as_json() for op in self.active()],
                "recent": [op.as_json() for op in self.recent()]}

"""Recent and active operations, for the ``/status`` pages (pure bookkeeping).

Shapes follow ``reference/frontends.md`` §3.9 (``GET /status?t=json``):
uploads and downloads of immutable files, and the three steps of mutable
files and directories: ``mapupdate`` (finding the shares, with Tahoe's
``mode``), ``retrieve`` (reading a version) and ``publish`` (writing one).
The caller passes times in; nothing here reads a clock.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from attrs import define

from ..util import base32

__all__ = ["RECENT", "KINDS", "MAPUPDATE_MODES", "Operation", "OperationHistory"]

#: How many finished operations are remembered.
RECENT = 50
#: The operation types, as Tahoe names them in ``"type"``.
KINDS = frozenset({"upload", "download", "publish", "retrieve", "mapupdate"})
#: Tahoe's servermap-update modes (``mutable/common.py``).
MAPUPDATE_MODES = frozenset({"MODE_READ", "MODE_WRITE", "MODE_CHECK", "MODE_ANYTHING",
                             "MODE_REPAIR"})


@define
class Operation:
    """One operation: a kind from :data:`KINDS`, its object and how far it got.

    :ivar progress: the fraction done (0.0-1.0): bytes read for a download,
        bytes encoded and pushed to the servers for an upload.
    :ivar hash_progress: an upload's fraction hashed for its convergent key.
    :ivar mode: a mapupdate's mode (:data:`MAPUPDATE_MODES`).
    """

    number: int
    kind: str
    storage_index: bytes | None
    size: int | None
    started: float
    finished: float | None = None
    status: str = "started"
    progress: float = 0.0
    hash_progress: float = 0.0
    mode: str = ""

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
        """Tahoe's JSON for one operation (a mapupdate's size is Tahoe's ``"-NA-"``)."""
        data: dict[str, Any] = {
            "storage-index-string": base32.b2a(self.storage_index) if self.storage_index else None,
            "total-size": "-NA-" if self.kind == "mapupdate" else self.size,
            "status": self.status,
            "type": self.kind,
            "started": self.started,
        }
        if self.finished is not None:
            data["elapsed"] = self.finished - self.started
        if self.kind == "upload":
            data.update({"progress-hash": self.hash_progress,
                         "progress-ciphertext": self.progress,
                         "progress-encode-push": self.progress})
        elif self.kind == "download":
            data["progress"] = self.progress
        elif self.kind == "mapupdate":
            data["mode"] = self.mode
        return data


class OperationHistory:
    """The active operations and the last :data:`RECENT` finished ones."""

    def __init__(self) -> None:
        self._next = 1
        self._active: dict[int, Operation] = {}
        self._recent: deque[Operation] = deque(maxlen=RECENT)

    def start(self, kind: str, storage_index: bytes | None, size: int | None,
              now: float, mode: str = "") -> Operation:
        """Record an operation that begins now.

        :raises ValueError: for a kind not in :data:`KINDS`.
        """
        if kind not in KINDS:
            raise ValueError(f"unknown operation type {kind!r}")
        op = Operation(self._next, kind, storage_index, size, now, mode=mode)
        self._next += 1
        self._active[op.number] = op
        return op

    def finish(self, op: Operation, now: float, status: str = "done",
               storage_index: bytes | None = None, size: int | None = None) -> None:
        """Record the end of an operation (``status`` says how it ended)."""
        op.finished = now
        op.status = status
        if status == "done":
            op.progress = op.hash_progress = 1.0
        if storage_index is not None:
            op.storage_index = storage_index
        if size is not None:
            op.size = size
        self._active.pop(op.number, None)
        self._recent.appendleft(op)

    @contextmanager
    def record(self, kind: str, storage_index: bytes | None, size: int | None, clock: Any,
               mode: str = "") -> Iterator[Operation]:
        """An operation that lasts as long as the ``with`` block; it ends ``done``, or
        ``failed: <ExceptionName>`` when the block raises (the exception goes on).

        :param clock: gives the time (``clock.seconds()``), such as the reactor.
        """
        op = self.start(kind, storage_index, size, clock.seconds(), mode)
        try:
            yield op
        except BaseException as error:
            self.finish(op, clock.seconds(), f"failed: {type(error).__name__}")
            raise
        self.finish(op, clock.seconds(), "done")

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

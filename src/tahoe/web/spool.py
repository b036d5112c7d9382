"""A request body that cannot be kept while it arrives is answered, not cut off.

Twisted keeps a large request body in a temporary file (the node's
``[node]tempdir``). When that file cannot be made or written (the disk is
full, the directory gone), Twisted's exception dropped the connection, and
the client saw it close without an answer. :class:`SpoolGuard` (a mixin for
``twisted.web`` requests) keeps the error, reads and drops the rest of the
body, so that the request is answered with an error saying what happened;
nothing is stored from it.
"""
from __future__ import annotations

import io
import tempfile
from typing import Any

__all__ = ["SpoolGuard"]


class SpoolGuard:
    """Mixin for a ``twisted.web`` request class (before it in the bases)."""

    #: Why the body could not be kept, if it could not.
    spool_error: OSError | None = None

    def gotLength(self, length: int | None) -> None:  # noqa: N802 (Twisted)
        try:
            super().gotLength(length)  # type: ignore[misc]
        except OSError as error:
            self._drop_body(error)

    def handleContentChunk(self, data: bytes) -> None:  # noqa: N802 (Twisted)
        if self.spool_error is not None:
            return
        try:
            super().handleContentChunk(data)  # type: ignore[misc]
        except OSError as error:
            self._drop_body(error)

    def _drop_body(self, error: OSError) -> None:
        self.spool_error = error
        content: Any = getattr(self, "content", None)
        if content is not None:
            try:
                content.close()
            except OSError:
                pass
        self.content = io.BytesIO()

    def spool_problem(self) -> str:
        """What went wrong keeping the body, for the answer."""
        error = self.spool_error
        assert error is not None
        return (f"The node could not keep the request body while it arrived"
                f" ({error.strerror or error}, in {tempfile.gettempdir()}); nothing was"
                f" stored.")

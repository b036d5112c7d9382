"""Errors raised when parsing capability strings."""
from __future__ import annotations


class CapError(ValueError):
    """Root of every cap-parsing error."""


class MalformedCap(CapError):
    """A string of a known cap kind is malformed; ``problem`` says how.

    :ivar kind: the cap kind its prefix claims, e.g. ``"URI:CHK"``.
    :ivar problem: a short human-readable description of what is wrong.
    """

    def __init__(self, kind: str, problem: str, text: str) -> None:
        shown = text if len(text) <= 120 else text[:117] + "..."
        super().__init__(f"malformed {kind} cap ({problem}): {shown!r}")
        self.kind = kind
        self.problem = problem
        self.text = text


class NotACap(CapError):
    """The value cannot be a cap at all (not text, or not ASCII)."""

"""Errors of the Grid Manager cores."""
from __future__ import annotations

__all__ = ["GridManagerError", "BadCertificate", "BadGridManagerConfig"]


class GridManagerError(ValueError):
    """Root of the Grid Manager errors; ``str(error)`` is meant for the user."""


class BadCertificate(GridManagerError):
    """A certificate file or announced certificate is malformed."""


class BadGridManagerConfig(GridManagerError):
    """A Grid Manager ``config.json`` is malformed or names a bad key."""

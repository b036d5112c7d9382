"""Errors of the client's upload and download paths."""
from __future__ import annotations


class ClientError(Exception):
    """Root of upload and download failures."""


class UploadUnhappinessError(ClientError):
    """Too few servers hold shares for the upload to meet the happiness target."""

    def __init__(self, message: str, placed_servers: int, happiness: int, happy: int) -> None:
        super().__init__(message)
        self.placed_servers = placed_servers
        self.happiness = happiness
        self.happy = happy


class NotEnoughSharesError(ClientError):
    """Fewer than k good, distinct shares could be found (HTTP 410).

    :ivar found: how many distinct good shares were found.
    :ivar needed: k.
    """

    def __init__(self, message: str, found: int, needed: int) -> None:
        super().__init__(message)
        self.found = found
        self.needed = needed


class NoSharesError(NotEnoughSharesError):
    """Not a single share of the file was found."""

"""Errors of the invite exchange; ``str(error)`` is the message a user sees."""
from __future__ import annotations

__all__ = ["InviteError", "BadInviteCode", "BadInviteMessage", "WrongInviteCode",
           "NoInviteArrived", "MailboxUnreachable"]


class InviteError(Exception):
    """Root of the invite errors."""


class BadInviteCode(InviteError, ValueError):
    """The code is not of the form ``NUMBER-WORD-WORD...``."""


class BadInviteMessage(InviteError, ValueError):
    """The other side sent a message that is not a valid invite message."""


class WrongInviteCode(InviteError):
    """The two sides used different codes (the key exchange failed)."""


class NoInviteArrived(InviteError):
    """Nobody sent an invite under this code in time: a wrong or expired code."""


class MailboxUnreachable(InviteError):
    """The magic-wormhole mailbox server could not be reached, or refused us."""

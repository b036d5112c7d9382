"""Errors of the ``tahoe`` file-store commands, each carrying its message and exit status.

A command catches :class:`CLIError` at one place (its ``run``), writes
``str(error)`` to stderr and returns ``error.exit_code``.  Messages and
statuses follow Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.1): 1 for
nearly everything, usage errors included.  Standard library only.
"""
from __future__ import annotations

__all__ = ["CLIError", "UsageError", "NodeURLError", "UnknownAliasError", "GatewayUnreachable",
           "HTTPStatusError", "TransferError", "LocalFileError"]

EXIT_FAILURE = 1


class CLIError(Exception):
    """Root of the command-line errors: ``str(error)`` is what the user sees.

    :ivar exit_code: the process exit status to return (1 unless a subclass says otherwise).
    """

    exit_code = EXIT_FAILURE


class UsageError(CLIError):
    """The command line is wrong (bad option value, missing argument)."""


class NodeURLError(CLIError):
    """The gateway URL cannot be found: no ``-u`` and no readable ``NODEDIR/node.url``."""


class UnknownAliasError(CLIError):
    """A path names an alias missing from ``private/aliases`` (Tahoe's words, with ``error:``)."""

    def __init__(self, message: str) -> None:
        super().__init__("error: " + message)


class GatewayUnreachable(CLIError):
    """The TCP (or TLS) connection to the gateway failed.

    Tahoe reports this as a response with status ``-1`` and reason
    ``Error trying to connect to URL: ERROR``; the message keeps that first line.

    :ivar url: the URL of the request.
    :ivar error: the underlying ``OSError``.
    """

    def __init__(self, context: str, url: str, error: BaseException) -> None:
        self.url = url
        self.error = error
        super().__init__(f"{context}: -1 Error trying to connect to {url}: {error}\n"
                         "Is the node running? Its gateway URL comes from NODEDIR/node.url"
                         " (global option -d) or from -u/--node-url.")


class HTTPStatusError(CLIError):
    """The gateway answered with a status the command does not accept.

    The message is ``<context>: <status> <reason>`` and, on the next lines,
    the response body as text (Tahoe prints its Python ``repr``).

    :ivar status: the HTTP status code.
    :ivar reason: the reason phrase.
    :ivar body: the response body (possibly cut short).
    """

    def __init__(self, context: str, status: int, reason: str, body: bytes) -> None:
        self.status = status
        self.reason = reason
        self.body = body
        text = body.decode("utf-8", "replace").rstrip("\n")
        super().__init__(f"{context}: {status} {reason}" + (f"\n{text}" if text else ""))


class TransferError(CLIError):
    """The connection broke, or the gateway broke the HTTP protocol, in mid-transfer."""


class LocalFileError(CLIError):
    """A local file cannot be read or written."""

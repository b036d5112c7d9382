"""Small helpers shared by the directory commands: request paths, whole-body calls, the run loop.

Standard library only.  Facts: ``reference/frontends.md`` §2.1 (errors are
``<context>: <status> <reason>`` and the body), §3.3 (request paths).
"""
from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from .aliases import escape_path, quote_cap
from .errors import CLIError, HTTPStatusError
from .gateway import ArgumentParser, Gateway, HelpShown, add_gateway_options, report
from .localio import Body

__all__ = ["ERROR_BODY_LIMIT", "object_path", "call", "call_ok", "get_json", "new_parser",
           "run_command", "say", "write_line"]

#: The most of an error body kept for a message.
ERROR_BODY_LIMIT = 1024 * 1024


def object_path(root_cap: str, path: str = "") -> str:
    """``uri/<quoted cap>[/<quoted path>]``, relative to the gateway URL."""
    return "uri/" + quote_cap(root_cap) + ("/" + escape_path(path) if path else "")


def call(gateway: Gateway, method: str, relative: str, *, body: bytes | Body | None = None,
         context: str = "Error", limit: int | None = None) -> tuple[int, str, bytes]:
    """Send one request and read its whole answer: ``(status, reason, body)``.

    :param limit: read at most this many bytes of the body.
    :raises GatewayUnreachable: if the gateway cannot be reached.
    :raises TransferError: if the connection breaks.
    """
    if isinstance(body, bytes):
        body = Body.from_bytes(body)
    try:
        with gateway.request(method, relative, body=body, context=context) as response:
            return response.status, response.reason, response.read(limit)
    finally:
        if body is not None:
            body.close()


def call_ok(gateway: Gateway, method: str, relative: str, *, body: bytes | Body | None = None,
            context: str = "Error", accept: Iterable[int] = (200, 201)) -> bytes:
    """Like :func:`call`, returning the body of an accepted status.

    :raises HTTPStatusError: for any other status, with ``context`` first.
    """
    status, reason, data = call(gateway, method, relative, body=body, context=context)
    if status not in tuple(accept):
        raise HTTPStatusError(context, status, reason, data[:ERROR_BODY_LIMIT])
    return data


def get_json(gateway: Gateway, relative: str, context: str) -> Any:
    """``GET relative?t=json`` parsed; any status but 200 raises :class:`HTTPStatusError`.

    :raises CLIError: if the body is not JSON.
    """
    data = call_ok(gateway, "GET", relative + "?t=json", context=context, accept=(200,))
    try:
        return json.loads(data)
    except ValueError as e:
        raise CLIError(f"{context}: the gateway sent bad JSON: {e}") from None


def new_parser(stdout: TextIO, name: str, arguments: str, description: str) -> ArgumentParser:
    """A parser for ``tahoe NAME`` with the gateway options (``-u``, ``--dir-cap``, ``-d``)."""
    parser = ArgumentParser(stdout, prog=f"tahoe {name}",
                            usage=f"tahoe [global-options] {name} [options] {arguments}".rstrip(),
                            description=description,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    add_gateway_options(parser)
    return parser


def run_command(parser: ArgumentParser, argv: list[str], stderr: TextIO,
                command: Callable[[argparse.Namespace], int]) -> int:
    """Parse ``argv`` and run ``command``; report a :class:`CLIError` on stderr.

    :returns: the command's exit status, 0 after ``--help``, the error's status otherwise.
    """
    try:
        args = parser.parse_args(argv)
        return command(args)
    except HelpShown:
        return 0
    except CLIError as error:
        return report(error, stderr)


def write_line(stream: TextIO, text: str) -> None:
    """Write ``text`` and a newline, then flush."""
    stream.write(text + "\n")
    stream.flush()


def say(args: argparse.Namespace, stream: TextIO, text: str) -> None:
    """Write a confirmation line (``200 OK``, ``OK``, ``Alias 'x' added``) unless the global
    ``-q`` was given: quiet commands print only their results (caps, listings, data)."""
    if not getattr(args, "quiet", False):
        write_line(stream, text)

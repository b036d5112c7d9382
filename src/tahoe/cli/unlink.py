"""``tahoe unlink PATH``: remove a link from its directory with ``DELETE /uri/<root>/<path>``.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.3): PATH must name a child
(a bare alias or cap is refused with ``'tahoe unlink' can only unlink
directory entries, so a path must be given.``, exit status 1); success prints
``200 OK``; any other status gives ``ERROR: <status> <reason>`` and the body
on stderr, exit status 1.  :mod:`tahoe.cli.rm` runs the same command as
``tahoe rm`` (which Tahoe 1.20 itself rejects).  Standard library only.
"""
from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TextIO

from .aliases import resolve_path
from .errors import CLIError, HTTPStatusError
from .gateway import gateway_from_args
from .remote import ERROR_BODY_LIMIT, call, new_parser, object_path, run_command, say

__all__ = ["run", "run_as"]

CONTEXT = "ERROR"


def _unlink(args: argparse.Namespace, command: str, stdout: TextIO,
            env: Mapping[str, str]) -> int:
    gateway = gateway_from_args(args, env)
    root_cap, path = resolve_path(gateway.aliases(), args.where)
    if not path:
        raise CLIError(f"\n'tahoe {command}' can only unlink directory entries,"
                       " so a path must be given.")
    status, reason, data = call(gateway, "DELETE", object_path(root_cap, path),
                                context=CONTEXT)
    if status != 200:
        raise HTTPStatusError(CONTEXT, status, reason, data[:ERROR_BODY_LIMIT])
    say(args, stdout, f"{status} {reason}")
    return 0


def run_as(command: str, argv: list[str], stdout: TextIO, stderr: TextIO,
           env: Mapping[str, str]) -> int:
    """Run ``tahoe COMMAND PATH`` (``unlink`` or ``rm``): 0 on success, 1 on any error."""
    parser = new_parser(stdout, command, "REMOTE_FILE",
                        "Remove a named file from its parent directory.")
    parser.add_argument("where", metavar="REMOTE_FILE")
    return run_command(parser, argv, stderr,
                       lambda args: _unlink(args, command, stdout, env))


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe unlink``: 0 on success, 1 on any error."""
    return run_as("unlink", argv, stdout, stderr, env)

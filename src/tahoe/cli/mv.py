"""``tahoe mv FROM TO`` (and ``tahoe ln``): move or copy a link within the grid.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.3):

1. ``GET FROM?t=json`` gives the object's cap (its write cap if it has one);
   a status other than 2xx gives ``Error: <status> <reason>`` and the body,
   exit status 1;
2. ``PUT TO?t=uri&replace=only-files`` with the cap as the body; a TO ending
   in ``/`` means "into this directory, under FROM's name".  409 (a directory
   is in the way) gives ``Error: You can't overwrite a directory with a
   file``; another error gives its status line and, for ``mv``, ``NOT
   removing the original``; exit status 1;
3. ``mv`` only: ``DELETE FROM``; failing that, ``Error deleting original
   after move: …`` and exit status 2 (the new link stays).

Then ``OK`` on stdout.  :mod:`tahoe.cli.ln` runs the ``link`` mode.  The
link's metadata is not carried over (as in Tahoe).  Standard library only.
"""
from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import TextIO

from .aliases import escape_path, resolve_path
from .errors import CLIError, HTTPStatusError
from .gateway import gateway_from_args
from .remote import ERROR_BODY_LIMIT, call, new_parser, object_path, run_command, say

__all__ = ["run", "run_mode", "EXIT_DELETE_FAILED"]

EXIT_DELETE_FAILED = 2
_DESCRIPTIONS = {
    "move": "Move a file or directory link elsewhere on the grid, e.g. 'tahoe mv"
            " alias:some_file alias:new_file'.\n\nTo move it into a directory, end the"
            " directory's name with '/': 'tahoe mv tahoe:file1 tahoe:dir/'.",
    "link": "Make an additional link to an existing file or directory: 'tahoe ln"
            " alias:some_file alias:new_file' makes alias:new_file point to the same"
            " object.\n\nTo link it into a directory, end the directory's name with '/'.",
}


def _check(status: int, reason: str, data: bytes, context: str) -> None:
    if not 200 <= status < 300:
        raise HTTPStatusError(context, status, reason, data[:ERROR_BODY_LIMIT])


def _mv(args: argparse.Namespace, mode: str, stdout: TextIO, env: Mapping[str, str]) -> int:
    gateway = gateway_from_args(args, env)
    root_cap, from_path = resolve_path(gateway.aliases(), args.source)
    from_relative = object_path(root_cap, from_path)
    status, reason, data = call(gateway, "GET", from_relative + "?t=json")
    _check(status, reason, data, "Error")
    try:
        _, attributes = json.loads(data)
        cap = attributes.get("rw_uri") or attributes["ro_uri"]
    except (ValueError, TypeError, KeyError, AttributeError):
        raise CLIError(f"Error: the gateway's description of {args.source} is not"
                       " usable JSON") from None

    to_root, to_path = resolve_path(gateway.aliases(), args.target)
    to_relative = object_path(to_root, to_path)
    if to_relative.endswith("/"):
        to_relative += escape_path(from_path[from_path.rfind("/") + 1:])
    status, reason, data = call(gateway, "PUT", to_relative + "?t=uri&replace=only-files",
                                body=cap.encode("utf-8"))
    if status == 409:
        raise CLIError("Error: You can't overwrite a directory with a file")
    if not 200 <= status < 300:
        error = HTTPStatusError("Error", status, reason, data[:ERROR_BODY_LIMIT])
        raise CLIError(str(error) + ("\nNOT removing the original" if mode == "move" else ""))
    if mode == "move":
        status, reason, data = call(gateway, "DELETE", from_relative)
        if not 200 <= status < 300:
            error = HTTPStatusError("Error deleting original after move", status, reason,
                                    data[:ERROR_BODY_LIMIT])
            error.exit_code = EXIT_DELETE_FAILED
            raise error
    say(args, stdout, "OK")
    return 0


def run_mode(mode: str, argv: list[str], stdout: TextIO, stderr: TextIO,
             env: Mapping[str, str]) -> int:
    """``tahoe mv`` (``mode="move"``) or ``tahoe ln`` (``"link"``): 0, 1, or 2 (see above)."""
    name = "mv" if mode == "move" else "ln"
    parser = new_parser(stdout, name, "FROM TO", _DESCRIPTIONS[mode])
    parser.add_argument("source", metavar="FROM")
    parser.add_argument("target", metavar="TO")
    return run_command(parser, argv, stderr, lambda args: _mv(args, mode, stdout, env))


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe mv``: 0, 1 on an error, 2 when the original could not be removed."""
    return run_mode("move", argv, stdout, stderr, env)

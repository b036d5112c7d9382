"""``tahoe ls [PATH]``: list a directory (or show one file) through ``GET …?t=json``.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.1, §2.3): flags ``-l/--long``,
``--uri``, ``--readonly-uri``, ``-F/--classify``, ``--json`` (the raw JSON body
and a newline).  One trailing ``/`` of PATH is dropped.  Exit status: 0; 2
and ``No such file or directory`` for 404; 255 when the gateway cannot be
reached; for any other error status, ``Error during GET: <status> <reason>``
and the body on stderr and the status itself (truncated to 8 bits, as a
process status is).  Line layout: :mod:`tahoe.cli.listing`.  A name that
cannot be written as UTF-8 goes to stderr quoted, with exit status 1, as in
Tahoe.  Standard library only.
"""
from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Mapping
from typing import TextIO

from .aliases import quote_output, resolve_path
from .errors import CLIError, GatewayUnreachable
from .gateway import gateway_from_args
from .listing import UNKNOWN_OBJECTS_NOTE, Columns, format_rows, listed_children, listing_rows
from .remote import ERROR_BODY_LIMIT, call, new_parser, object_path, run_command, write_line

__all__ = ["run"]

CONTEXT = "Error during GET"
EXIT_NOT_FOUND = 2
EXIT_UNREACHABLE = 255
_PRINTABLE_ASCII = re.compile(rb"[\n\r\x20-\x7E]*")
_ENCODING_NOTE = ("\nThis listing included files whose names could not be converted to the"
                  " terminal\noutput encoding. Their names are shown using backslash escapes"
                  " and in quotes.")


class _StatusError(CLIError):
    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _local_time(pattern: str, seconds: float) -> str:
    return time.strftime(pattern, time.localtime(seconds))


def _fetch(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[bytes, str]:
    gateway = gateway_from_args(args, env)
    where = args.where[:-1] if args.where.endswith("/") else args.where
    root_cap, path = resolve_path(gateway.aliases(), where)
    try:
        status, reason, data = call(gateway, "GET", object_path(root_cap, path) + "?t=json",
                                    context=CONTEXT)
    except GatewayUnreachable as e:
        raise _StatusError(str(e), EXIT_UNREACHABLE) from None
    if status == 404:
        raise _StatusError("No such file or directory", EXIT_NOT_FOUND)
    if status != 200:
        body = data[:ERROR_BODY_LIMIT].decode("utf-8", "replace").rstrip("\n")
        raise _StatusError(f"{CONTEXT}: {status} {reason}" + (f"\n{body}" if body else ""),
                           status & 0xFF)
    return data, path


def _ls(args: argparse.Namespace, stdout: TextIO, stderr: TextIO,
        env: Mapping[str, str]) -> int:
    data, path = _fetch(args, env)
    if args.json:
        if _PRINTABLE_ASCII.fullmatch(data) is None:
            raise CLIError("The JSON response contained unprintable characters:\n"
                           + quote_output(data.decode("utf-8", "replace"), quotemarks=False))
        write_line(stdout, data.decode("ascii"))
        return 0
    try:
        children = listed_children(json.loads(data), path)
    except ValueError as e:
        raise CLIError(f"error: {quote_output(str(e), quotemarks=False)}\n"
                       "Could not parse JSON response:\n"
                       + quote_output(data.decode("utf-8", "replace"), quotemarks=False)
                       ) from None
    columns = Columns(long=args.long, uri=args.uri, readonly_uri=args.readonly_uri,
                      classify=args.classify)
    rows, has_unknowns = listing_rows(children, columns, time.time(), _local_time)
    status = 0
    for line in format_rows(rows):
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            stderr.write(quote_output(line) + "\n")
            status = 1
            continue
        stdout.write(line + "\n")
    stdout.flush()
    if status:
        write_line(stderr, _ENCODING_NOTE)
    if has_unknowns:
        write_line(stderr, UNKNOWN_OBJECTS_NOTE)
    return status


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe ls``: 0, 2 (not found), 255 (no gateway), an HTTP status, or 1."""
    parser = new_parser(stdout, "ls", "[PATH]", "List the contents of some portion of the"
                        " grid.\n\nIf PATH is omitted, \"tahoe:\" is assumed.")
    parser.add_argument("-l", "--long", action="store_true",
                        help="use long format: show file sizes, and timestamps")
    parser.add_argument("--uri", action="store_true", help="show file/directory URIs")
    parser.add_argument("--readonly-uri", action="store_true",
                        help="show read-only file/directory URIs")
    parser.add_argument("-F", "--classify", action="store_true",
                        help="append '/' to directory names, and '*' to mutable")
    parser.add_argument("--json", action="store_true", help="show the raw JSON output")
    parser.add_argument("where", nargs="?", default="", metavar="PATH")
    return run_command(parser, argv, stderr, lambda args: _ls(args, stdout, stderr, env))

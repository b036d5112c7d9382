"""``tahoe mkdir [REMOTE_DIR] [--format=SDMF|MDMF]``: make a directory.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.3, §3.3 "Directories"):

* no REMOTE_DIR, or one naming an alias or cap with no path (``work:``):
  ``POST /uri?t=mkdir[&format=F]`` makes an unlinked directory;
* otherwise ``POST /uri/<root cap>/<path>?t=mkdir[&format=F]`` (one trailing
  ``/`` dropped) makes it and any missing parents; an existing directory is
  left as it is;
* the new (or existing) directory's write cap is printed.  ``--format`` must
  be SDMF or MDMF (any case) and is passed on as given.

A gateway error gives ``Error during HTTP request: <status> <reason>`` and
the body, exit status 1 (Tahoe 1.20 prints that but then exits 0 when a path
was given).  Standard library only.
"""
from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TextIO

from .aliases import percent_quote, quote_output, resolve_path
from .gateway import ArgumentParser, gateway_from_args
from .remote import call_ok, new_parser, object_path, run_command, write_line

__all__ = ["run", "mkdir_path"]

CONTEXT = "Error during HTTP request"
FORMATS = ("SDMF", "MDMF")


def mkdir_path(root_cap: str | None, path: str, file_format: str | None) -> str:
    """The request path of ``mkdir`` for a root cap (None: unlinked) and a path."""
    path = path[:-1] if path.endswith("/") else path
    relative = object_path(root_cap, path) if root_cap is not None and path else "uri"
    relative += "?t=mkdir"
    if file_format:
        relative += "&format=" + percent_quote(file_format, safe="/")
    return relative


def _mkdir(args: argparse.Namespace, parser: ArgumentParser, stdout: TextIO,
           env: Mapping[str, str]) -> int:
    if args.format and args.format.upper() not in FORMATS:
        parser.fail(f"{args.format} is an invalid format")
    gateway = gateway_from_args(args, env, parser)
    root_cap: str | None = None
    path = ""
    if args.where:
        root_cap, path = resolve_path(gateway.aliases(), args.where)
    relative = mkdir_path(root_cap, path, args.format)
    cap = call_ok(gateway, "POST", relative, context=CONTEXT, accept=range(200, 300))
    write_line(stdout, quote_output(cap.decode("utf-8", "replace").strip(), quotemarks=False))
    return 0


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe mkdir``: 0 on success, 1 on any error."""
    parser = new_parser(stdout, "mkdir", "[REMOTE_DIR]",
                        "Create a new directory, either unlinked or as a subdirectory.")
    parser.add_argument("--format", help="create a directory with the given format: SDMF or"
                        " MDMF (case-insensitive)")
    parser.add_argument("where", nargs="?", default="", metavar="REMOTE_DIR")
    return run_command(parser, argv, stderr, lambda args: _mkdir(args, parser, stdout, env))

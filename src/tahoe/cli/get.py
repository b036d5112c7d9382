"""``tahoe get REMOTE [LOCAL|-]``: download a file through the node's gateway.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.3, ``allmydata/scripts/tahoe_get.py``):
REMOTE is a cap, ``CAP/path``, ``ALIAS:path`` or a path under ``tahoe:``; the
request is ``GET /uri/<quoted cap>[/<quoted path>]``.  The contents go to LOCAL,
or to stdout when LOCAL is missing or ``-``.  For a file,
``<REMOTE> retrieved and written to <absolute LOCAL>`` goes to stderr.  An
HTTP error gives ``Error during GET: <status> <reason>`` and the body, exit
status 1; LOCAL is opened only once the gateway has answered 200.

Better than Tahoe: the body is written in 1 MiB chunks as it arrives, a body
cut short is an error (not a silently truncated file), a LOCAL this command
created is removed again when the download fails, and a progress bar shows on
a terminal for large files.  Standard library only.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import BinaryIO, TextIO

from .aliases import escape_path, quote_cap, resolve_path
from .errors import CLIError, HTTPStatusError, LocalFileError, TransferError
from .gateway import (ArgumentParser, Gateway, HelpShown, Response, add_gateway_options,
                      gateway_from_args, report)
from .localio import binary_stdout, maybe_progress_bar, replacing

__all__ = ["run", "source_path"]

CONTEXT = "Error during GET"
ERROR_BODY_LIMIT = 1024 * 1024

_DESCRIPTION = """\
Retrieve a file from the grid and write it to the local filesystem. If LOCAL
is omitted or '-', the contents of the file will be written to stdout.
"""
_EPILOG = """\
examples:
  tahoe get FOO |less            # write to stdout
  tahoe get tahoe:FOO |less      # same
  tahoe get FOO bar              # write to local file
  tahoe get tahoe:FOO bar        # same
"""


def _parser(stdout: TextIO) -> ArgumentParser:
    parser = ArgumentParser(stdout, prog="tahoe get",
                            usage="tahoe [global-options] get [options] REMOTE [LOCAL|-]",
                            description=_DESCRIPTION, epilog=_EPILOG,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    add_gateway_options(parser)
    parser.add_argument("remote", metavar="REMOTE")
    parser.add_argument("local", nargs="?", metavar="LOCAL")
    return parser


def source_path(gateway: Gateway, remote: str) -> str:
    """The request path (relative to the gateway URL) of ``remote``.

    :raises UnknownAliasError: for an unknown alias.
    """
    root_cap, path = resolve_path(gateway.aliases(), remote)
    return "uri/" + quote_cap(root_cap) + ("/" + escape_path(path) if path else "")


def _copy(response: Response, output: BinaryIO, stderr: TextIO, quiet: bool) -> None:
    bar = maybe_progress_bar(stderr, response.length, "get", quiet=quiet)
    try:
        for piece in response.chunks():
            output.write(piece)
            bar.update(len(piece))
        output.flush()
    finally:
        bar.close()


def _write_file(response: Response, local: str, stderr: TextIO, quiet: bool) -> None:
    """Write the download into ``local``, whole or not at all (:func:`replacing`)."""
    try:
        with replacing(local) as output:
            _copy(response, output, stderr, quiet)
    except OSError as e:
        raise LocalFileError(f"Error: cannot write {local}: {e.strerror or e}") from None


def _write_stdout(response: Response, stdout: TextIO, stderr: TextIO, quiet: bool) -> int:
    output = binary_stdout(stdout)
    try:
        _copy(response, output, stderr, quiet)
    except BrokenPipeError:
        # The reader went away (`tahoe get CAP | head`): stop quietly, and keep
        # Python from complaining when it flushes stdout at exit.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, output.fileno())
            os.close(devnull)
        except (OSError, AttributeError, ValueError):
            pass
        return 1
    return 0


def _get(args: argparse.Namespace, parser: ArgumentParser, stdout: TextIO, stderr: TextIO,
         env: Mapping[str, str]) -> int:
    gateway = gateway_from_args(args, env, parser)
    relative = source_path(gateway, args.remote)
    local = None if args.local in (None, "-") else os.path.abspath(args.local)
    with gateway.request("GET", relative, context=CONTEXT) as response:
        if response.status not in (200, 201):
            raise HTTPStatusError(CONTEXT, response.status, response.reason,
                                  response.read(ERROR_BODY_LIMIT))
        try:
            if local is None:
                return _write_stdout(response, stdout, stderr, args.quiet)
            _write_file(response, local, stderr, args.quiet)
        except TransferError as e:
            raise TransferError(f"{CONTEXT}: {str(e).removeprefix('Error: ')}") from None
    if not args.quiet:
        stderr.write(f"{args.remote} retrieved and written to {local}\n")
        stderr.flush()
    return 0


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe get``: 0 on success, 1 on any error (usage, gateway, HTTP status, local file)."""
    parser = _parser(stdout)
    try:
        args = parser.parse_args(argv)
        return _get(args, parser, stdout, stderr, env)
    except HelpShown:
        return 0
    except CLIError as error:
        return report(error, stderr)

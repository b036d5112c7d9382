"""``tahoe add-alias ALIAS[:] DIRCAP``: name an existing directory in ``private/aliases``.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.2-2.3): one trailing ``:``
is dropped from ALIAS; a name with ``:`` or a space is refused (``Alias names
cannot contain colons.`` / ``… spaces.``); an alias already defined gives
``Alias 'x' already exists!`` on stderr, exit status 1; DIRCAP must be a
directory cap (written back without an ``ro.``/``imm.`` prefix); the line
``ALIAS: DIRCAP`` is appended (atomically: the file is rewritten beside and
renamed) and ``Alias 'x' added`` printed.  Unlike Tahoe, the gateway's
``node.url`` is not needed.  Standard library only.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TextIO

from ..node.fileutil import append_line
from .aliases import check_alias_name, quote_output
from .dircaps import normalize_dircap
from .errors import CLIError, LocalFileError
from .gateway import node_directory, read_aliases
from .remote import new_parser, run_command, say

__all__ = ["run", "append_alias", "check_new_alias"]


def check_new_alias(nodedir: str, alias: str) -> str:
    """The alias name (trailing ``:`` dropped), checked to be valid and not yet defined.

    :raises CLIError: with Tahoe's message otherwise.
    """
    name = check_alias_name(alias)
    if name in read_aliases(nodedir):
        raise CLIError(f"Alias {quote_output(name)} already exists!")
    return name


def append_alias(nodedir: str, name: str, cap: str) -> None:
    """Append ``name: cap`` to ``nodedir/private/aliases``, replacing the file atomically
    (under a lock on its directory: two commands at once both add theirs).

    :raises LocalFileError: if the file cannot be read or written.
    """
    path = os.path.join(nodedir, "private", "aliases")
    try:
        append_line(path, f"{name}: {cap}\n", mode=0o600)  # caps: owner only
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise LocalFileError(f"Error: cannot write the alias file {path}: {reason}") from None


def _add_alias(args: argparse.Namespace, stdout: TextIO, env: Mapping[str, str]) -> int:
    nodedir = node_directory(args.node_directory, env)
    name = check_new_alias(nodedir, args.alias)
    cap = normalize_dircap(args.cap)
    if cap is None:
        raise CLIError(f"Error: {quote_output(args.cap)} is not a directory cap")
    append_alias(nodedir, name, cap)
    say(args, stdout, f"Alias {quote_output(name)} added")
    return 0


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe add-alias``: 0 on success, 1 on any error."""
    parser = new_parser(stdout, "add-alias", "ALIAS[:] DIRCAP",
                        "Add a new alias for an existing directory.")
    parser.add_argument("alias", metavar="ALIAS[:]")
    parser.add_argument("cap", metavar="DIRCAP")
    return run_command(parser, argv, stderr, lambda args: _add_alias(args, stdout, env))

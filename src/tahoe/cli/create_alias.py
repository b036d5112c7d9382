"""``tahoe create-alias ALIAS[:]``: make a new directory and name it in ``private/aliases``.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.3): the name is checked as
in ``add-alias`` (before any request), then ``POST /uri?t=mkdir`` makes the
directory; its write cap is appended as ``ALIAS: CAP`` and ``Alias 'x'
created`` printed.  A gateway error gives ``Error during HTTP request:
<status> <reason>`` and the body, exit status 1.  Standard library only.
"""
from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TextIO

from .add_alias import append_alias, check_new_alias
from .aliases import quote_output
from .gateway import gateway_from_args
from .remote import call_ok, new_parser, run_command, say

__all__ = ["run"]

CONTEXT = "Error during HTTP request"


def _create_alias(args: argparse.Namespace, stdout: TextIO, env: Mapping[str, str]) -> int:
    gateway = gateway_from_args(args, env)
    name = check_new_alias(gateway.nodedir, args.alias)
    cap = call_ok(gateway, "POST", "uri?t=mkdir", context=CONTEXT,
                  accept=range(200, 300)).decode("utf-8", "replace").strip()
    append_alias(gateway.nodedir, name, cap)
    say(args, stdout, f"Alias {quote_output(name)} created")
    return 0


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe create-alias``: 0 on success, 1 on any error."""
    parser = new_parser(stdout, "create-alias", "ALIAS[:]",
                        "Create a new directory and add an alias for it.")
    parser.add_argument("alias", metavar="ALIAS[:]")
    return run_command(parser, argv, stderr, lambda args: _create_alias(args, stdout, env))

"""``tahoe list-aliases [--readonly-uri] [--json]``: show the aliases of the node directory.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.3): aliases sorted by name;
each line is the name right-aligned to the width of the longest *quoted*
name (``'name'``, so two columns wider than the names), ``: `` and the cap
(the read-only cap with ``--readonly-uri``).  ``--json`` prints
``{name: {"readwrite": cap, "readonly": rocap}}`` indented by 4 spaces.  No
aliases: no output (``{}`` with ``--json``).  The gateway is not contacted.
Standard library only.
"""
from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import TextIO

from .aliases import quote_output
from .dircaps import normalize_dircap, readonly_dircap
from .gateway import node_directory, read_aliases
from .remote import new_parser, run_command, write_line

__all__ = ["run", "alias_details", "format_aliases"]


def alias_details(aliases: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """``{name: {"readwrite": cap, "readonly": read-only cap}}``, sorted by name."""
    details = {}
    for name in sorted(aliases):
        cap = normalize_dircap(aliases[name]) or aliases[name]
        details[name] = {"readwrite": cap, "readonly": readonly_dircap(cap)}
    return details


def format_aliases(details: Mapping[str, Mapping[str, str]], *, readonly: bool,
                   as_json: bool) -> str:
    """The text ``list-aliases`` prints (without the final newline; empty for no aliases)."""
    if as_json:
        return json.dumps(details, indent=4)
    width = max((len(quote_output(name)) for name in details), default=0)
    key = "readonly" if readonly else "readwrite"
    return "\n".join(f"{name:>{width}}: {caps[key]}" for name, caps in details.items())


def _list_aliases(args: argparse.Namespace, stdout: TextIO, env: Mapping[str, str]) -> int:
    aliases = read_aliases(node_directory(args.node_directory, env))
    output = format_aliases(alias_details(aliases), readonly=args.readonly_uri,
                            as_json=args.json)
    if output:
        write_line(stdout, output)
    return 0


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe list-aliases``: 0 (1 only for a usage error)."""
    parser = new_parser(stdout, "list-aliases", "",
                        "Display a table of all configured aliases.")
    parser.add_argument("--readonly-uri", action="store_true",
                        help="show read-only dircaps instead of read-write ones")
    parser.add_argument("--json", action="store_true", help="show JSON output")
    return run_command(parser, argv, stderr, lambda args: _list_aliases(args, stdout, env))

"""``tahoe webopen [-i] [ALIAS:PATH]``: open a file or directory of the grid in a web browser.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.3): the URL is
``<node-url>uri/<quoted cap>[/<quoted path>]`` (with ``?t=info`` for
``-i/--info``), or the welcome page without a PATH, opened with Python's
:mod:`webbrowser` (which honours ``$BROWSER``). Better than Tahoe, which
exits 0 whether or not a browser started: when none can be started the URL
is printed on stdout for the user to open, and the exit status is 1. Standard library
only.
"""
from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TextIO

from .aliases import resolve_path
from .errors import CLIError
from .gateway import gateway_from_args
from .remote import new_parser, object_path, run_command

__all__ = ["run", "webopen_url"]


def webopen_url(node_url: str, aliases: Mapping[str, str], where: str, info: bool) -> str:
    """The URL ``tahoe webopen`` opens for ``where`` (empty: the welcome page).

    :raises UnknownAliasError: for an unknown alias.
    """
    url = node_url
    if where:
        root_cap, path = resolve_path(aliases, where)
        url += object_path(root_cap, "" if path == "/" else path)
    return url + ("?t=info" if info else "")


def _webopen(args: argparse.Namespace, stdout: TextIO, env: Mapping[str, str]) -> int:
    gateway = gateway_from_args(args, env)
    url = webopen_url(gateway.node_url, gateway.aliases() if args.where else {}, args.where,
                      args.info)
    import webbrowser  # only here: it looks for browsers when imported
    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:
        opened = False
    if not opened:
        # The URL holds a cap: it goes to stdout for the user, never into an error message.
        stdout.write(url + "\n")
        stdout.flush()
        raise CLIError("Error: no web browser could be started (set $BROWSER to choose one);"
                       " the URL to open is on standard output.")
    return 0


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe webopen``: 0 once a browser was started, 1 on any error."""
    parser = new_parser(stdout, "webopen", "[ALIAS:PATH]",
                        "Open a web browser to the contents of some file or directory on the"
                        " grid. When run without arguments, open the Welcome page.")
    parser.add_argument("-i", "--info", action="store_true",
                        help="open the t=info page for the file")
    parser.add_argument("where", nargs="?", default="", metavar="ALIAS:PATH")
    return run_command(parser, argv, stderr, lambda args: _webopen(args, stdout, env))

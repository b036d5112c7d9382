"""Entry point of the ``tahoe`` console script: dispatch to one module per subcommand.

Imports only the standard library, so that the CLI starts fast; a subcommand's
module is imported only when that subcommand runs. Each subcommand module has
``run(argv, stdout, stderr, env) -> int``.

Global options come before the subcommand (``reference/frontends.md`` §1.3):
``-V/--version``, ``--version-and-path``, ``-q/--quiet``,
``-d/--node-directory=DIR``, ``--wormhole-server=``, ``--wormhole-invite-appid=``
and ``--eliot-destination=`` (accepted and ignored). A given ``-d DIR`` reaches
the subcommand as leading ``--node-directory DIR`` arguments, so each
subcommand parser accepts ``-d/--node-directory`` (hidden from its help); the
two wormhole options reach the commands that use them (``invite``,
``create-client``, ``create-node``) the same way.
"""
from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from typing import TextIO

from .._version import __version__

VERSION_TEXT = f"tahoe (tahoe-lafs-py) {__version__}, compatible with Tahoe-LAFS 1.20"

#: Subcommand name → module (imported on use) with ``run(argv, stdout, stderr, env)``.
SUBCOMMANDS: Mapping[str, str] = {
    "create-node": "tahoe.cli.create_node",
    "create-client": "tahoe.cli.create_client",
    "create-introducer": "tahoe.cli.create_introducer",
    "run": "tahoe.cli.run",
    "put": "tahoe.cli.put",
    "get": "tahoe.cli.get",
    "mkdir": "tahoe.cli.mkdir",
    "add-alias": "tahoe.cli.add_alias",
    "create-alias": "tahoe.cli.create_alias",
    "list-aliases": "tahoe.cli.list_aliases",
    "ls": "tahoe.cli.ls",
    "cp": "tahoe.cli.cp",
    "unlink": "tahoe.cli.unlink",
    "rm": "tahoe.cli.rm",
    "mv": "tahoe.cli.mv",
    "ln": "tahoe.cli.ln",
    "grid": "tahoe.cli.grid",
    "check": "tahoe.cli.check",
    "deep-check": "tahoe.cli.deep_check",
    "manifest": "tahoe.cli.manifest",
    "stats": "tahoe.cli.stats",
    "admin": "tahoe.cli.admin",
    "status": "tahoe.cli.status",
    "webopen": "tahoe.cli.webopen",
    "backup": "tahoe.cli.backup",
    "debug": "tahoe.cli.debug",
    "invite": "tahoe.cli.invite",
    "s3": "tahoe.cli.s3",
}
_SUMMARIES = {
    "create-node": "Create a node that acts as a client, server or both.",
    "create-client": "Create a client node (with storage initially disabled).",
    "create-introducer": "Create an introducer node.",
    "run": "Run a node in the foreground.",
    "put": "Upload a file into the grid.",
    "get": "Download a file from the grid.",
    "mkdir": "Create a new directory.",
    "add-alias": "Add a new alias cap.",
    "create-alias": "Create a new alias cap.",
    "list-aliases": "List all alias caps.",
    "ls": "List a directory.",
    "cp": "Copy one or more files or directories.",
    "unlink": "Unlink a file or directory on the grid.",
    "rm": "Unlink a file or directory on the grid (same as unlink).",
    "mv": "Move a file within the grid.",
    "ln": "Make an additional link to an existing file or directory.",
    "grid": "Start, stop or inspect a local grid of nodes on 127.0.0.1.",
    "check": "Check a single file or directory (and renew leases on it).",
    "deep-check": "Check all files and directories reachable from a starting point.",
    "manifest": "List all files and directories reachable from a starting point.",
    "stats": "Print statistics about all files and directories under a starting point.",
    "admin": "Administrative commands (generate-keypair, derive-pubkey, migrate-crawler, add-grid-manager-cert).",
    "status": "Various status information.",
    "webopen": "Open a web browser to a grid file or directory.",
    "backup": "Make target dir look like local dir.",
    "debug": "Debug commands: dump-share, dump-cap, find-shares, catalog-shares, corrupt-share.",
    "invite": "Invite a new node to this grid (over magic-wormhole).",
    "s3": "The S3 gateway: add-account.",
}
_FLAGS = frozenset({"-V", "--version", "--version-and-path", "-h", "--help", "-q", "--quiet"})
_VALUE_OPTIONS = frozenset({"--node-directory", "--wormhole-server", "--wormhole-invite-appid",
                            "--eliot-destination"})
EXIT_USAGE = 1
#: Subcommands whose parsers accept a (hidden) ``--quiet`` forwarded from the global ``-q``.
_TAKES_QUIET = frozenset({"put", "get", "mkdir", "add-alias", "create-alias", "list-aliases",
                          "ls", "cp", "unlink", "rm", "mv", "ln", "check", "deep-check",
                          "manifest", "stats", "webopen", "backup"})
#: Subcommands that take the global ``--wormhole-server`` and ``--wormhole-invite-appid``.
_TAKES_WORMHOLE = frozenset({"invite", "create-client", "create-node"})


class _UsageError(Exception):
    """The global part of the command line is wrong."""


def usage_text() -> str:
    """The top-level help: synopsis, global options and the subcommands."""
    lines = ["Usage: tahoe [global-options] <command> [command-options]", "",
             "Global options:",
             "  -d, --node-directory=DIR  the node directory [default: ~/.tahoe]",
             "  -q, --quiet               print less",
             "  -V, --version             print the version and exit",
             "  --wormhole-server=URL     the magic-wormhole mailbox server of invites",
             "                            [default: ws://wormhole.tahoe-lafs.org:4000/v1]",
             "  --wormhole-invite-appid=ID  the application id of invites"
             " [default: tahoe-lafs.org/invite]",
             "", "Commands:"]
    lines += [f"  {name:<20} {_SUMMARIES[name]}" for name in SUBCOMMANDS]
    return "\n".join(lines) + "\n"


def _split_global_options(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """Take the global options off the front of ``argv``; return them and the rest.

    Flags map to ``""``; ``-dDIR``, ``-d DIR``, ``--node-directory=DIR`` and
    ``--node-directory DIR`` all map ``--node-directory`` to ``DIR``.
    """
    options: dict[str, str] = {}
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        arg = argv[i]
        i += 1
        if arg in _FLAGS:
            options[arg] = ""
            continue
        if arg.startswith("-d") and not arg.startswith("--"):
            name, value, has_value = "--node-directory", arg[2:], len(arg) > 2
        else:
            name, eq, value = arg.partition("=")
            has_value = bool(eq)
            if name not in _VALUE_OPTIONS:
                raise _UsageError(f"unknown global option {arg!r}")
        if not has_value:
            if i >= len(argv):
                raise _UsageError(f"option {name} requires a value")
            value = argv[i]
            i += 1
        options[name] = value
    return options, argv[i:]


def run(argv: list[str], stdout: TextIO, stderr: TextIO,
        env: Mapping[str, str] | None = None) -> int:
    """Run the command line ``argv`` (without the program name); return the exit code.

    :param env: the environment (for ``HOME``); defaults to ``os.environ``.
    """
    env = os.environ if env is None else env
    try:
        options, rest = _split_global_options(argv)
    except _UsageError as e:
        stderr.write(usage_text() + f"\ntahoe: {e}\n")
        return EXIT_USAGE
    if {"-V", "--version", "--version-and-path"} & options.keys():
        stdout.write(VERSION_TEXT + "\n")
        return 0
    if not rest or {"-h", "--help"} & options.keys():
        stdout.write(usage_text())
        return 0 if {"-h", "--help"} & options.keys() else 2
    command, sub_argv = rest[0], rest[1:]
    module_name = SUBCOMMANDS.get(command)
    if module_name is None:
        stderr.write(usage_text() + f"\nUnknown command: {command}\n")
        return EXIT_USAGE
    if "--node-directory" in options:
        sub_argv = ["--node-directory", options["--node-directory"], *sub_argv]
    if command in _TAKES_WORMHOLE:
        for name in ("--wormhole-server", "--wormhole-invite-appid"):
            if name in options:
                sub_argv = [name, options[name], *sub_argv]
    if {"-q", "--quiet"} & options.keys() and command in _TAKES_QUIET:
        sub_argv = ["--quiet", *sub_argv]
    module = importlib.import_module(module_name)
    code: int = module.run(sub_argv, stdout, stderr, env)
    return code


#: The exit status of a command whose reader went away (128 + SIGPIPE, as a shell reports
#: a Unix tool killed by the signal).
EXIT_BROKEN_PIPE = 141


def main() -> None:
    """Console-script entry point.

    When the reader of stdout goes away (``tahoe manifest | head``), the command
    stops quietly, as Unix tools do, instead of printing a ``BrokenPipeError``
    traceback: the rest of its output would go nowhere.
    """
    try:
        code = run(sys.argv[1:], sys.stdout, sys.stderr, os.environ)
        sys.stdout.flush()
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at /dev/null first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        code = EXIT_BROKEN_PIPE
    sys.exit(code)


if __name__ == "__main__":
    main()

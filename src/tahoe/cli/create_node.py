"""``tahoe create-node``: create a full node (client and storage server) directory.

Options, defaults, messages and exit codes follow ``reference/frontends.md``
§1.2. This module also holds what ``create-client`` and ``create-introducer``
share with it (:func:`run_create`). Standard library only, apart from the
node-directory shell :mod:`tahoe.node.nodedir`; no Twisted, no Foolscap.
``--join CODE`` is :mod:`tahoe.cli.join`.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import NoReturn, TextIO

from ..node.config import CLIENT, INTRODUCER
from ..node.errors import ConfigError, DirectoryNotEmpty
from ..node.nodedir import (DEFAULT_WEB_PORT, NodeOptions, allocate_tcp_port,
                            create_node_directory, quote_path)

#: Exit status when the target directory is not empty (Tahoe returns -1).
EXIT_NOT_EMPTY = 255
EXIT_USAGE = 1
LISTENERS = ("i2p", "none", "tcp", "tor")
DEFAULT_NODEDIR = "~/.tahoe"

_SYNOPSIS = {
    "create-node": "[options] [NODEDIR]",
    "create-client": "[options] [NODEDIR]",
    "create-introducer": "[options] NODEDIR",
}
_DESCRIPTION = {
    "create-node": "Create a full Tahoe-LAFS node (client+server).",
    "create-client": "Create a client-only Tahoe-LAFS node (no storage server).",
    "create-introducer": "Create a Tahoe-LAFS introducer.",
}
# tahoe.cfg keys that come from a command-line option, to name the option in errors.
_OPTION_OF_KEY = {
    ("node", "nickname"): "--nickname", ("node", "web.port"): "--webport",
    ("node", "tub.port"): "--port", ("node", "tub.location"): "--location",
    ("storage", "storage_dir"): "--storage-dir",
}


class UsageError(Exception):
    """The command line is wrong; the message says how."""


class _HelpShown(Exception):
    """``--help`` was given and the help text has been written."""


class _Parser(argparse.ArgumentParser):
    """argparse that writes to our stdout and raises instead of exiting."""

    def __init__(self, stdout: TextIO, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._stdout = stdout

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            self._stdout.write(message)
        raise _HelpShown()

    def _print_message(self, message: str, file: object = None) -> None:
        if message:
            self._stdout.write(message)


def _make_parser(command: str, stdout: TextIO) -> _Parser:
    # --join's code is imported by the create commands only: ``tahoe run`` imports this
    # module for expand_home, and a running node loads no invite code.
    from ..invite.messages import APP_ID, DEFAULT_MAILBOX_URL
    from .join import DEFAULT_JOIN_TIMEOUT
    parser = _Parser(stdout, prog=f"tahoe {command}",
                     usage=f"tahoe [global-options] {command} {_SYNOPSIS[command]}",
                     description=_DESCRIPTION[command])
    parser.add_argument("-C", "--basedir", help="the node directory to create (like the"
                        " global --node-directory)")
    parser.add_argument("-d", "--node-directory", help=argparse.SUPPRESS)
    parser.add_argument("nodedir", nargs="?", metavar="NODEDIR")
    if command != "create-introducer":
        parser.add_argument("-n", "--nickname", help="the nickname of this node")
        parser.add_argument("-i", "--introducer", help="the introducer FURL to use")
        parser.add_argument("-p", "--webport", default=DEFAULT_WEB_PORT,
                            help="the web server's endpoint, or 'none' to disable it"
                            " [default: %(default)s]")
        for name, default in (("needed", 3), ("happy", 7), ("total", 10)):
            parser.add_argument(f"--shares-{name}", default=str(default),
                                help=f"shares.{name} for uploads [default: %(default)s]")
        parser.add_argument("--join", metavar="CODE",
                            help="join a grid with the invite code of 'tahoe invite'")
        parser.add_argument("--join-timeout", metavar="SECONDS", default=str(DEFAULT_JOIN_TIMEOUT),
                            help="how long --join waits for the inviting node"
                            " [default: %(default)s]")
        parser.add_argument("--wormhole-server", default=DEFAULT_MAILBOX_URL,
                            help=argparse.SUPPRESS)
        parser.add_argument("--wormhole-invite-appid", default=APP_ID, help=argparse.SUPPRESS)
    parser.add_argument("--hide-ip", action="store_true",
                        help="refuse any configuration that would reveal the IP address")
    if command == "create-node":
        parser.add_argument("--no-storage", action="store_true",
                            help="do not offer storage service to other nodes")
        parser.add_argument("--storage-dir", help="where the storage server keeps shares")
        parser.add_argument("--helper", action="store_true", help="run an upload helper")
    if command != "create-client":
        parser.add_argument("--location", help="hints to advertise (e.g. tcp:example.org:3457)")
        parser.add_argument("--port", help="endpoint to listen on (e.g. tcp:3457)")
        parser.add_argument("--hostname", help="host name for an automatic tcp --port/--location")
        parser.add_argument("--listen", default="tcp",
                            help="comma list of listener types (tcp,tor,i2p,none)"
                            " [default: %(default)s]")
        parser.add_argument("--tor-launch", action="store_true", help=argparse.SUPPRESS)
        parser.add_argument("--tor-control-port", help=argparse.SUPPRESS)
        parser.add_argument("--tor-executable", help=argparse.SUPPRESS)
        parser.add_argument("--i2p-launch", action="store_true", help=argparse.SUPPRESS)
        parser.add_argument("--i2p-sam-port", help=argparse.SUPPRESS)
        parser.add_argument("--i2p-executable", help=argparse.SUPPRESS)
    return parser


def expand_home(path: str, env: Mapping[str, str]) -> str:
    """Expand a leading ``~`` with ``env["HOME"]`` when set, else as the OS does."""
    if (path == "~" or path.startswith("~/")) and env.get("HOME"):
        return env["HOME"] + path[1:]
    return os.path.expanduser(path)


def resolve_basedir(args: argparse.Namespace, env: Mapping[str, str],
                    default: str | None) -> str:
    """The absolute node directory from ``-d``, ``-C`` or NODEDIR (only one), or ``default``.

    :raises UsageError: if more than one is given, or none and there is no default.
    """
    if args.node_directory and args.basedir:
        raise UsageError("--node-directory (-d) and --basedir (-C) cannot both be used")
    if args.node_directory and args.nodedir:
        raise UsageError("--node-directory (-d) and a NODEDIR argument cannot both be used")
    if args.basedir and args.nodedir:
        raise UsageError("--basedir (-C) and a NODEDIR argument cannot both be used")
    chosen = args.node_directory or args.basedir or args.nodedir or default
    if not chosen:
        raise UsageError("no node directory given: name one as NODEDIR, with --basedir (-C),"
                         " or with the global --node-directory (-d)")
    return os.path.abspath(expand_home(chosen, env))


def _check_where_options(args: argparse.Namespace) -> list[str]:
    """Tahoe's rules for --listen/--hostname/--port/--location; return the listener list."""
    listeners = args.listen.split(",")
    if args.listen == "none":
        if args.hostname:
            raise UsageError("--hostname cannot be used when --listen=none")
        if args.port or args.location:
            raise UsageError("--port/--location cannot be used when --listen=none")
    if args.location and not args.port:
        raise UsageError("--location must be used with --port")
    if args.port and not args.location:
        raise UsageError("--port must be used with --location")
    if args.port and args.location:
        if args.hostname:
            raise UsageError("--hostname cannot be used with --port/--location")
    elif args.listen != "none":
        unknown = [name for name in listeners if name not in LISTENERS]
        if unknown:
            raise UsageError(f"--listen= must be one or more of: {', '.join(LISTENERS)}")
        if "tcp" in listeners and not args.hostname:
            raise UsageError("--listen=tcp requires --hostname=")
        if "tcp" not in listeners and args.hostname:
            raise UsageError("--listen= must include tcp to use --hostname")
    use_tor = "tor" in listeners or args.tor_launch or args.tor_control_port
    use_i2p = "i2p" in listeners or args.i2p_launch or args.i2p_sam_port
    if use_tor:
        raise UsageError("Tor listeners are not supported by this implementation"
                         " (Tahoe-LAFS needs the 'txtorcon' module for them)")
    if use_i2p:
        raise UsageError("I2P listeners are not supported by this implementation"
                         " (Tahoe-LAFS needs the 'txi2p' module for them)")
    return listeners


def _tub_settings(args: argparse.Namespace) -> tuple[str, str]:
    """``(tub.port, tub.location)`` from the where-options (already checked)."""
    if args.port and args.location:
        return args.port, args.location
    if "none" in args.listen.split(","):
        return "disabled", "disabled"
    port = allocate_tcp_port()
    return f"tcp:{port}", f"tcp:{args.hostname}:{port}"


def _shares(args: argparse.Namespace) -> tuple[int, int, int]:
    values = []
    for name in ("needed", "happy", "total"):
        text = getattr(args, f"shares_{name}").strip()
        if not text.isdigit() or not text.isascii():
            raise UsageError(f"--shares-{name} must be an integer")
        values.append(int(text))
    needed, happy, total = values
    if not 1 <= needed <= happy <= total <= 256:
        raise UsageError("--shares-needed, --shares-happy and --shares-total must satisfy"
                         f" 1 <= needed <= happy <= total <= 256 (got {needed}, {happy}, {total})")
    return needed, happy, total


def _node_options(command: str, args: argparse.Namespace) -> NodeOptions:
    if args.hide_ip:
        raise UsageError("--hide-ip was given, but no IP-hiding listener (Tor or I2P) is"
                         " available in this implementation")
    if command == "create-introducer":
        _check_where_options(args)
        port, location = _tub_settings(args)
        return NodeOptions(node_type=INTRODUCER, web_port="", tub_port=port,
                           tub_location=location)
    if args.join is not None:
        from .join import check_join_options
        try:
            check_join_options(args.join, args.join_timeout)
        except ValueError as e:
            raise UsageError(str(e)) from None
    needed, happy, total = _shares(args)
    nickname = args.nickname or ""
    if "\n" in nickname or "\r" in nickname:
        raise UsageError("--nickname must be a single line")
    web_port = "" if (args.webport or "none").lower() == "none" else args.webport
    if command == "create-client":
        port, location, storage, storage_dir, helper = "disabled", "disabled", False, None, False
    else:
        _check_where_options(args)
        port, location = _tub_settings(args)
        storage, storage_dir, helper = not args.no_storage, args.storage_dir, args.helper
    return NodeOptions(
        node_type=CLIENT, nickname=nickname, web_port=web_port, tub_port=port,
        tub_location=location, introducer_furl=args.introducer or None,
        shares_needed=needed, shares_happy=happy, shares_total=total,
        storage_enabled=storage, storage_dir=storage_dir, helper_enabled=helper)


def _config_error_text(error: ConfigError) -> str:
    option = _OPTION_OF_KEY.get((error.section or "", error.key or ""))
    if option is None:
        return str(error)
    return f"{option}: {error.problem}"


def _report_success(command: str, basedir: str, options: NodeOptions, stdout: TextIO) -> None:
    if command == "create-introducer":
        stdout.write(f"Introducer created in {quote_path(basedir)}\n")
        return
    stdout.write(f"Node created in {quote_path(basedir)}\n")
    if not options.introducer_furl:
        yaml_path = os.path.join(basedir, "private", "introducers.yaml")
        stdout.write(f" Please add introducers to {quote_path(yaml_path)}!\n"
                     " The node cannot connect to a grid without it.\n")
    if not options.nickname:
        stdout.write(" Please set [node]nickname= in"
                     f" {quote_path(os.path.join(basedir, 'tahoe.cfg'))}\n")


def run_create(command: str, argv: list[str], stdout: TextIO, stderr: TextIO,
               env: Mapping[str, str]) -> int:
    """Run ``tahoe <command>`` for one of create-node, create-client, create-introducer.

    :returns: 0 on success, 1 on a usage error or a failure to write,
        255 if the directory exists and is not empty.
    """
    from ..invite.errors import InviteError
    parser = _make_parser(command, stdout)
    try:
        args = parser.parse_args(argv)
        default = None if command == "create-introducer" else DEFAULT_NODEDIR
        basedir = resolve_basedir(args, env, default)
        options = _node_options(command, args)
        if command != "create-introducer" and args.join is not None:
            from .join import join_and_create
            options, problems = join_and_create(
                basedir, options, args.join, float(args.join_timeout), args.wormhole_server,
                args.wormhole_invite_appid, stdout, stderr)
        else:
            problems = create_node_directory(basedir, options)
    except _HelpShown:
        return 0
    except UsageError as e:
        stderr.write(f"Usage: {parser.usage}\n{parser.prog}: error: {e}\n")
        return EXIT_USAGE
    except DirectoryNotEmpty as e:
        stderr.write(f"The base directory {quote_path(e.basedir)} is not empty.\n"
                     "Nothing was changed: to avoid overwriting anything, I stop here.\n"
                     "Use a different directory, or empty this one.\n")
        return EXIT_NOT_EMPTY
    except ConfigError as e:
        stderr.write(f"Usage: {parser.usage}\n{parser.prog}: error: {_config_error_text(e)}\n")
        return EXIT_USAGE
    except InviteError as e:
        stderr.write(f"{parser.prog}: cannot join: {e}\nNo node directory was created.\n")
        return EXIT_USAGE
    except OSError as e:
        where = quote_path(e.filename) if isinstance(e.filename, str) else "the node directory"
        stderr.write(f"{parser.prog}: cannot write {where}: {e.strerror or e}\n")
        return EXIT_USAGE
    _report_success(command, basedir, options, stdout)
    for problem in problems:
        stderr.write(f"Note: {problem}; edit tahoe.cfg before starting the node.\n")
    return 0


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe create-node [options] [NODEDIR]``; see :func:`run_create`."""
    return run_create("create-node", argv, stdout, stderr, env)

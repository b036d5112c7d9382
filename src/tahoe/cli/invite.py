"""``tahoe invite NICKNAME``: invite a new node to this node's grid over magic-wormhole.

Reads the grid's introducer FURL and the encoding settings from the node
directory (``-d``, default ``~/.tahoe``), prints a one-time code, waits for
``tahoe create-client --join CODE`` on the other side and hands it the
introducer, the encoding and the nickname (``docs/invites.md``). Standard
library only at import; the exchange (Twisted, magic-wormhole) is imported
when it starts.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TextIO

from ..invite.errors import InviteError
from ..invite.messages import APP_ID, DEFAULT_MAILBOX_URL, MAX_SHARES, Invite
from ..node.config import CLIENT, INTRODUCER, introducer_furls, parse_config
from ..node.errors import ConfigError
from ..node.nodedir import find_node_type, quote_path
from ..node.yaml_files import parse_introducers_yaml
from .create_node import UsageError as _UsageError
from .create_node import _HelpShown, _Parser

EXIT_FAILURE = 1
DEFAULT_NODEDIR = "~/.tahoe"


def _make_parser(stdout: TextIO) -> _Parser:
    parser = _Parser(stdout, prog="tahoe invite",
                     usage="tahoe [global-options] invite [options] NICKNAME",
                     description="Invite a new node to this grid: print a one-time code"
                     " for 'tahoe create-client --join CODE' on the other side.")
    parser.add_argument("nickname", metavar="NICKNAME", help="the new node's nickname")
    for name, what in (("needed", "shares needed to rebuild a file"),
                       ("happy", "distinct servers an upload must reach"),
                       ("total", "shares made of each file")):
        parser.add_argument(f"--shares-{name}", metavar="N",
                            help=f"{what}, for the new node [default: this node's]")
    parser.add_argument("-d", "--node-directory", help=argparse.SUPPRESS)
    parser.add_argument("--wormhole-server", default=DEFAULT_MAILBOX_URL, help=argparse.SUPPRESS)
    parser.add_argument("--wormhole-invite-appid", default=APP_ID, help=argparse.SUPPRESS)
    return parser


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8-sig") as f:
            return f.read()
    except FileNotFoundError:
        return None


def grid_settings(basedir: str) -> tuple[str, tuple[int, int, int]]:
    """The introducer FURL and ``(needed, happy, total)`` of the node in ``basedir``.

    The first introducer of ``private/introducers.yaml`` (or ``[client]introducer.furl``);
    on an introducer, its own ``private/introducer.furl``. Reads only; writes nothing.

    :raises InviteError: if there is no node or no introducer FURL there.
    :raises ConfigError: if a file of the node is malformed.
    :raises OSError: if a file cannot be read.
    """
    node_type = find_node_type(basedir)
    if node_type is None:
        raise InviteError(f"{quote_path(basedir)} is not a node directory")
    cfg_path = os.path.join(basedir, "tahoe.cfg")
    config = parse_config(_read_text(cfg_path) or "", cfg_path, node_type)
    shares = (config.client.shares_needed, config.client.shares_happy,
              config.client.shares_total)
    furls: dict[str, str] = {}
    if node_type == CLIENT:
        yaml_path = os.path.join(basedir, "private", "introducers.yaml")
        yaml_text = _read_text(yaml_path)
        from_yaml = {} if yaml_text is None else parse_introducers_yaml(yaml_text, yaml_path)
        furls = introducer_furls(config, from_yaml, yaml_path)
    if furls:
        return next(iter(furls.values())), shares
    own = _read_text(os.path.join(basedir, "private", "introducer.furl"))
    if node_type == INTRODUCER and own and own.strip():
        return own.strip(), shares
    raise InviteError(f"Can't find introducer FURL for node {quote_path(basedir)}: it has none"
                      " in private/introducers.yaml or tahoe.cfg (nor, for an introducer,"
                      " private/introducer.furl)")


def _shares(args: argparse.Namespace, configured: tuple[int, int, int]) -> tuple[int, int, int]:
    values = []
    for name, default in zip(("needed", "happy", "total"), configured):
        text = getattr(args, f"shares_{name}")
        if text is None:
            values.append(default)
            continue
        if not text.strip().isascii() or not text.strip().isdigit():
            raise _UsageError(f"--shares-{name} must be an integer")
        values.append(int(text))
    needed, happy, total = values
    if not 1 <= needed <= happy <= total <= MAX_SHARES:
        raise _UsageError("the new node's encoding must satisfy 1 <= needed <= happy <= total"
                          f" <= {MAX_SHARES} (got {needed}, {happy}, {total})")
    return needed, happy, total


def _basedir(args: argparse.Namespace, env: Mapping[str, str]) -> str:
    chosen = args.node_directory or DEFAULT_NODEDIR
    if (chosen == "~" or chosen.startswith("~/")) and env.get("HOME"):
        chosen = env["HOME"] + chosen[1:]
    return os.path.abspath(os.path.expanduser(chosen))


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe invite [--shares-*] NICKNAME``: 0 once the invite was sent, 1 on any error."""
    parser = _make_parser(stdout)
    try:
        args = parser.parse_args(argv)
        nickname = args.nickname.strip()
        if not nickname or "\n" in nickname or "\r" in nickname:
            raise _UsageError("Provide a single argument: the new node's nickname (one line)")
        basedir = _basedir(args, env)
        furl, configured = grid_settings(basedir)
        needed, happy, total = _shares(args, configured)
    except _HelpShown:
        return 0
    except _UsageError as e:
        stderr.write(f"Usage: {parser.usage}\n{parser.prog}: error: {e}\n")
        return EXIT_FAILURE
    except (InviteError, ConfigError) as e:
        stderr.write(f"{parser.prog}: {e}\n")
        return EXIT_FAILURE
    except OSError as e:
        stderr.write(f"{parser.prog}: cannot read the node directory: {e}\n")
        return EXIT_FAILURE
    invite = Invite(furl, nickname, needed, happy, total)

    from ..invite.exchange import run_exchange, send_invite
    try:
        run_exchange(lambda reactor: send_invite(reactor, args.wormhole_server,
                                                 args.wormhole_invite_appid, invite,
                                                 stdout, stderr))
    except InviteError as e:
        stderr.write(f"{parser.prog}: {e}\n")
        return EXIT_FAILURE
    stdout.write("Completed successfully\n")
    return 0

"""``create-client/create-node --join CODE``: receive an invite, then create the node.

The invite (``docs/invites.md``) is received before anything is written; the
node directory is then built beside its place and renamed into it only once
complete, so a failed or interrupted join leaves nothing behind. Standard
library only at import; the wormhole exchange (Twisted, magic-wormhole) is
imported when it starts.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import TextIO

import attrs

from ..invite.errors import BadInviteCode
from ..invite.messages import Invite, check_code
from ..node.errors import DirectoryNotEmpty
from ..node.nodedir import NodeOptions, create_node_directory

__all__ = ["DEFAULT_JOIN_TIMEOUT", "check_join_options", "join_and_create"]

#: Seconds ``--join`` waits for the inviter's first message (a wrong code gets none).
DEFAULT_JOIN_TIMEOUT = 60.0


def check_join_options(code: str, timeout: str) -> None:
    """Check ``--join`` and ``--join-timeout`` before anything happens.

    :raises ValueError: with the message for the user.
    """
    try:
        check_code(code.strip())
    except BadInviteCode as e:
        raise ValueError(f"--join: {e}") from None
    try:
        seconds = float(timeout)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < 1e6:
        raise ValueError("--join-timeout must be a positive number of seconds")


def _apply_invite(options: NodeOptions, invite: Invite, stdout: TextIO) -> NodeOptions:
    """The options with what the inviter sets (as Tahoe: introducer, nickname, encoding)."""
    stdout.write(f"Encoding: {invite.shares_needed} of {invite.shares_total} shares,"
                 f" on at least {invite.shares_happy} servers\n"
                 "Overriding the following config:\n"
                 "  introducer: [sensitive data; see tahoe.cfg]\n")
    nickname = options.nickname
    if invite.nickname:
        nickname = invite.nickname
        stdout.write(f"  nickname: {nickname}\n")
    return attrs.evolve(options, introducer_furl=invite.introducer_furl, nickname=nickname,
                        shares_needed=invite.shares_needed, shares_happy=invite.shares_happy,
                        shares_total=invite.shares_total)


def _missing_ancestors(path: str) -> list[str]:
    """The ancestors of ``path`` that do not exist, deepest first."""
    missing = []
    parent = os.path.dirname(path)
    while parent and not os.path.exists(parent) and parent != os.path.dirname(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    return missing


def _is_taken(basedir: str) -> bool:
    return os.path.exists(basedir) and (not os.path.isdir(basedir) or bool(os.listdir(basedir)))


def join_and_create(basedir: str, options: NodeOptions, code: str, timeout: float,
                    mailbox_url: str, app_id: str, stdout: TextIO,
                    stderr: TextIO) -> tuple[NodeOptions, list[str]]:
    """Receive the invite for ``code``, then create the node directory all at once.

    The directory is built in a fresh directory beside ``basedir`` (made before
    the exchange, so an unwritable place fails before the one-time code is
    spent) and renamed into place when complete; on any failure it is removed,
    with any parent directories made for it.

    :param options: what the command line asked for; the invite's introducer,
        encoding and nickname replace its own.
    :returns: the options used and the problems of
        :func:`~tahoe.node.nodedir.create_node_directory`.
    :raises DirectoryNotEmpty: before the exchange, if ``basedir`` is not empty.
    :raises InviteError: if the exchange fails.
    :raises OSError: if the directory cannot be made.
    """
    if _is_taken(basedir):
        raise DirectoryNotEmpty(basedir)
    from ..invite.exchange import receive_invite, run_exchange

    made_parents = _missing_ancestors(basedir)
    staging = None
    try:
        os.makedirs(os.path.dirname(basedir), exist_ok=True)
        staging = tempfile.mkdtemp(prefix=f".{os.path.basename(basedir)}.joining-",
                                   dir=os.path.dirname(basedir))
        invite = run_exchange(lambda reactor: receive_invite(
            reactor, mailbox_url, app_id, code.strip(), timeout, stdout, stderr))
        options = _apply_invite(options, invite, stdout)
        built = os.path.join(staging, "node")
        problems = create_node_directory(built, options)
        if _is_taken(basedir):
            raise DirectoryNotEmpty(basedir)
        os.replace(built, basedir)
    except BaseException:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        for parent in made_parents:
            try:
                os.rmdir(parent)
            except OSError:
                break
        raise
    os.rmdir(staging)
    return options, problems

"""The messages of Tahoe-LAFS 1.20's invite exchange (pure; ``docs/formats/invites.md``).

Both sides first send a hello naming their abilities (the inviter
``server-v1``, the joiner ``client-v1``); after the joiner's hello the
inviter sends the settings: the introducer FURL, the three encoding numbers
and the new node's nickname. Every message is
UTF-8 JSON. Nothing here does I/O.
"""
from __future__ import annotations

import json
import re
from typing import Any

from attrs import frozen

from ..util.errors import BadFURL
from ..util.furl import parse_furl
from .errors import BadInviteCode, BadInviteMessage

__all__ = ["APP_ID", "DEFAULT_MAILBOX_URL", "INVITER_ABILITY", "JOINER_ABILITY", "Invite",
           "hello", "check_hello", "encode_invite", "parse_invite", "check_code"]

#: The magic-wormhole application id of Tahoe's invites (``--wormhole-invite-appid``).
APP_ID = "tahoe-lafs.org/invite"
#: Tahoe's public mailbox server (``--wormhole-server``).
DEFAULT_MAILBOX_URL = "ws://wormhole.tahoe-lafs.org:4000/v1"
INVITER_ABILITY = "server-v1"
JOINER_ABILITY = "client-v1"
MAX_SHARES = 256

_CODE = re.compile(r"\A[0-9]+(-[\x21-\x7e]+)+\Z")


@frozen
class Invite:
    """The settings an invite hands over.

    ``1 <= shares_needed <= shares_happy <= shares_total <= 256``; the nickname
    is one line.
    """

    introducer_furl: str
    nickname: str
    shares_needed: int
    shares_happy: int
    shares_total: int


def check_code(code: str) -> str:
    """Check an invite code's form (``NUMBER-WORD-...``, no spaces); return it.

    :raises BadInviteCode: with the reason.
    """
    if not _CODE.match(code):
        raise BadInviteCode(f"{code!r} is not an invite code: a code is a number and words"
                            " joined by '-', like 7-guitarist-revenge")
    return code


def hello(ability: str) -> bytes:
    """A side's first message: ``{"abilities": {ability: {}}}``."""
    return _dump({"abilities": {ability: {}}})


def check_hello(data: bytes, wanted: str) -> None:
    """Check the other side's hello names the ability ``wanted``.

    :raises BadInviteMessage: if it is not JSON, has no abilities, or lacks ``wanted``.
    """
    message = _load(data, "introduction")
    abilities = message.get("abilities")
    if not isinstance(abilities, dict):
        raise BadInviteMessage("the other side's introduction has no 'abilities'")
    if wanted not in abilities:
        raise BadInviteMessage(f"the other side does not speak '{wanted}' (it offers"
                               f" {', '.join(sorted(map(str, abilities))) or 'nothing'})")


def encode_invite(invite: Invite) -> bytes:
    """The settings message, the numbers as JSON integers.

    Tahoe 1.20's inviter sends them as text (as read from its ``tahoe.cfg``),
    but its joiner writes a text value into ``tahoe.cfg`` as a Python bytes
    literal (``shares.needed = b'2'``), which is not a number; integers it
    writes plainly. Both joiners accept integers.
    """
    return _dump({
        "shares-needed": invite.shares_needed,
        "shares-total": invite.shares_total,
        "shares-happy": invite.shares_happy,
        "nickname": invite.nickname,
        "introducer": invite.introducer_furl,
    })


def parse_invite(data: bytes) -> Invite:
    """Parse and check a settings message (numbers as text or JSON integers).

    :raises BadInviteMessage: naming the first field that is missing or wrong.
    """
    message = _load(data, "settings")
    furl = message.get("introducer")
    if not isinstance(furl, str):
        raise BadInviteMessage("the invite has no introducer FURL")
    try:
        parse_furl(furl)
    except BadFURL as e:
        raise BadInviteMessage(f"the invite's introducer is not a FURL: {e}") from None
    nickname = message.get("nickname", "")
    if nickname is None:
        nickname = ""
    if not isinstance(nickname, str) or "\n" in nickname or "\r" in nickname:
        raise BadInviteMessage("the invite's nickname is not a single line of text")
    needed, happy, total = (_share_number(message, f"shares-{name}")
                            for name in ("needed", "happy", "total"))
    if not 1 <= needed <= happy <= total <= MAX_SHARES:
        raise BadInviteMessage("the invite's encoding must satisfy 1 <= needed <= happy <="
                               f" total <= {MAX_SHARES} (got {needed}, {happy}, {total})")
    return Invite(furl, nickname.strip(), needed, happy, total)


def _share_number(message: dict[str, Any], key: str) -> int:
    value = message.get(key)
    if isinstance(value, bool):
        value = None
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int):
        raise BadInviteMessage(f"the invite's '{key}' is missing or not an integer")
    return value


def _dump(value: dict[str, Any]) -> bytes:
    return json.dumps(value).encode("utf-8")


def _load(data: bytes, what: str) -> dict[str, Any]:
    try:
        message = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BadInviteMessage(f"the other side's {what} is not UTF-8 JSON") from None
    if not isinstance(message, dict):
        raise BadInviteMessage(f"the other side's {what} is not a JSON object")
    return message

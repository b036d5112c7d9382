"""The accounts file of the S3 gateway (``[s3]accounts.file``, ``private/s3-accounts``).

One account a line; blank lines and lines starting with ``#`` are ignored::

    # ACCESS_KEY_ID         SECRET_ACCESS_KEY                          ROOTCAP
    TLKX4GQ2N7A3BZC5D6E7    0bOt2y0i3s3c1V4QmZbq8u7m6Jq4c4RQ5m8H2JkA   URI:DIR2:...

An access key is a proxy for its root directory: whoever holds the pair can
do with the buckets (the root's child directories) what the write cap allows,
and nothing else. So the file is kept mode 0600 (checked by the shell), the
root must be a directory *write* cap, and no message here ever shows a secret
or a cap: errors name the line number and the rule (and the access key id,
which is not secret).

Access key ids are 3-128 characters of ``A-Z a-z 0-9 . _ -`` (no ``/``, which
would break a SigV4 Credential); secrets are 8-256 printable ASCII
characters without spaces. :func:`new_access_key` and :func:`new_secret`
turn random bytes given by the caller into a new pair (pure: no randomness
here). Pure.
"""
from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..caps.dirnode import DirectoryCap
from ..caps.errors import CapError
from ..caps.parse import parse_cap

__all__ = ["Account", "AccountsError", "parse_accounts", "format_account_line",
           "new_access_key", "new_secret", "ACCESS_KEY_PREFIX"]

ACCESS_KEY_PREFIX = "TL"
_ACCESS_KEY = re.compile(r"[A-Za-z0-9._-]{3,128}\Z")
_SECRET = re.compile(r"[\x21-\x7e]{8,256}\Z")


class AccountsError(ValueError):
    """The accounts file is malformed (the message names the line, never a secret or cap)."""


@dataclass(frozen=True)
class Account:
    """One S3 account.

    :ivar access_key: the access key id (``Credential=ACCESS_KEY/...``).
    :ivar secret: the secret access key (not shown by ``repr``).
    :ivar root: the write cap of the directory whose children are the buckets.
    :ivar line: the line of the accounts file it came from.
    """

    access_key: str
    secret: str = field(repr=False)
    root: DirectoryCap = field(repr=False)
    line: int = 0


def _root(text: str, number: int) -> DirectoryCap:
    try:
        cap = parse_cap(text)
    except CapError:
        cap = None
    if not isinstance(cap, DirectoryCap):
        raise AccountsError(f"line {number}: the third field is not a directory cap"
                            " (expected a URI:DIR2: or URI:DIR2-MDMF: write cap)")
    if cap.is_readonly or not cap.is_mutable:
        raise AccountsError(f"line {number}: the root must be a directory write cap"
                            f" (URI:DIR2: or URI:DIR2-MDMF:), not a {cap.kind} cap")
    return cap


def parse_accounts(text: str | Iterable[str]) -> list[Account]:
    """The accounts of an accounts file, in file order.

    :param text: the file's text, or its lines.
    :raises AccountsError: for a line without exactly three fields, a malformed
        access key id or secret, a root that is not a directory write cap, or an
        access key id given twice.
    """
    lines = text.splitlines() if isinstance(text, str) else list(text)
    accounts: list[Account] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 3:
            raise AccountsError(f"line {number}: expected ACCESS_KEY_ID SECRET_ACCESS_KEY"
                                f" ROOTCAP, found {len(fields)} fields")
        access_key, secret, root_text = fields
        if not _ACCESS_KEY.match(access_key):
            raise AccountsError(f"line {number}: an access key id is 3-128 characters of"
                                " A-Z, a-z, 0-9, '.', '_' and '-'")
        if not _SECRET.match(secret):
            raise AccountsError(f"line {number}: a secret access key is 8-256 printable"
                                " ASCII characters")
        if access_key in seen:
            raise AccountsError(f"line {number}: the access key id {access_key} is already"
                                f" used on line {seen[access_key]}")
        seen[access_key] = number
        accounts.append(Account(access_key, secret, _root(root_text, number), number))
    return accounts


def format_account_line(access_key: str, secret: str, root_cap: str) -> str:
    """One line of the accounts file (with its newline), checked as :func:`parse_accounts` does.

    :raises AccountsError: if the line would not parse back.
    """
    line = f"{access_key} {secret} {root_cap}\n"
    parse_accounts([line])
    return line


def new_access_key(random_bytes: bytes) -> str:
    """A new access key id from 10 random bytes: ``TL`` and 16 base32 characters."""
    if len(random_bytes) < 10:
        raise ValueError("an access key id needs 10 random bytes")
    return ACCESS_KEY_PREFIX + base64.b32encode(random_bytes[:10]).decode("ascii")


def new_secret(random_bytes: bytes) -> str:
    """A new secret access key from 30 random bytes: 40 base64 characters (240 bits)."""
    if len(random_bytes) < 30:
        raise ValueError("a secret access key needs 30 random bytes")
    return base64.b64encode(random_bytes[:30]).decode("ascii")

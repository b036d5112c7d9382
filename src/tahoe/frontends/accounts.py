"""The accounts file of the SFTP frontend (``[sftpd]accounts.file``): who may log in, how,
and to which directory.

One account a line; blank lines and lines starting with ``#`` are ignored::

    alice ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI... alice@laptop URI:DIR2:...
    bob   sekrit                                              URI:DIR2-RO:...

A line is a name, then either a public key in OpenSSH's one-line form (its
type, its base64 body and an optional comment) or a password, and last the
cap of the account's root directory. Tahoe-LAFS 1.20 reads the key form and
refuses password lines; earlier Tahoe versions read the password form, which
is accepted here too (passwords are compared in constant time). A name may
have several lines (several keys, a password) if they name the same root. A
read-only directory cap gives a read-only account.

Pure: text in, frozen values out; keys are checked by the SSH layer.
"""
from __future__ import annotations

from collections.abc import Iterable

from attrs import frozen

from ..caps.dirnode import DirectoryCap
from ..caps.errors import CapError
from ..caps.parse import parse_cap

__all__ = ["Account", "AccountsError", "KEY_TYPE_PREFIXES", "parse_accounts"]

#: What the second field of a key line starts with (OpenSSH's key type names).
KEY_TYPE_PREFIXES = ("ssh-", "ecdsa-", "sk-ssh-", "sk-ecdsa-")


class AccountsError(ValueError):
    """The accounts file is malformed (the message names the line)."""


@frozen
class Account:
    """One user of the SFTP frontend.

    :ivar name: the login name.
    :ivar root: the cap of the account's root directory.
    :ivar passwords: the passwords that log in (empty: keys only).
    :ivar public_keys: OpenSSH one-line public keys that log in.
    """

    name: str
    root: DirectoryCap
    passwords: tuple[str, ...] = ()
    public_keys: tuple[str, ...] = ()


def _root(text: str, number: int) -> DirectoryCap:
    try:
        cap = parse_cap(text)
    except CapError as error:
        raise AccountsError(f"line {number}: the last field is not a cap: {error}") from None
    if not isinstance(cap, DirectoryCap) or cap.is_verifier:
        raise AccountsError(f"line {number}: the last field must be a directory read or"
                            f" write cap (URI:DIR2…), not {text[:24]}…")
    return cap


def parse_accounts(lines: Iterable[str]) -> dict[str, Account]:
    """Account name -> account, from the lines of an accounts file.

    :raises AccountsError: for a line with too few fields, a last field that is not a
        directory cap, or one name with two different roots.
    """
    accounts: dict[str, Account] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) < 3:
            raise AccountsError(f"line {number}: expected NAME PASSWORD-OR-KEY ROOTCAP")
        name, secret, root = fields[0], fields[1], _root(fields[-1], number)
        passwords: tuple[str, ...] = ()
        keys: tuple[str, ...] = ()
        if secret.startswith(KEY_TYPE_PREFIXES):
            keys = (" ".join(fields[1:-1]),)
        elif len(fields) == 3:
            passwords = (secret,)
        else:
            raise AccountsError(f"line {number}: a password line has three fields (a"
                                " password may not contain spaces)")
        old = accounts.get(name)
        if old is not None and old.root != root:
            raise AccountsError(f"line {number}: account {name!r} is given two different"
                                " root directories")
        accounts[name] = Account(name, root, (old.passwords if old else ()) + passwords,
                                 (old.public_keys if old else ()) + keys)
    return accounts

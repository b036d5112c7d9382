"""The SFTP frontend as a service of a client node: ``[sftpd]`` in ``tahoe.cfg``.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §1.5, Tahoe's
``docs/frontends/FTP-and-SFTP.rst``)::

    [sftpd]
    enabled = true
    port = tcp:8022:interface=127.0.0.1
    host_pubkey_file = private/ssh_host_rsa_key.pub
    host_privkey_file = private/ssh_host_rsa_key
    accounts.file = private/accounts

An SSH server (Twisted Conch) on ``port`` with the host key from the two
files (paths relative to the node directory), offering only the ``sftp``
subsystem; users log in with a password or a public key from the accounts
file (:mod:`.accounts`) and see their root directory as ``/``
(:mod:`.sftp_server`). Better than Tahoe: missing host key files are made
(an Ed25519 key) instead of stopping the node, password lines work, and a
session that asks for a shell or a command is told that only SFTP is offered
(:mod:`.sftp_session`).
"""
from __future__ import annotations

import hmac
import os
from typing import Any

from twisted.conch import checkers as conch_checkers
from twisted.conch.interfaces import IConchUser
from twisted.conch.ssh import factory, keys
from twisted.cred import checkers, credentials, error, portal
from twisted.internet import defer
from twisted.internet.endpoints import serverFromString
from twisted.python import log
from zope.interface import implementer

from ..node.fileutil import write_atomically
from .accounts import Account, AccountsError, parse_accounts
from .sftp_server import SFTPUser

__all__ = ["SFTPFrontendError", "start_sftp", "load_host_key"]


class SFTPFrontendError(Exception):
    """The SFTP frontend cannot start (the message says why)."""


@implementer(checkers.ICredentialsChecker)
class PasswordChecker:
    """Passwords of the accounts file, compared in constant time."""

    credentialInterfaces = (credentials.IUsernamePassword,)

    def __init__(self, accounts: dict[str, Account]) -> None:
        self._accounts = accounts

    def requestAvatarId(self, creds: Any) -> defer.Deferred:  # noqa: N802 (Twisted)
        """The account name, if one of its passwords matches."""
        name = creds.username.decode("utf-8", "replace")
        account = self._accounts.get(name)
        offered = creds.password
        if account is not None and any(hmac.compare_digest(offered, p.encode("utf-8"))
                                       for p in account.passwords):
            return defer.succeed(name.encode("utf-8"))
        return defer.fail(error.UnauthorizedLogin("wrong user name or password"))


@implementer(portal.IRealm)
class AccountRealm:
    """Makes the :class:`SFTPUser` of a logged-in account."""

    def __init__(self, accounts: dict[str, Account], services: Any, clock: Any) -> None:
        self._accounts = accounts
        self._services = services
        self._clock = clock

    def requestAvatar(self, avatar_id: bytes, mind: Any, *interfaces: Any  # noqa: N802
                      ) -> tuple[Any, SFTPUser, Any]:
        """The user for ``avatar_id`` (an account name)."""
        if IConchUser not in interfaces:
            raise NotImplementedError("only SSH users")
        account = self._accounts[avatar_id.decode("utf-8")]
        user = SFTPUser(self._services, account.root, account.name, self._clock)
        log.msg(f"SFTP user {account.name!r} logged in")
        return IConchUser, user, user.logout


def load_host_key(public_path: str, private_path: str) -> tuple[keys.Key, keys.Key]:
    """The host key pair, made (Ed25519) and written when neither file exists.

    :raises SFTPFrontendError: if the files cannot be read or made, or hold no key.
    """
    if not os.path.exists(private_path) and not os.path.exists(public_path):
        from cryptography.hazmat.primitives.asymmetric import ed25519
        key = keys.Key(ed25519.Ed25519PrivateKey.generate())
        try:
            os.makedirs(os.path.dirname(private_path) or ".", exist_ok=True)
            write_atomically(private_path, key.toString("openssh"), mode=0o600)
            write_atomically(public_path, key.public().toString("openssh") + b"\n")
        except OSError as e:
            raise SFTPFrontendError(f"cannot write the SFTP host key {private_path}: {e}") from None
        log.msg(f"made a new SFTP host key in {private_path}")
    try:
        return keys.Key.fromFile(public_path), keys.Key.fromFile(private_path)
    except (OSError, keys.BadKeyError, ValueError) as e:
        raise SFTPFrontendError(f"cannot read the SFTP host key ({public_path},"
                                f" {private_path}): {e}") from None


def read_accounts(path: str) -> dict[str, Account]:
    """The accounts file at ``path``, its public keys checked.

    :raises SFTPFrontendError: if it cannot be read or is malformed.
    """
    try:
        with open(path, encoding="utf-8") as f:
            accounts = parse_accounts(f)
    except (OSError, UnicodeDecodeError) as e:
        raise SFTPFrontendError(f"cannot read the SFTP accounts file {path}: {e}") from None
    except AccountsError as e:
        raise SFTPFrontendError(f"{path}: {e}") from None
    for account in accounts.values():
        for key in account.public_keys:
            try:
                keys.Key.fromString(key)
            except (keys.BadKeyError, ValueError) as e:
                raise SFTPFrontendError(f"{path}: account {account.name!r} has a public key"
                                        f" that cannot be read: {e}") from None
    return accounts


def _factory(accounts: dict[str, Account], services: Any, clock: Any,
             host_keys: tuple[keys.Key, keys.Key]) -> factory.SSHFactory:
    public, private = host_keys
    access = portal.Portal(AccountRealm(accounts, services, clock))
    key_db = {a.name.encode("utf-8"): [keys.Key.fromString(k) for k in a.public_keys]
              for a in accounts.values() if a.public_keys}
    access.registerChecker(conch_checkers.SSHPublicKeyChecker(
        conch_checkers.InMemorySSHKeyDB(key_db)))
    if any(a.passwords for a in accounts.values()):
        access.registerChecker(PasswordChecker(accounts))
    ssh = factory.SSHFactory()
    ssh.publicKeys = {public.sshType(): public}
    ssh.privateKeys = {private.sshType(): private}
    ssh.portal = access
    return ssh


async def start_sftp(reactor: Any, basedir: str, port: str, pubkey_file: str,
                     privkey_file: str, accounts_file: str, services: Any) -> Any:
    """Listen for SFTP clients; the listening port (``stopListening()`` to stop).

    :param basedir: the node directory (relative paths are taken from it).
    :raises SFTPFrontendError: if the keys or accounts cannot be used.
    """
    def path(name: str) -> str:
        return os.path.join(basedir, os.path.expanduser(name))
    host_keys = load_host_key(path(pubkey_file), path(privkey_file))
    accounts = read_accounts(path(accounts_file))
    endpoint = serverFromString(reactor, port)
    listening = await endpoint.listen(_factory(accounts, services, reactor, host_keys))
    log.msg(f"SFTP frontend listening on {port} ({len(accounts)} accounts)")
    return listening

"""The ``grid-manager`` command: Tahoe-LAFS 1.20's Grid Manager, file for file.

``grid-manager --config DIR COMMAND`` (or ``--config -``: the config JSON is
read from stdin and, when changed, written to stdout) with the commands
``create``, ``public-identity``, ``add NAME PUBKEY``, ``remove NAME``,
``list`` and ``sign NAME EXPIRY_DAYS``. ``DIR`` holds ``config.json`` (the
private key: the directory is made 0700 and the file is written 0600) and the
certificates ``NAME.cert.0``, ``NAME.cert.1``, … that ``sign`` wrote. Formats:
``docs/formats/grid-manager.md``; the user's guide: ``docs/managed-grid.md``.

Errors are ``Error: …`` lines on stderr and exit status 1, usage errors 2, as
1.20 (whose tracebacks for a bad key or a missing directory are messages here).
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import NoReturn, TextIO

from ..crypto.ed25519 import BadKeyString, SigningKey, parse_public_key
from ..grid_manager.certificate import (BadCertificate, expiry_after, format_certificate_file,
                                        parse_certificate_body, parse_certificate_file,
                                        sign_certificate)
from ..grid_manager.config import GridManagerConfig, format_config, parse_config
from ..grid_manager.errors import BadGridManagerConfig
from .errors import CLIError
from .gateway import ArgumentParser, HelpShown

__all__ = ["run", "main", "abbreviate_time"]

MAX_EXPIRY_DAYS = 5 * 365
DESCRIPTION = """\
A Tahoe Grid Manager issues certificates to storage-servers

A Tahoe client with one or more Grid Manager public keys configured will only
upload to a Storage Server that presents a valid certificate signed by one of
the configured Grid Manager keys.

Grid Manager configuration can be in a local directory or given via stdin. It
contains long-term secret information (a private signing key) and should be
kept safe."""


class GridManagerUsageError(CLIError):
    """A wrong command line (exit status 2, as 1.20's)."""

    exit_code = 2


class _Parser(ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise GridManagerUsageError(
            f"Usage: {self.format_usage().strip().removeprefix('usage: ')}\nError: {message}")


def abbreviate_time(seconds: float) -> str:
    """A time difference in words as 1.20's ``list`` shows it: positive is past
    (``… ago``), negative is future (``… in the future``)."""
    postfix = " ago" if seconds >= 0 else " in the future"
    s = abs(seconds)
    for limit, size, unit in ((120, 1, "second"), (3 * 3600, 60, "minute"),
                              (2 * 86400, 3600, "hour"), (60 * 86400, 86400, "day"),
                              (4 * 365 * 86400, 30 * 86400, "month")):
        if s < limit:
            break
    else:
        size, unit = 365 * 86400, "year"
    count = int(s / size)
    return f"{count} {unit}{'' if count == 1 else 's'}{postfix}"


class _Store:
    """Where the config lives: a directory, or stdin/stdout for ``--config -``."""

    def __init__(self, location: str, stdin: TextIO, stdout: TextIO) -> None:
        self.location = location
        self.directory = None if location == "-" else os.path.abspath(location)
        self._stdin = stdin
        self._stdout = stdout

    def load(self) -> GridManagerConfig:
        try:
            if self.directory is None:
                text = self._stdin.read()
            else:
                with open(os.path.join(self.directory, "config.json"), encoding="utf-8") as f:
                    text = f.read()
            config = parse_config(text)
            for name in config.names():
                self.certificates(name)
            return config
        except (OSError, BadGridManagerConfig, BadCertificate) as error:
            raise CLIError(f"Error: Error loading Grid Manager from '{self.location}':"
                           f" {_describe(error)}") from None

    def save(self, config: GridManagerConfig, create: bool = False) -> None:
        text = format_config(config)
        if self.directory is None:
            self._stdout.write(text + "\n")
            return
        if create:
            try:
                os.makedirs(self.directory)
                os.chmod(self.directory, 0o700)
            except OSError as error:
                raise CLIError(f"Error: Can't create '{self.location}': {error}") from None
        path = os.path.join(self.directory, "config.json")
        temporary = path + ".tmp"
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.fchmod(descriptor, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(temporary, path)
        except OSError as error:
            raise CLIError(f"Error: Can't write '{path}': {error}") from None

    def certificate_paths(self, name: str) -> list[str]:
        """The existing ``NAME.cert.N`` files, N = 0, 1, … up to the first gap."""
        paths: list[str] = []
        if self.directory is None:
            return paths
        while os.path.exists(path := os.path.join(self.directory, f"{name}.cert.{len(paths)}")):
            paths.append(path)
        return paths

    def certificates(self, name: str) -> list[datetime]:
        """The expiry of each of ``name``'s certificate files, in order."""
        expiries = []
        for path in self.certificate_paths(name):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            try:
                expiries.append(parse_certificate_body(parse_certificate_file(text).certificate
                                                       ).expires)
            except BadCertificate as error:
                raise BadCertificate(f"{path}: {error}") from None
        return expiries


def _describe(error: BaseException) -> str:
    if isinstance(error, FileNotFoundError):
        return f"no such file: {error.filename}"
    return str(error)


def _create(store: _Store) -> None:
    store.save(GridManagerConfig(SigningKey(os.urandom(32))), create=True)


def _public_identity(store: _Store, stdout: TextIO) -> None:
    stdout.write(store.load().public_identity() + "\n")


def _add(store: _Store, name: str, public_key: str) -> None:
    config = store.load()
    try:
        key = parse_public_key(public_key)
    except BadKeyString as error:
        raise CLIError(f"Error: '{public_key}' is not a storage server's public key"
                       f" (pub-v0-…, as in its node.pubkey): {error}") from None
    try:
        config = config.with_server(name, key)
    except KeyError:
        raise CLIError(f"Error: A storage-server called '{name}' already exists") from None
    except BadGridManagerConfig as error:
        raise CLIError(f"Error: {error}") from None
    store.save(config)


def _remove(store: _Store, name: str) -> None:
    config = store.load()
    try:
        config = config.without_server(name)
    except KeyError:
        raise CLIError(f"Error: No storage-server called '{name}' exists") from None
    for path in store.certificate_paths(name):
        os.remove(path)
    store.save(config)


def _list(store: _Store, stdout: TextIO, now: datetime) -> None:
    config = store.load()
    for name in sorted(config.names()):
        stdout.write(f"{name}: {config.server_key(name).to_string()}\n")
        for index, expires in enumerate(store.certificates(name)):
            delta = (now - expires).total_seconds()
            state = "valid until" if delta < 0 else "expired"
            stdout.write(f"{' ' * len(name)}  cert {index}: {state} {expires}"
                         f" ({abbreviate_time(delta)})\n")


def _sign(store: _Store, stdout: TextIO, name: str, days: int, now: datetime) -> None:
    config = store.load()
    try:
        key = config.server_key(name)
    except KeyError:
        raise CLIError(f"Error: No storage-server called '{name}' exists") from None
    text = format_certificate_file(sign_certificate(config.private_key, key,
                                                    expiry_after(now, days)))
    stdout.write(text + "\n")
    if store.directory is None:
        return
    for index in range(len(store.certificate_paths(name)), 1_000_000):
        path = os.path.join(store.directory, f"{name}.cert.{index}")
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        except OSError as error:
            raise CLIError(f"Error: {name}.cert.{index}: {error}") from None
        with os.fdopen(descriptor, "w", encoding="utf-8") as f:
            f.write(text)
        return


def _expiry_days(text: str) -> int:
    try:
        days = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a valid integer.") from None
    if not 1 <= days <= MAX_EXPIRY_DAYS:
        raise argparse.ArgumentTypeError(
            f"{days} is not in the range 1<=x<={MAX_EXPIRY_DAYS}.")
    return days


def _parser(stdout: TextIO) -> ArgumentParser:
    parser = _Parser(stdout, prog="grid-manager", description=DESCRIPTION,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", "-c", required=True, metavar="PATH",
                        help="Configuration directory (or - for stdin)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                     parser_class=lambda **kw: _Parser(stdout, **kw))
    commands.add_parser("create", help="Make a new Grid Manager",
                        description="Make a new Grid Manager")
    commands.add_parser("public-identity", help="Show the public identity key of a Grid Manager",
                        description="Show the public identity key of a Grid Manager. This is"
                        " what you give to clients to add to their configuration so they use"
                        " announcements from this Grid Manager.")
    add = commands.add_parser("add", help="Add a new storage-server by name to a Grid Manager",
                              description="Add a new storage-server by name to a Grid Manager."
                              " PUBLIC_KEY is the contents of a node.pubkey file from a Tahoe"
                              " node-directory. NAME is an arbitrary label.")
    add.add_argument("name", metavar="NAME")
    add.add_argument("public_key", metavar="PUBLIC_KEY")
    remove = commands.add_parser("remove", help="Remove an existing storage-server by name"
                                 " from a Grid Manager", description="Remove an existing"
                                 " storage-server by name, and its certificates")
    remove.add_argument("name", metavar="NAME")
    commands.add_parser("list", help="List all storage-servers known to a Grid Manager",
                        description="List all storage-servers known to a Grid Manager")
    sign = commands.add_parser("sign", help="sign a new certificate",
                               description="Sign a new certificate for NAME, valid for"
                               f" EXPIRY_DAYS days (1 to {MAX_EXPIRY_DAYS})")
    sign.add_argument("name", metavar="NAME")
    sign.add_argument("expiry_days", metavar="EXPIRY_DAYS", type=_expiry_days)
    return parser


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str],
        stdin: TextIO | None = None, now: datetime | None = None) -> int:
    """Run ``grid-manager`` with ``argv`` (without the program name); the exit status.

    :param stdin: where ``--config -`` reads the config (default ``sys.stdin``).
    :param now: the current time (timezone-aware; default: the clock's UTC time).
    """
    stdin = sys.stdin if stdin is None else stdin
    now = datetime.now(timezone.utc) if now is None else now
    try:
        args = _parser(stdout).parse_args(argv)
        store = _Store(args.config, stdin, stdout)
        if args.command == "create":
            _create(store)
        elif args.command == "public-identity":
            _public_identity(store, stdout)
        elif args.command == "add":
            _add(store, args.name, args.public_key)
        elif args.command == "remove":
            _remove(store, args.name)
        elif args.command == "list":
            _list(store, stdout, now)
        else:
            _sign(store, stdout, args.name, args.expiry_days, now)
        return 0
    except HelpShown:
        return 0
    except CLIError as error:
        stderr.write(f"{error}\n")
        return error.exit_code


def main() -> None:
    """Console-script entry point of ``grid-manager``."""
    sys.exit(run(sys.argv[1:], sys.stdout, sys.stderr, os.environ))


if __name__ == "__main__":
    main()

"""``tahoe s3 add-account [--root ALIAS:PATH] [--access-key-id ID]``: an S3 gateway account.

An account is a line ``ACCESS_KEY_ID SECRET_ACCESS_KEY ROOTCAP`` of the node's
S3 accounts file (``[s3]accounts.file``, ``private/s3-accounts`` by default;
``docs/s3.md``). This command:

* makes a new directory for the account's root through the node's web API
  (``POST /uri?t=mkdir``), or, with ``--root``, uses the directory named
  (an alias, a cap, with a path: made, with its parents, if missing);
* makes a new access key id (20 upper-case letters and digits, or the one
  given) and secret (40 characters);
* appends the line to the accounts file, creating it with mode 0600 (an
  existing file readable by others is refused: it holds secrets);
* prints ``access_key_id = ...``, ``secret_access_key = ...`` and, when the
  gateway runs, ``endpoint_url = ...`` (from ``NODEDIR/s3.url``).

A running gateway reads the file again at the first request with an access
key it does not know: no restart is needed. Standard library only.
"""
from __future__ import annotations

import argparse
import configparser
import json
import os
import re
import secrets
import stat
from collections.abc import Mapping
from typing import TextIO

from .aliases import resolve_path
from .errors import CLIError, UsageError
from .gateway import ArgumentParser, Gateway, gateway_from_args, node_directory
from .remote import call_ok, new_parser, object_path, run_command, write_line

__all__ = ["run", "new_access_key_id", "new_secret", "accounts_file"]

CONTEXT = "Error during HTTP request"
DEFAULT_ACCOUNTS_FILE = "private/s3-accounts"
_KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_SECRET_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_ACCESS_KEY = re.compile(r"[A-Za-z0-9]{3,128}\Z")
_HEADER = ("# S3 gateway accounts: ACCESS_KEY_ID SECRET_ACCESS_KEY ROOTCAP, one a line.\n"
           "# Keep this file secret (mode 0600): each line is the authority of its root"
           " directory.\n")


def new_access_key_id() -> str:
    """A new access key id: ``TS3`` and 17 random upper-case letters and digits."""
    return "TS3" + "".join(secrets.choice(_KEY_ALPHABET) for _ in range(17))


def new_secret() -> str:
    """A new secret access key: 40 random characters of base64's alphabet (238 bits)."""
    return "".join(secrets.choice(_SECRET_ALPHABET) for _ in range(40))


def accounts_file(nodedir: str) -> str:
    """The accounts file ``tahoe.cfg`` names (``[s3]accounts.file``), as a path."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read(os.path.join(nodedir, "tahoe.cfg"), encoding="utf-8-sig")
        name = parser.get("s3", "accounts.file", fallback="").strip()
    except (configparser.Error, UnicodeDecodeError) as e:
        raise CLIError(f"Error: cannot read {os.path.join(nodedir, 'tahoe.cfg')}: {e}") \
            from None
    return os.path.join(nodedir, os.path.expanduser(name or DEFAULT_ACCOUNTS_FILE))


def _existing_keys(path: str) -> set[str]:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return set()
    except OSError as e:
        raise CLIError(f"Error: cannot read the S3 accounts file {path}: {e.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise CLIError(f"Error: the S3 accounts file {path} may be read by other users"
                       f" (mode {stat.S_IMODE(mode):04o}); it holds secrets. Run"
                       f" 'chmod 600 {path}' first.")
    try:
        with open(path, encoding="utf-8") as f:
            return {line.split()[0] for line in f
                    if line.strip() and not line.lstrip().startswith("#")}
    except (OSError, UnicodeDecodeError) as e:
        raise CLIError(f"Error: cannot read the S3 accounts file {path}: {e}") from None


def _append(path: str, line: str) -> None:
    """Add ``line`` to the accounts file, whole or not at all
    (:func:`~tahoe.node.fileutil.append_line`: never a cut line that would keep the
    gateway from starting; two commands at once both add theirs).

    :raises CLIError: when the file cannot be written (nothing was added).
    """
    from ..node.fileutil import append_line
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        append_line(path, line, mode=0o600, header=_HEADER)
    except (OSError, UnicodeDecodeError) as e:
        raise CLIError(f"Error: cannot write the S3 accounts file {path}:"
                       f" {getattr(e, 'strerror', None) or e}; no account was added") from None


def _root_cap(args: argparse.Namespace, gateway: Gateway) -> str:
    """The write cap of the account's root: a new directory, or the one ``--root`` names."""
    made = range(200, 300)
    if not args.root:
        cap = call_ok(gateway, "POST", "uri?t=mkdir", context=CONTEXT, accept=made)
    else:
        root_cap, path = resolve_path(gateway.aliases(), args.root)
        path = path.rstrip("/")
        if path:
            cap = call_ok(gateway, "POST", object_path(root_cap, path) + "?t=mkdir",
                          context=CONTEXT, accept=made)
        else:
            data = call_ok(gateway, "GET", object_path(root_cap) + "?t=json", context=CONTEXT,
                           accept=(200,))
            try:
                kind, info = json.loads(data)
                cap = (info.get("rw_uri") or "").encode() if kind == "dirnode" else b""
            except (ValueError, TypeError, AttributeError):
                cap = b""
    text = cap.decode("utf-8", "replace").strip()
    if not text.startswith(("URI:DIR2:", "URI:DIR2-MDMF:")):
        raise CLIError(f"Error: {args.root or 'the new directory'} is not a writable"
                       " directory; an account's root must be one.")
    return text


def _add_account(args: argparse.Namespace, parser: ArgumentParser, stdout: TextIO,
                 stderr: TextIO, env: Mapping[str, str]) -> int:
    if args.command != "add-account":
        parser.fail("a command is required: add-account")
    access_key = args.access_key_id or new_access_key_id()
    if not _ACCESS_KEY.match(access_key):
        raise UsageError("--access-key-id must be 3 to 128 letters and digits")
    nodedir = node_directory(args.node_directory, env)
    path = accounts_file(nodedir)
    if access_key in _existing_keys(path):
        raise CLIError(f"Error: the access key id {access_key} is in {path} already")
    gateway = gateway_from_args(args, env, parser)
    root = _root_cap(args, gateway)
    secret = new_secret()
    _append(path, f"{access_key} {secret} {root}\n")
    write_line(stdout, f"access_key_id = {access_key}")
    write_line(stdout, f"secret_access_key = {secret}")
    try:
        with open(os.path.join(nodedir, "s3.url"), encoding="utf-8") as f:
            url = f.readline().strip()
    except OSError:
        url = ""
    if url:
        write_line(stdout, f"endpoint_url = {url}")
    elif not _s3_enabled(nodedir):
        stderr.write("Note: [s3] enabled = true is not set in tahoe.cfg: add it and restart"
                     " the node to serve S3.\n")
    return 0


def _s3_enabled(nodedir: str) -> bool:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read(os.path.join(nodedir, "tahoe.cfg"), encoding="utf-8-sig")
        return parser.get("s3", "enabled", fallback="").strip().lower() in (
            "true", "yes", "on", "1")
    except (configparser.Error, UnicodeDecodeError):
        return False


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe s3 add-account``: 0 on success, 1 on any error."""
    parser = new_parser(stdout, "s3", "add-account [--root ALIAS:PATH] [--access-key-id ID]",
                        "Manage the S3 gateway's accounts.\n\n"
                        "add-account: make an account whose buckets are the subdirectories"
                        " of a new directory (or of the one --root names), append it to the"
                        " accounts file and print its keys.")
    parser.add_argument("command", nargs="?", metavar="COMMAND", help="add-account")
    parser.add_argument("--root", metavar="ALIAS:PATH",
                        help="use this directory as the account's root (made if missing)")
    parser.add_argument("--access-key-id", metavar="ID",
                        help="the access key id (letters and digits) [default: a new one]")
    return run_command(parser, argv, stderr,
                       lambda args: _add_account(args, parser, stdout, stderr, env))

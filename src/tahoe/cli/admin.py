"""``tahoe admin``: ``generate-keypair``, ``derive-pubkey`` and ``migrate-crawler``.

``generate-keypair`` prints a new Ed25519 key pair and ``derive-pubkey PRIVKEY``
the pair of a given private key, both as Tahoe-LAFS 1.20 does: the lines
``private: priv-v0-…`` and ``public: pub-v0-…`` (the forms of
``private/node.privkey`` and ``node.pubkey``). A malformed key is an error with
a message rather than Tahoe's traceback.

``add-grid-manager-cert --name NAME --filename FILE`` (``-`` for stdin) gives a
storage server a Grid Manager certificate as 1.20 does: the certificate is
checked, written to ``NAME.cert`` in the node directory, and ``tahoe.cfg`` gains
``[storage] grid_management = True`` and ``[grid_manager_certificates] NAME =
NAME.cert`` (the node announces it from its next start;
``docs/formats/grid-manager.md``).

``migrate-crawler`` converts a storage node's pickled crawler state to JSON.

Tahoe-LAFS before 1.17 kept the crawlers' state (``storage-protocol.md``
§4.7) as Python pickles named without ``.json``; a node refuses to start
while one is there, and this command converts each into its ``.json`` file
and removes the pickle. Only plain data is accepted from a pickle (dicts,
lists, tuples, sets, text, bytes, numbers): anything else stops the conversion of
that file with an error and leaves it in place. Standard library only.
"""
from __future__ import annotations

import codecs
import functools
import io
import json
import os
import pickle
from collections.abc import Mapping
from typing import Any, TextIO

from ..storage.crawl_state import LEGACY_STATE_FILES, json_safe
from .errors import CLIError
from .gateway import ArgumentParser, HelpShown, node_directory, report

__all__ = ["run", "migrate_crawler", "keypair_lines", "add_grid_manager_cert"]

#: What a pickle of plain data may name: sets, and the codec call that
#: protocol-2 pickles use for byte strings.
_PLAIN = {("builtins", "set"): set, ("builtins", "frozenset"): frozenset,
          ("__builtin__", "set"): set, ("__builtin__", "frozenset"): frozenset,
          ("_codecs", "encode"): codecs.encode}


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _PLAIN:
            return _PLAIN[module, name]
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: not plain data")


class MigrationError(CLIError):
    """A state file could not be converted."""


def _storage_dir(basedir: str) -> str:
    from ..node.errors import ConfigError, NodeDirectoryError
    from ..node.nodedir import read_node_directory
    try:
        nodedir = read_node_directory(basedir)
    except (ConfigError, NodeDirectoryError) as error:
        raise MigrationError(str(error)) from None
    return nodedir.config_path(nodedir.config.storage.storage_dir)


def migrate_crawler(storage_dir: str, out: TextIO) -> int:
    """Convert every legacy state file in ``storage_dir``; the number converted."""
    converted = 0
    for name in LEGACY_STATE_FILES:
        old = os.path.join(storage_dir, name)
        if not os.path.exists(old):
            continue
        try:
            with open(old, "rb") as f:
                state = _PlainUnpickler(io.BytesIO(f.read()), encoding="latin-1").load()
        except (OSError, pickle.UnpicklingError, EOFError, ValueError, AttributeError) as error:
            raise MigrationError(f"cannot convert {old}: {error}") from None
        new = old + ".json"
        tmp = new + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(json_safe(state), f, sort_keys=True)
        os.replace(tmp, new)
        os.remove(old)
        out.write(f"Migrated {old} to {new}\n")
        converted += 1
    return converted


def keypair_lines(private_key: str | None = None) -> str:
    """``private: …`` and ``public: …`` for ``private_key`` (``priv-v0-…``), or for a new
    random key when None.

    :raises CLIError: if ``private_key`` is not a private key in Tahoe's form.
    """
    from ..crypto.ed25519 import Ed25519Error, SigningKey, parse_private_key
    if private_key is None:
        key = SigningKey(os.urandom(32))
    else:
        try:
            key = parse_private_key(private_key.strip())
        except Ed25519Error as error:
            raise CLIError(f"Error: not a private key of the form priv-v0-…: {error}") from None
    return f"private: {key.to_string()}\npublic: {key.public_key.to_string()}\n"


def add_grid_manager_cert(basedir: str, name: str, text: str, stderr: TextIO) -> int:
    """Install the certificate ``text`` under ``name`` in the node at ``basedir``.

    :returns: 0, or 1 when the node has a certificate of that name already
        (Tahoe's message on ``stderr``).
    :raises CLIError: for a bad name, a malformed certificate or a directory
        that is not a node's.
    """
    from ..grid_manager.certificate import parse_certificate_file
    from ..grid_manager.errors import BadCertificate
    from ..node.config import read_ini
    from .grid_create import set_config_value
    if not name or name != name.strip() or any(c in name for c in "/=:[]#;\0") \
            or any(ord(c) < 32 for c in name) or name in (".", ".."):
        raise CLIError(f"Error: bad certificate name {name!r}: it names a file NAME.cert and a"
                       " key of tahoe.cfg, so it may not be empty or hold '/', '=', ':', '#',"
                       " ';', brackets, spaces at its ends or control characters")
    try:
        parse_certificate_file(text)
        data = json.loads(text)
    except BadCertificate as error:
        raise CLIError(f"Error parsing certificate: {error}") from None
    cfg = os.path.join(basedir, "tahoe.cfg")
    if not os.path.isfile(cfg):
        raise CLIError(f"Error: {basedir} is not a node directory (it has no tahoe.cfg)")
    path = os.path.join(basedir, f"{name}.cert")
    if os.path.exists(path):
        stderr.write(f"Already have certificate for '{name}' (at {path})\n")
        return 1
    set_config_value(cfg, "storage", "grid_management", "True")
    set_config_value(cfg, "grid_manager_certificates", name, f"{name}.cert")
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(data, indent=4) + "\n")
    with open(cfg, encoding="utf-8") as f:
        count = len(read_ini(f.read(), cfg).get("grid_manager_certificates", {}))
    stderr.write(f"There are now {count} certificates\n")
    return 0


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str],
        stdin: TextIO | None = None) -> int:
    """``tahoe admin generate-keypair | derive-pubkey PRIVKEY | migrate-crawler
    [--basedir DIR | NODEDIR]``: 0, or 1 with a message."""
    parser = ArgumentParser(stdout, prog="tahoe admin",
                            description="Administrative commands for a node directory.")
    parser.add_argument("--node-directory", "-d", help="the node directory")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND",
                                     parser_class=functools.partial(ArgumentParser, stdout))
    commands.add_parser(
        "generate-keypair", help="generate a public/private keypair",
        description="Generate a public/private keypair, dumped to stdout as two lines of"
        " ASCII.")
    derive = commands.add_parser(
        "derive-pubkey", help="derive a public key from a private key",
        description="Given a private (signing) key that was previously generated with"
        " generate-keypair, derive the public key and print it to stdout.")
    derive.add_argument("privkey", metavar="PRIVKEY")
    migrate = commands.add_parser(
        "migrate-crawler", help="convert pickled crawler state (Tahoe < 1.17) to JSON",
        description="Convert the storage crawlers' pickled state files of Tahoe-LAFS before"
        " 1.17 into the JSON files this version reads.")
    migrate.add_argument("--basedir", "-C", help="the node directory (Tahoe's spelling)")
    migrate.add_argument("nodedir", nargs="?", help="the node directory [default: ~/.tahoe]")
    certificate = commands.add_parser(
        "add-grid-manager-cert", help="add a Grid Manager certificate to a storage server",
        description="Adds a Grid Manager certificate to a Storage Server. The certificate is"
        " copied into the node directory and tahoe.cfg gains its entry; restart the node for"
        " it to take effect. The operator of a Grid Manager produces the certificate with"
        " 'grid-manager sign' and hands it to you securely.")
    certificate.add_argument("--filename", "-f", required=True,
                             help="the certificate's file ('-', a dash, for stdin)")
    certificate.add_argument("--name", "-n", required=True,
                             help="the name to give this certificate")
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 1
        if args.command in ("generate-keypair", "derive-pubkey"):
            stdout.write(keypair_lines(getattr(args, "privkey", None)))
            return 0
        if args.command == "add-grid-manager-cert":
            return _add_certificate_command(args, stdin, stderr, env)
        basedir = node_directory(args.basedir or args.nodedir or args.node_directory, env)
        if migrate_crawler(_storage_dir(basedir), stdout) == 0:
            stdout.write("Nothing to migrate: no pickled crawler state found.\n")
        return 0
    except HelpShown:
        return 0
    except CLIError as error:
        return report(error, stderr)


def _add_certificate_command(args: Any, stdin: TextIO | None, stderr: TextIO,
                             env: Mapping[str, str]) -> int:
    import sys
    if args.filename == "-":
        stderr.write("reading certificate from stdin\n")
        text = (sys.stdin if stdin is None else stdin).read()
        if not text:
            raise CLIError("Error: Reading certificate from stdin failed (nothing was read)")
    else:
        try:
            with open(args.filename, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as error:
            raise CLIError(f"Error: cannot read certificate {args.filename}: {error}") from None
    return add_grid_manager_cert(node_directory(args.node_directory, env), args.name, text,
                                 stderr)

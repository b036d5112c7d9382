"""``tahoe debug``: look inside caps and share files, and damage shares for testing.

Subcommands, with Tahoe-LAFS 1.20's options and output (``scripts/debug.py``):

* ``dump-share [--offsets] [--leases-only] SHARE_FILENAME``: a share's
  container, leases, encoding parameters, hashes and verify cap
  (:mod:`.debug_share`);
* ``dump-cap [-n NODEID] [-c SECRET | -d CLIENT_DIR] CAP``: a cap's fields and
  the secrets derived from it (:mod:`.debug_cap`);
* ``find-shares STORAGE_INDEX NODEDIRS…``: the share files of a storage index
  in each node directory, one path a line;
* ``catalog-shares NODEDIRS…``: a one-line summary of every share in the node
  directories (for finding shares of one file that disagree);
* ``corrupt-share [--offset block-random|N] SHARE_FILENAME``: flip one bit of a
  share's block data (immutable, SDMF or MDMF), saying which.

Better than Tahoe: shares are found in the node's configured
``[storage]storage_dir``, ``find-shares`` lists share numbers in order,
``corrupt-share`` flips the bit it names (Tahoe always flips bit 0) and also
takes MDMF shares and a byte offset, and bad input (a missing file, a file
that is no share, a malformed storage index) gets a one-line error instead of
a traceback. ``repl``, ``trial`` and ``flogtool`` are not provided.
Standard library (and our pure cores) only.
"""
from __future__ import annotations

import argparse
import configparser
import functools
import os
import random
import time
from collections.abc import Mapping
from typing import TextIO

from ..util import base32
from ..storage.errors import StorageError
from .aliases import quote_output
from .errors import CLIError, UsageError
from .gateway import ArgumentParser, HelpShown, report

__all__ = ["run", "shares_dir", "find_shares", "corrupt_share", "block_data_range"]


def shares_dir(nodedir: str) -> str:
    """``storage/shares`` of a node directory, under its ``[storage]storage_dir`` if set."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(os.path.join(nodedir, "tahoe.cfg"), encoding="utf-8-sig")
        storage = parser.get("storage", "storage_dir", fallback="").strip() or "storage"
    except (configparser.Error, UnicodeDecodeError):
        storage = "storage"
    return os.path.join(nodedir, os.path.expanduser(storage), "shares")


def _share_numbers(directory: str) -> list[str]:
    """The share files in a storage index's directory, by share number."""
    names = os.listdir(directory)
    return sorted(names, key=lambda name: (not name.isdigit(), int(name) if name.isdigit() else 0,
                                           name))


def find_shares(si_b32: str, nodedirs: list[str], out: TextIO) -> int:
    """Print the path of every share of ``si_b32`` in ``nodedirs``; 0.

    :raises CLIError: if ``si_b32`` is not a storage index.
    """
    if not base32.is_canonical(si_b32) or len(base32.a2b(si_b32)) != 16:
        raise CLIError(f"Error: {quote_output(si_b32)} is not a storage index"
                       " (26 base32 characters)")
    for nodedir in nodedirs:
        directory = os.path.join(shares_dir(nodedir), si_b32[:2], si_b32)
        if os.path.isdir(directory):
            for name in _share_numbers(directory):
                out.write(quote_output(os.path.join(directory, name), quotemarks=False) + "\n")
    return 0


def catalog_shares(nodedirs: list[str], out: TextIO, err: TextIO, now: float) -> int:
    """Print one line per share in ``nodedirs`` (see :func:`.debug_share.describe_share`);
    problems with single files go to ``err`` and the walk goes on. 0."""
    from .debug_share import describe_share
    for nodedir in nodedirs:
        top = shares_dir(nodedir)
        try:
            prefixes = sorted(os.listdir(top))
        except OSError:
            continue  # a node without storage
        for prefix in prefixes:
            if prefix == "incoming":
                continue
            try:
                storage_indexes = sorted(os.listdir(os.path.join(top, prefix)))
            except OSError as error:
                err.write(f"Error processing {quote_output(os.path.join(top, prefix))}:"
                          f" {error}\n")
                continue
            for si_b32 in storage_indexes:
                directory = os.path.join(top, prefix, si_b32)
                try:
                    names = _share_numbers(directory)
                except OSError as error:
                    err.write(f"Error processing {quote_output(directory)}: {error}\n")
                    continue
                for name in names:
                    path = os.path.join(directory, name)
                    try:
                        out.write(describe_share(path, si_b32, now) + "\n")
                    except (OSError, StorageError, ValueError) as error:
                        err.write(f"Error processing {quote_output(path)}: {error}\n")
    return 0


def block_data_range(path: str) -> tuple[int, int]:
    """The file offsets ``[start, end)`` of a share's block data.

    :raises OSError: if it cannot be read.
    :raises StorageError: if it is no share container.
    :raises ValueError: (a format error) if its layout is malformed.
    """
    from ..immutable.layout import MAX_HEADER_SIZE, parse_header
    from ..mutable.layout import MAX_HEADER_SIZE as MUTABLE_HEADER_SIZE
    from ..mutable.layout import parse_header as parse_mutable_header
    from ..storage.immutable_container import DATA_OFFSET as IMMUTABLE_DATA_OFFSET
    from ..storage.mutable_container import DATA_OFFSET
    from .debug_share import open_share
    with open_share(path) as (kind, container):
        if kind.value == "immutable":
            layout = parse_header(container.read_share_data(0, MAX_HEADER_SIZE))
            return (IMMUTABLE_DATA_OFFSET + layout.data,
                    IMMUTABLE_DATA_OFFSET + layout.plaintext_hash_tree)
        header = parse_mutable_header(container.read_share_data(0, MUTABLE_HEADER_SIZE))
        start, length = header.share_data_range()
        return DATA_OFFSET + start, DATA_OFFSET + start + length


def corrupt_share(path: str, offset: str, out: TextIO, rng: random.Random) -> int:
    """Flip one bit of the share at ``path``: a random one of its block data
    (``offset="block-random"``) or a random bit of the byte at file offset ``offset``.
    Prints ``[start..end):  OFFSET.bBIT``; 0.

    :raises CLIError: for a bad offset, an empty block-data area, or an unreadable share.
    """
    if offset == "block-random":
        start, end = block_data_range(path)
    elif offset.isdigit():
        start = int(offset)
        end = start + 1
        if end > os.path.getsize(path):
            raise CLIError(f"Error: offset {start} is past the end of {quote_output(path)}")
    else:
        raise UsageError(f"Error: --offset must be 'block-random' or a byte offset, not"
                         f" {quote_output(offset)}")
    if end <= start:
        raise CLIError(f"Error: {quote_output(path)} holds no block data to corrupt")
    where = rng.randrange(start, end)
    bit = rng.randrange(8)
    out.write(f"[{start}..{end}):  {where}.b{bit}\n")
    with open(path, "r+b") as f:
        f.seek(where)
        byte = f.read(1)
        f.seek(where)
        f.write(bytes([byte[0] ^ (1 << bit)]))
    return 0


def _parser(stdout: TextIO) -> ArgumentParser:
    parser = ArgumentParser(stdout, prog="tahoe debug", usage="tahoe [global-options] debug"
                            " COMMAND", description="Debug subcommands. Please run e.g."
                            " 'tahoe debug dump-share --help' for more details on each.")
    parser.add_argument("-d", "--node-directory", help=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND",
                                     parser_class=functools.partial(ArgumentParser, stdout))
    dump = commands.add_parser("dump-share", help="unpack and display the contents of a share"
                               " (uri_extension and leases)")
    dump.add_argument("--offsets", action="store_true", help="display a table of section offsets")
    dump.add_argument("--leases-only", action="store_true",
                      help="dump leases but not CHK contents")
    dump.add_argument("filename", metavar="SHARE_FILENAME")
    cap = commands.add_parser("dump-cap", help="unpack a read-cap or write-cap")
    cap.add_argument("-n", "--nodeid", help="the storage server nodeid (ASCII), to construct"
                     " WE and secrets")
    cap.add_argument("-c", "--client-secret", help="the client's base secret (ASCII), to"
                     " construct secrets")
    cap.add_argument("-d", "--client-dir", help="the client's base directory, from which a -c"
                     " secret will be read")
    cap.add_argument("cap", metavar="CAP")
    find = commands.add_parser("find-shares", help="locate sharefiles in node dirs")
    find.add_argument("storage_index", metavar="STORAGE_INDEX")
    find.add_argument("nodedirs", nargs="*", metavar="NODEDIRS")
    catalog = commands.add_parser("catalog-shares", help="describe all shares in node dirs")
    catalog.add_argument("nodedirs", nargs="*", metavar="NODEDIRS")
    corrupt = commands.add_parser("corrupt-share", help="corrupt a share by flipping a bit")
    corrupt.add_argument("-o", "--offset", default="block-random",
                         help="which bit to flip: 'block-random' (a random bit of the block"
                         " data) or a byte offset in the file [default: block-random]")
    corrupt.add_argument("filename", metavar="SHARE_FILENAME")
    return parser


def _dispatch(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    if args.command == "dump-share":
        from .debug_share import dump_share
        stdout.write(dump_share(os.path.abspath(args.filename), time.time(), args.offsets,
                                args.leases_only))
        return 0
    if args.command == "dump-cap":
        from .debug_cap import cap_from_argument, dump_cap, nodeid_from_option, secret_from_options
        stdout.write(dump_cap(cap_from_argument(args.cap),
                              secret_from_options(args.client_secret, args.client_dir),
                              nodeid_from_option(args.nodeid)))
        return 0
    if args.command == "find-shares":
        return find_shares(args.storage_index, [os.path.abspath(d) for d in args.nodedirs],
                           stdout)
    if args.command == "catalog-shares":
        if not args.nodedirs:
            raise UsageError("Error: must specify at least one node directory")
        return catalog_shares([os.path.abspath(d) for d in args.nodedirs], stdout, stderr,
                              time.time())
    return corrupt_share(args.filename, args.offset, stdout, random.Random())


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe debug COMMAND …``: 0, or 1 with a message."""
    parser = _parser(stdout)
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 1
        try:
            return _dispatch(args, stdout, stderr)
        except OSError as error:
            name = getattr(args, "filename", None) or error.filename or ""
            raise CLIError(f"Error: cannot read {quote_output(str(name))}:"
                           f" {error.strerror or error}") from None
        except (StorageError, ValueError) as error:
            name = getattr(args, "filename", None) or getattr(args, "cap", "")
            raise CLIError(f"Error: {quote_output(str(name))} is not usable: {error}") from None
    except HelpShown:
        return 0
    except CLIError as error:
        return report(error, stderr)


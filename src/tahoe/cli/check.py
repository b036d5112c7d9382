"""``tahoe check [--add-lease] [--raw] [LOCATION…]``: where the shares of files and directories are.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.3): for each location
(default ``tahoe:``) ``POST /uri/<root>/<path>?t=check&output=JSON`` (with
``&add-lease=true`` for ``--add-lease``, which renews the client's leases),
then prints::

    Summary: <summary>
     storage index: <si>
     good-shares: G (encoding is k-of-N)
     wrong-shares: W

and the corrupt shares, if any; a literal file prints ``Healthy (LIT)`` and
an empty storage index. ``--raw`` prints the JSON. ``--verify`` and
``--repair`` are accepted and passed on (the gateway refuses them for now).
A failed request prints ``ERROR: <status> <reason>`` and the body; exit 1.
Standard library only.
"""
from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any, TextIO

from .aliases import resolve_path
from .errors import HTTPStatusError
from .gateway import gateway_from_args
from .remote import ERROR_BODY_LIMIT, call, new_parser, object_path, run_command

__all__ = ["add_check_options", "check_flags", "format_results", "run"]

CONTEXT = "ERROR"


def format_results(data: Mapping[str, Any]) -> str:
    """The lines ``tahoe check`` prints for one ``t=check`` JSON object (with or without
    ``repair=true``)."""
    if "pre-repair-results" in data:
        return _format_repair(data)
    results = data["results"]
    lines = [f"Summary: {data.get('summary', 'Healthy (LIT)')}",
             f" storage index: {data['storage-index']}"]
    if all(key in results for key in ("count-shares-good", "count-shares-needed",
                                      "count-shares-expected", "count-wrong-shares")):
        lines.append(f" good-shares: {results['count-shares-good']!r} (encoding is "
                     f"{results['count-shares-needed']!r}-of-{results['count-shares-expected']!r})")
        lines.append(f" wrong-shares: {results['count-wrong-shares']!r}")
    corrupt = _corrupt_lines(results, "  ")
    if corrupt:
        lines += [" corrupt shares:", *corrupt]
    return "\n".join(lines) + "\n"


def add_check_options(parser: argparse.ArgumentParser) -> None:
    """``--raw``, ``--verify``, ``--repair`` and ``--add-lease`` (check and deep-check)."""
    parser.add_argument("--raw", action="store_true",
                        help="display raw JSON data instead of parsed")
    parser.add_argument("--verify", action="store_true",
                        help="verify all hashes, instead of merely querying share presence")
    parser.add_argument("--repair", action="store_true", help="automatically repair damaged"
                        " files")
    parser.add_argument("--add-lease", action="store_true", help="add/renew lease on all"
                        " shares")


def check_flags(args: argparse.Namespace) -> str:
    """The query arguments of the check options given (``&add-lease=true`` …)."""
    return "".join(f"&{name}=true" for name, flag in (
        ("verify", args.verify), ("repair", args.repair), ("add-lease", args.add_lease)) if flag)


def _corrupt_lines(results: Mapping[str, Any], prefix: str) -> list[str]:
    return [f"{prefix}server {server}, SI {si}, shnum {shnum!r}"
            for server, si, shnum in results.get("list-corrupt-shares", [])]


def _format_repair(data: Mapping[str, Any]) -> str:
    pre = data["pre-repair-results"]["results"]
    lines = [f"Summary: {'healthy' if pre['healthy'] else 'not healthy'}",
             f" storage index: {data['storage-index']}",
             f" good-shares: {pre['count-shares-good']!r} (encoding is "
             f"{pre['count-shares-needed']!r}-of-{pre['count-shares-expected']!r})",
             f" wrong-shares: {pre['count-wrong-shares']!r}"]
    corrupt = _corrupt_lines(pre, "  ")
    if corrupt:
        lines += [" corrupt shares:", *corrupt]
    if data["repair-attempted"]:
        lines.append(" repair successful" if data["repair-successful"] else " repair failed")
    return "\n".join(lines) + "\n"


def _check_one(args: argparse.Namespace, gateway: Any, where: str, stdout: TextIO) -> None:
    root_cap, path = resolve_path(gateway.aliases(), where)
    query = "t=check&output=JSON" + check_flags(args)
    status, reason, body = call(gateway, "POST", f"{object_path(root_cap, path)}?{query}",
                                context=CONTEXT)
    if status != 200:
        raise HTTPStatusError(CONTEXT, status, reason, body[:ERROR_BODY_LIMIT])
    text = body.decode("utf-8")
    stdout.write(text + "\n" if args.raw else format_results(json.loads(text)))


def _check(args: argparse.Namespace, stdout: TextIO, env: Mapping[str, str]) -> int:
    gateway = gateway_from_args(args, env)
    for where in args.locations or [""]:
        _check_one(args, gateway, where, stdout)
    return 0


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe check``: 0 when every location was checked, 1 on the first error."""
    parser = new_parser(stdout, "check", "[ALIAS:PATH…]",
                        "Check a single file or directory: count its shares and, with"
                        " --add-lease, renew this client's leases on them.")
    add_check_options(parser)
    parser.add_argument("-v", "--verbose", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("locations", nargs="*", metavar="ALIAS:PATH")
    return run_command(parser, argv, stderr, lambda args: _check(args, stdout, env))

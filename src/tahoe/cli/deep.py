"""``tahoe manifest`` and ``tahoe deep-check``: the streamed walks of a directory tree.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.3, §3.8), each command
``POST``s ``t=stream-manifest`` or ``t=stream-deep-check`` for a location
(default ``tahoe:``) and turns the JSON lines into text as they arrive:

* ``manifest``: ``<cap> <path>`` per object (the root's path is empty); with
  ``--storage-index``, ``--verify-cap`` or ``--repair-cap`` one value per
  line, empty ones (LIT files) skipped; ``--raw`` copies the stream.
* ``deep-check``: ``N objects checked..`` every 100 objects, `` corrupt:
  server …, SI …, shnum N`` lines, ``'<path>': <summary>`` per object with
  ``-v`` (the root as ``<root>``), and ``done: N objects checked, H healthy, U
  unhealthy``; ``--add-lease`` renews the client's leases on the whole tree.

An ``ERROR:`` line in the stream is copied to stderr with what follows, and
the exit status is 1. Standard library only.
"""
from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TextIO

from .aliases import resolve_path
from .check import add_check_options, check_flags
from .errors import HTTPStatusError
from .gateway import gateway_from_args
from .remote import ERROR_BODY_LIMIT, new_parser, object_path, run_command

__all__ = ["run_deep_check", "run_manifest"]

CONTEXT = "ERROR"


def _lines(args: argparse.Namespace, env: Mapping[str, str], where: str,
           query: str) -> Iterator[bytes]:
    gateway = gateway_from_args(args, env)
    root_cap, path = resolve_path(gateway.aliases(), where)
    with gateway.request("POST", f"{object_path(root_cap, path)}?{query}",
                         context=CONTEXT) as response:
        if response.status not in (200, 302):
            raise HTTPStatusError(CONTEXT, response.status, response.reason,
                                  response.read(ERROR_BODY_LIMIT))
        buffered = b""
        for chunk in response.chunks():
            buffered += chunk
            *complete, buffered = buffered.split(b"\n")
            yield from complete
        if buffered:
            yield buffered


def _stream(args: argparse.Namespace, env: Mapping[str, str], where: str, query: str,
            stdout: TextIO, stderr: TextIO, handle: Callable[[dict[str, Any]], None]) -> int:
    """Feed each JSON line to ``handle`` (or copy them with ``--raw``); 1 after an ERROR."""
    in_error = False
    for line in _lines(args, env, where, query):
        text = line.decode("utf-8", "replace")
        if in_error or text.startswith("ERROR:"):
            in_error = True
            stderr.write(text + "\n")
        elif args.raw:
            stdout.write(text + "\n")
        elif text:
            handle(json.loads(text))
    return 1 if in_error else 0


def _manifest(args: argparse.Namespace, stdout: TextIO, stderr: TextIO,
              env: Mapping[str, str]) -> int:
    field = ("storage-index" if args.storage_index else "verifycap" if args.verify_cap
             else "repaircap" if args.repair_cap else None)

    def handle(unit: dict[str, Any]) -> None:
        if unit.get("type") == "stats":
            return
        if field is None:
            stdout.write(f"{unit['cap']} {'/'.join(unit['path'])}\n")
        elif unit.get(field):
            stdout.write(f"{unit[field]}\n")
    return _stream(args, env, args.where, "t=stream-manifest", stdout, stderr, handle)


class _Progress:
    """Counts files and directories, with Tahoe's progress line every 100."""

    def __init__(self, stdout: TextIO, verbose: bool) -> None:
        self.stdout = stdout
        self.verbose = verbose
        self.objects = 0

    def counted(self, unit: dict[str, Any]) -> bool:
        """Whether ``unit`` is a file or directory (counted); other lines are skipped."""
        if unit.get("type") not in ("file", "directory"):
            return False
        self.objects += 1
        if self.objects % 100 == 0:
            self.stdout.write(f"{self.objects} objects checked..\n")
        return True


class _DeepCheckOutput(_Progress):
    def __init__(self, stdout: TextIO, verbose: bool) -> None:
        super().__init__(stdout, verbose)
        self.healthy = self.unhealthy = 0

    def __call__(self, unit: dict[str, Any]) -> None:
        if not self.counted(unit):
            return
        results = unit["check-results"]
        if results["results"]["healthy"]:
            self.healthy += 1
        else:
            self.unhealthy += 1
        if self.verbose:
            path = "/".join(unit["path"]) or "<root>"
            self.stdout.write(f"'{path}': {results.get('summary', 'Healthy (LIT)')}\n")
        for server, si, shnum in results["results"].get("list-corrupt-shares", []):
            self.stdout.write(f" corrupt: server {server}, SI {si}, shnum {shnum!r}\n")

    def done(self) -> None:
        self.stdout.write(f"done: {self.objects} objects checked, {self.healthy} healthy,"
                          f" {self.unhealthy} unhealthy\n")


class _DeepRepairOutput(_Progress):
    """What ``deep-check --repair`` prints (Tahoe's four summary lines at the end)."""

    def __init__(self, stdout: TextIO, verbose: bool) -> None:
        super().__init__(stdout, verbose)
        self.pre_healthy = self.pre_unhealthy = 0
        self.attempted = self.successful = self.post_healthy = self.post_unhealthy = 0

    def __call__(self, unit: dict[str, Any]) -> None:
        if not self.counted(unit):
            return
        crr = unit["check-and-repair-results"]
        if unit["storage-index"]:
            was_healthy = crr["pre-repair-results"]["results"]["healthy"]
            now_healthy = crr["post-repair-results"]["results"]["healthy"]
        else:
            was_healthy = now_healthy = True  # a LIT object
        self.pre_healthy += was_healthy
        self.pre_unhealthy += not was_healthy
        self.post_healthy += now_healthy
        self.post_unhealthy += not now_healthy
        if crr["repair-attempted"]:
            self.attempted += 1
            self.successful += bool(crr["repair-successful"])
        if self.verbose:
            path = "/".join(unit["path"]) or "<root>"
            self.stdout.write(f"'{path}': {'healthy' if was_healthy else 'not healthy'}\n")
        pre = crr.get("pre-repair-results", {}).get("results", {})
        for server, si, shnum in pre.get("list-corrupt-shares", []):
            self.stdout.write(f" corrupt: server {server}, SI {si}, shnum {shnum!r}\n")
        if crr["repair-attempted"]:
            self.stdout.write(" repair successful\n" if crr["repair-successful"]
                              else " repair failed\n")

    def done(self) -> None:
        self.stdout.write(f"done: {self.objects} objects checked\n"
                          f" pre-repair: {self.pre_healthy} healthy, {self.pre_unhealthy}"
                          f" unhealthy\n"
                          f" {self.attempted} repairs attempted, {self.successful} successful,"
                          f" {self.attempted - self.successful} failed\n"
                          f" post-repair: {self.post_healthy} healthy, {self.post_unhealthy}"
                          f" unhealthy\n")


def _deep_check(args: argparse.Namespace, stdout: TextIO, stderr: TextIO,
                env: Mapping[str, str]) -> int:
    query = "t=stream-deep-check" + check_flags(args)
    for where in args.locations or [""]:
        output: Any = (_DeepRepairOutput if args.repair else _DeepCheckOutput)(
            stdout, args.verbose)
        code = _stream(args, env, where, query, stdout, stderr, output)
        if code:
            return code
        if not args.raw:
            output.done()
    return 0


def run_manifest(argv: list[str], stdout: TextIO, stderr: TextIO,
                 env: Mapping[str, str]) -> int:
    """``tahoe manifest``: 0, or 1 on an error."""
    parser = new_parser(stdout, "manifest", "[ALIAS:PATH]",
                        "Print a list of all files and directories reachable from the given"
                        " starting point.")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("-s", "--storage-index", action="store_true",
                        help="only print storage index strings, not pathname+cap")
    choice.add_argument("--verify-cap", action="store_true",
                        help="only print verifycap, not pathname+cap")
    choice.add_argument("--repair-cap", action="store_true",
                        help="only print repaircap, not pathname+cap")
    choice.add_argument("-r", "--raw", action="store_true",
                        help="display raw JSON data instead of parsed")
    parser.add_argument("where", nargs="?", default="", metavar="ALIAS:PATH")
    return run_command(parser, argv, stderr, lambda args: _manifest(args, stdout, stderr, env))


def run_deep_check(argv: list[str], stdout: TextIO, stderr: TextIO,
                   env: Mapping[str, str]) -> int:
    """``tahoe deep-check``: 0, or 1 on an error."""
    parser = new_parser(stdout, "deep-check", "[ALIAS:PATH…]",
                        "Check all files and directories reachable from the given starting"
                        " point(s); with --add-lease, renew this client's leases on them.")
    add_check_options(parser)
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="be noisy about what is happening")
    parser.add_argument("locations", nargs="*", metavar="ALIAS:PATH")
    return run_command(parser, argv, stderr,
                       lambda args: _deep_check(args, stdout, stderr, env))

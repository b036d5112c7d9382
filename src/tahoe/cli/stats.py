"""``tahoe stats [-r] [ALIAS:PATH]``: counts and sizes of everything under a directory.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.3): ``POST
<dir>?t=start-deep-stats&ophandle=<26 random base32 characters>``, then
``GET /operations/<handle>?t=status&output=JSON&release-after-complete=true``
after 1, 5, 10, 30, 60 and 90 s and every 120 s after that, until finished.
Prints "Counts and Total Sizes" (sizes above 1000 bytes also abbreviated, SI
and binary) and the size histogram; ``--raw`` prints the JSON.
Standard library only.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import time
from collections.abc import Iterator, Mapping
from typing import Any, TextIO

from .aliases import resolve_path
from .errors import HTTPStatusError
from .gateway import gateway_from_args
from .remote import ERROR_BODY_LIMIT, call, new_parser, object_path, run_command

__all__ = ["abbreviate_space", "format_stats", "run"]

CONTEXT = "ERROR"
KEYS = ("count-immutable-files", "count-mutable-files", "count-literal-files", "count-files",
        "count-directories", "size-immutable-files", "size-mutable-files", "size-literal-files",
        "size-directories", "largest-directory", "largest-immutable-file")


def abbreviate_space(size: int, si: bool = True) -> str:
    """``1.23 kB`` (SI) or ``1.20 kiB`` (binary); plain bytes below 1024."""
    unit, suffix = (1000.0, "B") if si else (1024.0, "iB")
    if size < 1024:
        return f"{size} B"
    for power, prefix in enumerate("kMGTP", start=1):
        if size < unit ** (power + 1):
            return f"{size / unit ** power:.2f} {prefix}{suffix}"
    return f"{size / unit ** 6:.2f} E{suffix}"


def _both(size: int) -> str:
    return f"({abbreviate_space(size)}, {abbreviate_space(size, si=False)})"


def format_stats(data: Mapping[str, Any]) -> str:
    """The text ``tahoe stats`` prints for a deep-stats dictionary."""
    width = max(len(k) for k in KEYS)
    lines = ["Counts and Total Sizes:"]
    for key in KEYS:
        if key in data:
            line = f"{key:>{width}}: {data[key]}"
            if not key.startswith("count-") and data[key] > 1000:
                line += f"    {_both(data[key])}"
            lines.append(line)
    histogram = data.get("size-files-histogram") or []
    if histogram:
        lines.append("Size Histogram:")
        top = max(len(str(high)) for _, high, _ in histogram)
        counts = max(len(str(count)) for _, _, count in histogram)
        previous = None
        for low, high, count in histogram:
            if previous is not None and low != previous + 1:
                lines.append(" " * (top - 1) + "...")
            previous = high
            lines.append(f"{low:>{top}}-{high:<{top}} : {count:<{counts}}    {_both(high)}")
    return "\n".join(lines) + "\n"


def poll_times() -> Iterator[int]:
    """Seconds after the start at which to ask: 1, 5, 10, 30, 60, 90, then every 120."""
    yield from (1, 5, 10, 30, 60, 90)
    at = 120
    while True:
        yield at
        at += 120


def _stats(args: argparse.Namespace, stdout: TextIO, stderr: TextIO,
           env: Mapping[str, str]) -> int:
    gateway = gateway_from_args(args, env)
    root_cap, path = resolve_path(gateway.aliases(), args.where)
    handle = base64.b32encode(os.urandom(16)).decode("ascii").rstrip("=").lower()
    status, reason, body = call(
        gateway, "POST", f"{object_path(root_cap, path)}?t=start-deep-stats&ophandle={handle}",
        context=CONTEXT)
    if status not in (200, 302):
        raise HTTPStatusError(CONTEXT, status, reason, body[:ERROR_BODY_LIMIT])
    last = 0
    for at in poll_times():
        time.sleep(at - last)
        last = at
        status, reason, body = call(gateway, "GET", f"operations/{handle}?t=status&output=JSON"
                                    "&release-after-complete=true", context=CONTEXT)
        if status != 200:
            raise HTTPStatusError(CONTEXT, status, reason, body[:ERROR_BODY_LIMIT])
        data = json.loads(body)
        if data["finished"]:
            stdout.write(body.decode("utf-8") + "\n" if args.raw else format_stats(data))
            return 0
    return 1  # not reached: poll_times never ends


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe stats``: 0, or 1 on an error."""
    parser = new_parser(stdout, "stats", "[ALIAS:PATH]",
                        "Print statistics about all files and directories reachable from the"
                        " given starting point.")
    parser.add_argument("-r", "--raw", action="store_true",
                        help="display raw JSON data instead of parsed")
    parser.add_argument("where", nargs="?", default="", metavar="ALIAS:PATH")
    return run_command(parser, argv, stderr, lambda args: _stats(args, stdout, stderr, env))

"""``tahoe status [-v]``: the node's transfer totals and its active and recent operations.

As Tahoe-LAFS 1.20 (``reference/frontends.md`` §2.3): the node directory's
``node.url`` and ``private/api_auth_token`` are read (no ``-u``), then
``POST status?t=json`` and ``POST statistics?t=json`` are sent with the form
body ``t=json&token=<token>``. The output is Tahoe's: the upload and download
totals since the node started, a table of active operations (a bar for
uploads and downloads), and a table of recent ones, where publish, retrieve
and mapupdate operations are only counted unless ``-v`` is given. Exit
status 2 when the data cannot be fetched. A client with ``[grid_managers]``
also gets, after Tahoe's output, each storage server's Grid Manager
certificate state (from ``GET /?t=json``). Standard library only.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
from collections.abc import Callable, Mapping
from typing import Any, TextIO
from urllib.parse import urlencode

from .errors import CLIError
from .gateway import ArgumentParser, Gateway, HelpShown, node_directory, read_node_url, report
from .stats import abbreviate_space

__all__ = ["run", "abbreviate_time", "progress_text", "render_status"]

EXIT_NO_DATA = 2
_OP_NAMES = {"upload": " put ", "download": " get ", "retrieve": "retr ", "publish": " pub ",
             "mapupdate": "mapup", "unknown": " ??? "}
_HOUR, _DAY, _MONTH, _YEAR = 3600, 86400, 30 * 86400, 365 * 86400


def abbreviate_time(seconds: float | None) -> str:
    """Tahoe's English summary of a duration: ``8 seconds``, ``3 minutes``, ``2 days``."""
    if seconds is None:
        return "unknown"
    for limit, unit, size in ((120, "second", 1), (3 * _HOUR, "minute", 60),
                              (2 * _DAY, "hour", _HOUR), (2 * _MONTH, "day", _DAY),
                              (4 * _YEAR, "month", _MONTH), (float("inf"), "year", _YEAR)):
        if seconds < limit:
            count = int(seconds / size)
            return f"{count} {unit}" + ("" if count == 1 else "s")
    raise AssertionError("unreachable")


def progress_text(percent: float, size: int = 10) -> str:
    """A bar of ``size`` cells for ``percent`` (0-100), with Tahoe's eighth-block tip."""
    full = int(percent / 100.0 * size)
    tip = "" if percent >= 100.0 else chr(0x258F - int((percent / (100.0 / size) - full) * 8))
    return "\u2588" * full + tip + " " * (size - full - 1)


def _frame(corners: str, widths: tuple[int, ...]) -> str:
    left, middle = corners
    return left + "\u2500" + f"\u2500{middle}\u2500".join("\u2500" * width for width in widths)


def _active_line(op: Mapping[str, Any]) -> str:
    kind = op.get("type", "unknown")
    if kind == "upload":
        total = sum(op[key] for key in ("progress-hash", "progress-ciphertext",
                                        "progress-encode-push")) / 3.0 * 100.0
        done, bar = f"{total:3.0f}", progress_text(total, size=15)
    elif kind == "download":  # Tahoe prints the raw fraction here ("(0.5%)"): a percentage
        percent = op["progress"] * 100.0
        done, bar = f"{percent:3.0f}", progress_text(percent, size=15)
    else:
        done, bar = "???", ""
    return (f"\u2551 {_OP_NAMES.get(kind, _OP_NAMES['unknown'])} \u2551 "
            f"{op['storage-index-string']} \u2551 {bar:15} ({done}%) \u2551 {op['status']}")


def _recent_line(op: Mapping[str, Any]) -> str:
    kind = op.get("type", "unknown")
    if kind == "mapupdate":
        size = op.get("mode", "")
    else:
        size = abbreviate_space(op["total-size"]) if isinstance(op.get("total-size"), int) \
            else "unknown"
    return (f"\u2551 {_OP_NAMES.get(kind, _OP_NAMES['unknown'])} \u2551 "
            f"{op['storage-index-string']} \u2551 {size:<10} \u2551 {op['status']}")


def render_status(status: Mapping[str, Any], statistics: Mapping[str, Any],
                  verbose: bool) -> str:
    """The whole output of ``tahoe status`` for the two JSON documents."""
    counters = statistics.get("counters", {})
    lines = [f"Statistics (for last {abbreviate_time(statistics['stats']['node.uptime'])}):",
             f"    uploaded {abbreviate_space(counters.get('uploader.bytes_uploaded', 0))}"
             f" in {counters.get('uploader.files_uploaded', 0)} files",
             f"  downloaded {abbreviate_space(counters.get('downloader.bytes_downloaded', 0))}"
             f" in {counters.get('downloader.files_downloaded', 0)} files", ""]
    active = status.get("active") or []
    if not active:
        lines.append("No active operations.")
    else:
        widths = (5, 26, 22, 20)
        lines += ["Active operations:",
                  f"\u2553 {'type':<5} \u2565 {'storage index':<26} \u2565 {'progress':<22}"
                  f" \u2565 status message",
                  _frame("\u255f\u256b", widths), *map(_active_line, active),
                  _frame("\u2559\u2568", widths)]
    recent = status.get("recent") or []
    if not recent:
        lines.append("No recent operations.")
    transfers = [op for op in recent if op.get("type") in ("upload", "download")]
    shown = recent if verbose else transfers
    lines.append("\nRecent operations:")
    if transfers or verbose:
        lines.append(f"\u2553 {'type':<5} \u2565 {'storage index':<26} \u2565 {'size':<10}"
                     f" \u2565 status message")
    lines += map(_recent_line, shown)
    if transfers or verbose:
        lines.append(_frame("\u2559\u2568", (5, 26, 10, 20)))
    if not verbose and len(recent) > len(shown):
        lines.append(f"   Skipped {len(recent) - len(shown)} non-upload/download operations;"
                     " use --verbose to see")
    return "\n".join(lines) + "\n"


def render_grid_manager(welcome: Mapping[str, Any]) -> str:
    """With ``[grid_managers]`` configured, a section listing each storage server
    and whether a Grid Manager certificate lets it store shares (until when);
    nothing otherwise (the welcome JSON has no ``grid_manager_certified``)."""
    servers = [s for s in welcome.get("servers", [])
               if isinstance(s, dict) and s.get("grid_manager_certified") is not None]
    if not servers:
        return ""
    lines = ["", "Storage servers and their Grid Manager certificates:"]
    for server in sorted(servers, key=lambda s: (str(s.get("nickname")), str(s.get("nodeid")))):
        name = f"{server.get('nickname') or '?'} ({str(server.get('nodeid'))[:11]})"
        if server["grid_manager_certified"]:
            until = server.get("grid_manager_certificate_expires")
            when = (datetime.datetime.fromtimestamp(until, datetime.timezone.utc)
                    .strftime("%Y-%m-%d %H:%M:%S UTC") if isinstance(until, (int, float))
                    else "?")
            lines.append(f"  {name}: certified until {when}")
        else:
            lines.append(f"  {name}: not certified, no shares are placed on it")
    return "\n".join(lines) + "\n"


def _fetch(gateway: Gateway, fragment: str, token: str) -> Any:
    body = urlencode({"t": "json", "token": token}).encode("utf-8")
    from .localio import Body
    with gateway.request("POST", fragment, body=Body.from_bytes(body)) as response:
        data = response.read()
    parsed = json.loads(data)
    if parsed is None:
        raise ValueError(f"No data from '{gateway.node_url}'")
    return parsed


def _status(args: argparse.Namespace, stdout: TextIO, stderr: TextIO,
            env: Mapping[str, str]) -> int:
    nodedir = node_directory(args.node_directory, env)
    token_path = os.path.join(nodedir, "private", "api_auth_token")
    try:
        with open(token_path, encoding="utf-8") as f:
            token = f.read().strip()
    except OSError as e:
        raise CLIError(f"Error: cannot read {token_path}: {e.strerror or e}\n"
                       "Is the node running? It writes a new token each time it starts.") from None
    gateway = Gateway(read_node_url(nodedir), nodedir=nodedir)
    fetch: Callable[[str], Any] = lambda fragment: _fetch(gateway, fragment, token)
    try:
        status, statistics = fetch("status?t=json"), fetch("statistics?t=json")
    except (CLIError, ValueError) as e:
        stderr.write(f"failed to retrieve data: {e}\n")
        return EXIT_NO_DATA
    stdout.write(render_status(status, statistics, args.verbose))
    try:
        with gateway.request("GET", "?t=json") as response:
            welcome = json.loads(response.read())
    except (CLIError, ValueError):
        welcome = {}
    stdout.write(render_grid_manager(welcome))
    return 0


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe status``: 0, 2 when the node's data cannot be fetched, 1 on other errors."""
    parser = ArgumentParser(stdout, prog="tahoe status",
                            usage="tahoe [global-options] status [options]",
                            description="Various status information")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="include publish, retrieve, mapupdate in ops")
    parser.add_argument("-d", "--node-directory", help=argparse.SUPPRESS)
    try:
        return _status(parser.parse_args(argv), stdout, stderr, env)
    except HelpShown:
        return 0
    except CLIError as error:
        return report(error, stderr)

"""``/storage``: the storage server's space, buckets and crawlers (``reference/frontends.md`` §3.9, §4).

``?t=json`` gives Tahoe 1.20's shape: ``{"stats": {storage_server.* stats},
"bucket-counter": state, "lease-checker": state with "history",
"lease-checker-progress": {"cycle-in-progress", "next-crawl-time",
"remaining-wait-time", "estimated-time-per-cycle"}}``; the HTML page shows
the same for people. A node without a storage server says so (404).
"""
from __future__ import annotations

import copy
import html
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from twisted.web import resource
from twisted.web.server import Request

from ..storage.crawler import BucketCountingCrawler, LeaseCheckingCrawler
from .common import WebError, arg, render_async, set_security_headers

__all__ = ["StorageStatusResource", "lease_checker_json", "progress_json"]

NO_SERVER = "No storage server is running on this node."


def lease_checker_json(checker: LeaseCheckingCrawler) -> dict[str, Any]:
    """The lease checker's state as Tahoe shows it: with ``history``, and
    ``cycle-to-date`` (lease ages as ``[min, max, count]``) only during a cycle."""
    state = copy.deepcopy(checker.state)
    state["history"] = checker.history()
    cycle_data = state.pop("cycle-to-date", None)
    if state.get("current-cycle") is not None and cycle_data is not None:
        ages = sorted((tuple(int(x) for x in key.split(",")), count)
                      for key, count in cycle_data.get("lease-age-histogram", {}).items())
        cycle_data["lease-age-histogram"] = [[lo, hi, count] for (lo, hi), count in ages]
        state["cycle-to-date"] = cycle_data
    return state


def progress_json(checker: LeaseCheckingCrawler, now: float) -> dict[str, Any]:
    """Whether a cycle is under way, when the next slice runs, how long a cycle took."""
    durations = [entry["cycle-start-finish-times"][1] - entry["cycle-start-finish-times"][0]
                 for _, entry in sorted(checker.history().items(), key=lambda kv: int(kv[0]))
                 if None not in entry.get("cycle-start-finish-times", [None])]
    wake = checker.sleeping_until
    return {"cycle-in-progress": checker.state.get("current-cycle") is not None,
            "next-crawl-time": wake,
            "remaining-wait-time": None if wake is None else max(0.0, wake - now),
            "estimated-time-per-cycle": durations[-1] if durations else None}


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


def _cell(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return html.escape(str(value))


def _page(identity: tuple[str, str], document: dict[str, Any]) -> str:
    stats = document["stats"]
    nickname, nodeid = identity
    rows = [("Accepting new shares", "Yes" if stats.get("storage_server.accepting_immutable_shares")
             else "No"),
            ("Total disk space", stats.get("storage_server.disk_total")),
            ("Disk space used", stats.get("storage_server.disk_used")),
            ("Reserved space", stats.get("storage_server.reserved_space")),
            ("Space available to new shares", stats.get("storage_server.disk_avail")),
            ("Buckets (last full count)", document["bucket-counter"].get(
                "last-complete-bucket-count"))]
    table = "".join(f"<tr><th>{html.escape(label)}</th><td>{_cell(value)}</td></tr>"
                    for label, value in rows)
    checker = document["lease-checker"]
    progress = document["lease-checker-progress"]
    history = checker.get("history", {})
    last = history[max(history, key=int)] if history else None
    if progress["cycle-in-progress"]:
        crawl = (f"<p>Cycle {checker['current-cycle']} in progress, after prefix "
                 f"{html.escape(str(checker.get('last-complete-prefix')))}.</p>")
    else:
        crawl = f"<p>Next cycle: {_when(progress['next-crawl-time'])}.</p>"
    if last is not None:
        recovered = last["space-recovered"]
        mode = last["configured-expiration-mode"]
        crawl += (f"<p>Last cycle: {recovered.get('examined-shares', 0):,} shares in "
                  f"{recovered.get('examined-buckets', 0):,} buckets examined; expiration "
                  f"{'enabled' if last['expiration-enabled'] else 'disabled'} ({html.escape(str(mode[0]))} "
                  f"mode); {recovered.get('actual-shares', 0):,} shares "
                  f"({recovered.get('actual-diskbytes', 0):,} bytes) removed, "
                  f"{recovered.get('configured-shares', 0):,} would be under the configured "
                  f"rule; {len(last.get('corrupt-shares', []))} corrupt.</p>")
    return ("<!DOCTYPE html><html><head><title>Tahoe-LAFS - Storage Server Status</title>"
            "</head><body><h1>Storage Server Status</h1>"
            f"<p>Nickname: {html.escape(nickname)}<br>Node ID: <code>{html.escape(nodeid)}</code></p>"
            f"<table border=1>{table}</table><h2>Lease checker</h2>{crawl}"
            '<p><a href="/storage?t=json">JSON</a> · <a href="/">Return to the Welcome Page</a></p>'
            "</body></html>")


class StorageStatusResource(resource.Resource):
    """``/storage`` and ``/storage?t=json``.

    :param stats: returns (asynchronously) the node's ``{"counters", "stats"}`` statistics.
    :param crawlers: the bucket counter and lease checker, or ``None`` without storage.
    """

    isLeaf = True

    def __init__(self, identity: tuple[str, str],
                 stats: Callable[[], Awaitable[dict[str, Any]]],
                 crawlers: tuple[BucketCountingCrawler, LeaseCheckingCrawler] | None,
                 clock: Any) -> None:
        super().__init__()
        self._identity = identity
        self._stats = stats
        self._crawlers = crawlers
        self._clock = clock

    def render_GET(self, request: Request) -> Any:  # noqa: N802 (Twisted)
        """HTML, or Tahoe's JSON for ``t=json``."""
        return render_async(request, self._render)

    async def _render(self, request: Request) -> bytes:
        set_security_headers(request)
        fmt = (arg(request, "t") or "").lower()
        if fmt not in ("", "json"):
            raise WebError(f"Unknown t= value: {fmt}")
        if self._crawlers is None:
            request.setResponseCode(404)
            request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
            return (NO_SERVER + "\n").encode("utf-8")
        counter, checker = self._crawlers
        stats = (await self._stats())["stats"]
        document = {
            "stats": {k: v for k, v in sorted(stats.items()) if k.startswith("storage_server.")},
            "bucket-counter": copy.deepcopy(counter.state),
            "lease-checker": lease_checker_json(checker),
            "lease-checker-progress": progress_json(checker, self._clock.seconds()),
        }
        if fmt == "json":
            request.setHeader(b"Content-Type", b"application/json")
            return (json.dumps(document, indent=1) + "\n").encode("utf-8")
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        return _page(self._identity, document).encode("utf-8")

"""``/storage``: the storage server's space, buckets and crawlers (``reference/frontends.md`` §3.9, §4).

``?t=json`` gives Tahoe 1.20's shape: ``{"stats": {storage_server.* stats},
"bucket-counter": state, "lease-checker": state with "history",
"lease-checker-progress": {"cycle-in-progress", "next-crawl-time",
"remaining-wait-time", "estimated-time-per-cycle"}}``; the HTML page shows
the same for people. A node without a storage server says so (404).
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any

from twisted.web import resource
from twisted.web.server import Request

from .rendering import WebError, arg, render_async
from .humanize import human_duration, human_size, human_time
from .page import badge, esc, facts_table, page, size_html
from .statshtml import latency_table
from .svgchart import Segment, legend, meter

if TYPE_CHECKING:  # a client without a storage server shows this page without loading them
    from ..storage.crawler import BucketCountingCrawler
    from ..storage.lease_checker import LeaseCheckingCrawler

__all__ = ["StorageStatusResource", "lease_checker_json", "progress_json"]

NO_SERVER = "No storage server is running on this node."


def lease_checker_json(checker: LeaseCheckingCrawler) -> dict[str, Any]:
    """The lease checker's state as Tahoe shows it: with ``history``, and
    ``cycle-to-date`` (lease ages as ``[min, max, count]``) only during a cycle."""
    # (copies only where this changes something: the caller serializes it at once)
    state = dict(checker.state)
    state["history"] = checker.history()
    cycle_data = state.pop("cycle-to-date", None)
    if state.get("current-cycle") is not None and cycle_data is not None:
        ages = sorted((tuple(int(x) for x in key.split(",")), count)
                      for key, count in cycle_data.get("lease-age-histogram", {}).items())
        state["cycle-to-date"] = {**cycle_data, "lease-age-histogram": [
            [lo, hi, count] for (lo, hi), count in ages]}
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


class _IndentedValue:
    """A value as ``json.dumps(document, indent=1)`` writes it ``depth`` levels down, encoded
    again only when it changed: its compact encoding, which determines the indented one,
    tells. (The standard library indents in Python, ten times slower than its compact
    encoder: 10 ms against 0.9 for the crawlers' states at a million shares.)"""

    def __init__(self, depth: int) -> None:
        self._newline = "\n" + " " * depth
        self._compact: str | None = None
        self._indented = ""

    def text(self, value: Any) -> str:
        """``value`` indented (a JSON string holds no raw newline, so every newline in the
        text is indentation)."""
        compact = json.dumps(value)
        if compact != self._compact:
            self._indented = json.dumps(value, indent=1).replace("\n", self._newline)
            self._compact = compact
        return self._indented


def _indented_object(members: list[tuple[str, str]], depth: int) -> str:
    """A JSON object ``depth`` levels down, as ``json.dumps(indent=1)`` writes it, from its
    members' keys and their values' indented texts."""
    inner = "\n" + " " * (depth + 1)
    return ("{" + inner + ("," + inner).join(f"{encode_basestring_ascii(key)}: {text}"
                                             for key, text in members)
            + "\n" + " " * depth + "}")


class _IndentedPart:
    """One part of the ``t=json`` document (a member of its top-level object), each of its
    own members kept as an :class:`_IndentedValue`: the bucket counter's share counts
    change at every deletion during garbage collection, its 1,024-entry maps only as it
    walks."""

    def __init__(self) -> None:
        self._whole = _IndentedValue(1)
        self._members: dict[str, _IndentedValue] = {}

    def text(self, value: Any) -> str:
        """``value`` indented as a member of the top-level object."""
        if not (isinstance(value, dict) and value and all(isinstance(k, str) for k in value)):
            return self._whole.text(value)
        return _indented_object([(key, self._members.setdefault(key, _IndentedValue(2))
                                  .text(member)) for key, member in value.items()], 1)


def _space_meter(stats: dict[str, Any]) -> str:
    total = stats.get("storage_server.disk_total")
    used = stats.get("storage_server.disk_used")
    if total is None or used is None:
        return ""
    avail = stats.get("storage_server.disk_avail") or 0
    nonroot = stats.get("storage_server.disk_free_for_nonroot") or 0
    root_free = stats.get("storage_server.disk_free_for_root") or nonroot
    reserved = max(0, nonroot - avail)
    segments = [Segment(used, "used", f"used: {human_size(used)}"),
                Segment(reserved, "reserved", f"reserved: {human_size(reserved)}"),
                Segment(root_free - nonroot, "root", "free for root only: "
                        f"{human_size(root_free - nonroot)}"),
                Segment(avail, "free", f"available to new shares: {human_size(avail)}")]
    return (f'<figure class="chart-box">'
            f'{meter(segments, title=f"Disk space: {human_size(total)} in all")}'
            "<figcaption>Disk space "
            + legend([("used", "used"), ("reserved", "reserved"), ("root", "root only"),
                      ("free", "available to shares")], prefix="seg")
            + "</figcaption></figure>")


def _crawler_rows(document: dict[str, Any], now: float) -> list[tuple[str, str]]:
    checker = document["lease-checker"]
    progress = document["lease-checker-progress"]
    history = checker.get("history", {})
    rows: list[tuple[str, str]] = []
    if progress["cycle-in-progress"]:
        rows.append(("Lease checker", f"cycle {esc(checker['current-cycle'])} in progress, "
                                      f"after prefix {esc(checker.get('last-complete-prefix'))}"))
    else:
        wake = progress["next-crawl-time"]
        rows.append(("Next lease-checker cycle", "never" if wake is None else
                     f"{esc(human_time(wake))} UTC "
                     f"(in {esc(human_duration(max(0.0, wake - now)))})"))
    if progress.get("estimated-time-per-cycle") is not None:
        rows.append(("Last cycle took", esc(human_duration(progress["estimated-time-per-cycle"]))))
    if history:
        last = history[max(history, key=int)]
        recovered = last["space-recovered"]
        mode = last["configured-expiration-mode"]
        rows += [
            ("Last cycle", f"{recovered.get('examined-shares', 0):,} shares in "
                           f"{recovered.get('examined-buckets', 0):,} buckets examined; "
                           f"expiration {'enabled' if last['expiration-enabled'] else 'disabled'}"
                           f" ({esc(mode[0])} mode)"),
            ("Removed by the last cycle", f"{recovered.get('actual-shares', 0):,} shares, "
                                          f"{size_html(recovered.get('actual-diskbytes', 0))}"),
            ("Would be removed under the configured rule",
             f"{recovered.get('configured-shares', 0):,} shares"),
            ("Corrupt shares seen", esc(len(last.get("corrupt-shares", []))))]
    return rows


def _page(identity: tuple[str, str], document: dict[str, Any], now: float = 0.0) -> str:
    stats = document["stats"]
    nickname, nodeid = identity
    accepting = stats.get("storage_server.accepting_immutable_shares")
    facts = [("Nickname", esc(nickname)),
             ("Node ID", f'<code class="nodeid">{esc(nodeid)}</code>'),
             ("Accepting new shares", badge("ok", "Yes") if accepting else badge("bad", "No")),
             ("Total disk space", size_html(stats.get("storage_server.disk_total"))),
             ("Disk space used", size_html(stats.get("storage_server.disk_used"))),
             ("Reserved space", size_html(stats.get("storage_server.reserved_space"))),
             ("Space available to new shares", size_html(stats.get("storage_server.disk_avail"))),
             ("Being uploaded now", size_html(stats.get("storage_server.allocated"))),
             ("Buckets (last full count)", esc(_count(document["bucket-counter"].get(
                 "last-complete-bucket-count"))))]
    main = (facts_table(facts) + _space_meter(stats)
            + "<h2>Lease checker</h2>" + facts_table(_crawler_rows(document, now))
            + "<h2>Latencies</h2>" + latency_table(stats, "storage_server.")
            + '<p class="actions"><a class="button" href="/storage?t=json">JSON</a></p>')
    return page("Tahoe-LAFS - Storage Server Status", main, current="/storage",
                heading="Storage Server Status").decode("utf-8")


def _count(value: Any) -> str:
    return "?" if value is None else f"{value:,}"


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
        self._parts: dict[str, _IndentedPart] = {}

    def render_GET(self, request: Request) -> Any:  # noqa: N802 (Twisted)
        """HTML, or Tahoe's JSON for ``t=json``."""
        return render_async(request, self._render)

    def _json(self, document: dict[str, Any]) -> str:
        """``json.dumps(document, indent=1) + "\\n"``, Tahoe's text, byte for byte."""
        return _indented_object([(key, self._parts.setdefault(key, _IndentedPart()).text(value))
                                 for key, value in document.items()], 0) + "\n"

    async def _render(self, request: Request) -> bytes:
        fmt = (arg(request, "t") or "").lower()
        if fmt not in ("", "json"):
            raise WebError(f"Unknown t= value: {fmt}")
        if self._crawlers is None:
            raise WebError(NO_SERVER, 404)
        counter, checker = self._crawlers
        stats = (await self._stats())["stats"]
        document = {
            "stats": {k: v for k, v in sorted(stats.items()) if k.startswith("storage_server.")},
            "bucket-counter": counter.state,  # serialized before anything can change it
            "lease-checker": lease_checker_json(checker),
            "lease-checker-progress": progress_json(checker, self._clock.seconds()),
        }
        if fmt == "json":
            request.setHeader(b"Content-Type", b"application/json")
            return self._json(document).encode("utf-8")
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        return _page(self._identity, document, self._clock.seconds()).encode("utf-8")

"""Check and check-and-repair results as a page people read (pure).

The JSON (``reference/frontends.md`` §3.6) stays what scripts get with
``output=JSON``; this page shows the same facts: healthy or not, good
shares of expected and needed, the share map with server nicknames, the
corrupt shares, and for a repair the state before and after. The exact
JSON is on the page too (folded), and a button runs the same check again
with ``output=JSON``.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .page import badge, esc, facts_table, hidden, notice, page, post_form, table

__all__ = ["check_results_page", "health_badge", "server_name"]


def server_name(server_id: str, nicknames: Mapping[str, str]) -> str:
    """A server's nickname with its id on hover (the short id when it has no nickname)."""
    nickname = nicknames.get(server_id)
    shown = nickname or (server_id[3:11] if server_id.startswith("v0-") else server_id[:8])
    return f'<span class="server" title="{esc(server_id)}">{esc(shown)}</span>'


def health_badge(results: Mapping[str, Any]) -> str:
    """Healthy, Not Healthy or Unrecoverable, as a coloured label."""
    details = results.get("results", {})
    if details.get("healthy"):
        return badge("ok", "Healthy")
    if details.get("recoverable", True):
        return badge("warn", "Not Healthy")
    return badge("bad", "Unrecoverable")


def _section(results: Mapping[str, Any], nicknames: Mapping[str, str]) -> str:
    details = results.get("results", {})
    if not results.get("storage-index"):
        return (f"<p>{health_badge(results)} A literal file or directory: its contents are "
                "inside its cap, so it has no shares to check.</p>")
    summary = results.get("summary") or ""
    rows: list[tuple[str, str]] = [
        ("Good shares", f"{details.get('count-shares-good', '?')} of "
                        f"{details.get('count-shares-expected', '?')} expected; "
                        f"{details.get('count-shares-needed', '?')} needed to read"),
        ("Happiness", esc(details.get("count-happiness", "?"))),
        ("Servers holding good shares", esc(details.get("count-good-share-hosts", "?"))),
        ("Servers responding", esc(len(details.get("servers-responding", [])))),
        ("Corrupt shares", esc(details.get("count-corrupt-shares", 0))),
    ]
    if "count-recoverable-versions" in details:
        rows.append(("Versions", f"{details['count-recoverable-versions']} recoverable, "
                                 f"{details.get('count-unrecoverable-versions', 0)} not"))
    sharemap = details.get("sharemap", {})
    share_rows = [[f"<code>{esc(share)}</code>",
                   ", ".join(server_name(s, nicknames) for s in servers)]
                  for share, servers in sorted(sharemap.items(), key=_share_order)]
    corrupt = [[server_name(str(c[0]), nicknames), f"<code>{esc(c[1])}</code>", esc(c[2])]
               for c in details.get("list-corrupt-shares", []) if len(c) >= 3]
    parts = [f"<p>{health_badge(results)} {esc(summary)}</p>", facts_table(rows),
             "<h3>Where the shares are</h3>",
             table(["Share", "Servers"], share_rows, empty="No share was found.")]
    if corrupt:
        parts += ["<h3>Corrupt shares</h3>",
                  table(["Server", "Storage index", "Share"], corrupt)]
    return "".join(parts)


def _share_order(item: tuple[str, Any]) -> tuple[int, str]:
    key = item[0]
    return (int(key), "") if key.isdigit() else (1 << 30, key)


def check_results_page(results: Mapping[str, Any], *, here: str, return_to: str | None,
                       arguments: Sequence[tuple[str, str]],
                       nicknames: Mapping[str, str]) -> bytes:
    """The HTML page of ``t=check`` (with or without ``repair=true``).

    :param here: the checked object's address (the JSON button posts there again).
    :param return_to: the ``return_to=`` link back, if any.
    :param arguments: the check's own arguments (``verify``, ``repair``, ``add-lease``).
    :param nicknames: server id -> nickname.
    """
    si = results.get("storage-index") or "(LIT)"
    if "pre-repair-results" in results:
        if not results.get("repair-attempted"):
            outcome = notice("ok", "No repair was needed.")
        elif results.get("repair-successful"):
            outcome = notice("ok", "Repair successful.")
        else:
            outcome = notice("bad", "Repair failed.")
        before = results["pre-repair-results"]
        body = (outcome + "<h2>After repair</h2>"
                + _section(results["post-repair-results"], nicknames)
                + f'<details class="before"><summary><h2>Before repair</h2> '
                  f"{health_badge(before)}</summary>{_section(before, nicknames)}</details>")
    else:
        body = _section(results, nicknames)
    links = []
    if return_to:
        links.append(f'<a class="button" href="{esc(return_to)}">Return to file/directory.</a>')
    again = post_form(here, hidden("t", "check") + hidden("output", "JSON")
                      + "".join(hidden(k, v) for k, v in arguments),
                      "Run again as JSON", css="inline")
    raw = esc(json.dumps(results, indent=1))
    body += (f'<p class="actions">{"".join(links)}{again}</p>'
             f'<details class="raw"><summary>These results as JSON</summary><pre>{raw}</pre>'
             "</details>")
    return page("Tahoe-LAFS - Check Results", body, script=True,
                heading=f"File Check Results for SI=<code>{esc(si)}</code>")

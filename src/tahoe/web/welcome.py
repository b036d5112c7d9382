"""The welcome page of a client node: grid health at a glance, the forms, the servers (pure).

Facts: ``reference/frontends.md`` §4 ("Welcome page": the four forms and
their fields, the "Connected to X of Y known storage servers" table). On
top of Tahoe's: a health summary (servers connected out of known, with a
warning when fewer than ``shares.happy`` are connected, since uploads then
fail; the space the connected servers offer; each introducer's state; the
last operations) so a person sees at once whether the grid can take files.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from ..client.history import Operation
from .humanize import human_ago, human_duration, human_rate, human_time
from .json_shapes import ServerSummary
from .page import badge, esc, facts_table, notice, page, size_html, table
from .svgchart import Segment, meter

__all__ = ["is_connected", "welcome_page"]

#: How many recent operations the welcome page lists.
RECENT_SHOWN = 5


def is_connected(server: ServerSummary) -> bool:
    """Whether the summary says the server is connected (Tahoe's wording or ours)."""
    return server.connection_status.lower().startswith("connected")


def _state_badge(connected: bool) -> str:
    return badge("ok", "connected") if connected else badge("bad", "not connected")


def _servers_card(servers: Sequence[ServerSummary], connected: int, happy: int | None) -> str:
    known = len(servers)
    level = "ok" if known and connected == known else "warn"
    if happy is not None and connected < happy:
        level = "bad"
    body = [f'<p class="big">{connected}<small> of {known}</small></p>',
            meter([Segment(connected, "ok", f"{connected} connected"),
                   Segment(known - connected, "down", f"{known - connected} not connected")],
                  title=f"{connected} of {known} storage servers connected")]
    if happy is not None and connected < happy:
        body.append(notice("bad", f"Only {connected} storage servers are connected, fewer than "
                                  f"<code>shares.happy</code> = {happy}: uploads will fail "
                                  f"until more servers connect."))
    elif happy is not None:
        body.append(f'<p class="muted">Uploads need {happy} (<code>shares.happy</code>).</p>')
    return (f'<section class="card card-{level}" id="health-servers"><h2>Storage servers</h2>'
            + "".join(body) + "</section>")


def _space_card(servers: Sequence[ServerSummary]) -> str:
    spaces = [s.available_space for s in servers if is_connected(s) and
              s.available_space is not None]
    if not spaces:
        return ('<section class="card" id="health-space"><h2>Space</h2>'
                '<p class="big">?</p><p class="muted">No connected server reported its '
                "space.</p></section>")
    return ('<section class="card" id="health-space"><h2>Space</h2>'
            f'<p class="big">{size_html(sum(spaces))}</p>'
            f'<p class="muted">available on {len(spaces)} connected servers; the fullest '
            f"has {size_html(min(spaces))} left.</p></section>")


def _introducer_card(introducers: Sequence[str]) -> str:
    if not introducers:
        return ('<section class="card" id="health-introducer"><h2>Introducer</h2>'
                '<p class="big">none</p><p class="muted">No introducer is configured; '
                "servers come from <code>private/servers.yaml</code>.</p></section>")
    up = sum(1 for status in introducers if status.lower().startswith("connected"))
    level = "ok" if up == len(introducers) else ("warn" if up else "bad")
    items = "".join(f"<li>{_state_badge(s.lower().startswith('connected'))} {esc(s)}</li>"
                    for s in introducers)
    return (f'<section class="card card-{level}" id="health-introducer"><h2>Introducer</h2>'
            f'<p class="big">{up}<small> of {len(introducers)} connected</small></p>'
            f'<ul class="plain">{items}</ul></section>')


def _recent_card(recent: Sequence[Operation]) -> str:
    rows = []
    for op in recent[:RECENT_SHOWN]:
        elapsed = None if op.finished is None else op.finished - op.started
        rows.append(f"<li>{esc(op.kind)} {size_html(op.size)} · {esc(op.status)}"
                    f" · {human_duration(elapsed)} · {human_rate(op.rate)}</li>")
    listing = f'<ul class="plain">{"".join(rows)}</ul>' if rows else \
        '<p class="muted">No upload or download yet.</p>'
    return ('<section class="card" id="health-recent"><h2>Recent operations</h2>'
            f'{listing}<p><a href="/status">All operations</a></p></section>')


_FORMS = """<section class="forms">
<form action="uri" method="get" id="view-form" class="card"><h2>View a file or directory</h2>
<label>Cap <input type="text" name="uri" placeholder="URI:…" required></label>
<input type="submit" value="View"></form>
<form action="uri" method="get" id="download-form" class="card"><h2>Download a file</h2>
<label>Cap <input type="text" name="uri" placeholder="URI:…" required></label>
<label>Save as <input type="text" name="filename" placeholder="file name"></label>
<input type="hidden" name="save" value="true">
<input type="submit" value="Download"></form>
<form action="uri" method="post" enctype="multipart/form-data" id="upload-form" class="card">
<h2>Upload a file</h2><input type="hidden" name="t" value="upload">
<label>File <input type="file" name="file" required></label>
<label>Format <select name="format"><option value="chk">Immutable</option>
<option value="sdmf">Mutable (SDMF)</option><option value="mdmf">Mutable (MDMF)</option>
</select></label>
<input type="submit" value="Upload"></form>
<form action="uri" method="post" enctype="multipart/form-data" id="mkdir-form" class="card">
<h2>Create a directory</h2><input type="hidden" name="t" value="mkdir">
<input type="hidden" name="redirect_to_result" value="true">
<label>Format <select name="format"><option value="sdmf">SDMF</option>
<option value="mdmf">MDMF</option></select></label>
<input type="submit" value="Create a directory"></form>
</section>"""


def _natural(text: str) -> tuple[tuple[int, str], ...]:
    """A sort key that puts ``storage2`` before ``storage10``."""
    return tuple((int(part), "") if part.isdigit() else (-1, part)
                 for part in re.split(r"(\d+)", text.lower()) if part)


def _certificate_cell(server: ServerSummary) -> str:
    """The Grid Manager column: certified until when, or why it gets no shares."""
    if server.certified:
        return (f"{badge('ok', 'certified')} until"
                f" {esc(human_time(server.certificate_expires))} UTC")
    return f"{badge('bad', 'not certified')} <span class=\"muted\">no shares placed</span>"


def _server_rows(servers: Sequence[ServerSummary], now: float | None) -> list[list[str]]:
    managed = any(s.certified is not None for s in servers)
    rows = []
    def order(s: ServerSummary) -> tuple[object, ...]:
        return (not is_connected(s), _natural(s.nickname), s.nodeid)
    for s in sorted(servers, key=order):
        state = _state_badge(is_connected(s))
        last = "?" if now is None else human_ago(s.last_received_data, now)
        rows.append([f"{esc(s.nickname) or '<em>no nickname</em>'}<br>"
                     f'<code class="nodeid">{esc(s.nodeid)}</code>',
                     f"{state} <span class=\"muted\">{esc(s.connection_status)}</span>",
                     esc(last), esc(s.version or "?"), size_html(s.available_space),
                     *([_certificate_cell(s)] if managed else [])])
    return rows


def welcome_page(identity: tuple[str, str], introducers: list[str],
                 servers: list[ServerSummary], *, happy: int | None = None,
                 recent: Sequence[Operation] = (), now: float | None = None) -> bytes:
    """The welcome page (``GET /``).

    :param identity: the node's nickname and node id.
    :param introducers: one status string per introducer.
    :param servers: every known storage server.
    :param happy: ``shares.happy``; fewer connected servers gives a warning.
    :param recent: finished operations, newest first.
    :param now: the time, for "last received" (seconds since the epoch).
    """
    nickname, nodeid = identity
    connected = sum(1 for s in servers if is_connected(s))
    node = facts_table([("Nickname", esc(nickname) or "<em>none</em>"),
                        ("Node ID", f'<code class="nodeid">{esc(nodeid)}</code>')])
    health = ('<section class="cards" aria-label="Grid health">'
              + _servers_card(servers, connected, happy) + _space_card(servers)
              + _introducer_card(introducers) + _recent_card(recent) + "</section>")
    managed = any(s.certified is not None for s in servers)
    server_table = table(["Nickname / Node ID", "Connection", "Last received", "Version",
                          "Available space", *(["Grid Manager"] if managed else [])],
                         _server_rows(servers, now),
                         empty="No storage server is known yet.")
    main = (f"{node}{health}{_FORMS}"
            f"<h2>Connected to {connected} of {len(servers)} known storage servers</h2>"
            f"{server_table}")
    return page("Tahoe-LAFS - Welcome", main, current="/",
                heading=f"Welcome to {esc(nickname) if nickname else 'your Tahoe-LAFS node'}")

"""The pages of slow operations (``/operations/H``) for people (pure).

Deep-check, manifest, deep-size and deep-stats (``reference/frontends.md``
§3.3 "Operation handles", §3.6, §3.7): the state of the walk (reloading
every few seconds while it runs, with a Cancel button), its results as
tables (the manifest links every path; deep-stats draws the file-size
histogram), and links to the same results as JSON (and text).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .dirhtml import directory_url
from .humanize import exact_bytes, human_duration
from .page import badge, cap_line, esc, facts_table, hidden, notice, page, post_form, size_html
from .page import table
from .svgchart import Bar, BarGroup, bar_chart

if TYPE_CHECKING:
    from .operations import Operation

__all__ = ["deep_check_page", "deep_size_page", "deep_stats_page", "manifest_page",
           "REFRESH_SECONDS"]

#: How often a running operation's page reloads itself.
REFRESH_SECONDS = 3


def _frame(op: "Operation", handle: str, now: float, title: str, body: str,
           outputs: tuple[str, ...]) -> bytes:
    url = "/operations/" + quote(handle, safe="")
    if op.error:
        state = badge("bad", "failed") + f" {esc(op.error)}"
    elif op.finished:
        state = badge("ok", "finished")
    else:
        state = badge("info", "running…")
    end = op.finished_at if op.finished_at is not None else now
    links = "".join(f'<a class="button" href="{esc(url)}?output={name}">{name}</a>'
                    for name in outputs)
    cancel = "" if op.finished else post_form(url, hidden("t", "cancel"), "Cancel",
                                              css="inline")
    head = (f"<p>{state} · {human_duration(max(0.0, end - op.started))} · storage index of "
            f"the root <code>{esc(op.origin or '(LIT)')}</code></p>"
            f'<p class="actions"><a class="button" href="{esc(url)}">Reload</a>{links}{cancel}'
            "</p>")
    return page(f"Tahoe-LAFS - {title}", head + body, script=True,
                refresh=None if op.finished else REFRESH_SECONDS,
                heading=f"{esc(title)} <small>SI={esc(op.origin or '(LIT)')}</small>")


def _path_text(path: list[str]) -> str:
    return "/".join(path) or "(the root)"


def deep_check_page(op: "Operation", handle: str, now: float) -> bytes:
    """The deep-check (or deep-check-and-repair) results."""
    if op.repair:
        rows = [("Objects checked", esc(op.checked)),
                ("Healthy before repair", esc(op.healthy)),
                ("Unhealthy before repair", esc(op.unhealthy)),
                ("Healthy after repair", esc(op.post_healthy)),
                ("Unhealthy after repair", esc(op.post_unhealthy)),
                ("Repairs attempted", esc(op.repairs["attempted"])),
                ("Repairs successful", esc(op.repairs["successful"])),
                ("Corrupt shares found", esc(len(op.corrupt)))]
        bad = op.post_unhealthy
    else:
        rows = [("Objects checked", esc(op.checked)), ("Healthy", esc(op.healthy)),
                ("Unhealthy", esc(op.unhealthy)), ("Corrupt shares", esc(len(op.corrupt)))]
        bad = op.unhealthy
    if not op.finished:
        verdict = ""
    elif bad:
        verdict = notice("warn", f"{bad} object{'s' if bad != 1 else ''} need attention.")
    else:
        verdict = notice("ok", "Everything checked is healthy.")
    url = "/operations/" + quote(handle, safe="")
    unhealthy = [[esc(_path_text(path)), esc(results.get("summary", "")),
                  f'<a href="{esc(url)}/{esc(results.get("storage-index", ""))}">JSON</a>']
                 for path, results in op.unhealthy_files]
    body = (verdict + facts_table(rows) + "<h2>Unhealthy objects</h2>"
            + table(["Path", "Summary", "Details"], unhealthy, empty="None."))
    if op.corrupt:
        body += "<h2>Corrupt shares</h2>" + table(
            ["Server", "Storage index", "Share"],
            [[f"<code>{esc(c[0])}</code>", f"<code>{esc(c[1])}</code>", esc(c[2])]
             for c in op.corrupt])
    return _frame(op, handle, now, "Deep-Check Results", body, ("JSON",))


def manifest_page(op: "Operation", handle: str, now: float) -> bytes:
    """Every object reached, linked by its path below the root."""
    root = op.manifest[0][1] if op.manifest and not op.manifest[0][0] else None
    rows = []
    for index, (path, cap) in enumerate(op.manifest):
        is_directory = cap.startswith("URI:DIR2")
        if root is None:
            name = esc(_path_text(path))
        elif is_directory:
            name = f'<a href="{esc(directory_url(root, path))}">{esc(_path_text(path))}</a>'
        else:
            address = directory_url(root, path[:-1]) + quote(path[-1], safe="")
            name = f'<a href="{esc(address)}?t=info">{esc(_path_text(path))}</a>'
        kind = "directory" if is_directory else "file" if cap.startswith(
            ("URI:CHK", "URI:LIT", "URI:SSK", "URI:MDMF")) else "other"
        rows.append([name, esc(kind), cap_line(cap, f"cap-{index}")])
    body = (f"<p>{len(op.manifest)} object{'s' if len(op.manifest) != 1 else ''} so far.</p>"
            + table(["Path", "Type", "Cap"], rows, empty="Nothing yet."))
    return _frame(op, handle, now, "Manifest", body, ("JSON", "text"))


def _total_size(stats: dict[str, Any]) -> int:
    return (stats.get("size-immutable-files", 0) + stats.get("size-mutable-files", 0)
            + stats.get("size-directories", 0))


def deep_size_page(op: "Operation", handle: str, now: float) -> bytes:
    """The total size of the tree and its parts."""
    stats = op.stats.results()
    total = _total_size(stats)
    body = (f'<p class="big">{size_html(total)}</p><p class="muted">{exact_bytes(total)}'
            "; mutable files are not counted, as in Tahoe.</p>"
            + facts_table([("Immutable files", size_html(stats.get("size-immutable-files", 0))),
                           ("Literal files (inside their caps)",
                            size_html(stats.get("size-literal-files", 0))),
                           ("Directories", size_html(stats.get("size-directories", 0)))]))
    return _frame(op, handle, now, "Deep Size", body, ("JSON", "text"))


def deep_stats_page(op: "Operation", handle: str, now: float) -> bytes:
    """Counts and sizes of the tree, with the histogram of file sizes."""
    stats = op.stats.results()
    counts = [("Files", stats.get("count-files", 0)),
              ("Immutable files", stats.get("count-immutable-files", 0)),
              ("Literal files", stats.get("count-literal-files", 0)),
              ("Mutable files", stats.get("count-mutable-files", 0)),
              ("Directories", stats.get("count-directories", 0)),
              ("Unknown objects", stats.get("count-unknown", 0))]
    sizes = [("Immutable files", size_html(stats.get("size-immutable-files", 0))),
             ("Literal files", size_html(stats.get("size-literal-files", 0))),
             ("Directories", size_html(stats.get("size-directories", 0))),
             ("Largest immutable file", size_html(stats.get("largest-immutable-file", 0))),
             ("Largest directory", f"{size_html(stats.get('largest-directory', 0))}, "
                                   f"{stats.get('largest-directory-children', 0)} children")]
    histogram = stats.get("size-files-histogram", [])
    groups = [BarGroup(f"≤{size_text(high)}",
                       (Bar(count, "files", f"{count} files of {low:,}–{high:,} bytes"),))
              for low, high, count in histogram]
    chart = bar_chart(groups, title="Number of files by size",
                      value_format=lambda v: f"{v:.0f}", empty="No file yet.", integer=True)
    body = ('<div class="columns"><section><h2>Counts</h2>'
            + facts_table((label, esc(f"{value:,}")) for label, value in counts)
            + "</section><section><h2>Sizes</h2>" + facts_table(sizes) + "</section></div>"
            + f'<h2>Files by size</h2><figure class="chart-box">{chart}</figure>')
    return _frame(op, handle, now, "Deep Stats", body, ("JSON",))


def size_text(size: int) -> str:
    """A bucket bound for an axis label: ``316``, ``3k``, ``10M``…"""
    for unit, scale in (("G", 10 ** 9), ("M", 10 ** 6), ("k", 10 ** 3)):
        if size >= scale:
            return f"{size // scale}{unit}"
    return str(size)

"""The HTML pages of a directory: its listing and the rename form.

Facts: ``reference/frontends.md`` §4 ("Directory page": the forms and
their fields, Tahoe's type codes, the unlink form with ``when_done=.``, the
``t=rename-form`` page). Beyond Tahoe's page: breadcrumbs (subdirectories
are linked by path below the cap in the address bar, so the path is the
trail), an "Up" link, sizes people read with the exact byte count on
hover, the format and size of mutable files, columns sorted by the server
(``?sort=name|type|size|modified&order=asc|desc``, which works without the
script; the script sorts in place), and rename, unlink, mkdir, upload and
attach on the page itself. Files are linked through
``/file/<cap>/@@named=/<name>`` with ``rel="noreferrer"``, so a displayed
file never learns its parent directory's cap.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from ..caps.dirnode import DirectoryCap
from ..caps.errors import CapError
from ..caps.parse import parse_cap
from ..caps.mutable import MDMFReadCap, MDMFWriteCap
from ..dirnode.children import ChildNode
from ..dirnode.packing import Entry
from ..util import base32
from .humanize import human_time
from .page import badge, esc, hidden, notice, page, post_form, size_html

__all__ = ["SORT_KEYS", "abbreviated_si", "child_kind", "crumbs_html", "directory_page",
           "directory_url", "kind_word", "rename_form", "render_time"]

SORT_KEYS = ("name", "type", "size", "modified")
render_time = human_time  # the link times, UTC


def abbreviated_si(cap: DirectoryCap) -> str:
    """The first five base32 characters of the storage index (``<LIT>`` without one)."""
    si = cap.storage_index
    return "<LIT>" if si is None else base32.b2a(si)[:5]


def kind_word(cap: DirectoryCap) -> str:
    """``modifiable``, ``read-only`` or ``immutable``."""
    if not cap.is_mutable:
        return "immutable"
    return "read-only" if cap.is_readonly else "modifiable"


def directory_url(root: str, names: Sequence[str]) -> str:
    """``/uri/<root cap>/<name>/…/``: the address of a directory reached by path."""
    return "/uri/" + quote(root, safe="") + "/" + "".join(quote(n, safe="") + "/" for n in names)


def crumbs_html(root: str, names: Sequence[str], leaf: str | None = None) -> str:
    """The breadcrumb trail from the cap in the address through the directories ``names``.

    The first crumb is the starting directory, shown by its abbreviated
    storage index. The last directory is the current page unless ``leaf``
    (a file's name) follows it.
    """
    try:
        start = parse_cap(root)
    except CapError:
        start = None
    label = abbreviated_si(start) if isinstance(start, DirectoryCap) else "start"
    trail = [("⌂ " + label, directory_url(root, []))]
    trail += [(name, directory_url(root, names[:i + 1])) for i, name in enumerate(names)]
    items = [f'<li><a href="{esc(url)}">{esc(text)}</a></li>' for text, url in trail]
    if leaf is not None:
        items.append(f'<li aria-current="page">{esc(leaf)}</li>')
    else:
        items[-1] = f'<li aria-current="page">{esc(trail[-1][0])}</li>'
    return f'<nav class="crumbs" aria-label="Path"><ol>{"".join(items)}</ol></nav>'


def child_kind(child: ChildNode, directory: DirectoryCap) -> tuple[str, str, str]:
    """(Tahoe's type code, a label for people, a CSS class) of one child."""
    if child.is_directory:
        assert isinstance(child.cap, DirectoryCap)
        if not child.cap.is_mutable:
            return "DIR-IMM", "directory, immutable", "dir"
        if child.cap.is_readonly:
            return "DIR-RO", "directory, read-only", "dir"
        return "DIR", "directory", "dir"
    if child.is_file:
        if not child.mutable:
            return "FILE", "immutable file", "file"
        fmt = "MDMF" if isinstance(child.cap, (MDMFReadCap, MDMFWriteCap)) else "SDMF"
        access = ", read-only" if child.write_uri is None else ""
        return "SSK", f"mutable file ({fmt}{access})", "mutable"
    if child.write_uri:
        return "?", "unknown object", "unknown"
    if not directory.is_mutable or (child.read_uri or b"").startswith(b"imm."):
        return "?-IMM", "unknown object, immutable", "unknown"
    return "?-RO", "unknown object, read-only", "unknown"


def _short_type(code: str, label: str) -> str:
    if code == "SSK":
        return "MDMF" if "MDMF" in label else "SDMF"
    return {"FILE": "file", "DIR": "dir", "DIR-RO": "dir (ro)", "DIR-IMM": "dir (imm)"}.get(
        code, "?")


def _link_times(metadata: Mapping[str, Any]) -> tuple[float | None, str]:
    """(the time to sort by, its tooltip): link-modified, else link-created, else old keys."""
    system = metadata.get("tahoe") if isinstance(metadata.get("tahoe"), dict) else {}
    created = system.get("linkcrtime", metadata.get("ctime"))
    modified = system.get("linkmotime", metadata.get("mtime"))
    moment = modified if modified is not None else created
    try:
        seconds = float(moment) if moment is not None else None
    except (TypeError, ValueError):
        seconds = None
    tip = f"link created {human_time(created)} UTC, modified {human_time(modified)} UTC"
    return seconds, tip


def _size_of(child: ChildNode, name: str, sizes: Mapping[str, int | None]) -> int | None:
    if child.is_file and not child.mutable:
        return getattr(child.cap, "size", None)
    if child.is_file:
        return sizes.get(name)
    return None


class _Row:
    """One child's cells and the values it sorts by."""

    def __init__(self, name: str, entry: Entry, directory: DirectoryCap, here: str,
                 sizes: Mapping[str, int | None]) -> None:
        child = entry.child
        self.name = name
        self.code, self.label, self.css = child_kind(child, directory)
        self.size = _size_of(child, name, sizes)
        self.moment, self.times_tip = _link_times(entry.metadata)
        cap = (child.write_uri or child.read_uri or b"").decode("utf-8", "replace")
        if child.is_directory:
            self.link = f'<a href="{esc(here + quote(name, safe=""))}/">{esc(name)}</a>'
        elif child.is_file:
            self.link = (f'<a href="/file/{esc(quote(cap, safe=""))}/@@named=/'
                         f'{esc(quote(name, safe=""))}" rel="noreferrer">{esc(name)}</a>')
        else:
            self.link = esc(name)
        self.info = here + quote(name, safe="") + ("/?t=info" if child.is_directory
                                                   else "?t=info")

    def sort_key(self, key: str) -> tuple[Any, ...]:
        """The value of column ``key`` (unknown sizes and times sort first)."""
        if key == "type":
            return (self.css, self.label, self.name)
        if key == "size":
            return (self.size is not None, self.size or 0, self.name)
        if key == "modified":
            return (self.moment is not None, self.moment or 0.0, self.name)
        return (self.name,)

    def html(self, here: str, writable: bool, index: int) -> str:
        """The table row."""
        size = size_html(self.size) if self.css in ("file", "mutable") else \
            '<span class="muted">—</span>'
        moment = esc(human_time(self.moment)) if self.moment is not None else "?"
        actions = f'<a class="button small" href="{esc(self.info)}">Info</a>'
        if writable:
            value = esc(self.name)
            actions += (
                f'<details class="rename"><summary class="button small">Rename</summary>'
                f'<form action="{esc(here)}" method="post">{hidden("t", "rename")}'
                f'{hidden("when_done", ".")}{hidden("from_name", self.name)}'
                f'<label>New name <input type="text" name="to_name" value="{value}" '
                f'required id="rename-{index}"></label><input type="submit" value="Rename">'
                f"</form></details>"
                + post_form(here, hidden("t", "unlink") + hidden("name", self.name)
                            + hidden("when_done", "."), "Unlink", css="inline unlink",
                            confirm=f"Unlink “{self.name}”? The object itself is not "
                                    f"deleted; other links to it keep working."))
        return (f'<tr class="kind-{self.css}">'
                f'<td data-sort="{esc(self.css + " " + self.label)}">'
                f'<span class="type type-{self.css}" title="{esc(self.code)}: '
                f'{esc(self.label)}">{esc(_short_type(self.code, self.label))}</span></td>'
                f'<td class="name" data-sort="{esc(self.name)}">{self.link}</td>'
                f'<td class="num" data-sort="{-1 if self.size is None else self.size}">'
                f"{size}</td>"
                f'<td class="when" data-sort="{self.moment if self.moment is not None else -1}"'
                f' title="{esc(self.times_tip)}">{moment}</td>'
                f'<td class="ops"><div class="row-actions">{actions}</div></td></tr>')


def _header(sort: str, descending: bool) -> str:
    cells = []
    for key, label in (("type", "Type"), ("name", "Name"), ("size", "Size"),
                       ("modified", "Modified")):
        current = key == sort
        order = "asc" if current and descending or not current else "desc"
        state = ("descending" if descending else "ascending") if current else "none"
        arrow = (" ▼" if descending else " ▲") if current else ""
        cells.append(f'<th scope="col" aria-sort="{state}" data-key="{key}">'
                     f'<a href="?sort={key}&amp;order={order}">{label}{arrow}</a></th>')
    cells.append('<th scope="col">Actions</th>')
    return "<thead><tr>" + "".join(cells) + "</tr></thead>"


def _forms(here: str) -> str:
    formats = ('<span class="choices"><label><input type="radio" name="format" value="chk" '
               'checked> Immutable</label><label><input type="radio" name="format" '
               'value="sdmf"> SDMF</label><label><input type="radio" name="format" '
               'value="mdmf"> MDMF</label></span>')
    upload = post_form(
        here, hidden("t", "upload") + hidden("when_done", ".")
        + '<label>File <input type="file" name="file" required></label>' + formats,
        "Upload", multipart=True, css="upload", ident="dir-upload")
    progress = ('<div class="progress" hidden><progress max="100" value="0"></progress>'
                '<span class="progress-text" aria-live="polite"></span></div>'
                '<p class="drop-hint" hidden>…or drop files anywhere on this box.</p>')
    mkdir = post_form(
        here, hidden("t", "mkdir") + hidden("when_done", ".")
        + '<label>Name <input type="text" name="name" required></label>'
        + '<span class="choices"><label><input type="radio" name="format" value="sdmf" '
          'checked> SDMF</label><label><input type="radio" name="format" value="mdmf"> '
          "MDMF</label></span>", "Create", multipart=True, css="mkdir", ident="dir-mkdir")
    attach = post_form(
        here, hidden("t", "uri") + hidden("when_done", ".")
        + '<label>Name <input type="text" name="name" required></label>'
        + '<label>Cap <input type="text" name="uri" placeholder="URI:…" required></label>',
        "Attach", multipart=True, css="attach", ident="dir-attach")
    return ('<section class="cards add" aria-label="Add to this directory">'
            f'<div class="card dropzone" data-upload="{esc(here)}"><h2>Upload a file</h2>'
            f"{upload}{progress}</div>"
            f'<div class="card"><h2>New directory</h2>{mkdir}</div>'
            f'<div class="card"><h2>Link an existing cap</h2>{attach}</div></section>')


def directory_page(cap: DirectoryCap, children: Mapping[str, Entry] | None,
                   error: str | None = None, *, root: str | None = None,
                   names: Sequence[str] = (), sizes: Mapping[str, int | None] | None = None,
                   sort: str = "name", descending: bool = False) -> bytes:
    """The listing page (``GET /uri/$DIRCAP[/path]/``).

    :param children: the children, or None when they cannot be read (``error`` says why).
    :param root: the cap at the start of the address (default: ``cap``).
    :param names: the path below ``root`` that leads to this directory.
    :param sizes: sizes of mutable files by child name (missing or None: unknown).
    :param sort: the column to sort by (:data:`SORT_KEYS`).
    """
    root = cap.to_string() if root is None else root
    here = directory_url(root, names)
    title = f"Tahoe-LAFS - Directory SI={abbreviated_si(cap)} ({kind_word(cap)})"
    links = []
    if names:
        links.append(f'<a class="button" href="{esc(directory_url(root, names[:-1]))}">'
                     "↑ Up</a>")
    links += [f'<a class="button" href="{esc(here)}">Refresh</a>',
              f'<a class="button" href="{esc(here)}?t=info">More info</a>',
              f'<a class="button" href="{esc(here)}?t=json">JSON</a>']
    if not cap.is_readonly:
        readonly = quote(cap.readonly().to_string(), safe="")
        links.append(f'<a class="button" href="/uri/{esc(readonly)}/">Read-only version</a>')
    body = [crumbs_html(root, names), f'<p class="actions">{"".join(links)}</p>']
    if children is None:
        body.append(notice("bad", f"Error reading directory: {esc(error or '')}"))
    else:
        sort = sort if sort in SORT_KEYS else "name"
        rows = [_Row(name, entry, cap, here, sizes or {}) for name, entry in children.items()]
        rows.sort(key=lambda row: row.sort_key(sort), reverse=descending)
        writable = not cap.is_readonly
        listing = "".join(row.html(here, writable, i) for i, row in enumerate(rows))
        if not listing:
            listing = '<tr><td colspan="5" class="empty">This directory is empty.</td></tr>'
        count = f"{len(rows)} item{'s' if len(rows) != 1 else ''}"
        body.append(f'<div class="table-wrap"><table class="listing sortable">'
                    f"<caption>{count}</caption>{_header(sort, descending)}"
                    f"<tbody>{listing}</tbody></table></div>")
    if not cap.is_readonly:
        body.append(_forms(here))
    heading = (f"{esc(names[-1]) if names else 'Directory'} "
               + badge("info", f"{kind_word(cap)} directory"))
    return page(title, "".join(body), script=True, heading=heading)


def rename_form(cap: DirectoryCap, name: str) -> bytes:
    """``t=rename-form``: a form that posts ``t=rename`` with ``from_name`` filled in."""
    readonly = " (readonly!)" if cap.is_readonly else ""
    value = esc(name)
    form = (f'<form action="." method="post" class="card">{hidden("t", "rename")}'
            f'{hidden("when_done", ".")}'
            f'<label>Rename child <input type="text" name="from_name" readonly value="{value}">'
            f'</label><label>to <input type="text" name="to_name" required></label>'
            '<input type="submit" value="rename"></form>')
    return page(f"Directory SI={abbreviated_si(cap)}", form,
                heading=f"Rename in directory SI={esc(abbreviated_si(cap))}{readonly}:")

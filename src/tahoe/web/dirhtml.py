"""The HTML pages of a directory: its listing, its "More Info" page and the rename form.

A plain server-rendered outline of ``reference/frontends.md`` §4 ("Directory
page"): a table of children (type, name, size, link times, unlink and
rename buttons, a "More Info" link) and, for a writable directory, forms to
create a subdirectory, upload a file and attach a cap. Links go by cap
(``/uri/<cap>/`` for directories, ``/file/<cap>/@@named=/<name>`` for
files), so a displayed file cannot learn its parent's cap.
"""
from __future__ import annotations

import datetime
from collections.abc import Mapping
from html import escape
from typing import Any
from urllib.parse import quote

from ..caps.dirnode import DirectoryCap
from ..dirnode.children import ChildNode
from ..dirnode.packing import Entry
from ..util import base32

_PAGE = ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title></head>'
         "<body>{body}</body></html>")


def abbreviated_si(cap: DirectoryCap) -> str:
    """The first five base32 characters of the storage index (``<LIT>`` without one)."""
    si = cap.storage_index
    return "<LIT>" if si is None else base32.b2a(si)[:5]


def kind_word(cap: DirectoryCap) -> str:
    """``modifiable``, ``read-only`` or ``immutable``."""
    if not cap.is_mutable:
        return "immutable"
    return "read-only" if cap.is_readonly else "modifiable"


def render_time(seconds: Any) -> str:
    """A link time as ``YYYY-MM-DD HH:MM:SS`` (UTC)."""
    try:
        moment = datetime.datetime.fromtimestamp(float(seconds), datetime.timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _times(metadata: Mapping[str, Any]) -> str:
    system = metadata.get("tahoe") if isinstance(metadata.get("tahoe"), dict) else {}
    parts = []
    if system.get("linkcrtime") is not None:
        parts.append("lcr: " + render_time(system["linkcrtime"]))
    elif "ctime" in metadata:
        parts.append("c: " + render_time(metadata["ctime"]))
    if system.get("linkmotime") is not None:
        parts.append("lmo: " + render_time(system["linkmotime"]))
    elif "mtime" in metadata:
        parts.append("m: " + render_time(metadata["mtime"]))
    return "<br>".join(escape(p) for p in parts)


def _child_cells(name: str, child: ChildNode, directory: DirectoryCap) -> tuple[str, str, str, str]:
    """(type, name cell, size, info link) of one child."""
    caps = child.write_uri or child.read_uri or b""
    quoted = quote(caps.decode("utf-8", "replace"), safe="")
    if child.is_directory:
        assert isinstance(child.cap, DirectoryCap)
        kind = "DIR-IMM" if not child.cap.is_mutable else (
            "DIR-RO" if child.cap.is_readonly else "DIR")
        link = f'<a href="/uri/{quoted}/">{escape(name)}</a>'
        return kind, link, "-", f"/uri/{quoted}/?t=info"
    if child.is_file:
        link = (f'<a href="/file/{quoted}/@@named=/{quote(name, safe="")}" '
                f'rel="noreferrer">{escape(name)}</a>')
        size = "?" if child.mutable else str(getattr(child.cap, "size", "?"))
        return ("SSK" if child.mutable else "FILE"), link, size, f"/uri/{quoted}?t=info"
    if child.write_uri:
        kind = "?"
    elif not directory.is_mutable or (child.read_uri or b"").startswith(b"imm."):
        kind = "?-IMM"
    else:
        kind = "?-RO"
    return kind, escape(name), "-", f"{quote(name, safe='')}?t=info"


def _row(name: str, entry: Entry, directory: DirectoryCap, here: str) -> str:
    kind, name_cell, size, info = _child_cells(name, entry.child, directory)
    if directory.is_readonly:
        unlink = rename = "-"
    else:
        value = escape(name, quote=True)
        unlink = (f'<form action="{here}" method="post"><input type="hidden" name="t" '
                  f'value="unlink"><input type="hidden" name="name" value="{value}">'
                  f'<input type="hidden" name="when_done" value=".">'
                  f'<input type="submit" value="unlink"></form>')
        rename = (f'<form action="{here}" method="get"><input type="hidden" name="t" '
                  f'value="rename-form"><input type="hidden" name="name" value="{value}">'
                  f'<input type="submit" value="rename/relink"></form>')
    return (f"<tr><td>{kind}</td><td>{name_cell}</td><td>{size}</td>"
            f"<td>{_times(entry.metadata)}</td><td>{unlink}</td><td>{rename}</td>"
            f'<td><a href="{escape(info, quote=True)}">More Info</a></td></tr>')


def _forms(here: str) -> str:
    return (
        f'<form action="{here}" method="post" enctype="multipart/form-data"><fieldset>'
        f"<legend>Create a new directory in this directory</legend>"
        f'<input type="hidden" name="t" value="mkdir"><input type="hidden" name="when_done" '
        f'value=".">New directory name: <input type="text" name="name"> '
        f'<label><input type="radio" name="format" value="sdmf" checked> SDMF</label> '
        f'<label><input type="radio" name="format" value="mdmf"> MDMF</label> '
        f'<input type="submit" value="Create"></fieldset></form>'
        f'<form action="{here}" method="post" enctype="multipart/form-data"><fieldset>'
        f"<legend>Upload a file to this directory</legend>"
        f'<input type="hidden" name="t" value="upload"><input type="hidden" name="when_done" '
        f'value=".">Choose a file to upload: <input type="file" name="file"> '
        f'<label><input type="radio" name="format" value="chk" checked> Immutable</label> '
        f'<label><input type="radio" name="format" value="sdmf"> SDMF</label> '
        f'<label><input type="radio" name="format" value="mdmf"> MDMF</label> '
        f'<input type="submit" value="Upload"></fieldset></form>'
        f'<form action="{here}" method="post" enctype="multipart/form-data"><fieldset>'
        f"<legend>Add a link to a file or directory which is already in Tahoe-LAFS.</legend>"
        f'<input type="hidden" name="t" value="uri"><input type="hidden" name="when_done" '
        f'value=".">New child name: <input type="text" name="name"> '
        f'URI of new child: <input type="text" name="uri"> '
        f'<input type="submit" value="Attach"></fieldset></form>')


def directory_page(cap: DirectoryCap, children: Mapping[str, Entry] | None,
                   error: str | None = None) -> bytes:
    """The listing page (``GET /uri/$DIRCAP/``); ``error`` when the children cannot be read."""
    here = f"/uri/{quote(cap.to_string(), safe='')}/"
    title = f"Tahoe-LAFS - Directory SI={abbreviated_si(cap)} ({kind_word(cap)})"
    links = ['<a href="/">Return to Welcome page</a>', '<a href="">Refresh</a>',
             '<a href="?t=info">More info on this directory</a>']
    if not cap.is_readonly:
        links.append(f'<a href="/uri/{quote(cap.readonly().to_string(), safe="")}/">'
                     f"Read-Only Version</a>")
    body = [f"<h1>{escape(title)}</h1>", "<p>" + " | ".join(links) + "</p>"]
    if children is None:
        body.append(f"<div><p>Error reading directory:</p><p>{escape(error or '')}</p></div>")
    else:
        rows = "".join(_row(name, children[name], cap, here) for name in sorted(children))
        body.append("<table><tr><th>Type</th><th>Filename</th><th>Size</th><th>Times</th>"
                    f"<th></th><th></th><th></th></tr>{rows}</table>")
    if not cap.is_readonly:
        body.append(_forms(here))
    return _PAGE.format(title=escape(title), body="".join(body)).encode("utf-8")


def info_page(title: str, rows: list[tuple[str, str]]) -> bytes:
    """A "More Info" page: a table of (label, value) and a link to the JSON."""
    cells = "".join(f"<tr><th>{escape(k)}</th><td><code>{escape(v)}</code></td></tr>"
                    for k, v in rows)
    return _PAGE.format(title=escape(title), body=(
        f"<h1>{escape(title)}</h1><table>{cells}</table>"
        f'<p><a href="?t=json">JSON</a></p>')).encode("utf-8")


def directory_info_page(cap: DirectoryCap) -> bytes:
    """``t=info`` of a directory: its kind, storage index and caps."""
    rows = [("Object type", f"{kind_word(cap)} directory ({cap.kind})")]
    if cap.storage_index is not None:
        rows.append(("Storage index", base32.b2a(cap.storage_index)))
    if not cap.is_readonly:
        rows.append(("Directory writecap", cap.to_string()))
    rows.append(("Directory readcap", cap.readonly().to_string()))
    verify = cap.verify_cap()
    if verify is not None:
        rows.append(("Directory verifycap", verify.to_string()))
    return info_page(f"Tahoe-LAFS - Directory SI={abbreviated_si(cap)}", rows)


def rename_form(cap: DirectoryCap, name: str) -> bytes:
    """``t=rename-form``: a form that posts ``t=rename`` with ``from_name`` filled in."""
    value = escape(name, quote=True)
    title = f"Directory SI={abbreviated_si(cap)}"
    readonly = " (readonly!)" if cap.is_readonly else ""
    return _PAGE.format(title=escape(title), body=(
        f"<h1>Rename in directory SI={abbreviated_si(cap)}{readonly}:</h1>"
        f'<form action="." method="post"><input type="hidden" name="t" value="rename">'
        f'<input type="hidden" name="when_done" value=".">'
        f'Rename child: <input type="text" name="from_name" readonly value="{value}"> '
        f'to: <input type="text" name="to_name"> <input type="submit" value="rename">'
        f"</form>")).encode("utf-8")

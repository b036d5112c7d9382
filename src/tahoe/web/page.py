"""The frame every HTML page of the gateway shares, and the small pieces pages are built of.

Pure: strings in, strings out. A page links the one stylesheet
(``/tahoe.css``) and, only when it has something to enhance, the one script
(``/tahoe.js``, deferred); it has no inline script or style, so the strict
Content-Security-Policy of :mod:`tahoe.web.headers` holds. Every piece
works without the script: a copy button is ``hidden`` until the script
shows it; a confirmation is only asked for when the script runs.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from .._version import __version__
from .humanize import exact_bytes, human_size

__all__ = ["NAV", "badge", "cap_line", "checkbox", "esc", "facts_table", "hidden", "notice",
           "page", "post_form", "size_html", "table"]

STYLESHEET = "/tahoe.css"
SCRIPT = "/tahoe.js"
ICON = "/icon.svg"
#: (path, label) of the site navigation.
NAV = (("/", "Welcome"), ("/status", "Status"), ("/statistics", "Statistics"),
       ("/storage", "Storage"))


def esc(text: object) -> str:
    """``text`` escaped for HTML text and attribute values."""
    return escape(str(text), quote=True)


def page(title: str, main: str, *, current: str | None = None, script: bool = False,
         refresh: int | None = None, heading: str | None = None) -> bytes:
    """A whole HTML document.

    :param title: the ``<title>`` (plain text).
    :param main: the HTML of the main column, after the heading.
    :param current: the :data:`NAV` path this page belongs to (shown as current).
    :param script: whether the page loads ``/tahoe.js``.
    :param refresh: reload the page after this many seconds (a running operation).
    :param heading: the ``<h1>`` HTML (the escaped title when None).
    """
    nav = "".join(
        f'<a href="{path}"' + (' aria-current="page"' if path == current else "")
        + f">{label}</a>" for path, label in NAV)
    meta_refresh = f'<meta http-equiv="refresh" content="{int(refresh)}">' if refresh else ""
    script_tag = f'<script src="{SCRIPT}" defer></script>' if script else ""
    document = (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"{meta_refresh}<title>{esc(title)}</title>"
        f'<link rel="stylesheet" href="{STYLESHEET}">'
        f'<link rel="icon" href="{ICON}" type="image/svg+xml">{script_tag}</head>'
        '<body><header class="top"><a class="brand" href="/">Tahoe-LAFS</a>'
        f'<nav class="site" aria-label="Site">{nav}</nav></header>'
        f'<main><h1>{heading if heading is not None else esc(title)}</h1>{main}</main>'
        f'<footer>tahoe-lafs-py {esc(__version__)}</footer></body></html>\n')
    return document.encode("utf-8")


def size_html(size: int | None) -> str:
    """A size people read (``1.2 MB``), with the exact byte count on hover."""
    if size is None:
        return '<span class="size unknown" title="unknown size">?</span>'
    return f'<span class="size" title="{exact_bytes(size)}">{human_size(size)}</span>'


def cap_line(cap: str, ident: str) -> str:
    """A cap in a monospace block, with a copy button that the script reveals.

    :param ident: an id unique in the page (the button names it).
    """
    return (f'<span class="cap"><code id="{esc(ident)}">{esc(cap)}</code>'
            f'<button type="button" class="copy" data-copy="{esc(ident)}" hidden>Copy</button>'
            "</span>")


def facts_table(rows: Iterable[tuple[str, str]], *, css: str = "facts") -> str:
    """A two-column table of (label text, value HTML)."""
    body = "".join(f'<tr><th scope="row">{esc(label)}</th><td>{value}</td></tr>'
                   for label, value in rows)
    return f'<table class="{css}">{body}</table>'


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, css: str = "grid",
          empty: str = "None.") -> str:
    """A table with a header row (plain text) and rows of cell HTML, scrollable on phones."""
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>"
                   for row in rows)
    if not body:
        body = f'<tr><td colspan="{len(headers)}" class="empty">{esc(empty)}</td></tr>'
    return (f'<div class="table-wrap"><table class="{css}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def badge(kind: str, text: str) -> str:
    """A small coloured label; ``kind`` is ``ok``, ``warn``, ``bad`` or ``info``."""
    return f'<span class="badge badge-{esc(kind)}">{esc(text)}</span>'


def notice(kind: str, html_text: str) -> str:
    """A highlighted paragraph (``ok``, ``warn``, ``bad``, ``info``) holding ``html_text``."""
    return f'<p class="notice notice-{esc(kind)}" role="status">{html_text}</p>'


def hidden(name: str, value: str) -> str:
    """A hidden form field."""
    return f'<input type="hidden" name="{esc(name)}" value="{esc(value)}">'


def checkbox(name: str, label: str, *, checked: bool = False) -> str:
    """A labelled checkbox sending ``name=true`` when ticked."""
    tick = " checked" if checked else ""
    return (f'<label class="check"><input type="checkbox" name="{esc(name)}" value="true"'
            f"{tick}> {esc(label)}</label>")


def post_form(action: str, fields: str, submit: str, *, legend: str | None = None,
              multipart: bool = False, css: str = "", confirm: str | None = None,
              ident: str | None = None) -> str:
    """A POST form in a fieldset (a state-changing form is always POST).

    :param action: the URL posted to (with no query: form fields carry every argument).
    :param fields: the HTML of the fields.
    :param submit: the submit button's label.
    :param confirm: a question the script asks before the form is sent.
    """
    attributes = f' action="{esc(action)}" method="post"'
    if multipart:
        attributes += ' enctype="multipart/form-data"'
    if css:
        attributes += f' class="{esc(css)}"'
    if confirm:
        attributes += f' data-confirm="{esc(confirm)}"'
    if ident:
        attributes += f' id="{esc(ident)}"'
    inner = f"{fields}<input type=\"submit\" value=\"{esc(submit)}\">"
    if legend is not None:
        inner = f"<fieldset><legend>{esc(legend)}</legend>{inner}</fieldset>"
    return f"<form{attributes}>{inner}</form>"

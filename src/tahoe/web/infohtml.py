"""The "More Info" pages (``?t=info``) of files, directories and unknown objects.

Facts: ``reference/frontends.md`` §4 ("More Info": type, storage index,
size, caps, a JSON link, the check form with ``verify``, ``repair``,
``add-lease`` and ``output=JSON``; for directories the deep-check,
deep-size, deep-stats and manifest forms, each with a fresh ``ophandle``;
for mutable files a "Replace Contents" upload form) and §3.3 (their
``t=`` values). Every form posts to the object's own address with no query,
so the form's ``t`` is the one the gateway reads. Caps get a copy button.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from urllib.parse import quote, unquote

from ..caps.dirnode import DirectoryCap
from ..caps.immutable import CHKReadCap, LiteralCap
from ..caps.mutable import MDMFReadCap, MDMFWriteCap, SSKReadCap, SSKWriteCap
from ..util import base32
from .dirhtml import abbreviated_si, crumbs_html, directory_url, kind_word
from .page import cap_line, checkbox, esc, facts_table, hidden, page, post_form, size_html

__all__ = ["address_of", "directory_info_page", "file_info_page", "info_page",
           "unknown_info_page"]

FileCap = CHKReadCap | LiteralCap | SSKWriteCap | SSKReadCap | MDMFWriteCap | MDMFReadCap


def address_of(path: str) -> tuple[str, list[str]] | None:
    """(the cap, the names after it) of an address ``/uri/CAP/a/b`` (None for others)."""
    parts = path.split("?", 1)[0].split("/")
    if len(parts) < 3 or parts[1] not in ("uri", "cap") or not parts[2]:
        return None
    names = [unquote(p) for p in parts[3:]]
    if names and names[-1] == "":
        names.pop()
    return unquote(parts[2]), names


def _crumbs(here: str, is_directory: bool) -> str:
    address = address_of(here)
    if address is None:
        return ""
    root, names = address
    if is_directory:
        return crumbs_html(root, names, "info")
    if not names:
        return ""
    return crumbs_html(root, names[:-1], names[-1])


def _caps_rows(rows: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(label, cap_line(cap, f"cap-{index}")) for index, (label, cap) in enumerate(rows)]


def _check_form(here: str) -> str:
    fields = (hidden("t", "check") + hidden("return_to", here + "?t=info")
              + checkbox("verify", "Verify every byte (slow: reads all shares)")
              + checkbox("repair", "Repair if unhealthy")
              + checkbox("add-lease", "Add or renew my lease")
              + '<label class="check"><input type="checkbox" name="output" value="JSON"> '
                "Results as JSON</label>")
    return post_form(here, fields, "Check", legend="Check health", css="card check",
                     ident="check-form")


def _deep_forms(here: str, new_handle: Callable[[], str]) -> str:
    deep_check = post_form(
        here, hidden("t", "start-deep-check") + hidden("ophandle", new_handle())
        + checkbox("verify", "Verify every byte") + checkbox("repair", "Repair what is unhealthy")
        + checkbox("add-lease", "Add or renew my leases")
        + '<label class="check"><input type="checkbox" name="output" value="JSON"> '
          "Results as JSON</label>",
        "Deep-check", legend="Deep-check everything below", css="card", ident="deep-check-form")
    manifest = post_form(
        here, hidden("t", "start-manifest") + hidden("ophandle", new_handle())
        + '<label>Output <select name="output"><option value="html">page</option>'
          '<option value="text">text</option><option value="JSON">JSON</option>'
          "</select></label>",
        "Manifest", legend="List every object below", css="card", ident="manifest-form")
    size = post_form(here, hidden("t", "start-deep-size") + hidden("ophandle", new_handle()),
                     "Deep-size", legend="Total size below", css="card", ident="deep-size-form")
    stats = post_form(here, hidden("t", "start-deep-stats") + hidden("ophandle", new_handle()),
                      "Deep-stats", legend="Statistics of everything below", css="card",
                      ident="deep-stats-form")
    return (f'<h2>Whole tree</h2><p class="muted">These walk every directory below this one; '
            f'they run in the background and their page shows progress.</p>'
            f'<section class="cards forms">{deep_check}{manifest}{size}{stats}</section>')


def _replace_form(here: str) -> str:
    fields = (hidden("t", "upload") + hidden("when_done", "?t=info")
              + '<label>New contents <input type="file" name="file" required></label>')
    return post_form(here, fields, "Replace contents", legend="Replace contents",
                     multipart=True, css="card upload", ident="replace-form")


def _file_kind(cap: FileCap) -> str:
    if isinstance(cap, LiteralCap):
        return "immutable file (LIT: the contents are inside the cap)"
    if isinstance(cap, CHKReadCap):
        return "immutable file (CHK)"
    fmt = "MDMF" if isinstance(cap, (MDMFWriteCap, MDMFReadCap)) else "SDMF"
    access = "" if isinstance(cap, (SSKWriteCap, MDMFWriteCap)) else ", read-only"
    return f"mutable file ({fmt}{access})"


def file_info_page(cap: FileCap, *, here: str, name: str | None, size: int | None) -> bytes:
    """``t=info`` of a file: its facts, caps, a download link and the forms.

    :param here: the file's address (no query); the forms post there.
    :param name: the name it is linked under, if reached through a directory.
    :param size: its size in bytes (None: unknown, e.g. unrecoverable).
    """
    writable = isinstance(cap, (SSKWriteCap, MDMFWriteCap))
    mutable = isinstance(cap, (SSKWriteCap, SSKReadCap, MDMFWriteCap, MDMFReadCap))
    facts: list[tuple[str, str]] = [("Type", esc(_file_kind(cap))), ("Size", size_html(size))]
    if not isinstance(cap, LiteralCap):
        facts.append(("Storage index", f"<code>{base32.b2a(cap.storage_index)}</code>"))
    caps = []
    if writable:
        caps.append(("Read-write cap", cap.to_string()))
    read_cap = (cap.readonly().to_string() if mutable  # type: ignore[union-attr]
                else cap.to_string())
    caps.append(("Read-only cap", read_cap))
    if not isinstance(cap, LiteralCap):
        caps.append(("Verify cap", cap.verify_cap().to_string()))
    download = (f"/file/{quote(read_cap, safe='')}/@@named=/"
                f"{quote(name or 'download', safe='')}")
    links = (f'<p class="actions"><a class="button" href="{esc(download)}" rel="noreferrer">'
             f"Open</a><a class=\"button\" href=\"{esc(download)}?save=true\" "
             f'rel="noreferrer">Download</a><a class="button" href="{esc(here)}?t=json">JSON</a>'
             "</p>")
    forms = f'<section class="cards forms">{_check_form(here)}' + (
        _replace_form(here) if writable else "") + "</section>"
    heading = esc(name) if name else "File"
    return page("Tahoe-LAFS - File Info", _crumbs(here, False) + links
                + facts_table(facts + _caps_rows(caps)) + forms, script=True,
                heading=f"{heading} <small>file info</small>")


def directory_info_page(cap: DirectoryCap, *, here: str | None = None,
                        new_handle: Callable[[], str] | None = None) -> bytes:
    """``t=info`` of a directory: its kind, storage index, caps, the check and deep forms.

    :param here: the directory's address (default: ``/uri/<cap>/``).
    :param new_handle: makes a fresh operation handle for each deep form (none: no forms).
    """
    here = here or directory_url(cap.to_string(), [])
    if not here.endswith("/"):
        here += "/"
    facts = [("Type", esc(f"{kind_word(cap)} directory ({cap.kind})"))]
    if cap.storage_index is not None:
        facts.append(("Storage index", f"<code>{base32.b2a(cap.storage_index)}</code>"))
    caps = []
    if not cap.is_readonly:
        caps.append(("Directory writecap", cap.to_string()))
    caps.append(("Directory readcap", cap.readonly().to_string()))
    verify = cap.verify_cap()
    if verify is not None:
        caps.append(("Directory verifycap", verify.to_string()))
    links = (f'<p class="actions"><a class="button" href="{esc(here)}">Open the listing</a>'
             f'<a class="button" href="{esc(here)}?t=json">JSON</a></p>')
    forms = f'<section class="cards forms">{_check_form(here)}</section>'
    if new_handle is not None:
        forms += _deep_forms(here, new_handle)
    return page(f"Tahoe-LAFS - Directory SI={abbreviated_si(cap)}",
                _crumbs(here, True) + links + facts_table(facts + _caps_rows(caps)) + forms,
                script=True, heading="Directory <small>info</small>")


def unknown_info_page(cap_text: str) -> bytes:
    """``t=info`` of an object of a kind this gateway does not know."""
    return info_page("Tahoe-LAFS - Unknown Object Info",
                     [("Object type", "unknown"), ("Cap", cap_text)])


def info_page(title: str, rows: list[tuple[str, str]]) -> bytes:
    """A plain info page: a table of (label, text) and a link to the JSON."""
    facts = facts_table((label, f"<code>{esc(value)}</code>") for label, value in rows)
    return page(title, facts + '<p><a class="button" href="?t=json">JSON</a></p>')

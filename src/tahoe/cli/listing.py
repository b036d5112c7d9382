"""The lines ``tahoe ls`` prints for a ``t=json`` answer (pure: values in, text out).

Facts: ``reference/frontends.md`` §2.3 (``ls`` row), §3.4 (the JSON), as
Tahoe-LAFS 1.20 lays them out:

* children sorted by name; a file (not a directory) is listed as one child
  named after the last segment of the path;
* ``-l`` columns: type and permissions (``d``/``-``/``?``, ``r``, ``w``, ``x``
  for directories), size (``-`` for directories, ``?`` when unknown), the link
  creation time (``linkcrtime``, else the old ``ctime`` key; ``-`` when
  absent) as ``%b %d %H:%M``, or ``%b %d  %Y`` when older than about six
  months; then the name (``-F`` appends ``/``, ``*`` for mutable files with a
  write cap, ``?`` for unknown objects), then ``--uri`` and ``--readonly-uri``;
* every column is padded to its widest cell, right-aligned, except columns
  with a cell starting with ``URI`` and a lone column, which are left-aligned;
  cells are joined by one space and trailing spaces are dropped.

The caller passes in the clock (``now``) and the time formatter.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .aliases import quote_output

__all__ = ["Columns", "SIX_MONTHS", "UNKNOWN_OBJECTS_NOTE", "listed_children", "format_time",
           "listing_rows", "format_rows"]

#: Links older than this (seconds) show the year instead of the time of day.
SIX_MONTHS = 6 * 30 * 24 * 60 * 60
UNKNOWN_OBJECTS_NOTE = ("\nThis listing included unknown objects. Using a webapi server that"
                        " supports\na later version of Tahoe may help.")

#: ``time_format(fmt, seconds) -> text``, such as ``strftime(fmt, localtime(seconds))``.
TimeFormatter = Callable[[str, float], str]


class Columns(NamedTuple):
    """Which columns to show (the ``ls`` flags)."""

    long: bool = False
    uri: bool = False
    readonly_uri: bool = False
    classify: bool = False


def listed_children(parsed: Any, path: str) -> dict[str, list[Any]]:
    """name -> ``[nodetype, data]`` for what ``ls`` shows of a ``t=json`` answer.

    :raises ValueError: if ``parsed`` is not ``[nodetype, {…}]``.
    """
    if not isinstance(parsed, list) or len(parsed) != 2 or not isinstance(parsed[1], dict):
        raise ValueError("expected [nodetype, data]")
    nodetype, data = parsed
    if nodetype == "dirnode":
        children = data.get("children", {})
        if not isinstance(children, dict):
            raise ValueError("children is not an object")
        return children
    data.setdefault("metadata", {})
    return {path.split("/")[-1]: [nodetype, data]}


def format_time(seconds: float | None, now: float, time_format: TimeFormatter) -> str:
    """A link time as ``ls -l`` shows it (``-`` when unknown)."""
    if not seconds:
        return "-"
    pattern = "%b %d  %Y" if now - seconds > SIX_MONTHS else "%b %d %H:%M"
    return time_format(pattern, seconds)


def _link_time(data: Mapping[str, Any]) -> Any:
    metadata = data.get("metadata") or {}
    tahoe = metadata.get("tahoe") or {}
    return tahoe.get("linkcrtime") or metadata.get("ctime")


def _row(name: str, child: list[Any], columns: Columns, now: float,
         time_format: TimeFormatter) -> tuple[list[str], bool]:
    childtype, data = child[0], child[1] if len(child) > 1 and isinstance(child[1], dict) else {}
    rw_uri, ro_uri = data.get("rw_uri"), data.get("ro_uri")
    unknown = False
    if childtype == "dirnode":
        kind, size, suffix = "d", "-", "/"
    elif childtype == "filenode":
        kind, size, suffix = "-", str(data.get("size", "?")), "*" if rw_uri else ""
    else:
        kind, size, suffix, unknown = "?", "?", "?", True
    mode = (kind + ("r" if ro_uri else "-") + ("w" if rw_uri else "-")
            + ("x" if childtype == "dirnode" else "-"))
    row = []
    if columns.long:
        row += [mode, size, format_time(_link_time(data), now, time_format)]
    row.append(name + (suffix if columns.classify else ""))
    if columns.uri:
        row.append(rw_uri or ro_uri or "-")
    if columns.readonly_uri:
        row.append(quote_output(ro_uri or "-", quotemarks=False))
    return row, unknown


def listing_rows(children: Mapping[str, list[Any]], columns: Columns, now: float,
                 time_format: TimeFormatter) -> tuple[list[list[str]], bool]:
    """The cells of each line, sorted by name, and whether any child is of an unknown type."""
    rows = []
    has_unknowns = False
    for name in sorted(children):
        row, unknown = _row(str(name), children[name], columns, now, time_format)
        rows.append(row)
        has_unknowns = has_unknowns or unknown
    return rows, has_unknowns


def format_rows(rows: list[list[str]]) -> list[str]:
    """The lines of ``rows``: columns padded to their widest cell and joined by spaces."""
    widths: list[int] = []
    left: list[bool] = []
    for row in rows:
        for i, cell in enumerate(row):
            if i == len(widths):
                widths.append(0)
                left.append(False)
            widths[i] = max(widths[i], len(cell))
            left[i] = left[i] or cell.startswith("URI")
    if len(left) == 1:
        left[0] = True
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) if left[i] else cell.rjust(widths[i])
                 for i, cell in enumerate(row)]
        lines.append(" ".join(cells).rstrip())
    return lines

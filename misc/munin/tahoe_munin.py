"""What the tahoe_* munin plugins share: where the nodes are, fetching, the plugin protocol.

Not a plugin itself (it is not executable); the plugins beside it import it,
also when they are run through a symlink (``/etc/munin/plugins/NAME`` ->
this directory). Python 3 standard library only.

Each plugin is a pure ``config(...) -> str`` and ``render(stats) -> str``
plus a main of a few lines that calls :func:`run_single` (one node, for the
disk graphs) or :func:`run_nodes` (one field or more per node).

Environment (set with ``env.NAME value`` in ``/etc/munin/plugin-conf.d/``):

``url_<NODE>``
    a node's web URL (``http://127.0.0.1:3456/``) or its statistics URL
    (``http://127.0.0.1:3456/statistics?t=json``); one per node.
``basedir_<NODE>``, ``nodememory_<NODE>``
    a node directory; its ``node.url`` file gives the URL (read at every run).
``url``, ``basedir``
    one node, when no ``*_<NODE>`` variable is set (field name ``tahoe``);
    the only source of the single-node plugins.
``timeout``
    seconds to wait for a node (default 10).

``<NODE>`` becomes the field name: characters other than letters, digits
and ``_`` become ``_``. The protocol: no argument prints values, ``config``
the graph, ``autoconf`` ``yes`` or ``no (why)``, ``suggest`` (wildcard
plugins) the names to link the plugin under.
"""
from __future__ import annotations

import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Dict, Optional, TextIO

Document = Mapping[str, Any]
#: A statistics document as fetched: ``{"counters": {...}, "stats": {...}}``.
Stats = Dict[str, Any]
DEFAULT_TIMEOUT = 10.0
#: Node-directory variables: ``<prefix>_<NODE>``, read through ``<dir>/node.url``.
DIRECTORY_PREFIXES = ("basedir", "nodememory")
#: The field name of a node given by ``url`` or ``basedir`` alone.
SINGLE_NODE = "tahoe"


class PluginError(Exception):
    """The plugin cannot do what it was asked (the message says why)."""


# ---------------------------------------------------------------- pure helpers


def field_name(text: str) -> str:
    """A munin field name for ``text``: ``[A-Za-z_][A-Za-z0-9_]*``."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text)
    return name if name and not name[0].isdigit() else "_" + name


def format_value(value: Any) -> str:
    """A number for a ``.value`` line; ``U`` (unknown) for ``None`` and non-numbers."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        text = f"{value:.9f}".rstrip("0").rstrip(".")
        return text if text not in ("", "-0") else "0"
    return "U"


def stat(document: Optional[Document], key: str) -> Any:
    """``document["stats"][key]``, ``None`` if it (or the document) is missing."""
    if not document:
        return None
    return document.get("stats", {}).get(key)


def counter(document: Optional[Document], key: str) -> Optional[int]:
    """``document["counters"][key]``; 0 when absent (counters start at zero), ``None``
    without a document."""
    if not document:
        return None
    value = document.get("counters", {}).get(key, 0)
    return value if isinstance(value, int) else None


def graph(title: str, vlabel: str, fields: Sequence[tuple[str, Mapping[str, str]]],
          info: str = "", args: str = "", category: str = "tahoe") -> str:
    """A ``config`` answer: the graph lines, then each field's attributes in order."""
    lines = [f"graph_title {title}", f"graph_vlabel {vlabel}", f"graph_category {category}"]
    if args:
        lines.append(f"graph_args {args}")
    if info:
        lines.append(f"graph_info {info}")
    for name, attributes in fields:
        lines += [f"{name}.{key} {value}" for key, value in attributes.items()]
    return "\n".join(lines) + "\n"


def values(pairs: Sequence[tuple[str, Any]]) -> str:
    """A fetch answer: one ``<field>.value <number or U>`` line per field."""
    return "".join(f"{name}.value {format_value(value)}\n" for name, value in pairs)


def statistics_url(url: str) -> str:
    """The ``/statistics?t=json`` URL of a node, given its web URL or that URL itself."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise PluginError(f"not an http(s) URL: {url!r}")
    path = parts.path.rstrip("/")
    if not path.endswith("/statistics"):
        path += "/statistics"
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if k != "t"]
    query.append(("t", "json"))
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path,
                                    urllib.parse.urlencode(query), ""))


def node_sources(environ: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """Every node the environment names: field name -> (kind, value), kind being
    ``url`` or ``dir``. ``url``/``basedir`` alone count only without any
    ``*_<NODE>`` variable."""
    nodes: dict[str, tuple[str, str]] = {}
    for key in sorted(environ):
        prefix, sep, node = key.partition("_")
        if not sep or not node or not environ[key].strip():
            continue
        if prefix == "url":
            nodes[field_name(node)] = ("url", environ[key])
        elif prefix in DIRECTORY_PREFIXES:
            nodes[field_name(node)] = ("dir", environ[key])
    if not nodes:
        single = single_source(environ)
        if single is not None:
            nodes[SINGLE_NODE] = single
    return dict(sorted(nodes.items()))


def single_source(environ: Mapping[str, str]) -> Optional[tuple[str, str]]:
    """The node of ``url`` (or else ``basedir``), ``None`` if neither is set."""
    if environ.get("url", "").strip():
        return ("url", environ["url"])
    if environ.get("basedir", "").strip():
        return ("dir", environ["basedir"])
    return None


# ---------------------------------------------------------------- fetching


def source_url(source: tuple[str, str]) -> str:
    """The statistics URL of a node source (a node directory's ``node.url`` is read now)."""
    kind, value = source
    if kind == "dir":
        try:
            with open(os.path.join(value, "node.url"), encoding="utf-8") as f:
                value = f.read().strip()
        except OSError as e:
            raise PluginError(f"cannot read {value}/node.url: {e.strerror}") from None
    return statistics_url(value)


def fetch(source: tuple[str, str], timeout: float) -> Stats:
    """The statistics document of one node.

    :raises PluginError: if it cannot be fetched or is not a statistics document.
    """
    url = source_url(source)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            document = json.loads(response.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise PluginError(f"{url}: {e}") from None
    if (not isinstance(document, dict) or not isinstance(document.get("stats"), dict)
            or not isinstance(document.get("counters"), dict)):
        raise PluginError(f"{url}: not a statistics document")
    return document


def _timeout(environ: Mapping[str, str]) -> float:
    try:
        return float(environ.get("timeout", DEFAULT_TIMEOUT))
    except ValueError:
        raise PluginError(f"timeout must be a number of seconds, not {environ['timeout']!r}")


# ---------------------------------------------------------------- the protocol


def plugin_name(argv: Sequence[str]) -> str:
    """The name the plugin was run under (a wildcard's parameters are in it)."""
    name = os.path.basename(argv[0]) if argv else ""
    return name[:-3] if name.endswith(".py") else name


def run_nodes(config: Callable[[list[str]], str],
              render: Callable[[dict[str, Optional[Stats]]], str],
              suggest: Optional[Callable[[], list[str]]] = None,
              argv: Optional[Sequence[str]] = None, environ: Optional[Mapping[str, str]] = None,
              stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> int:
    """Run a plugin with fields per node: ``config(nodes)`` and
    ``render({node: document or None if unreachable})``.

    :returns: the exit status (0, or 1 with a message on ``stderr``).
    """
    argv = sys.argv if argv is None else argv
    environ = os.environ if environ is None else environ
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    command = argv[1] if len(argv) > 1 else ""
    try:
        if command == "suggest":
            if suggest is not None:
                stdout.write("".join(f"{name}\n" for name in suggest()))
            return 0
        nodes = node_sources(environ)
        if command == "autoconf":
            stdout.write(_autoconf(list(nodes.values()), environ) + "\n")
            return 0
        if not nodes:
            raise PluginError("no node configured: set env.url_<NODE> (or env.url) "
                              "in the plugin's section of plugin-conf.d")
        if command == "config":
            stdout.write(config(list(nodes)))
            return 0
        if command not in ("", "fetch"):
            raise PluginError(f"unknown command {command!r}")
        timeout = _timeout(environ)
        documents: dict[str, Optional[Stats]] = {}
        for node, source in nodes.items():
            try:
                documents[node] = fetch(source, timeout)
            except PluginError as e:
                stderr.write(f"{plugin_name(argv)}: {node}: {e}\n")
                documents[node] = None
        stdout.write(render(documents))
        return 0
    except PluginError as e:
        stderr.write(f"{plugin_name(argv)}: {e}\n")
        return 1


def run_single(config: Callable[[], str], render: Callable[[Optional[Stats]], str],
               argv: Optional[Sequence[str]] = None,
               environ: Optional[Mapping[str, str]] = None,
               stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> int:
    """Run a one-node plugin: ``config()`` and ``render(document or None)``, the
    node given by ``url`` (or ``basedir``)."""
    argv = sys.argv if argv is None else argv
    environ = os.environ if environ is None else environ
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    command = argv[1] if len(argv) > 1 else ""
    try:
        source = single_source(environ)
        if command == "autoconf":
            stdout.write(_autoconf([source] if source else [], environ) + "\n")
            return 0
        if command == "config":
            stdout.write(config())
            return 0
        if command not in ("", "fetch"):
            raise PluginError(f"unknown command {command!r}")
        if source is None:
            raise PluginError("no node configured: set env.url (or env.basedir) "
                              "in the plugin's section of plugin-conf.d")
        try:
            document: Optional[Stats] = fetch(source, _timeout(environ))
        except PluginError as e:
            stderr.write(f"{plugin_name(argv)}: {e}\n")
            document = None
        stdout.write(render(document))
        return 0
    except PluginError as e:
        stderr.write(f"{plugin_name(argv)}: {e}\n")
        return 1


def _autoconf(sources: list[tuple[str, str]], environ: Mapping[str, str]) -> str:
    if not sources:
        return "no (no node configured: set env.url_<NODE> or env.url)"
    try:
        timeout = _timeout(environ)
        for source in sources:
            fetch(source, timeout)
    except PluginError as e:
        return f"no ({e})"
    return "yes"

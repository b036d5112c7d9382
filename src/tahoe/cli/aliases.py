"""Aliases and remote path arguments of the ``tahoe`` commands (pure: text in, text out).

Follows ``reference/frontends.md`` §2.1-2.2 and Tahoe-LAFS 1.20's
``allmydata/scripts/common.py`` (``get_aliases``, ``get_alias``,
``escape_path``):

* the alias file ``private/aliases`` holds ``name: CAP`` lines;
* a path argument is ``CAP[/path]``, ``CAP:./path``, ``ALIAS:path`` or a bare
  ``path`` relative to the default alias ``tahoe``;
* in URLs, caps are percent-quoted as a whole, and paths segment by segment
  with the ``/`` between segments kept.

No I/O here: reading the alias file is :func:`tahoe.cli.gateway.read_aliases`.
Unlike Tahoe, an alias's cap is used as written (Tahoe parses it as a
directory cap and writes it back out, which changes nothing for a valid cap).
"""
from __future__ import annotations

from collections.abc import Mapping

from .errors import CLIError, UnknownAliasError

__all__ = ["DEFAULT_ALIAS", "CAP_PREFIXES", "parse_aliases", "has_cap_prefix", "resolve_path",
           "resolve_local_or_remote", "percent_quote", "quote_cap", "escape_path", "quote_output",
           "check_alias_name"]

DEFAULT_ALIAS = "tahoe"
#: What a cap argument starts with (``ro.``/``imm.`` mark caps found in read-only
#: or immutable directories).
CAP_PREFIXES = ("URI:", "ro.URI:", "imm.URI:")

# RFC 3986 unreserved characters: never quoted (as urllib.parse.quote).
_ALWAYS_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")


def parse_aliases(text: str, root_dir_cap: str | None = None) -> dict[str, str]:
    """The aliases of an alias file's text: name -> cap.

    Blank lines and lines starting with ``#`` are skipped; each other line is
    split at its first ``:`` and both sides are stripped. A line without a
    ``:`` is skipped (Tahoe raises on it). Later lines win.

    :param root_dir_cap: the content of the legacy ``private/root_dir.cap``,
        which supplies ``tahoe`` unless the alias file defines it.
    """
    aliases: dict[str, str] = {}
    if root_dir_cap and root_dir_cap.strip():
        aliases[DEFAULT_ALIAS] = root_dir_cap.strip()
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or ":" not in line:
            continue
        name, _, cap = line.partition(":")
        aliases[name.strip()] = cap.strip()
    return aliases


def has_cap_prefix(text: str) -> bool:
    """Whether ``text`` starts like a cap (``URI:``, ``ro.URI:`` or ``imm.URI:``)."""
    return text.startswith(CAP_PREFIXES)


def _default_root(aliases: Mapping[str, str], default: str) -> str:
    if default not in aliases:
        raise UnknownAliasError(
            f"No alias specified, and the default '{default}' alias doesn't exist. "
            f"To create it, use 'tahoe create-alias {default}'.")
    return aliases[default]


def resolve_path(aliases: Mapping[str, str], argument: str,
                 default: str = DEFAULT_ALIAS) -> tuple[str, str]:
    """Split a remote path argument into ``(root cap, path)``; the path may be empty.

    * ``URI:…:./a/b`` and ``URI:…/a/b`` give the cap and ``a/b``; a bare cap gives ``""``.
    * ``alias:a/b`` gives ``aliases["alias"]`` and ``a/b``.
    * ``a/b`` (no ``:``, or a ``:`` only after a ``/``) is relative to ``default``.

    Spaces around the argument are stripped first.

    :raises UnknownAliasError: for an unknown alias, or no alias when ``default``
        is not defined either (Tahoe's messages).
    """
    path = argument.strip(" ")
    if has_cap_prefix(path):
        separator = path.find(":./")
        if separator != -1:
            return path[:separator], path[separator + 3:]
        separator = path.find("/")
        if separator != -1:
            return path[:separator], path[separator + 1:]
        return path, ""
    colon = path.find(":")
    if colon == -1 or "/" in path[:colon]:
        return _default_root(aliases, default), path
    alias = path[:colon]
    if alias not in aliases:
        raise UnknownAliasError(f"Unknown alias '{alias}', please create it with"
                                " 'tahoe add-alias' or 'tahoe create-alias'.")
    return aliases[alias], path[colon + 1:]


def resolve_local_or_remote(aliases: Mapping[str, str], argument: str) -> tuple[str | None, str]:
    """Like :func:`resolve_path` for ``cp``, where an argument without an alias is local.

    :returns: ``(None, local path)`` for a local argument (no ``:``, or a ``:``
        only after a ``/``: ``./a:b``, ``/tmp/x``, ``~/f``), else ``(root cap, path)``.
    :raises UnknownAliasError: for an unknown alias.
    """
    path = argument.strip(" ")
    if not has_cap_prefix(path):
        colon = path.find(":")
        if colon == -1 or "/" in path[:colon]:
            return None, path
    return resolve_path(aliases, path)


def check_alias_name(name: str) -> str:
    """The alias ``name`` without one trailing ``:``.

    :raises CLIError: if the rest contains a ``:`` or a space (Tahoe's messages).
    """
    name = name[:-1] if name.endswith(":") else name
    if ":" in name:
        raise CLIError("Alias names cannot contain colons.")
    if " " in name:
        raise CLIError("Alias names cannot contain spaces.")
    return name


def percent_quote(text: str, safe: str = "") -> str:
    """Percent-encode the UTF-8 bytes of ``text`` as ``urllib.parse.quote(text, safe)`` does.

    Letters, digits and ``_.-~`` are kept, as are the ASCII characters in ``safe``.
    """
    keep = _ALWAYS_SAFE | frozenset(safe.encode("ascii"))
    return "".join(chr(byte) if byte in keep else f"%{byte:02X}"
                   for byte in text.encode("utf-8", "surrogateescape"))


def quote_cap(cap: str) -> str:
    """A cap quoted as a whole for a URL path (``URI:CHK:…`` -> ``URI%3ACHK%3A…``)."""
    return percent_quote(cap)


def escape_path(path: str) -> str:
    """A remote path quoted segment by segment, keeping the ``/`` between segments.

    ``føö/bar/☃`` -> ``f%C3%B8%C3%B6/bar/%E2%98%83`` (Tahoe's ``escape_path``).
    """
    return "/".join(percent_quote(segment) for segment in path.split("/"))


def _is_plain(character: str, newlines: bool) -> bool:
    """Whether ``character`` may stand for itself inside single quotes."""
    code = ord(character)
    if character == "\n":
        return not newlines
    return ((0x20 <= code <= 0x7E and character != "'") or 0xA0 <= code <= 0xD7FF
            or 0xE000 <= code <= 0xFDCF or 0xFDF0 <= code <= 0xFFFC)


def _kept_in_double_quotes(character: str) -> bool:
    code = ord(character)
    return (character in " !#" or 0x25 <= code <= 0x5B or 0x5D <= code <= 0x5F
            or 0x61 <= code <= 0x7E or 0xA0 <= code <= 0xD7FF or 0xE000 <= code <= 0xFDCF
            or 0xFDF0 <= code <= 0xFFFC)


def _escape(character: str, newlines: bool) -> str:
    if character in '"$`\\':
        return "\\" + character
    if (character == "\n" and not newlines) or _kept_in_double_quotes(character):
        return character
    code = ord(character)
    if code > 0xFFFF:
        return f"\\U{code:08x}"
    if code > 0xFF:
        return f"\\u{code:04x}"
    return f"\\x{code:02x}"


def quote_output(text: str, quotemarks: bool = True, quote_newlines: bool | None = None) -> str:
    """``text`` as Tahoe shows names and paths in messages.

    Text made only of printable characters (no ``'``, and no newline when
    ``quote_newlines``) is shown in single quotes (without them when
    ``quotemarks`` is false, unless it starts with ``"``). Anything else goes
    in double quotes with ``"``, ``$``, `````` ` `````` and ``\\`` backslash-escaped
    and other unprintable characters as ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``.

    :param quote_newlines: whether a newline forces double quotes (default: ``quotemarks``).
    """
    newlines = quotemarks if quote_newlines is None else quote_newlines
    if all(_is_plain(character, newlines) for character in text):
        return f"'{text}'" if quotemarks or text.startswith('"') else text
    return '"' + "".join(_escape(character, newlines) for character in text) + '"'

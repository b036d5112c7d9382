"""Paths of the SFTP frontend: what a client's path names below the account's root.

Every account sees its root directory as ``/``. A path is UTF-8, absolute or
relative to ``/`` (the home directory); ``.`` and empty components are
dropped and ``..`` goes up one level. A path that goes above ``/`` is
refused (:class:`OutsideRoot`) rather than quietly kept at the root: a
client that asks for something outside the account learns that it cannot
have it. Pure.
"""
from __future__ import annotations

import stat

__all__ = ["OutsideRoot", "BadPath", "split_path", "join_path", "permissions"]


class BadPath(ValueError):
    """A path that is not UTF-8."""


class OutsideRoot(ValueError):
    """A path that leads above the account's root directory."""


def split_path(path: bytes) -> list[str]:
    """The names from ``/`` to what ``path`` designates (``[]`` for the root).

    :raises BadPath: if it is not UTF-8.
    :raises OutsideRoot: if a ``..`` would leave the root.
    """
    try:
        text = path.decode("utf-8")
    except UnicodeDecodeError:
        raise BadPath("paths must be UTF-8") from None
    names: list[str] = []
    for name in text.split("/"):
        if name in ("", "."):
            continue
        if name == "..":
            if not names:
                raise OutsideRoot(f"{text!r} leads outside this account's root directory")
            names.pop()
        else:
            names.append(name)
    return names


def join_path(names: list[str]) -> bytes:
    """The absolute path of ``names`` (``/`` for none), as the client is told it."""
    return ("/" + "/".join(names)).encode("utf-8")


def permissions(is_directory: bool, writable: bool) -> int:
    """The ``st_mode`` shown for a child: its type, and write bits only if it can change."""
    if is_directory:
        return stat.S_IFDIR | (0o755 if writable else 0o555)
    return stat.S_IFREG | (0o644 if writable else 0o444)

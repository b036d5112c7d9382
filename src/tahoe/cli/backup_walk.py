"""The local side of ``tahoe backup``: which paths to back up, in which order, and excludes.

As Tahoe-LAFS 1.20 (``scripts/tahoe_backup.py``, ``cli.py``): the tree under
FROM becomes a list of targets, every directory after its children (deepest
first), so that a directory is made once its children have caps. A symbolic
link or a special file (device, socket, FIFO) is skipped with a warning, as
is what cannot be listed or named. Exclude patterns are ``fnmatch`` globs
matched against each child's name at every depth (not against paths);
``--exclude-vcs`` adds Tahoe's list of version-control names.

Children are taken in sorted order (Tahoe takes the directory's order), so
two runs over the same tree do the same thing. Standard library only.
"""
from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterable, Iterator

from attrs import frozen

from .errors import UsageError

__all__ = ["VCS_PATTERNS", "Target", "collect_targets", "exclusion", "read_exclude_file"]

#: What ``--exclude-vcs`` excludes.
VCS_PATTERNS = ("CVS", "RCS", "SCCS", ".git", ".gitignore", ".cvsignore", ".svn", ".arch-ids",
                "{arch}", "=RELEASE-ID", "=meta-update", "=update", ".bzr", ".bzrignore",
                ".bzrtags", ".hg", ".hgignore", "_darcs")
#: Target kinds: backed up, or skipped with a warning.
FILE, DIRECTORY = "file", "directory"
SYMLINK, SPECIAL, DENIED, UNDECODABLE = "symlink", "special", "denied", "undecodable"


@frozen
class Target:
    """One path to back up (or to skip, and say so).

    :ivar kind: :data:`FILE`, :data:`DIRECTORY`, or a reason to skip it.
    :ivar path: the absolute path.
    :ivar is_dir: whether it is (or was to be) a directory.
    :ivar stat: its ``os.stat`` for files and directories, else None.
    :ivar depth: 0 for FROM itself, 1 for its children, …
    """

    kind: str
    path: str
    is_dir: bool
    stat: os.stat_result | None
    depth: int


def exclusion(patterns: Iterable[str]) -> Callable[[str], bool]:
    """A test telling whether a child's name matches one of the glob ``patterns``."""
    compiled = [re.compile(fnmatch.translate(pattern)) for pattern in set(patterns) if pattern]
    return lambda name: any(regexp.match(name) for regexp in compiled)


def read_exclude_file(path: str) -> list[str]:
    """The patterns of an ``--exclude-from-utf-8`` file: one per line, stripped, blank
    lines ignored.

    :raises UsageError: if the file cannot be read as UTF-8 (Tahoe's message).
    """
    try:
        with open(path, encoding="utf-8") as f:
            return [line.strip() for line in f if line.strip()]
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"Error opening exclude file {path!r}. (Error: {error})") from None


def _named(name: str) -> bool:
    """Whether a file name can be sent as UTF-8 (undecodable bytes come as surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _children(directory: str, excluded: Callable[[str], bool], depth: int) -> Iterator[Target]:
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError:
        yield Target(DENIED, directory, True, None, depth)
        return
    for entry in entries:
        if excluded(entry.name):
            continue
        if not _named(entry.name):
            yield Target(UNDECODABLE, entry.path, entry.is_dir(follow_symlinks=False), None,
                         depth + 1)
            continue
        try:
            if entry.is_symlink():
                yield Target(SYMLINK, entry.path, False, None, depth + 1)
            elif entry.is_dir(follow_symlinks=False):
                yield from _children(entry.path, excluded, depth + 1)
            elif entry.is_file(follow_symlinks=False):
                yield Target(FILE, entry.path, False, entry.stat(follow_symlinks=False),
                             depth + 1)
            else:
                yield Target(SPECIAL, entry.path, False, None, depth + 1)
        except OSError:
            yield Target(DENIED, entry.path, False, None, depth + 1)
    try:
        yield Target(DIRECTORY, directory, True, os.stat(directory), depth)
    except OSError:
        yield Target(DENIED, directory, True, None, depth)


def collect_targets(root: str, excluded: Callable[[str], bool]) -> list[Target]:
    """Every target under ``root`` (absolute), each directory after its children.

    :raises UsageError: if ``root`` is not a directory.
    """
    if not os.path.isdir(root):
        raise UsageError(f"Error: {root!r} is not a directory: tahoe backup copies the"
                         " contents of a local directory")
    return list(_children(root, excluded, 0))

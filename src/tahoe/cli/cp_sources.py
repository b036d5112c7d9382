"""What the arguments of ``tahoe cp`` name: local or grid files and directories, and their trees.

Facts: ``reference/frontends.md`` §2.2 (an argument without an alias is a
local path), §2.3 (``cp`` row), §3.4 (``t=json``).  As Tahoe-LAFS 1.20:

* the target is looked at first: a local path is a file, a directory or
  missing; a grid path is examined with ``GET …?t=json`` (404: missing;
  another error: ``Error examining target '<spec>': …``);
* a local source must exist (``No such file or directory '<spec>'``) and be
  a directory or a regular file; a grid source's ``t=json`` 404 gives the
  same message, another error ``Error examining source '<spec>': …``;
* a file source given with a trailing ``/`` is refused
  (``source ''<spec>'' is not a directory, but ends with a slash``, quoted
  twice as Tahoe does);
* a source's name is the last segment of its path; a bare cap (or an alias
  with no path) has no name.

Better than Tahoe: grid directories are listed concurrently (a pool of
threads, one ``t=json`` request each), a directory that contains itself is
an error rather than endless recursion, and local symbolic links to
directories are followed only once per real directory on a path.
Standard library only.
"""
from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .aliases import quote_output, resolve_local_or_remote
from .errors import CLIError, HTTPStatusError
from .gateway import Gateway
from .remote import ERROR_BODY_LIMIT, call, object_path
from .workers import TaskPool

__all__ = ["FileSource", "DirSource", "Source", "Target", "UNKNOWN_NODE_MESSAGE", "local_abspath",
           "find_target", "find_source", "expand_sources", "count_tree"]

UNKNOWN_NODE_MESSAGE = ("Cannot copy unknown nodes (ticket #839). You probably need to use a"
                        " later version of Tahoe-LAFS to copy this directory.")


@dataclass(eq=False)
class FileSource:
    """A file to copy: a local file (``local_path``) or a grid file (its caps)."""

    name: str | None
    local_path: str | None = None
    readcap: str | None = None
    writecap: str | None = None
    mutable: bool = False

    @property
    def bestcap(self) -> str:
        """The write cap if there is one, else the read cap."""
        return self.writecap or self.readcap or ""


@dataclass(eq=False)
class DirSource:
    """A directory to copy, local or on the grid, with its children once expanded."""

    name: str | None
    local_path: str | None = None
    readcap: str | None = None
    writecap: str | None = None
    parent: DirSource | None = None
    listing: dict[str, Any] | None = None  # grid: the children JSON, not yet expanded
    children: dict[str, FileSource | DirSource] = field(default_factory=dict)

    def ancestors(self) -> list[DirSource]:
        """This directory and those above it in the copy."""
        chain, node = [], self
        while node is not None:
            chain.append(node)
            node = node.parent
        return chain


Source = FileSource | DirSource


@dataclass(eq=False)
class Target:
    """Where ``cp`` writes: ``kind`` is ``"file"``, ``"directory"`` or ``"missing"``.

    Local targets have ``local_path``; grid targets have ``relative`` (the
    request path) and, when they exist, what ``t=json`` said about them.
    """

    kind: str
    local_path: str | None = None
    relative: str | None = None
    writecap: str | None = None
    readcap: str | None = None
    mutable: bool = False
    children: dict[str, Any] | None = None


def local_abspath(path: str, env: Mapping[str, str]) -> str:
    """``path`` with ``~`` expanded (``HOME`` from ``env`` first) and made absolute."""
    if (path == "~" or path.startswith("~/")) and env.get("HOME"):
        path = env["HOME"] + path[1:]
    return os.path.abspath(os.path.expanduser(path))


def _examine(gateway: Gateway, relative: str, context: str) -> tuple[int, Any]:
    status, reason, data = call(gateway, "GET", relative + "?t=json", context=context)
    if status == 404:
        return status, None
    if status != 200:
        raise HTTPStatusError(context, status, reason, data[:ERROR_BODY_LIMIT])
    try:
        parsed = json.loads(data)
        if not (isinstance(parsed, list) and len(parsed) == 2 and isinstance(parsed[1], dict)):
            raise ValueError("expected [nodetype, data]")
    except ValueError as e:
        raise CLIError(f"{context}: the gateway sent bad JSON: {e}") from None
    return status, parsed


def _children_of(data: Mapping[str, Any]) -> dict[str, Any]:
    children = data.get("children", {})
    return {str(name): value for name, value in children.items()}


def find_target(gateway: Gateway, spec: str, env: Mapping[str, str]) -> Target:
    """The target named by ``spec``.

    :raises HTTPStatusError: when the grid target cannot be examined.
    """
    root_cap, path = resolve_local_or_remote(gateway.aliases(), spec)
    if root_cap is None:
        local = local_abspath(path, env)
        if not os.path.exists(local):
            return Target("missing", local_path=local)
        return Target("directory" if os.path.isdir(local) else "file", local_path=local)
    relative = object_path(root_cap, path)
    status, parsed = _examine(gateway, relative,
                              f"Error examining target {quote_output(spec)}")
    if status == 404:
        return Target("missing", relative=relative)
    nodetype, data = parsed
    target = Target("directory" if nodetype == "dirnode" else "file", relative=relative,
                    writecap=data.get("rw_uri"), readcap=data.get("ro_uri"),
                    mutable=bool(data.get("mutable", False)))
    if nodetype == "dirnode":
        target.children = _children_of(data)
    return target


def find_source(gateway: Gateway, spec: str, env: Mapping[str, str]) -> Source:
    """The source named by ``spec`` (directories not expanded yet).

    :raises CLIError: for a missing or unusable source (Tahoe's messages).
    """
    root_cap, path = resolve_local_or_remote(gateway.aliases(), spec)
    trailing_slash = path.endswith("/")
    if root_cap is None:
        local = local_abspath(path, env)
        if not os.path.exists(local):
            raise CLIError(f"No such file or directory {quote_output(spec)}")
        name = os.path.basename(local)
        if os.path.isdir(local):
            return DirSource(name, local_path=local)
        if trailing_slash:
            raise CLIError(f"source '{quote_output(spec)}' is not a directory, but ends with"
                           " a slash")
        if not os.path.isfile(local):
            raise CLIError(f"source '{quote_output(local)}' is neither a file nor a"
                           " directory, I can't handle it")
        return FileSource(name, local_path=local)
    path = path[:-1] if trailing_slash else path
    name = path[path.rfind("/") + 1:] if path else None
    status, parsed = _examine(gateway, object_path(root_cap, path),
                              f"Error examining source {quote_output(spec)}")
    if status == 404:
        raise CLIError(f"No such file or directory {quote_output(spec)}")
    nodetype, data = parsed
    if nodetype == "dirnode":
        return DirSource(name, readcap=data.get("ro_uri"), writecap=data.get("rw_uri"),
                         listing=_children_of(data))
    if trailing_slash:
        raise CLIError(f"source '{quote_output(spec)}' is not a directory, but ends with a"
                       " slash")
    return FileSource(name, readcap=data.get("ro_uri"), writecap=data.get("rw_uri"),
                      mutable=bool(data.get("mutable", False)))


# ---------------------------------------------------------------- expanding trees

def _skipped(path: str) -> str:
    """What a local entry that is neither a file nor a directory is, for the warning."""
    if os.path.islink(path):
        return "dangling symlink"
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "entry that vanished"
    kinds = ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "device"),
             (stat.S_ISBLK, "device"))
    return next((f"special file ({kind})" for test, kind in kinds if test(mode)), "special file")


def _expand_local(directory: DirSource, progress: Callable[[str], None],
                  warn: Callable[[str], None]) -> None:
    assert directory.local_path is not None
    stack = [directory]
    while stack:
        node = stack.pop()
        assert node.local_path is not None
        try:
            names = sorted(os.listdir(node.local_path))
        except OSError as e:
            raise CLIError(f"Error: cannot list {quote_output(node.local_path)}:"
                           f" {e.strerror or e}") from None
        real_ancestors = {os.path.realpath(a.local_path or "") for a in node.ancestors()}
        for i, name in enumerate(names):
            progress(f"examining {i + 1} of {len(names)}")
            child_path = os.path.join(node.local_path, name)
            try:
                name.encode("utf-8")
            except UnicodeEncodeError:
                raise CLIError(f"Error: the name of {quote_output(child_path)} is not valid"
                               " UTF-8") from None
            if os.path.isdir(child_path):
                if os.path.realpath(child_path) in real_ancestors:
                    continue  # a symbolic link back up the tree
                child = DirSource(name, local_path=child_path, parent=node)
                node.children[name] = child
                stack.append(child)
            elif os.path.isfile(child_path):
                node.children[name] = FileSource(name, local_path=child_path)
            else:
                # Skipped, as in Tahoe (which says nothing): a dangling link, a pipe, a device.
                warn(f"WARNING: cannot copy {_skipped(child_path)} {quote_output(child_path)},"
                     " skipped")


def _add_grid_children(directory: DirSource, progress: Callable[[str], None]
                       ) -> list[DirSource]:
    """Turn ``directory.listing`` into children; return the subdirectories to list."""
    listing, directory.listing = directory.listing or {}, None
    subdirectories = []
    caps_above = {cap for node in directory.ancestors()
                  for cap in (node.readcap, node.writecap) if cap}
    for i, (name, entry) in enumerate(sorted(listing.items())):
        progress(f"examining {i + 1} of {len(listing)}")
        nodetype, data = entry[0], entry[1] if len(entry) > 1 else {}
        writecap, readcap = data.get("rw_uri"), data.get("ro_uri")
        if nodetype == "filenode":
            directory.children[name] = FileSource(name, readcap=readcap, writecap=writecap,
                                                  mutable=bool(data.get("mutable", False)))
        elif nodetype == "dirnode":
            if (writecap and writecap in caps_above) or (readcap and readcap in caps_above):
                raise CLIError(f"Error: the directory {quote_output(name)} contains itself;"
                               " it cannot be copied")
            child = DirSource(name, readcap=readcap, writecap=writecap, parent=directory)
            directory.children[name] = child
            subdirectories.append(child)
        else:
            raise CLIError(UNKNOWN_NODE_MESSAGE)
    return subdirectories


def expand_sources(gateway: Gateway, sources: list[Source], workers: int,
                   progress: Callable[[str], None],
                   warn: Callable[[str], None] = lambda message: None) -> None:
    """Fill in the children of every directory source, recursively.

    Grid subdirectories are listed concurrently, ``workers`` requests at a time.
    A local entry that is neither a file nor a directory is skipped, and ``warn``
    told.

    :raises CLIError: for an unknown object, a listing error
        (``Error examining source directory: …``) or a directory inside itself.
    """
    pool = TaskPool(workers)
    lock = threading.Lock()

    def list_directory(directory: DirSource) -> None:
        relative = object_path(directory.writecap or directory.readcap or "")
        status, parsed = _examine(gateway, relative, "Error examining source directory")
        if status == 404 or parsed[0] != "dirnode":
            name = quote_output(directory.name or "")
            raise CLIError(f"Error examining source directory: {name} is not a directory")
        directory.listing = _children_of(parsed[1])
        expand(directory)

    def expand(directory: DirSource) -> None:
        with lock:
            subdirectories = _add_grid_children(directory, progress)
        for child in subdirectories:
            pool.submit(lambda child=child: list_directory(child))  # type: ignore[misc]

    for source in sources:
        if isinstance(source, DirSource):
            if source.local_path is not None:
                _expand_local(source, progress, warn)
            else:
                pool.submit(lambda source=source: expand(source))  # type: ignore[misc]
    pool.wait()


def count_tree(source: Source) -> tuple[int, int]:
    """``(files, directories)`` in ``source``, itself included."""
    if isinstance(source, FileSource):
        return 1, 0
    files, directories = 0, 1
    for child in source.children.values():
        child_files, child_directories = count_tree(child)
        files += child_files
        directories += child_directories
    return files, directories

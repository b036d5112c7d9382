"""Walking ``/uri/$CAP/a/b/c``: from a cap, through directories, to what a path names.

Facts: ``reference/frontends.md`` §3.1 (addressing, empty components) and
§3.3 (missing intermediate directories are created by ``PUT`` and ``POST``,
except ``t=delete``, ``rename``, ``rename-form`` and ``check``).

Each directory on the way is read once. A missing intermediate directory
is created (an empty mutable directory of the gateway's default format)
and linked by a change that keeps a directory someone else linked there
meanwhile, so concurrent requests through one gateway never replace each
other's new directories.
"""
from __future__ import annotations

from typing import Any

from attrs import frozen

from ..caps.dirnode import DirectoryCap
from ..caps.mutable import MutableFormat
from ..client.dirnode import DirectoryNode
from ..client.services import ClientServices
from ..dirnode.children import ChildNode, child_from_caps
from ..dirnode.errors import NotWriteableError
from ..dirnode.ops import add_child
from ..dirnode.packing import Entry, normalize_name
from .common import EMPTY_PATH_COMPONENT, ChildNotFound, FileInTheWay, WebError

#: ``t=`` values of PUT and POST that do not create missing intermediate directories.
NO_INTERMEDIATE = ("delete", "rename", "rename-form", "check", "stream-manifest",
                   "stream-deep-check", "start-manifest", "start-deep-size", "start-deep-stats",
                   "start-deep-check")


@frozen
class Gateway:
    """What the directory resources need: the client and the default format of new directories."""

    client: ClientServices
    mutable_format: MutableFormat = MutableFormat.SDMF
    #: the slow operations started here (``/operations``; :mod:`.operations`).
    operations: Any = None

    def open(self, cap: DirectoryCap) -> DirectoryNode:
        """The (shared) node of a directory."""
        return self.client.directories.open(cap)


@frozen
class Target:
    """What a path names.

    :ivar child: the object (None: the name is not linked in ``parent``).
    :ivar parent: the directory holding the link; None for a bare cap.
    :ivar name: the link's name (NFC); None for a bare cap.
    :ivar metadata: the link's metadata; None for a bare cap or a missing child.
    """

    child: ChildNode | None
    parent: DirectoryNode | None = None
    name: str | None = None
    metadata: dict[str, Any] | None = None


def path_names(rest: list[str]) -> list[str]:
    """The child names of a path after the cap; one trailing ``/`` is allowed.

    :raises WebError: 400 for an empty component (``//``).
    """
    names = list(rest)
    if names and names[-1] == "":
        names.pop()
    if "" in names:
        raise WebError(EMPTY_PATH_COMPONENT)
    return [normalize_name(name) for name in names]


def creates_intermediate(method: bytes, t: str) -> bool:
    """Whether a request creates missing directories on its way (Tahoe's rule)."""
    return method in (b"PUT", b"POST") and t not in NO_INTERMEDIATE


def require_writable(directory: DirectoryNode) -> None:
    """Refuse early (before any upload) to change a read-only or immutable directory.

    :raises NotWriteableError: for such a directory.
    """
    if directory.file is None or directory.writekey is None:
        raise NotWriteableError("this directory cannot be changed through a read-only or "
                                "immutable cap")


def not_a_directory(name: str, creating: bool) -> WebError | FileInTheWay:
    """The error for a path continuing (as ``name``) below a file."""
    if creating:
        return FileInTheWay(f"Cannot create directory '{name}', because its parent is a file, "
                            f"not a directory")
    return WebError(f"Files have no children named '{name}'")


async def ensure_subdirectory(gateway: Gateway, parent: DirectoryNode, name: str,
                              fmt: MutableFormat | None = None,
                              children: dict[str, tuple[ChildNode, dict[str, Any]]] | None = None,
                              immutable: bool = False) -> DirectoryCap:
    """Create a directory and link it as ``name``, unless a directory got linked there first.

    :returns: the cap of the directory now linked under ``name``.
    :raises FileInTheWay: when a file is linked under ``name``.
    """
    require_writable(parent)
    if immutable:
        cap = await gateway.client.directories.create_immutable(children or {})
    else:
        cap = await gateway.client.directories.create(children, fmt or gateway.mutable_format)
    child = child_from_caps(cap.to_string())

    def link(table: dict[str, Entry], first_time: bool) -> tuple[dict[str, Entry] | None, Any]:
        existing = table.get(name)
        if existing is not None:
            if existing.child.is_directory:
                return None, existing.child.cap
            raise FileInTheWay(f"Unable to create directory '{name}': a file was in the way")
        return add_child(table, name, child, None, now=parent.now(), overwrite=False), cap

    linked: DirectoryCap = await parent.change(link)
    return linked


def as_directory(gateway: Gateway, child: ChildNode, next_name: str,
                 creating: bool) -> DirectoryNode:
    """The node of a child that must be a directory for the path to go on below it."""
    if child.is_directory:
        assert isinstance(child.cap, DirectoryCap)
        return gateway.open(child.cap)
    raise not_a_directory(next_name, creating)


async def walk_directories(gateway: Gateway, root: ChildNode, names: list[str], *,
                           create: bool, next_name: str) -> DirectoryNode:
    """Follow ``names`` from ``root`` (each must be a directory); return the last one's node.

    :param create: create missing directories on the way.
    :param next_name: the name that follows ``names`` in the path (for error messages).
    :raises ChildNotFound: for a missing directory when not creating.
    :raises FileInTheWay: (409) when creating and a file is in the way.
    :raises WebError: (400) when not creating and the path goes below a file.
    """
    following = names + [next_name]
    node = as_directory(gateway, root, following[0], create)
    for position, name in enumerate(names):
        children = await node.list()
        entry = children.get(name)
        if entry is None:
            if not create:
                raise ChildNotFound(name)
            node = gateway.open(await ensure_subdirectory(gateway, node, name))
        elif entry.child.is_directory:
            node = as_directory(gateway, entry.child, following[position + 1], create)
        elif create:
            raise FileInTheWay(f"Unable to create directory '{name}': a file was in the way")
        else:
            raise not_a_directory(following[position + 1], False)
    return node


async def resolve(gateway: Gateway, root: ChildNode, names: list[str], *,
                  create: bool) -> Target:
    """What the whole path names: the last name looked up in its (walked) parent.

    A missing last name gives a target whose ``child`` is None.
    """
    if not names:
        return Target(root)
    parent = await walk_directories(gateway, root, names[:-1], create=create,
                                    next_name=names[-1])
    children = await parent.list()
    entry = children.get(names[-1])
    if entry is None:
        return Target(None, parent, names[-1])
    return Target(entry.child, parent, names[-1], entry.metadata)


def root_child(text: str) -> ChildNode:
    """The node a cap in a URL names (as its strongest cap, like Tahoe's node maker)."""
    return child_from_caps(text.strip())

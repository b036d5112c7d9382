"""Where each source file of ``tahoe cp`` goes: a tree of target directories (no I/O here).

Tahoe-LAFS 1.20's rule (``reference/frontends.md`` §2.3, ``cp`` row): a file
source goes into the target directory under its name; a *named* directory
source becomes a subdirectory of that name, into which its contents go; an
*unnamed* one (a bare dircap) has its contents copied straight into the
target.  Two files with one name in one target directory are an error
(``cannot copy multiple files with the same name into the same target
directory``); here a file and a directory with one name are too (Tahoe
would silently replace one link by the other).

Opening a subdirectory (deciding whether it exists) is the caller's job: it
passes ``open_subdirectory(parent, name) -> DirPlan``.  The plan also carries
what the copy fills in as it runs: the links made so far, how many children
are still pending, and the cap of each new grid directory.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .cp_sources import DirSource, FileSource, Source
from .errors import CLIError

__all__ = ["COLLISION_MESSAGE", "Collision", "DirPlan", "assign_sources", "walk",
           "children_json", "file_link", "directory_link"]

COLLISION_MESSAGE = ("cannot copy multiple files with the same name into the same target"
                     " directory")


class Collision(CLIError):
    """Two sources would get one name in one target directory."""

    def __init__(self) -> None:
        super().__init__(COLLISION_MESSAGE)


@dataclass(eq=False)
class DirPlan:
    """One target directory: existing or to be made, and what goes into it.

    :ivar name: its name in its parent ("" for the root of the copy).
    :ivar existing: whether it exists already (else the copy makes it).
    :ivar local_path: a local target's path.
    :ivar writecap: an existing grid directory's write cap.
    :ivar children: an existing grid directory's children, as ``t=json`` lists them.
    :ivar files: name -> the file source that goes there.
    :ivar subdirectories: name -> the plan of a subdirectory that receives something.
    :ivar links: name -> ``[nodetype, {"rw_uri": cap}]``, filled in as the copy runs.
    :ivar pending: children the copy has still to link (set by the copy).
    :ivar cap: a new grid directory's cap, once made.
    """

    name: str
    parent: DirPlan | None = None
    existing: bool = True
    local_path: str | None = None
    writecap: str | None = None
    children: dict[str, Any] | None = None
    files: dict[str, FileSource] = field(default_factory=dict)
    subdirectories: dict[str, DirPlan] = field(default_factory=dict)
    links: dict[str, list[Any]] = field(default_factory=dict)
    pending: int = 0
    cap: str | None = None

    def display_path(self) -> str:
        """The path of this directory below the root of the copy (``a/b``)."""
        names = []
        node: DirPlan | None = self
        while node is not None and node.parent is not None:
            names.append(node.name)
            node = node.parent
        return "/".join(reversed(names))


OpenSubdirectory = Callable[[DirPlan, str], DirPlan]


def _add_file(plan: DirPlan, name: str, source: FileSource) -> None:
    if name in plan.files or name in plan.subdirectories:
        raise Collision()
    plan.files[name] = source


def _subdirectory(plan: DirPlan, name: str, open_subdirectory: OpenSubdirectory) -> DirPlan:
    if name in plan.files:
        raise Collision()
    if name not in plan.subdirectories:
        plan.subdirectories[name] = open_subdirectory(plan, name)
    return plan.subdirectories[name]


def _assign_contents(source: DirSource, plan: DirPlan,
                     open_subdirectory: OpenSubdirectory) -> None:
    for name, child in sorted(source.children.items()):
        if isinstance(child, DirSource):
            _assign_contents(child, _subdirectory(plan, name, open_subdirectory),
                             open_subdirectory)
        else:
            _add_file(plan, name, child)


def assign_sources(root: DirPlan, sources: list[Source],
                   open_subdirectory: OpenSubdirectory) -> None:
    """Put every file of ``sources`` (expanded) somewhere under ``root``.

    :raises Collision: when two sources would share a name.
    :raises CLIError: whatever ``open_subdirectory`` raises.
    """
    for source in sources:
        if isinstance(source, FileSource):
            assert source.name is not None, "unnamed file sources are refused earlier"
            _add_file(root, source.name, source)
        elif source.name is not None:
            _assign_contents(source, _subdirectory(root, source.name, open_subdirectory),
                             open_subdirectory)
        else:
            _assign_contents(source, root, open_subdirectory)


def walk(plan: DirPlan) -> Iterator[DirPlan]:
    """``plan`` and every plan below it, parents before children."""
    stack = [plan]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.subdirectories[name] for name in sorted(node.subdirectories,
                                                                  reverse=True))


def file_link(cap: str) -> list[Any]:
    """A children-JSON entry linking a file cap (``rw_uri`` takes read caps too)."""
    return ["filenode", {"rw_uri": cap}]


def directory_link(cap: str) -> list[Any]:
    """A children-JSON entry linking a directory cap."""
    return ["dirnode", {"rw_uri": cap}]


def children_json(links: Mapping[str, list[Any]]) -> bytes:
    """The request body of ``t=mkdir-with-children`` and ``t=set_children`` (§3.5)."""
    return json.dumps(dict(sorted(links.items()))).encode("utf-8")

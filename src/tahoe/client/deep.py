"""Walking a directory tree: the manifest and the deep-check (``reference/frontends.md`` §3.8).

The walk is Tahoe 1.20's: depth first from the root, each directory
reported, then listed, then its files (by name), then its subdirectories
(by name); an object reachable twice (same verify cap) is reported once,
literal files and unknown children every time. Each object becomes a
:class:`Unit` (Tahoe's JSON-line fields) handed to the caller, who may check
it; :class:`~.deep_stats.DeepStats` counts everything.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..caps.dirnode import DirectoryCap
from ..caps.immutable import CHKReadCap, LiteralCap
from ..dirnode.children import ChildNode
from ..dirnode.packing import unpack_children
from ..util import base32
from .deep_stats import DeepStats

__all__ = ["Unit", "describe", "walk"]


@dataclass
class Unit:
    """One object of the tree, with the fields of Tahoe's manifest lines."""

    path: list[str]
    child: ChildNode
    line: dict[str, Any] = field(default_factory=dict)


def _text(cap: Any) -> str:
    return "" if cap is None else cap.to_string()


def _repair_cap(cap: Any) -> Any:
    """Tahoe's repair cap: CHK files their verify cap, writable mutable objects themselves."""
    inner = cap.file_cap if isinstance(cap, DirectoryCap) else cap
    if isinstance(inner, LiteralCap):
        return None
    if isinstance(inner, CHKReadCap):
        return None if isinstance(cap, DirectoryCap) else inner.verify_cap()
    return None if cap.is_readonly else cap


def describe(path: list[str], child: ChildNode) -> Unit:
    """The manifest line of one object."""
    if child.is_unknown or child.cap is None:
        uri = child.write_uri or child.read_uri or b""
        line = {"path": path, "cap": uri.decode("utf-8", "replace"), "type": "unknown",
                "verifycap": "", "repaircap": "", "storage-index": ""}
        return Unit(path, child, line)
    cap = child.cap
    si = getattr(cap, "storage_index", None)
    line = {"path": path, "cap": cap.to_string(),
            "type": "directory" if child.is_directory else "file",
            "verifycap": _text(cap.verify_cap()), "repaircap": _text(_repair_cap(cap)),
            "storage-index": base32.b2a(si) if si else ""}
    return Unit(path, child, line)


def _count(stats: DeepStats, child: ChildNode) -> None:
    if child.is_unknown or child.cap is None:
        stats.add_node("unknown")
    elif child.is_directory:
        stats.add_node("directory")
    elif child.mutable:
        stats.add_node("mutable")
    else:
        cap = child.cap
        stats.add_node("immutable", cap.size, literal=isinstance(cap, LiteralCap))


async def walk(open_directory: Callable[[DirectoryCap], Any], root: ChildNode,
               visit: Callable[[Unit], Awaitable[None]],
               stats: DeepStats | None = None) -> dict[str, Any]:
    """Walk the tree under ``root`` (a directory child), calling ``visit`` on each object.

    :param open_directory: gives the node (with ``read_bytes()``) of a directory cap.
    :param stats: where to count (pass one to watch the counts while the walk runs).
    :returns: the deep-stats of the tree.
    :raises: whatever reading a directory raises (the walk stops there).
    """
    stats = DeepStats() if stats is None else stats
    assert isinstance(root.cap, DirectoryCap)
    found: set[str] = {_text(root.cap.verify_cap())}
    await _directory(open_directory, [], root, visit, stats, found)
    return stats.results()


async def _directory(open_directory: Callable[[DirectoryCap], Any], path: list[str],
                     child: ChildNode, visit: Callable[[Unit], Awaitable[None]],
                     stats: DeepStats, found: set[str]) -> None:
    _count(stats, child)
    await visit(describe(path, child))
    node = open_directory(child.cap)
    data = await node.read_bytes()
    children = unpack_children(data, node.writekey, mutable=node.is_mutable)
    stats.enter_directory(len(data), len(children))
    files, directories = [], []
    for name, entry in sorted(children.items()):
        kid = entry.child
        if kid.is_unknown or kid.cap is None:
            _count(stats, kid)
            await visit(describe(path + [name], kid))
            continue
        verifier = kid.cap.verify_cap()
        if verifier is not None:
            key = verifier.to_string()
            if key in found:
                continue
            found.add(key)
        (directories if kid.is_directory else files).append((path + [name], kid))
    for kid_path, kid in files:
        _count(stats, kid)
        await visit(describe(kid_path, kid))
    for kid_path, kid in directories:
        await _directory(open_directory, kid_path, kid, visit, stats, found)

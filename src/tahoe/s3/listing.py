"""ListObjects (v1 and v2): the keys of a bucket in S3's order, walked over directories.

Keys come in lexicographic order over the whole key space: each directory's
entries are visited sorted by ``name/`` for a directory and ``name`` for a
file (:func:`tahoe.s3.keys.listing_name`), descending into directories in
that order, so ``a-b`` < ``a/x`` < ``a0``. The walk starts in the deepest
directory the prefix names (``photos/2026/a`` starts in ``photos/2026``),
skips subtrees whose keys all sort before the start key (marker,
continuation token, start-after) or outside the prefix, and stops one key
past a page. With a delimiter, a directory whose path already holds the
delimiter after the prefix is one common prefix, read no further than to
see that it holds a key (an empty directory left by deletes is no key and no
common prefix): with ``delimiter=/`` and a prefix ending in ``/``, only that
directory is read, whatever lies below it.
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from attrs import frozen

from ..caps.dirnode import DirectoryCap
from .store import AccountStore, ObjectInfo, is_folder_marker, object_info, read_children

__all__ = ["ListPage", "list_objects"]


@frozen
class ListPage:
    """One page of a listing, in order.

    :ivar items: (key, info) of an object, or (common prefix, None).
    :ivar truncated: more items follow.
    """

    items: tuple[tuple[str, ObjectInfo | None], ...]
    truncated: bool


def _sort_name(item: tuple[str, Any]) -> str:
    name, entry = item
    return name + "/" if entry.child.is_directory else name


class _Walk:
    def __init__(self, store: AccountStore, prefix: str, delimiter: str, start: str) -> None:
        self.store = store
        self.prefix = prefix
        self.delimiter = delimiter
        self.start = start
        #: A start that is a common prefix: every key below it was listed already.
        self.skip_below = start if delimiter and start.endswith(delimiter) \
            and start.startswith(prefix) and delimiter in start[len(prefix):] else ""
        self.last_prefix: str | None = None

    def wanted(self, key: str) -> bool:
        """Whether an object key belongs after the start and within the prefix."""
        if not key.startswith(self.prefix) or key <= self.start:
            return False
        return not (self.skip_below and key.startswith(self.skip_below))

    def subtree_wanted(self, path: str) -> bool:
        """Whether some key under directory ``path`` (ending in ``/``) may be wanted."""
        if not (path.startswith(self.prefix) or self.prefix.startswith(path)):
            return False
        if path < self.start and not self.start.startswith(path):
            return False  # every key below sorts before the start
        return not (self.skip_below and path.startswith(self.skip_below))

    def rolled_up(self, key: str) -> str | None:
        """The common prefix a key (or directory path) falls under, if any."""
        if not self.delimiter:
            return None
        at = key.find(self.delimiter, len(self.prefix))
        return None if at == -1 else key[:at + len(self.delimiter)]

    async def entries(self, cap: DirectoryCap, base: str
                      ) -> AsyncIterator[tuple[str, ObjectInfo | None]]:
        table = await read_children(self.store.node(cap))
        for name, entry in sorted(table.items(), key=_sort_name):
            child = entry.child
            if child.is_file:
                key = base + name
                if self.wanted(key):
                    async for item in self.emit(key, lambda: object_info(key, entry)):
                        yield item
            elif child.is_directory:
                path = base + name + "/"
                if is_folder_marker(entry) and self.wanted(path):
                    async for item in self.emit(path, lambda: object_info(
                            path, entry, folder=True)):
                        yield item
                if not self.subtree_wanted(path):
                    continue
                common = self.rolled_up(path)
                if common is not None and len(common) <= len(path):
                    if common != self.last_prefix and common > self.start \
                            and common != self.skip_below \
                            and await self.store.has_keys(child.cap):  # type: ignore[arg-type]
                        self.last_prefix = common
                        yield common, None
                    continue
                async for item in self.entries(child.cap, path):  # type: ignore[arg-type]
                    yield item

    async def emit(self, key: str, info: Any) -> AsyncIterator[tuple[str, ObjectInfo | None]]:
        common = self.rolled_up(key)
        if common is None:
            yield key, info()
        elif common != self.last_prefix and common != self.skip_below:
            self.last_prefix = common
            yield common, None


async def list_objects(store: AccountStore, bucket: str, prefix: str, delimiter: str,
                       start: str, max_keys: int) -> ListPage:
    """The first ``max_keys`` objects and common prefixes of ``bucket`` after ``start``.

    :raises S3Error: ``NoSuchBucket``.
    """
    node = await store.bucket(bucket)
    walk = _Walk(store, prefix, delimiter, start)
    items: list[tuple[str, ObjectInfo | None]] = []
    dirs = prefix.split("/")[:-1]
    cap: DirectoryCap = node.cap
    base = ""
    for name in dirs:
        entry = (await read_children(store.node(cap))).get(name)
        if entry is None or not entry.child.is_directory:
            return ListPage((), False)
        path = base + name + "/"
        if path == prefix and is_folder_marker(entry) and walk.wanted(path):
            items.append((path, object_info(path, entry, folder=True)))
        cap, base = entry.child.cap, path  # type: ignore[assignment]
    if max_keys <= 0:
        return ListPage((), False)
    truncated = False
    async for item in walk.entries(cap, base):
        if len(items) >= max_keys:
            truncated = True
            break
        items.append(item)
    return ListPage(tuple(items[:max_keys]), truncated or len(items) > max_keys)

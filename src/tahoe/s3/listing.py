"""ListObjects (v1 and v2): the keys of a bucket in S3's order, walked over directories.

:func:`list_objects_v2` and :func:`list_objects_v1` are the operations (query
arguments in, XML out; a continuation token is the last key or common prefix
returned, base64); :func:`list_objects` is the walk.

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

Speed (10,000 keys in one directory, ten pages): a directory is read as
(name, read cap, metadata) triples (:func:`sorted_entries`), without parsing
caps or metadata; only the entries a page returns are parsed whole. The
sorted triples are kept for :data:`~.store.LISTING_CACHE_SECONDS` while a client
pages through them, and dropped as soon as this node changes the directory,
through the gateway (:meth:`~.store.AccountStore.change`) or any other way in
(the web API, SFTP); a change by another node is seen within that time.
"""
from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

from attrs import frozen

from ..caps.dirnode import DirectoryCap
from . import xmlio
from .errors import S3Error
from .objects import Light, full_entry, light_is_folder, light_item
from .server import Answer, Context
from .store import AccountStore

__all__ = ["ListPage", "list_objects", "list_objects_v1", "list_objects_v2", "MAX_KEYS"]

#: The most keys (and common prefixes) a page holds, and the default.
MAX_KEYS = 1000

@frozen
class ListPage:
    """One page of a listing, in order.

    :ivar items: (key, info) of an object, or (common prefix, None).
    :ivar truncated: more items follow.
    """

    items: tuple[tuple[str, xmlio.ListItem | None], ...]
    truncated: bool


class _Walk:
    """One listing's walk: what it wants (prefix, delimiter, start key) and the common
    prefix it gave last (each is given once)."""

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

    async def entries(self, cap: Any, base: str
                      ) -> AsyncIterator[tuple[str, xmlio.ListItem | None]]:
        """The wanted keys and common prefixes at and below directory ``base``, in order."""
        directory = await self.store.listing(cap)
        for light in directory.after(self.start, base):
            if not light[2]:
                key = base + light[1]
                if self.wanted(key) and (item := self.emit(key, light, folder=False)):
                    yield item
                continue
            path = base + light[1] + "/"
            if self.wanted(path) and light_is_folder(light) and (
                    item := self.emit(path, light, folder=True)):
                yield item
            if not self.subtree_wanted(path):
                continue
            child = full_entry(light).child.cap
            common = self.rolled_up(path)
            if common is not None and len(common) <= len(path):
                if common != self.last_prefix and common > self.start \
                        and common != self.skip_below and await self.store.has_keys(child):
                    self.last_prefix = common
                    yield common, None
                continue
            async for item in self.entries(child, path):
                yield item

    def emit(self, key: str, light: Light, folder: bool
             ) -> tuple[str, xmlio.ListItem | None] | None:
        """An object's key, or the common prefix it rolls up into (once; None after)."""
        common = self.rolled_up(key)
        if common is None:
            return key, light_item(key, light, folder)
        if common != self.last_prefix and common != self.skip_below:
            self.last_prefix = common
            return common, None
        return None


async def list_objects(store: AccountStore, bucket: str, prefix: str, delimiter: str,
                       start: str, max_keys: int) -> ListPage:
    """The first ``max_keys`` objects and common prefixes of ``bucket`` after ``start``.

    :raises S3Error: ``NoSuchBucket``.
    """
    node = await store.bucket(bucket)
    walk = _Walk(store, prefix, delimiter, start)
    items: list[tuple[str, xmlio.ListItem | None]] = []
    cap: DirectoryCap = node.cap
    base = ""
    for name in prefix.split("/")[:-1]:
        light = next((e for e in (await store.listing(cap)).entries
                      if e[1] == name and e[2]), None)
        if light is None:
            return ListPage((), False)
        path = base + name + "/"
        if path == prefix and walk.wanted(path) and light_is_folder(light):
            items.append((path, light_item(path, light, folder=True)))
        cap, base = full_entry(light).child.cap, path  # type: ignore[assignment]
    if max_keys <= 0:
        return ListPage((), False)
    truncated = False
    async for item in walk.entries(cap, base):
        if len(items) >= max_keys:
            truncated = True
            break
        items.append(item)
    return ListPage(tuple(items[:max_keys]), truncated or len(items) > max_keys)


def _max_keys(context: Context) -> int:
    return context.integer_argument("max-keys", MAX_KEYS)


def _encoding_type(context: Context) -> str | None:
    value = context.query.get("encoding-type")
    if value is None or value == "":
        return None
    if value != "url":
        raise S3Error("InvalidArgument", "Invalid Encoding Method specified in Request",
                      ArgumentName="encoding-type", ArgumentValue=value)
    return value


#: What a continuation token holds before the last key (or common prefix) listed.
_TOKEN_MARK = "tahoe-s3-list-1/"


def _token(last: str) -> str:
    """A continuation token: the last key or common prefix of a page, base64."""
    return base64.urlsafe_b64encode((_TOKEN_MARK + last).encode("utf-8")).decode("ascii")


def _from_token(token: str) -> str:
    """The key a continuation token starts after.

    :raises S3Error: ``InvalidArgument`` for a token this gateway did not make.
    """
    try:
        text = base64.urlsafe_b64decode(token.encode("ascii")).decode("utf-8")
    except (ValueError, UnicodeError):
        text = ""
    if not text.startswith(_TOKEN_MARK):
        raise S3Error("InvalidArgument", "The continuation token provided is incorrect",
                      ArgumentName="continuation-token")
    return text[len(_TOKEN_MARK):]


async def list_objects_v2(context: Context) -> Answer:
    """GET /BUCKET?list-type=2."""
    query = context.query
    prefix, delimiter = query.get("prefix", ""), query.get("delimiter", "")
    max_keys = _max_keys(context)
    encoding = _encoding_type(context)
    token = query.get("continuation-token")
    start_after = query.get("start-after", "")
    start = _from_token(token) if token is not None else start_after
    page = await list_objects(context.store, context.bucket, prefix, delimiter,
                              start, max_keys)
    next_token = _token(page.items[-1][0]) if page.truncated and page.items else None
    owner = context.owner if query.get("fetch-owner") == "true" else None
    body = xmlio.list_bucket_result_v2(
        bucket=context.bucket, prefix=prefix, delimiter=delimiter or None, max_keys=max_keys,
        encoding_type=encoding, items=_items(page.items), truncated=page.truncated,
        continuation_token=token, next_continuation_token=next_token,
        start_after=start_after or None, owner=owner)
    return Answer(body=body, headers={"Content-Type": "application/xml"})


async def list_objects_v1(context: Context) -> Answer:
    """GET /BUCKET (ListObjects, version 1)."""
    query = context.query
    prefix, delimiter = query.get("prefix", ""), query.get("delimiter", "")
    max_keys = _max_keys(context)
    encoding = _encoding_type(context)
    marker = query.get("marker", "")
    page = await list_objects(context.store, context.bucket, prefix, delimiter, marker,
                              max_keys)
    next_marker = page.items[-1][0] if page.truncated and page.items else None
    body = xmlio.list_bucket_result_v1(
        bucket=context.bucket, prefix=prefix, delimiter=delimiter or None, max_keys=max_keys,
        encoding_type=encoding, items=_items(page.items), truncated=page.truncated,
        marker=marker, next_marker=next_marker, owner=context.owner)
    return Answer(body=body, headers={"Content-Type": "application/xml"})


def _items(items: tuple[tuple[str, xmlio.ListItem | None], ...]) -> list[xmlio.ListItem]:
    return [item if item is not None else xmlio.ListItem(key=key, prefix=True)
            for key, item in items]

"""Buckets and objects of one account, over its root directory on the grid.

An account's buckets are the child directories of its root cap; an object key
``a/b/c`` is the file ``c`` in directory ``a/b`` of the bucket
(:mod:`.keys`), so what S3 tools write is browsable with ``tahoe ls``, the
web UI and SFTP. An object's S3 metadata lives in its directory entry's metadata
(:mod:`.objects`).

Every change to a directory goes through the node's coalescing
:meth:`~tahoe.client.dirnode.DirectoryNode.change`: concurrent PUTs into one
directory are applied together, none lost. Missing intermediate directories
are made once per (parent, name): concurrent PUTs that need the same new
directory wait for the one that makes it, and a name taken meanwhile (by
another gateway) is reused, decided inside the parent's change.

Conflicts of the tree (S3 can hold ``a`` and ``a/b`` at once, a tree
cannot): a PUT whose directory part names an object, or whose key names a
directory holding objects, is refused with ``InvalidRequest`` (409) and
nothing is written.
"""
from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from twisted.internet.defer import Deferred, FirstError, gatherResults

from ..caps.dirnode import DirectoryCap
from ..caps.immutable import CHKReadCap, LiteralCap
from ..client.dirnode import DirectoryNode
from ..dirnode.children import child_from_caps
from ..dirnode.errors import NotWriteableError
from ..dirnode.ops import add_child, delete_child, set_metadata
from ..dirnode.packing import Entry, unpack_children
from .errors import S3Error
from .keys import check_bucket_name, split_key
from .objects import (S3_KEY, Light, ObjectInfo, SortedDirectory, find_entry, full_entry,
                      is_folder_marker, light_is_folder, object_info, sorted_entries)

__all__ = ["AccountStore", "Children", "read_children", "gather", "PATH_CACHE_SECONDS",
           "LISTING_CACHE_SECONDS"]

Children = dict[str, Entry]
#: Seconds the cap of a bucket's directory, or of a directory below it, is used without
#: reading its parent again: back-to-back requests into a directory cost no read of the
#: directories above it. A directory unlinked by another tool meanwhile is still written
#: to for that long (as it would be by a request that looked it up just before); one
#: unlinked through this gateway is forgotten at once.
PATH_CACHE_SECONDS = 5.0
#: Seconds a directory read for a listing serves the listing pages that follow it; a
#: change through this gateway drops it at once (changes by others are seen after this).
LISTING_CACHE_SECONDS = 2.0
#: The most directories kept read for listings at once.
LISTINGS_KEPT = 64
#: The most directory caps kept from look-ups.
DIRECTORIES_KEPT = 4096


async def read_children(node: DirectoryNode) -> Children:
    """A directory's entries read without decrypting write caps (listings need only the
    read caps, and 10,000 entries decrypt in a noticeable time)."""
    data = await node.read_bytes()
    return unpack_children(data, None, mutable=node.is_mutable)


class _Failed:
    """An S3 refusal decided inside a directory change (raised after the change)."""

    def __init__(self, error: S3Error) -> None:
        self.error = error


def _conflict(key: str, why: str) -> S3Error:
    return S3Error("InvalidRequest", f"The key cannot be stored in the tree of directories:"
                   f" {why}.", status=409, Key=key)


class AccountStore:
    """The buckets and objects of one account.

    :param services: the node's client services (``ClientServices``).
    :param root: the account's root directory (writable).
    """

    def __init__(self, services: Any, root: DirectoryCap) -> None:
        self.services = services
        self.root = root
        #: Directories being made: (parent cap, name) -> waiters for the new cap.
        self._making: dict[tuple[str, str], list[Deferred]] = {}
        #: (parent's read cap, name) -> (when looked up, the child directory's cap), see
        #: :data:`PATH_CACHE_SECONDS`; the root's children are the buckets.
        self._directories: dict[tuple[str, str], tuple[float, DirectoryCap]] = {}
        #: Names found to be no bucket, and when (see :meth:`has_bucket`).
        self._not_buckets: dict[str, float] = {}
        #: Read cap -> (when read, its contents or their sorted entries, the directory's
        #: count of changes through this node then), see :meth:`listing`.
        self._listings: dict[str, tuple[float, Any, int]] = {}

    # -- helpers

    def node(self, cap: DirectoryCap) -> DirectoryNode:
        """The coalescing node of a directory."""
        return self.services.directories.open(cap)  # type: ignore[no-any-return]

    async def listing(self, cap: DirectoryCap) -> SortedDirectory:
        """A directory's entries in listing order, read again only after
        :data:`LISTING_CACHE_SECONDS` (the pages of a listing that follow one another read
        the directory once). A change through this store, or through any other way into
        this node (the web API, SFTP), makes the next listing read it again."""
        kept = self._kept(cap)
        if isinstance(kept, SortedDirectory):
            return kept
        data = kept if kept is not None else await self._read(cap)
        parsed = sorted_entries(data)
        self._keep(cap, data, parsed)
        return parsed

    async def entry(self, cap: DirectoryCap, name: str) -> Light | None:
        """One entry of a directory by name (a file before a directory of that name): from
        the kept listing; in contents just read, by one pass without sorting them (a
        single GET); at a second look-up in the same contents, they are sorted and kept,
        so that the GETs that follow (a download of many keys) bisect."""
        if self._kept(cap) is None:
            return find_entry(await self._read(cap), name)
        return (await self.listing(cap)).find(name)

    def _kept(self, cap: DirectoryCap) -> SortedDirectory | bytes | None:
        """What is kept of a directory (sorted, or its contents not parsed yet), if it may
        still be used."""
        known = self._listings.get(cap.readonly().to_string())
        if known is None or self.services.clock.seconds() - known[0] >= LISTING_CACHE_SECONDS \
                or known[2] != self._changes(cap):
            return None
        return known[1]

    async def _read(self, cap: DirectoryCap) -> bytes:
        """Read a directory's contents and keep them, with the directory's count of changes
        when the read began: a change through this node that ends later (it may have been
        under way during the read) makes them unused."""
        changes = self._changes(cap)
        now = self.services.clock.seconds()
        data = await self.node(cap).read_bytes()
        for old in [k for k, (when, _, _) in self._listings.items()
                    if now - when >= LISTING_CACHE_SECONDS]:
            del self._listings[old]
        if len(self._listings) < LISTINGS_KEPT:
            self._listings[cap.readonly().to_string()] = (now, data, changes)
        return data

    def _keep(self, cap: DirectoryCap, data: bytes, parsed: SortedDirectory) -> None:
        """Keep the sorted entries of contents kept unparsed (still the same read)."""
        key = cap.readonly().to_string()
        known = self._listings.get(key)
        if known is not None and known[1] is data:
            self._listings[key] = (known[0], parsed, known[2])

    def _changes(self, cap: DirectoryCap) -> int:
        """How many batches of changes this node has applied to directory ``cap`` (through
        the S3 gateway, the web API, SFTP...): a cached listing made at another count is
        not used."""
        index = getattr(cap.file_cap, "storage_index", None)  # none for a literal directory
        return self.services.directories.changes.get(index, 0)  # type: ignore[no-any-return]

    def _known_directory(self, parent: DirectoryCap, name: str, writable: bool
                         ) -> DirectoryCap | None:
        """The cap of subdirectory ``name`` of ``parent`` if looked up lately (a write cap
        when ``writable``)."""
        known = self._directories.get((parent.readonly().to_string(), name))
        if known is None or self.services.clock.seconds() - known[0] >= PATH_CACHE_SECONDS:
            return None
        if writable and known[1].is_readonly:
            return None
        return known[1]

    def _remember_directory(self, parent: DirectoryCap, name: str, child: DirectoryCap
                            ) -> None:
        now = self.services.clock.seconds()
        if len(self._directories) >= DIRECTORIES_KEPT:
            for old in [k for k, (when, _) in self._directories.items()
                        if now - when >= PATH_CACHE_SECONDS]:
                del self._directories[old]
        if len(self._directories) < DIRECTORIES_KEPT:
            self._directories[(parent.readonly().to_string(), name)] = (now, child)

    def _forget_directories(self) -> None:
        """Forget every directory cap looked up (a directory was unlinked)."""
        self._directories.clear()

    async def change(self, node: DirectoryNode,
                     change: Callable[[Children, bool], tuple[Any, Any]]) -> Any:
        """Apply ``change`` to ``node``; an :class:`S3Error` it raises is raised here (the
        other changes of the same batch still apply)."""
        def guarded(table: Children, first: bool) -> tuple[Any, Any]:
            try:
                return change(table, first)
            except S3Error as error:
                return None, _Failed(error)
        try:  # the node counts the change: what is kept of the directory is read again
            result = await node.change(guarded)
        except NotWriteableError:
            raise S3Error("AccessDenied", "This directory cannot be changed: it is linked"
                          " by a read-only cap on the grid.") from None
        if isinstance(result, _Failed):
            raise result.error
        return result

    async def bucket(self, name: str) -> DirectoryNode:
        """The directory of bucket ``name``.

        :raises S3Error: ``NoSuchBucket``.
        """
        known = self._known_directory(self.root, name, writable=True)
        if known is not None:
            return self.node(known)
        # opened by its write cap, so that changes are possible and coalesce per directory
        entry = (await self.node(self.root).list()).get(name) if name else None
        if entry is None or not entry.child.is_directory:
            raise S3Error("NoSuchBucket", BucketName=name)
        self._remember_directory(self.root, name, entry.child.cap)  # type: ignore[arg-type]
        return self.node(entry.child.cap)  # type: ignore[arg-type]

    async def has_bucket(self, name: str) -> bool:
        """Whether the account has a bucket ``name`` (an answer kept
        :data:`PATH_CACHE_SECONDS`, a "no" forgotten when a bucket is made)."""
        now = self.services.clock.seconds()
        if now - self._not_buckets.get(name, -PATH_CACHE_SECONDS) < PATH_CACHE_SECONDS:
            return False
        try:
            await self.bucket(name)
        except S3Error:
            if len(self._not_buckets) >= DIRECTORIES_KEPT:
                self._not_buckets.clear()
            self._not_buckets[name] = now
            return False
        return True

    # -- buckets

    async def list_buckets(self) -> list[tuple[str, float]]:
        """(name, creation time) of every bucket, sorted by name. Children of the root
        that are not valid bucket names are left out."""
        table = await read_children(self.node(self.root))
        found = []
        for name in sorted(table):
            entry = table[name]
            if not entry.child.is_directory:
                continue
            try:
                check_bucket_name(name)
            except S3Error:
                continue
            tahoe = entry.metadata.get("tahoe", {})
            created = tahoe.get("linkcrtime") if isinstance(tahoe, dict) else None
            found.append((name, float(created) if isinstance(created, (int, float)) else 0.0))
        return found

    async def create_bucket(self, name: str) -> None:
        """Make bucket ``name``.

        :raises S3Error: ``InvalidBucketName``, ``BucketAlreadyOwnedByYou``, or
            ``BucketAlreadyExists`` when a file of that name is in the root.
        """
        check_bucket_name(name)
        self._not_buckets.clear()
        root = self.node(self.root)
        existing = (await read_children(root)).get(name)
        if existing is not None:
            raise self._exists(name, existing)
        cap = await self.services.directories.create()
        child = child_from_caps(cap.to_string(), cap.readonly().to_string())

        def link(table: Children, first: bool) -> tuple[Any, None]:
            existing = table.get(name)
            if existing is not None:
                if not first and existing.child == child:
                    return None, None
                raise self._exists(name, existing)
            return add_child(table, name, child, now=root.now(), overwrite=False), None
        await self.change(root, link)

    @staticmethod
    def _exists(name: str, entry: Entry) -> S3Error:
        if entry.child.is_directory:
            return S3Error("BucketAlreadyOwnedByYou", BucketName=name)
        return S3Error("BucketAlreadyExists", "A file of this name is in the account's root"
                       " directory.", BucketName=name)

    async def delete_bucket(self, name: str) -> None:
        """Unlink an empty bucket.

        :raises S3Error: ``NoSuchBucket``; ``BucketNotEmpty`` if it holds any object (or
            an unfinished ... other entry: only empty directories left by deletes are
            ignored).
        """
        bucket = await self.bucket(name)
        if await self.has_keys(bucket.cap):
            raise S3Error("BucketNotEmpty", BucketName=name)
        root = self.node(self.root)
        cap = bucket.cap

        def unlink(table: Children, first: bool) -> tuple[Any, None]:
            existing = table.get(name)
            if existing is None or existing.child.cap != cap:
                return None, None
            return delete_child(table, name, first_time=first)[0], None
        self._forget_directories()
        await self.change(root, unlink)

    async def has_keys(self, cap: DirectoryCap) -> bool:
        """Whether the directory ``cap`` holds an object (a file or a folder marker) at any
        depth: an empty directory left by deletes holds none. Read as listings read (kept
        for :data:`LISTING_CACHE_SECONDS`, so a client that goes on to list the directory
        does not cost a second read); a directory's files are seen before its
        subdirectories are read."""
        directory = await self.listing(cap)
        subdirectories = []
        for light in directory.entries:
            if not light[2] or light_is_folder(light):
                return True
            subdirectories.append(light)
        for light in subdirectories:
            if await self.has_keys(full_entry(light).child.cap):  # type: ignore[arg-type]
                return True
        return False

    # -- objects

    async def lookup(self, bucket: str, key: str) -> ObjectInfo:
        """The object ``key`` of ``bucket``.

        :raises S3Error: ``NoSuchBucket``, ``NoSuchKey``, or a key error (:mod:`.keys`).
        """
        dirs, leaf, folder = split_key(key)
        cap = (await self.bucket(bucket)).cap
        for name in dirs[:-1] if folder else dirs:
            child = self._known_directory(cap, name, writable=False)
            if child is None:
                light = await self.entry(cap, name)
                if light is None or not light[2]:
                    raise S3Error("NoSuchKey", Key=key)
                child = full_entry(light).child.cap  # type: ignore[assignment]
                self._remember_directory(cap, name, child)  # type: ignore[arg-type]
            cap = child  # type: ignore[assignment]
        light = await self.entry(cap, dirs[-1] if folder else leaf)
        if light is None or light[2] != folder or (folder and not light_is_folder(light)):
            raise S3Error("NoSuchKey", Key=key)
        return object_info(key, full_entry(light), folder=folder)

    async def directory_for(self, bucket: str, dirs: list[str], key: str) -> DirectoryNode:
        """The directory ``dirs`` of ``bucket``, made (with its parents) where missing.

        :raises S3Error: ``NoSuchBucket``; a conflict when a name on the way is a file.
        """
        node = await self.bucket(bucket)
        for name in dirs:
            node = await self._subdirectory(node, name, key)
        return node

    async def _subdirectory(self, parent: DirectoryNode, name: str, key: str) -> DirectoryNode:
        known = self._known_directory(parent.cap, name, writable=True)
        if known is not None:
            return self.node(known)
        entry = (await parent.list()).get(name)
        if entry is not None:
            if not entry.child.is_directory:
                raise _conflict(key, f"'{name}' is an object, not a directory")
            self._remember_directory(parent.cap, name, entry.child.cap)  # type: ignore[arg-type]
            return self.node(entry.child.cap)  # type: ignore[arg-type]
        return self.node(await self._make_directory(parent, name, key))

    async def _make_directory(self, parent: DirectoryNode, name: str, key: str,
                              folder: dict[str, Any] | None = None) -> DirectoryCap:
        """Make and link directory ``name`` in ``parent`` (once for concurrent callers);
        with ``folder``, mark it a folder marker with that S3 metadata."""
        slot = (parent.cap.to_string(), name)
        waiting = self._making.get(slot)
        if waiting is not None and folder is None:
            d: Deferred = Deferred()
            waiting.append(d)
            return await d  # type: ignore[no-any-return]
        waiters: list[Deferred] = []
        if folder is None:
            self._making[slot] = waiters
        try:
            cap = await self._link_new_directory(parent, name, key, folder)
            self._remember_directory(parent.cap, name, cap)
        except BaseException as error:
            for d in waiters:
                d.errback(error)
            raise
        finally:
            if self._making.get(slot) is waiters:
                del self._making[slot]
        for d in waiters:
            d.callback(cap)
        return cap

    async def _link_new_directory(self, parent: DirectoryNode, name: str, key: str,
                                  folder: dict[str, Any] | None) -> DirectoryCap:
        new_cap = await self.services.directories.create()
        child = child_from_caps(new_cap.to_string(), new_cap.readonly().to_string())
        metadata = {S3_KEY: folder} if folder is not None else None

        def link(table: Children, first: bool) -> tuple[Any, DirectoryCap]:
            existing = table.get(name)
            if existing is None:
                return add_child(table, name, child, metadata, now=parent.now(),
                                 overwrite=False), new_cap
            if not existing.child.is_directory:
                raise _conflict(key, f"'{name}' is an object, not a directory")
            if existing.child == child or folder is None:
                return None, existing.child.cap  # made meanwhile: use that one
            new_metadata = dict(existing.metadata)
            new_metadata[S3_KEY] = folder
            return (set_metadata(table, name, new_metadata, now=parent.now()),
                    existing.child.cap)
        return await self.change(parent, link)  # type: ignore[no-any-return]

    async def put_folder(self, bucket: str, key: str, s3: dict[str, Any]) -> None:
        """Store the folder marker ``key`` (ending in ``/``): its directory, made where
        missing and marked."""
        dirs, _, _ = split_key(key)
        parent = await self.directory_for(bucket, dirs[:-1], key)
        await self._make_directory(parent, dirs[-1], key, folder=dict(s3, folder=True))

    async def link_file(self, parent: DirectoryNode, leaf: str, key: str, cap_text: str,
                        s3: dict[str, Any]) -> None:
        """Link the file ``cap_text`` as ``leaf`` in ``parent`` with S3 metadata ``s3``,
        replacing a file of that name.

        :raises S3Error: a conflict when ``leaf`` is a directory.
        """
        child = child_from_caps(cap_text)

        def link(table: Children, first: bool) -> tuple[Any, None]:
            existing = table.get(leaf)
            if existing is not None and existing.child.is_directory:
                raise _conflict(key, f"'{leaf}' is a directory (of other keys, or a folder"
                                " marker), not an object")
            metadata = dict(existing.metadata) if existing is not None else {}
            metadata.pop(S3_KEY, None)
            metadata[S3_KEY] = s3
            return add_child(table, leaf, child, metadata, now=parent.now()), None
        await self.change(parent, link)

    async def delete(self, bucket: str, key: str) -> None:
        """Remove object ``key``; a missing one is no error (S3's rule). Directories left
        empty stay (a listing shows no key for them). A folder marker's directory is
        unlinked only if it is empty, else only unmarked.

        :raises S3Error: ``NoSuchBucket``, a key error.
        """
        dirs, leaf, folder = split_key(key)
        node = await self.bucket(bucket)
        names = dirs[:-1] if folder else dirs
        for name in names:
            known = self._known_directory(node.cap, name, writable=True)
            if known is None:
                entry = (await node.list()).get(name)
                if entry is None or not entry.child.is_directory:
                    return
                known = entry.child.cap  # type: ignore[assignment]
            node = self.node(known)  # type: ignore[arg-type]
        if folder:
            await self._delete_folder(node, dirs[-1])
            return
        parent = node

        def unlink(table: Children, first: bool) -> tuple[Any, None]:
            existing = table.get(leaf)
            if existing is None or not existing.child.is_file:
                return None, None
            return delete_child(table, leaf, first_time=first)[0], None
        await self.change(parent, unlink)

    async def _delete_folder(self, parent: DirectoryNode, name: str) -> None:
        entry = (await read_children(parent)).get(name)
        if entry is None or not is_folder_marker(entry):
            return
        empty = not await read_children(self.node(entry.child.cap))  # type: ignore[arg-type]
        read_cap = entry.child.read_uri

        def unmark(table: Children, first: bool) -> tuple[Any, None]:
            existing = table.get(name)
            if existing is None or existing.child.read_uri != read_cap \
                    or not is_folder_marker(existing):
                return None, None
            if empty:
                self._forget_directories()
                return delete_child(table, name, first_time=first)[0], None
            metadata = dict(existing.metadata)
            del metadata[S3_KEY]
            return set_metadata(table, name, metadata, now=parent.now()), None
        await self.change(parent, unmark)

    async def read(self, info: ObjectInfo, offset: int, length: int | None
                   ) -> AsyncIterator[bytes]:
        """The bytes of an object from ``offset`` (``length`` of them, None: to the end)."""
        child = info.child
        if child is None:
            return
        cap = child.cap
        if isinstance(cap, LiteralCap):
            end = None if length is None else offset + length
            yield cap.data[offset:end]
        elif isinstance(cap, CHKReadCap):
            async for chunk in self.services.download(cap).read(offset, length):
                yield chunk
        else:
            data = await self.services.mutable.open(cap).read()
            yield data[offset:] if length is None else data[offset:offset + length]

    async def size_of(self, info: ObjectInfo) -> int:
        """An object's size, reading a mutable file's (unknown until read)."""
        if info.size_known or info.child is None:
            return info.size
        return int(await self.services.mutable.open(info.child.cap).size())


async def gather(*coroutines: Any) -> list[Any]:
    """Run several coroutines together; their results, or the first one's failure."""
    try:
        return await gatherResults(  # type: ignore[no-any-return]
            [Deferred.fromCoroutine(c) for c in coroutines], consumeErrors=True)
    except FirstError as error:
        error.subFailure.raiseException()
        raise  # not reached

"""Directories on the grid: list them, and change them by read-modify-write.

A mutable directory is a mutable file whose plaintext is the packed child
table (:mod:`tahoe.dirnode`); an immutable one is a CHK or LIT file.
Changes to one directory through this node are **coalesced**: while one
publish is in flight, further changes queue up and are applied together,
in order, in the next read-modify-write. Twenty concurrent ``PUT``\\s into a
directory thus cost a few publishes, not twenty, and no update is lost; a
race with another node is retried on a fresh servermap
(:meth:`~tahoe.client.mutable.MutableFileNode.modify`).

Facts: ``reference/mutable-dirnodes.md`` §7.5 and §8-§9.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from ..caps.dirnode import DirectoryCap
from ..caps.immutable import CHKReadCap, LiteralCap
from ..caps.mutable import MDMFWriteCap, MutableFormat, SSKWriteCap
from ..dirnode.children import ChildNode
from ..dirnode.errors import DirnodeError, NotWriteableError
from ..dirnode.packing import (Entry, ParsedEntries, pack_children, pack_new_directory,
                               unpack_children)
from ..mutable.keys import MutableKeys
from .mutable import MutableClient, MutableFileNode
from .uploadable import BytesUploadable

Children = dict[str, Entry]
#: Directory nodes a client keeps (each may remember a version of its directory).
NODES_KEPT = 1024
#: A change: given the current table and whether this is the first attempt,
#: return the new table (or None for no change) and the caller's result.
Change = Callable[[Children, bool], tuple[Children | None, Any]]


class DirectoryClient:
    """Creates and opens directories.

    :param files: what uploads and downloads immutable files (``ClientServices``).
    """

    def __init__(self, mutable: MutableClient, files: Any) -> None:
        self.mutable = mutable
        self.files = files
        self._nodes: dict[str, DirectoryNode] = {}
        #: Storage index -> batches of changes applied (or tried) to that directory here,
        #: through any of its caps: what a cache of its contents can be checked against.
        self.changes: dict[bytes, int] = {}

    @property
    def clock(self) -> Any:
        """The reactor's clock (link times)."""
        return self.mutable.clock

    def open(self, cap: DirectoryCap) -> "DirectoryNode":
        """The node of a directory; one per cap string, so this node's changes coalesce.

        Past :data:`NODES_KEPT` nodes, the least recently opened idle ones (no change
        queued or in flight) are let go, with what they remember of their directory.
        """
        key = cap.to_string()
        node = self._nodes.pop(key, None)
        if node is None:
            node = DirectoryNode(self, cap)
            if len(self._nodes) >= NODES_KEPT:
                for old in [k for k, n in self._nodes.items() if n.idle][:NODES_KEPT // 4]:
                    del self._nodes[old]
        self._nodes[key] = node  # the most recently opened last
        return node

    async def create(self, children: Mapping[str, tuple[ChildNode, Mapping[str, Any]]]
                     | None = None, file_format: MutableFormat = MutableFormat.SDMF
                     ) -> DirectoryCap:
        """A new mutable directory (with initial children); returns its write cap."""
        key = await self.mutable.keypool.get()
        keys = MutableKeys.from_signing_key(key)
        data = pack_new_directory(children or {}, keys.writekey)
        file_cap = await self.mutable.create(data, file_format, signing_key=key)
        return DirectoryCap(file_cap)

    async def create_immutable(self, children: Mapping[str, tuple[ChildNode, Mapping[str, Any]]]
                               ) -> DirectoryCap:
        """A new immutable directory (every child must be immutable)."""
        data = pack_new_directory(children, None, deep_immutable=True)
        result = await self.files.upload(BytesUploadable(data))
        return DirectoryCap(result.cap)


class DirectoryNode:
    """One directory, read through its cap and (if writable) changed in place."""

    def __init__(self, client: DirectoryClient, cap: DirectoryCap) -> None:
        self.client = client
        self.cap = cap
        inner = cap.file_cap
        self.is_mutable = cap.is_mutable
        self.is_readonly = cap.is_readonly
        self.writekey: bytes | None = inner.writekey \
            if isinstance(inner, (SSKWriteCap, MDMFWriteCap)) else None
        self.file: MutableFileNode | None = client.mutable.open(inner) if self.is_mutable \
            else None
        self._queue: list[tuple[Change, Deferred]] = []
        self._flushing = False
        # The entries of the last version read or changed here, by their bytes: a
        # read-modify-write parses only what changed since (see unpack_directory).
        self._parsed: ParsedEntries = {}
        # The read under way (see read_bytes): the count of changes made here when it
        # began, and who waits for its contents.
        self._reading: tuple[int, list[Deferred]] | None = None

    @property
    def idle(self) -> bool:
        """No change queued or being applied."""
        return not self._flushing and not self._queue

    async def read_bytes(self) -> bytes:
        """The directory's packed plaintext.

        Reads of a mutable directory asked for together are one read: a read asked
        for while another is under way waits for that one's contents, unless a
        change to the directory through this node ended since that one began (its
        contents may not show the change: a read of its own then begins). So many
        requests that look into one directory at once (an S3 client's threads,
        SFTP transfers) cost one read, and none misses a change made here before
        it was asked.
        """
        inner = self.cap.file_cap
        if self.file is not None:
            return await self._read_mutable(self.file)
        if isinstance(inner, LiteralCap):
            return inner.data
        assert isinstance(inner, CHKReadCap)
        return b"".join([chunk async for chunk in self.client.files.download(inner).read()])

    async def _read_mutable(self, file: MutableFileNode) -> bytes:
        changes = self.client.changes.get(file.storage_index, 0)
        under_way = self._reading
        if under_way is not None and under_way[0] == changes:
            waiter: Deferred = Deferred()
            under_way[1].append(waiter)
            data: bytes = await waiter
            return data
        waiters: list[Deferred] = []
        reading = self._reading = (changes, waiters)
        try:
            data = await file.read()
        except BaseException as error:
            failure: Failure | None = Failure(error)
        else:
            failure = None
        finally:
            if self._reading is reading:
                self._reading = None
        for waiter in waiters:
            if failure is None:
                waiter.callback(data)
            else:
                waiter.errback(failure)
        if failure is not None:
            failure.raiseException()
        return data

    async def list(self) -> Children:
        """Name -> entry, for every child.

        :raises CorruptDirectory: when the contents cannot be parsed.
        """
        data = await self.read_bytes()
        return unpack_children(data, self.writekey, mutable=self.is_mutable, known=self._parsed)

    async def change(self, change: Change) -> Any:
        """Apply one change (queued and coalesced with others); returns its result.

        :raises NotWriteableError: for a read-only or immutable directory.
        :raises DirnodeError: as the change raises it (other changes in the batch still apply).
        """
        if self.file is None or self.writekey is None:
            raise NotWriteableError("this directory cannot be changed through a read-only "
                                    "or immutable cap")
        d: Deferred = Deferred()
        self._queue.append((change, d))
        if not self._flushing:
            Deferred.fromCoroutine(self._flush())
        return await d

    async def _flush(self) -> None:
        self._flushing = True
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                await self._apply(batch)
        finally:
            self._flushing = False

    async def _apply(self, batch: list[tuple[Change, Deferred]]) -> None:
        assert self.file is not None and self.writekey is not None
        writekey = self.writekey
        outcomes: list[tuple[bool, Any]] = []

        def modifier(old: bytes, first_time: bool) -> bytes | None:
            outcomes.clear()
            children = unpack_children(old, writekey, mutable=True, known=self._parsed)
            changed = False
            for change, _ in batch:
                try:
                    new, result = change(children, first_time)
                except DirnodeError as error:
                    outcomes.append((False, error))
                    continue
                if new is not None:
                    children = new
                    changed = True
                outcomes.append((True, result))
            if not changed:
                return None
            return pack_children(children, writekey)

        changes, index = self.client.changes, self.file.storage_index
        try:
            await self.file.modify(modifier)
        except Exception as error:  # the publish failed: every change in the batch failed
            failure: Exception | None = error
        else:
            failure = None
        changes[index] = changes.get(index, 0) + 1  # (tried or made: a kept read is stale)
        if failure is not None:
            for _, d in batch:
                d.errback(failure)
            return
        for (_, d), (ok, value) in zip(batch, outcomes):
            if ok:
                d.callback(value)
            else:
                d.errback(value)

    def now(self) -> float:
        """The time link times are stamped with."""
        return float(self.client.clock.seconds())

"""One logged-in SFTP user: the SFTP operations on the account's directory tree.

The user object is Conch's avatar (a ``ConchUser`` whose ``sftp`` subsystem
is :class:`.sftp_session.FileTransferServer` and whose other session requests
:class:`.sftp_session.SFTPOnlySession` answers) and the ``ISFTPServer`` that
server calls.
Every operation goes to the node's own services (directories, uploads,
downloads), not through the web gateway:

* ``ls``: a directory's children with sizes, modes and times (a mutable
  file's size from a servermap update);
* ``get``: see :class:`.sftp_files.ReadHandle`;
* ``put``: a new or replaced file is uploaded as an immutable file and linked
  when the client closes it; an existing mutable file is overwritten in place
  (:class:`.sftp_files.WriteHandle`): an MDMF one, unless truncated, gets only the
  byte ranges written, each an in-place update of the segments it touches, and its
  old contents are not fetched unless the client reads them;
* ``mkdir`` makes a mutable directory; ``rm`` unlinks a file; ``rmdir``
  unlinks an empty directory; ``rename`` moves a link, within a directory or
  across, and refuses to replace an existing name (SFTP version 3).

Errors come back as SFTP statuses, never as a hang: a missing name is
``FX_NO_SUCH_FILE``; a change under a read-only directory cap, or a path
leading above the account's root, ``FX_PERMISSION_DENIED``; anything else
``FX_FAILURE`` with the reason. Links, symbolic links and extensions are
``FX_OP_UNSUPPORTED``. Facts: Tahoe-LAFS 1.20's ``frontends/sftpd.py`` and
``docs/frontends/FTP-and-SFTP.rst``; the SFTP protocol is draft version 3.
"""
from __future__ import annotations

import stat
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, BinaryIO

from twisted.conch.avatar import ConchUser
from twisted.conch.interfaces import ISFTPServer
from twisted.conch.ssh.filetransfer import (FX_FAILURE, FX_NO_SUCH_FILE, FX_OP_UNSUPPORTED,
                                            FX_PERMISSION_DENIED, FXF_APPEND, FXF_CREAT,
                                            FXF_EXCL, FXF_TRUNC, FXF_WRITE, SFTPError)
from twisted.internet.defer import Deferred
from twisted.python import log
from twisted.python.failure import Failure
from zope.interface import implementer

from ..caps.dirnode import DirectoryCap
from ..caps.immutable import CHKReadCap, LiteralCap
from ..caps.mutable import MDMFWriteCap, SSKWriteCap
from ..client.dirnode import DirectoryNode
from ..client.uploadable import FileUploadable
from ..dirnode.children import ChildNode, child_from_caps
from ..dirnode.errors import (ExistingChildError, NoSuchChildError, NotWriteableError)
from ..dirnode.ops import add_child, delete_child, get_child
from ..dirnode.packing import Entry, normalize_name
from .sftp_files import Listing, OldContents, PendingReader, ReadHandle, WriteHandle, new_spool
from .sftp_paths import BadPath, OutsideRoot, join_path, permissions, split_path
from .sftp_session import FileTransferServer, SFTPOnlySession

__all__ = ["SFTPUser"]

_SIX_MONTHS = 182 * 24 * 3600


class _NotADirectory(Exception):
    """A path goes through, or names, a file where a directory is needed."""


def _status(failure: Failure) -> Failure:
    """Our errors as SFTP statuses (EOF stays EOF)."""
    error = failure.value
    if isinstance(error, (SFTPError, EOFError)):
        return failure
    if isinstance(error, (NoSuchChildError, FileNotFoundError)):
        code, text = FX_NO_SUCH_FILE, "No such file or directory"
    elif isinstance(error, (NotWriteableError, PermissionError)):
        code, text = FX_PERMISSION_DENIED, f"Permission denied: {error}"
    elif isinstance(error, OutsideRoot):
        code, text = FX_PERMISSION_DENIED, f"Permission denied: {error}"
    elif isinstance(error, ExistingChildError):
        code, text = FX_FAILURE, "A file or directory of that name exists already"
    elif isinstance(error, _NotADirectory):
        code, text = FX_FAILURE, str(error)
    elif isinstance(error, (BadPath, NotImplementedError)):
        code, text = FX_OP_UNSUPPORTED, str(error) or "Operation not supported"
    else:
        log.err(failure, "SFTP request failed")
        code, text = FX_FAILURE, f"{type(error).__name__}: {error}"
    return Failure(SFTPError(code, text))


def _longname(name: str, attrs: dict[str, Any], now: float) -> str:
    mtime = attrs.get("mtime", 0)
    when = time.strftime("%b %d %H:%M" if now - mtime < _SIX_MONTHS else "%b %d  %Y",
                         time.localtime(mtime))
    return (f"{stat.filemode(attrs['permissions'])}   1 tahoe    tahoe    "
            f"{attrs.get('size', 0):>10} {when} {name}")


@implementer(ISFTPServer)
class SFTPUser(ConchUser):
    """An SFTP session of one account.

    :param services: the node's client services (``ClientServices``).
    :param root: the account's root directory.
    :param username: the account's name (for logs).
    :param clock: the reactor (the time shown for a directory of unknown age).
    """

    def __init__(self, services: Any, root: DirectoryCap, username: str, clock: Any) -> None:
        super().__init__()
        self.services = services
        self.root = root
        self.username = username
        self.clock = clock
        self.channelLookup[b"session"] = SFTPOnlySession
        self.subsystemLookup[b"sftp"] = FileTransferServer
        #: Files open for writing, by path: they exist for the client from the open
        #: (sshfs asks for a new file's attributes at once), on the grid from the close.
        self.pending: dict[tuple[str, ...], WriteHandle] = {}
        #: Opens for writing not answered yet: requests about those paths wait for them
        #: (sshfs sends a create and a stat of the new file together).
        self._opening: dict[tuple[str, ...], Deferred] = {}

    def logout(self) -> None:
        """The SSH connection ended."""
        log.msg(f"SFTP user {self.username!r} logged out")

    # -- helpers

    def _do(self, coroutine: Coroutine[Any, Any, Any]) -> Deferred:
        return Deferred.fromCoroutine(coroutine).addErrback(_status)

    async def _settled(self, wanted: Callable[[tuple[str, ...]], bool]) -> None:
        """Wait until the opens for writing of the paths ``wanted`` selects are answered."""
        for key, opening in list(self._opening.items()):
            if wanted(key):
                waiter: Deferred = Deferred()

                def release(result: Any, waiter: Deferred = waiter) -> Any:
                    waiter.callback(None)
                    return result
                opening.addBoth(release)
                await waiter

    def _directory(self, cap: DirectoryCap) -> DirectoryNode:
        return self.services.directories.open(cap)  # type: ignore[no-any-return]

    async def _walk(self, names: list[str]) -> DirectoryNode:
        """The directory at ``names``."""
        node = self._directory(self.root)
        for depth, name in enumerate(names):
            child = get_child(await node.list(), name).child
            if not child.is_directory:
                raise _NotADirectory(f"{join_path(names[:depth + 1]).decode()} is not a"
                                     " directory")
            node = self._directory(child.cap)  # type: ignore[arg-type]
        return node

    async def _parent(self, path: bytes) -> tuple[DirectoryNode, str]:
        """The directory holding what ``path`` names, and its name there."""
        names = split_path(path)
        if not names:
            raise PermissionError("the root directory cannot be changed this way")
        return await self._walk(names[:-1]), names[-1]

    @staticmethod
    def _writable(node: DirectoryNode) -> bool:
        return node.file is not None and node.writekey is not None

    def _require_writable(self, node: DirectoryNode) -> None:
        if not self._writable(node):
            raise PermissionError("this directory is read-only")

    async def _attrs(self, child: ChildNode, metadata: dict[str, Any],
                     writable_parent: bool) -> dict[str, Any]:
        tahoe_times = metadata.get("tahoe", {}) if isinstance(metadata, dict) else {}
        mtime = metadata.get("mtime") or tahoe_times.get("linkmotime") or self.clock.seconds()
        attrs: dict[str, Any] = {"mtime": int(mtime), "atime": int(mtime), "uid": 0, "gid": 0}
        cap = child.cap
        if child.is_directory:
            assert isinstance(cap, DirectoryCap)
            node = self._directory(cap)
            attrs.update(size=0, permissions=permissions(True, self._writable(node)))
        elif isinstance(cap, (CHKReadCap, LiteralCap)):
            attrs.update(size=cap.size, permissions=permissions(False, writable_parent))
        elif child.is_file:
            size = await self.services.mutable.open(cap).size()
            attrs.update(size=size, permissions=permissions(
                False, writable_parent or isinstance(cap, (SSKWriteCap, MDMFWriteCap))))
        else:
            attrs.update(size=0, permissions=permissions(False, False))
        return attrs

    def _root_attrs(self) -> dict[str, Any]:
        now = int(self.clock.seconds())
        node = self._directory(self.root)
        return {"size": 0, "uid": 0, "gid": 0, "mtime": now, "atime": now,
                "permissions": permissions(True, self._writable(node))}

    # -- ISFTPServer

    def gotVersion(self, otherVersion: int, extData: dict) -> dict:  # noqa: N802, N803
        """No extensions."""
        return {}

    def realPath(self, path: bytes) -> Deferred:  # noqa: N802
        """The canonical absolute form of ``path``."""
        async def real() -> bytes:
            return join_path(split_path(path))
        return self._do(real())

    def getAttrs(self, path: bytes, followLinks: bool) -> Deferred:  # noqa: N802, N803
        """Attributes of a file or directory."""
        async def attrs() -> dict[str, Any]:
            names = split_path(path)
            if not names:
                return self._root_attrs()
            await self._settled(lambda key: key == tuple(names))
            if tuple(names) in self.pending:
                return self.pending[tuple(names)].getAttrs()
            parent = await self._walk(names[:-1])
            entry = get_child(await parent.list(), names[-1])
            return await self._attrs(entry.child, entry.metadata, self._writable(parent))
        return self._do(attrs())

    def setAttrs(self, path: bytes, attrs: dict) -> Deferred:  # noqa: N802
        """A new ``size`` truncates or extends a file (``truncate``); times and modes cannot
        be kept on the grid, and are accepted and ignored for an existing path."""
        async def set_attrs() -> None:
            names = split_path(path)
            size = attrs.get("size")
            if tuple(names) in self.pending:
                self.pending[tuple(names)].setAttrs(attrs)
                return
            current = await self.getAttrs(path, True)
            if size is None or size == current["size"]:
                return
            handle = await self._open(path, FXF_WRITE)
            handle.setAttrs({"size": size})
            if size > handle.size:
                await handle.writeChunk(size - 1, b"\0")
            await handle.close()
        return self._do(set_attrs())

    def openDirectory(self, path: bytes) -> Deferred:  # noqa: N802
        """The directory's listing, as (name, long name, attributes) entries."""
        async def listing() -> Listing:
            names = split_path(path)
            await self._settled(lambda key: list(key[:-1]) == names)
            node = await self._walk(names)
            writable = self._writable(node)
            now = self.clock.seconds()
            found = {name: await self._attrs(entry.child, entry.metadata, writable)
                     for name, entry in (await node.list()).items()}
            for pending, handle in self.pending.items():
                if list(pending[:-1]) == names:
                    found.setdefault(pending[-1], handle.getAttrs())
            return Listing([(name.encode("utf-8"), _longname(name, attrs, now).encode("utf-8"),
                              attrs) for name, attrs in sorted(found.items())])
        return self._do(listing())

    def openFile(self, filename: bytes, flags: int, attrs: dict) -> Deferred:  # noqa: N802
        """Open a file for reading, or for writing (created, truncated, appended)."""
        if not flags & (FXF_WRITE | FXF_APPEND):
            return self._do(self._open(filename, flags))
        try:
            key = tuple(split_path(filename))
        except ValueError:
            return self._do(self._open(filename, flags))
        opening = self._do(self._open(filename, flags))
        self._opening[key] = opening

        def answered(result: Any) -> Any:
            if self._opening.get(key) is opening:
                del self._opening[key]
            return result
        return opening.addBoth(answered)

    async def _open(self, path: bytes, flags: int) -> Any:
        key = tuple(split_path(path))
        if not flags & (FXF_WRITE | FXF_APPEND):
            await self._settled(lambda opening: opening == key)
            pending = self.pending.get(key)
            if pending is not None and not pending.closing:
                return PendingReader(pending)
            if pending is not None:  # being stored: read what the grid will hold
                await pending.closed()
        parent, name = await self._parent(path)
        children = await parent.list()
        entry = children.get(name)
        if entry is not None and entry.child.is_directory:
            raise _NotADirectory(f"{path.decode('utf-8', 'replace')} is a directory")
        if not flags & (FXF_WRITE | FXF_APPEND):
            if entry is None:
                raise NoSuchChildError(name)
            return await self._reader(entry, self._writable(parent))
        self._require_writable(parent)
        if entry is None and not flags & FXF_CREAT:
            raise NoSuchChildError(name)
        if entry is not None and flags & FXF_CREAT and flags & FXF_EXCL:
            raise ExistingChildError(name)
        spool = new_spool()
        old: OldContents | None = None
        if entry is not None and not flags & FXF_TRUNC:
            if isinstance(entry.child.cap, MDMFWriteCap):
                # Written in place on close: the old contents only if something needs them.
                node = self.services.mutable.open(entry.child.cap)
                old = OldContents(await node.size(), node.read)
            else:
                async for chunk in self._chunks(entry.child, 0, -1):
                    spool.write(chunk)
        now = int(self.clock.seconds())
        attrs = {"permissions": permissions(False, True), "uid": 0, "gid": 0, "mtime": now,
                 "atime": now}

        async def commit(data: BinaryIO, size: int) -> None:
            try:
                if old is None or not await self._update_in_place(parent, name, handle):
                    await self._store(parent, name, await handle.whole(), size)
            finally:
                if self.pending.get(key) is handle:
                    del self.pending[key]
        handle = WriteHandle(spool, bool(flags & FXF_APPEND), commit, attrs, old)
        self.pending[key] = handle
        return handle

    async def _chunks(self, child: ChildNode, offset: int, length: int) -> AsyncIterator[bytes]:
        cap = child.cap
        if isinstance(cap, LiteralCap):
            end = None if length < 0 else offset + length
            yield cap.data[offset:end]
        elif isinstance(cap, CHKReadCap):
            async for chunk in self.services.download(cap).read(offset,
                                                               None if length < 0 else length):
                yield chunk
        elif child.is_file:
            data = await self.services.mutable.open(cap).read()
            yield data[offset:] if length < 0 else data[offset:offset + length]
        else:
            raise NotImplementedError("this kind of file cannot be read")

    async def _reader(self, entry: Entry, writable_parent: bool) -> ReadHandle:
        attrs = await self._attrs(entry.child, entry.metadata, writable_parent)
        child = entry.child
        return ReadHandle(attrs["size"], lambda offset, length: self._chunks(child, offset,
                                                                              length), attrs)

    async def _update_in_place(self, parent: DirectoryNode, name: str,
                               handle: WriteHandle) -> bool:
        """Write the ranges a handle wrote into the MDMF file still linked under ``name``,
        each updated in place; False (nothing done) when the file was truncated or the name
        now links another file, for a whole store instead."""
        existing = (await parent.list()).get(name)
        if handle.truncated or existing is None \
                or not isinstance(existing.child.cap, MDMFWriteCap):
            return False
        node = self.services.mutable.open(existing.child.cap)
        data = handle.spool
        length = handle.old_size
        for start, end in handle.written:
            # A write past the end leaves zeros before it (in the spool too).
            start = min(start, length)
            data.seek(start)
            await node.update(start, data.read(end - start))
            length = max(length, end)
        return True

    async def _store(self, parent: DirectoryNode, name: str, data: BinaryIO, size: int) -> None:
        """Put a closed file's contents on the grid under ``name``."""
        existing = (await parent.list()).get(name)
        cap = existing.child.cap if existing is not None else None
        if isinstance(cap, (SSKWriteCap, MDMFWriteCap)):
            data.seek(0)
            await self.services.mutable.open(cap).overwrite(data.read(size))
            return
        result = await self.services.upload(FileUploadable(data, size))
        child = child_from_caps(result.cap.to_string())
        await parent.change(lambda table, first: (
            add_child(table, name, child, now=parent.now()), None))

    def removeFile(self, filename: bytes) -> Deferred:  # noqa: N802
        """Unlink a file."""
        return self._do(self._unlink(filename, must_be_file=True))

    def removeDirectory(self, path: bytes) -> Deferred:  # noqa: N802
        """Unlink an empty directory."""
        return self._do(self._unlink(path, must_be_file=False))

    async def _unlink(self, path: bytes, must_be_file: bool) -> None:
        parent, name = await self._parent(path)
        self._require_writable(parent)
        entry = get_child(await parent.list(), name)
        if must_be_file and entry.child.is_directory:
            raise _NotADirectory(f"{path.decode('utf-8', 'replace')} is a directory (use rmdir)")
        if not must_be_file:
            if not entry.child.is_directory:
                raise _NotADirectory(f"{path.decode('utf-8', 'replace')} is not a directory")
            if await self._directory(entry.child.cap).list():  # type: ignore[arg-type]
                raise SFTPError(FX_FAILURE, "Directory not empty")
        await parent.change(lambda table, first: delete_child(table, name, first_time=first))

    def makeDirectory(self, path: bytes, attrs: dict) -> Deferred:  # noqa: N802
        """Make a new (mutable) directory.

        The parent is not listed first: whether the name is free is decided in the
        change, which is coalesced with the parent's other changes (restic makes 256
        directories in one parent at once), and a directory made for a name that is
        taken is left unlinked, as Tahoe's ``create_subdirectory`` does.
        """
        async def mkdir() -> None:
            parent, name = await self._parent(path)
            self._require_writable(parent)
            cap = await self.services.directories.create()
            child = child_from_caps(cap.to_string(), cap.readonly().to_string())

            def link(table: dict[str, Entry], first: bool) -> tuple[Any, None]:
                existing = table.get(normalize_name(name))
                if not first and existing is not None and existing.child == child:
                    return None, None  # linked by the attempt that lost a race
                return add_child(table, name, child, now=parent.now(), overwrite=False), None
            await parent.change(link)
        return self._do(mkdir())

    def renameFile(self, oldpath: bytes, newpath: bytes) -> Deferred:  # noqa: N802
        """Move a link; an existing target name is refused."""
        async def rename() -> None:
            old_parent, old_name = await self._parent(oldpath)
            new_parent, new_name = await self._parent(newpath)
            self._require_writable(old_parent)
            self._require_writable(new_parent)
            entry = get_child(await old_parent.list(), old_name)
            if new_name in await new_parent.list():
                raise ExistingChildError(new_name)
            await new_parent.change(lambda table, first: (add_child(
                table, new_name, entry.child, entry.metadata, now=new_parent.now(),
                overwrite=False), None))
            if (old_parent.cap, old_name) != (new_parent.cap, new_name):
                await old_parent.change(lambda table, first: delete_child(
                    table, old_name, first_time=first))
        return self._do(rename())

    def readLink(self, path: bytes) -> Deferred:  # noqa: N802
        """There are no symbolic links on the grid."""
        return self._do(self._unsupported("symbolic links"))

    def makeLink(self, linkPath: bytes, targetPath: bytes) -> Deferred:  # noqa: N802, N803
        """There are no symbolic links on the grid."""
        return self._do(self._unsupported("symbolic links"))

    def extendedRequest(self, extendedName: bytes, extendedData: bytes) -> Deferred:  # noqa: N802, N803
        """No extensions."""
        return self._do(self._unsupported(extendedName.decode("ascii", "replace")))

    async def _unsupported(self, what: str) -> None:
        raise SFTPError(FX_OP_UNSUPPORTED, f"{what} are not supported")

    def forget(self, handle: WriteHandle) -> None:
        """Drop an abandoned file from :attr:`pending` (it never reaches the grid)."""
        for key, pending in list(self.pending.items()):
            if pending is handle:
                del self.pending[key]

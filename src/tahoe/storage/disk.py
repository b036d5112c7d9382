"""The storage server's file-system operations: share files, directories, free space.

This is the only storage module that opens files. :class:`DiskFile` gives the
container cores (``immutable_container``, ``mutable_container``) their
random-access file over a real one, with positioned reads and writes, so a
write of several megabytes is one ``pwrite`` and never reads the file.
"""
from __future__ import annotations

import contextlib
import errno
import os
import shutil
from typing import Iterable, Iterator

from .paths import share_number_of

_BINARY = getattr(os, "O_BINARY", 0)
#: Reading a share never changes its access time: a cycle reading a million shares would
#: otherwise write a million inodes back (``relatime`` updates an access time older than
#: the file's change or a day). Linux only, and only for the file's owner: see
#: :func:`open_fd`.
_NOATIME = getattr(os, "O_NOATIME", 0)


class DiskFile:
    """A ``RandomAccessFile`` (see ``randomaccess``) over an open file descriptor."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def read_at(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset``; fewer at the end of the file."""
        if length <= 0:
            return b""
        first = os.pread(self._fd, length, offset)
        if len(first) == length or not first:
            return first
        pieces = [first]
        got = len(first)
        while got < length:
            piece = os.pread(self._fd, length - got, offset + got)
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
        return b"".join(pieces)

    def write_at(self, offset: int, data: bytes | memoryview) -> None:
        """Write all of ``data`` at ``offset``; a gap after the old end becomes a hole."""
        view = memoryview(data)
        while view:
            written = os.pwrite(self._fd, view, offset)
            view = view[written:]
            offset += written

    def size(self) -> int:
        """The file's current length."""
        return os.fstat(self._fd).st_size

    def stat(self) -> os.stat_result:
        """The open file's status (size, blocks, times)."""
        return os.fstat(self._fd)

    def disk_bytes(self) -> int:
        """Bytes of disk the file uses (``st_blocks`` × 512)."""
        return getattr(os.fstat(self._fd), "st_blocks", 0) * 512

    def truncate(self, size: int) -> None:
        """Cut (or zero-extend) the file to ``size`` bytes."""
        os.ftruncate(self._fd, size)


def open_fd(path: str, writable: bool = False) -> int:
    """A descriptor of an existing file, opened without access-time updates where the
    system allows it (a file this process does not own is opened plainly).

    :raises OSError: e.g. ``FileNotFoundError``.
    """
    flags = (os.O_RDWR if writable else os.O_RDONLY) | _BINARY
    if _NOATIME:
        try:
            return os.open(path, flags | _NOATIME)
        except PermissionError:  # EPERM: not the file's owner
            pass
    return os.open(path, flags)


@contextlib.contextmanager
def open_file(path: str, writable: bool = False) -> Iterator[DiskFile]:
    """Open an existing file for positioned I/O (:func:`open_fd`), closing it afterwards.

    :raises OSError: e.g. ``FileNotFoundError``.
    """
    fd = open_fd(path, writable)
    try:
        yield DiskFile(fd)
    finally:
        os.close(fd)


def _create_fd(path: str) -> int:
    """A descriptor of a new, empty file (its parent directories made if missing).

    :raises FileExistsError: if the file exists already.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | _BINARY
    try:
        return os.open(path, flags, 0o666)
    except FileNotFoundError:  # the directory is made only when missing: one call less
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return os.open(path, flags, 0o666)


@contextlib.contextmanager
def create_file(path: str) -> Iterator[DiskFile]:
    """Create a new, empty file (and its parent directories) for positioned I/O.

    :raises FileExistsError: if the file exists already.
    """
    fd = _create_fd(path)
    try:
        yield DiskFile(fd)
    finally:
        os.close(fd)


def create_with(path: str, writes: Iterable[tuple[int, bytes]]) -> int:
    """Create a new file (as :func:`create_file`) holding ``writes``, ``(offset, bytes)``
    each, and give its disk use (``st_blocks`` × 512): one ``open``, a ``pwrite`` a
    piece, one ``fstat``, one ``close``.

    :raises FileExistsError: if the file exists already.
    """
    fd = _create_fd(path)
    try:
        file = DiskFile(fd)
        for offset, data in writes:
            file.write_at(offset, data)
        return file.disk_bytes()
    finally:
        os.close(fd)


def make_directory(path: str) -> None:
    """Make a directory that is most likely missing while its parent is there: one
    ``mkdir`` then (its parents are made only when missing; one already there is fine)."""
    try:
        os.mkdir(path)
    except FileNotFoundError:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:
        pass


def read_head(path: str, length: int) -> bytes:
    """The first ``length`` bytes of a file (fewer if it is shorter)."""
    with open_file(path) as file:
        return file.read_at(0, length)


def write_new_file(path: str, data: bytes) -> None:
    """Write a small file whole (creating its directory), replacing any old one."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def list_shares(directory: str) -> dict[int, str]:
    """Share number -> path for every all-digit entry of ``directory`` ({} if it is missing)."""
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    shares = {}
    for name in names:
        shnum = share_number_of(name)
        if shnum is not None:
            shares[shnum] = os.path.join(directory, name)
    return shares


def remove_empty_dirs(*directories: str) -> None:
    """Remove each directory in turn if it is empty; stop quietly at the first that is not."""
    for directory in directories:
        try:
            os.rmdir(directory)
        except OSError:
            return


def remove_quietly(path: str) -> None:
    """Delete a file; a file that is already gone is fine."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def empty_directory(directory: str) -> None:
    """Delete everything under ``directory``, keeping (or creating) the directory itself."""
    os.makedirs(directory, exist_ok=True)
    for entry in os.scandir(directory):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(entry.path)


#: What a write answers when the disk cannot take it: full, over quota, or read-only.
NO_ROOM = {errno.ENOSPC: "no space left on the storage server",
           errno.EDQUOT: "the storage server's disk quota is exceeded",
           errno.EROFS: "the storage server's file system is read-only"}


def no_room(error: BaseException) -> str | None:
    """Why the disk refused a write, when ``error`` says it cannot take one (see
    :data:`NO_ROOM`); None for any other error."""
    return NO_ROOM.get(error.errno) if isinstance(error, OSError) and error.errno else None


def free_space_for_nonroot(path: str) -> int | None:
    """Bytes an unprivileged user may still write on the file system holding ``path``.

    ``f_bavail * f_frsize`` from ``statvfs``, and 0 on a file system mounted
    read-only (a disk that went read-only after errors takes nothing, and the
    server then refuses shares at allocation); where there is no ``statvfs``,
    the free space the platform reports to this user.

    :raises OSError: if the call fails.
    """
    statvfs = getattr(os, "statvfs", None)
    if statvfs is None:
        return shutil.disk_usage(path).free
    stats = statvfs(path)
    if stats.f_flag & getattr(os, "ST_RDONLY", 1):
        return 0
    return stats.f_bavail * stats.f_frsize

"""Small file helpers for the shells (not a pure core)."""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def write_atomically(path: str | os.PathLike[str], data: bytes | str, mode: int | None = None,
                     durable: bool = True) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it into place.

    Readers see either the old content or the whole new content, never a
    partial file: the way readiness files such as ``node.url`` are published.

    :param mode: permission bits for the new file (default: the umask's).
    :param durable: sync the new content to the disk before the rename; without, a
        crash soon after may leave the old content (or, on file systems that do not
        flush a file renamed over another, an empty file), and the caller never waits
        for the disk's other writes.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fd = os.open(tmp, flags, 0o666 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(payload)
            out.flush()
            if durable:
                os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException as error:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(error, OSError) and error.filename is None and error.errno is not None:
            # a write or sync that failed (the disk full) says which file
            raise OSError(error.errno, error.strerror, str(target)) from error
        raise


@contextmanager
def directory_lock(directory: str) -> Iterator[None]:
    """Hold an exclusive lock (``flock``) on ``directory`` for the block: processes that
    read a file in it, change it and write it back whole take turns, so none loses what
    another wrote meanwhile.

    :raises OSError: if the directory cannot be opened.
    """
    import fcntl
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def append_line(path: str, line: str, mode: int | None = None, header: str = "") -> None:
    """Add ``line`` (ending with a newline) at the end of the text file ``path``, whole or
    not at all: the file with the line is written beside it and renamed over it
    (:func:`write_atomically`; a disk that fills leaves the old file, never a cut line),
    under :func:`directory_lock` of its directory (two commands at once both add theirs).

    :param header: the text a new file starts with.
    :raises OSError: if the file cannot be read or written (nothing was added).
    :raises UnicodeDecodeError: if the file is not UTF-8.
    """
    with directory_lock(os.path.dirname(path) or "."):
        try:
            with open(path, encoding="utf-8") as f:
                old = f.read()
        except FileNotFoundError:
            old = header
        if old and not old.endswith("\n"):
            old += "\n"
        write_atomically(path, old + line, mode=mode)


def use_temporary_directory(path: str) -> None:
    """Make ``path`` this process's directory for temporary files (``[node]tempdir``,
    ``NODEDIR/tmp`` by default, as Tahoe 1.20 does): large request bodies the web
    API, the S3 gateway and SFTP spool go there, not to the system's ``/tmp``,
    which is often small, or memory (tmpfs). Created (mode 0700) if missing; a
    file is made and removed there first, so that a directory that cannot be used
    is refused at the start, not at the first large upload.

    :raises OSError: if the directory cannot be made or written.
    """
    import tempfile
    os.makedirs(path, mode=0o700, exist_ok=True)
    with tempfile.TemporaryFile(dir=path):
        pass
    tempfile.tempdir = path

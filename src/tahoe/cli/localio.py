"""Local bytes for the CLI's transfers: request bodies from files or spooled
streams, local files replaced whole or not at all, binary standard output, and
a progress bar only on a terminal.

Standard library only (the progress bar module is imported only when shown).
"""
from __future__ import annotations

import errno
import io
import os
import secrets
import socket
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO, TextIO

from .errors import LocalFileError

__all__ = ["CHUNK_SIZE", "Body", "binary_stdout", "body_from_path", "maybe_progress_bar",
           "maybe_watch_upload", "replacing", "spool_stream"]

#: Bytes of piped input kept in memory before spooling to a temporary file.
SPOOL_MEMORY_LIMIT = 8 * 1024 * 1024
#: Bytes sent or read per piece.
CHUNK_SIZE = 1024 * 1024


class Body:
    """A request body of known length: bytes in memory, or part of a binary file.

    :param stream: a binary file; ``offset`` says where the body starts in it.
    :param length: the number of bytes to send.
    :param owned: close ``stream`` in :meth:`close` (for files this module opened).
    """

    def __init__(self, stream: BinaryIO | None, length: int, offset: int = 0,
                 owned: bool = False, data: bytes | None = None) -> None:
        self.stream = stream
        self.length = length
        self.offset = offset
        self.data = data
        self._owned = owned

    @classmethod
    def from_bytes(cls, data: bytes) -> Body:
        """A body held in memory."""
        return cls(None, len(data), data=data)

    def send(self, sock: socket.socket, progress: Callable[[int], None] | None = None) -> None:
        """Send the whole body, in :data:`CHUNK_SIZE` pieces when ``progress`` wants news.

        A file goes out with ``sendfile`` (zero-copy) on a plain socket.

        :raises OSError: if the connection breaks.
        :raises LocalFileError: if the file ends before ``length`` bytes.
        """
        if self.data is not None:
            view = memoryview(self.data)
            for start in range(0, len(view), CHUNK_SIZE):
                piece = view[start:start + CHUNK_SIZE]
                sock.sendall(piece)
                if progress is not None:
                    progress(len(piece))
            return
        assert self.stream is not None
        sent = 0
        step = CHUNK_SIZE if progress is not None else self.length
        while sent < self.length:
            count = min(step, self.length - sent)
            done = sock.sendfile(self.stream, self.offset + sent, count)  # type: ignore[arg-type]
            if done == 0:
                raise LocalFileError(f"Error: the input ended after {sent} of {self.length} bytes")
            sent += done
            if progress is not None:
                progress(done)

    def close(self) -> None:
        """Close the stream if this body owns it."""
        if self._owned and self.stream is not None:
            self.stream.close()


def body_from_path(path: str) -> Body:
    """A body that streams the file at ``path`` (spooled first if it is not a regular file).

    :raises LocalFileError: if it cannot be opened or read.
    """
    try:
        stream = open(path, "rb")
    except OSError as e:
        raise LocalFileError(f"Error: cannot read {path}: {e.strerror or e}") from None
    try:
        info = os.fstat(stream.fileno())
        if stat.S_ISREG(info.st_mode):
            return Body(stream, info.st_size, 0, owned=True)
        with stream:
            return spool_stream(stream)
    except OSError as e:
        stream.close()
        raise LocalFileError(f"Error: cannot read {path}: {e.strerror or e}") from None


def spool_stream(stream: BinaryIO, memory_limit: int = SPOOL_MEMORY_LIMIT) -> Body:
    """A body with everything left in ``stream`` (stdin, a pipe), whose length is learnt first.

    A regular file (``tahoe put < FILE``) is sent from where it stands, without
    copying. Otherwise data is read in chunks: up to ``memory_limit`` bytes stay
    in memory, beyond that everything goes to an anonymous temporary file.

    :raises LocalFileError: on a read or temporary-file error.
    """
    try:
        fd = stream.fileno()
        info = os.fstat(fd)
    except (OSError, ValueError, io.UnsupportedOperation):
        fd, info = -1, None
    try:
        if info is not None and stat.S_ISREG(info.st_mode):
            position = os.lseek(fd, 0, os.SEEK_CUR)
            raw = os.fdopen(os.dup(fd), "rb", buffering=0)
            return Body(raw, max(0, info.st_size - position), position, owned=True)
        buffer = bytearray()
        while len(buffer) <= memory_limit:
            chunk = stream.read(CHUNK_SIZE)
            if not chunk:
                return Body.from_bytes(bytes(buffer))
            buffer += chunk
        import tempfile  # only for large piped input
        try:
            spool = tempfile.TemporaryFile()
            spool.write(buffer)
        except OSError as e:
            raise _cannot_spool(e, tempfile.gettempdir()) from None
        del buffer
        while chunk := stream.read(CHUNK_SIZE):
            try:
                spool.write(chunk)
            except OSError as e:
                spool.close()
                raise _cannot_spool(e, tempfile.gettempdir()) from None
        length = spool.tell()
        spool.flush()
        return Body(spool, length, 0, owned=True)  # type: ignore[arg-type]
    except OSError as e:
        raise LocalFileError(f"Error: cannot read the input: {e.strerror or e}") from None


def _cannot_spool(error: OSError, directory: str) -> LocalFileError:
    return LocalFileError(f"Error: cannot keep the input in a temporary file in {directory}"
                          f" ({error.strerror or error}); nothing was uploaded")


@contextmanager
def replacing(path: str) -> Iterator[BinaryIO]:
    """A file to write the new contents of the local ``path`` into, put in its place only
    when the block ends without an error: a download that fails (the disk full, the
    grid gone) leaves an existing file as it was and no new one.

    The contents go to a temporary name beside the file (the target of a symbolic
    link), made with the default permissions or, for a file that exists, given its
    permission bits; the rename then replaces the file (its hard links keep the old
    contents). A file this user may not write is refused, as ``open`` refuses it. What is
    not a regular file (``/dev/null``, a FIFO) is written directly.

    :raises OSError: as ``open`` and ``write`` do.
    """
    target = os.path.realpath(path)
    try:
        info: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        with open(path, "wb") as direct:
            yield direct
        return
    if info is not None and not os.access(target, os.W_OK):  # as ``open`` would refuse it
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
    directory, name = os.path.split(target)
    temporary = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tahoe-tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
        if info is not None:
            os.chmod(temporary, stat.S_IMODE(info.st_mode))
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


class _Silent:
    """The progress of a transfer nobody watches."""

    def update(self, count: int) -> None:
        """Ignore ``count``."""

    def close(self) -> None:
        """Nothing to close."""


def maybe_progress_bar(stream: TextIO, total: int | None, description: str,
                       quiet: bool = False) -> Any:
    """:func:`tahoe.cli.progress.progress_bar`, imported only when ``stream`` is a terminal
    and the command is not ``quiet`` (the global ``-q``).

    :returns: an object with ``update(count)`` and ``close()``.
    """
    try:
        terminal = stream.isatty() and not quiet
    except (AttributeError, ValueError, OSError):
        terminal = False
    if not terminal:
        return _Silent()
    from .progress import progress_bar
    return progress_bar(stream, total, description)


def maybe_watch_upload(stream: TextIO, gateway: Any, size: int, quiet: bool = False) -> Any:
    """After ``put`` sent ``size`` bytes to ``gateway``: a bar following the gateway's own
    upload to the grid (:mod:`tahoe.cli.upload_watch`), or None when no bar is shown (not
    a terminal, ``-q``, or a small file)."""
    try:
        terminal = stream.isatty() and not quiet
    except (AttributeError, ValueError, OSError):
        terminal = False
    if not terminal:
        return None
    from .progress import THRESHOLD
    if size < THRESHOLD:
        return None
    from .upload_watch import watch_upload
    return watch_upload(gateway, size, stream)


def binary_stdout(stdout: TextIO) -> BinaryIO:
    """The byte stream under a text ``stdout`` (flushed first), for file contents."""
    stdout.flush()
    buffer = getattr(stdout, "buffer", None)
    if buffer is None:
        raise LocalFileError("Error: standard output cannot take binary data")
    return buffer  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------

"""Multipart staging: each unfinished upload a directory of durable part files.

Under ``NODEDIR/private/s3-multipart/UPLOADID/`` (mode 0700):

* ``upload.json``: the account's access key id, bucket, key, the object's S3
  metadata from CreateMultipartUpload, the checksum algorithm asked for, and
  when it was initiated;
* ``part-NNNNN`` (the part's bytes) and ``part-NNNNN.json`` (size, MD5,
  checksums, time). Each is written to a temporary name, synced and renamed,
  and the directory synced, before UploadPart is answered: an acknowledged
  part survives a crash. A part whose body the channel spooled to a named
  file on the same file system (``[node]tempdir``, ``NODEDIR/tmp`` by
  default) is that file, linked under the temporary name: not copied.

:class:`PartsUploadable` reads the concatenation of part files at any offset
(an :class:`~tahoe.client.uploadable.Uploadable`: Complete uploads from it, no
copy). Upload ids are 48 URL-safe random characters; anything else names no
upload (no path can be smuggled in). Blocking file I/O: the shell runs part
copies in a thread. What the gateway's disk cannot keep, here or in the
request spool, is answered by :func:`disk_refused`.
"""
from __future__ import annotations

import bisect
import json
import os
import re
import secrets
import shutil
from typing import TYPE_CHECKING, Any, BinaryIO

from twisted.internet.defer import Deferred
from twisted.python import log

from ..node.fileutil import write_atomically
from .errors import S3Error
from .key_ahead import KeyAhead

if TYPE_CHECKING:
    from ..immutable.keys import KnownKey

__all__ = ["Staging", "PartsUploadable", "COMPLETED_KEPT_SECONDS", "disk_refused"]

_UPLOAD_ID = re.compile(r"[A-Za-z0-9_-]{16,64}\Z")
_COPY_BLOCK = 1024 * 1024
#: Seconds a completed upload's answer is given again to a Complete retried.
COMPLETED_KEPT_SECONDS = 600.0


def disk_refused(error: OSError, what: str) -> S3Error:
    """The answer when the gateway's disk cannot keep ``what`` (full, say): a
    ``ServiceUnavailable``, which clients retry, naming the cause (not the path)."""
    log.msg(f"S3: could not keep {what}: {error}")
    return S3Error("ServiceUnavailable", f"The gateway could not keep {what} on its disk"
                   f" ({error.strerror or error}); nothing of it was kept.")


def _linked(source: BinaryIO, size: int, temporary: str) -> bool:
    """Give ``source``, when it is a named file of exactly ``size`` bytes on the staging's
    file system (the channel's spool of an UploadPart body), the name ``temporary`` too,
    synced: the part without a copy. False when it cannot be (another file system, an
    anonymous file, a decoded copy of another size): the caller copies."""
    name = getattr(source, "name", None)
    if not isinstance(name, str):
        return False
    try:
        source.flush()
        if os.fstat(source.fileno()).st_size != size:
            return False
        os.fsync(source.fileno())
        os.link(name, temporary)
    except (OSError, ValueError, AttributeError):
        return False
    return True


def _sync_directory(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Staging:
    """The multipart uploads of one node, each a directory under ``root``."""

    def __init__(self, root: str) -> None:
        self.root = root
        #: Upload id -> what waits for the Complete in progress (its result document).
        self.completing: dict[str, list[Deferred]] = {}
        #: Upload id -> (when, (access key, bucket, key), result document) of the uploads
        #: completed in the last :data:`COMPLETED_KEPT_SECONDS`: a client that retries a
        #: Complete whose answer it lost gets it again.
        self.completed: dict[str, tuple[float, tuple[str, str, str], bytes]] = {}
        #: Upload id -> its parts' convergent key hashed as they come (in memory only).
        self.ahead: dict[str, KeyAhead] = {}

    def remember(self, upload_id: str, owner: tuple[str, str, str], document: bytes,
                 now: float) -> None:
        """Keep a completed upload's answer (and forget those kept too long)."""
        for old in [u for u, (when, _, _) in self.completed.items()
                    if now - when > COMPLETED_KEPT_SECONDS]:
            del self.completed[old]
        self.completed[upload_id] = (now, owner, document)

    def _dir(self, upload_id: str) -> str:
        if not _UPLOAD_ID.match(upload_id):
            raise S3Error("NoSuchUpload", UploadId=upload_id[:80])
        return os.path.join(self.root, upload_id)

    def create(self, record: dict[str, Any]) -> str:
        """Stage a new upload; its id.

        :raises S3Error: ``ServiceUnavailable`` when it cannot be kept on disk.
        """
        upload_id = secrets.token_urlsafe(36)
        path = os.path.join(self.root, upload_id)
        try:
            os.makedirs(self.root, mode=0o700, exist_ok=True)
            os.mkdir(path, 0o700)
            write_atomically(os.path.join(path, "upload.json"), json.dumps(record).encode())
            _sync_directory(self.root)
        except OSError as error:
            shutil.rmtree(path, ignore_errors=True)
            raise disk_refused(error, "the new multipart upload") from None
        return upload_id

    def load(self, upload_id: str, access_key: str, bucket: str | None = None,
             key: str | None = None) -> dict[str, Any]:
        """The record of an upload of this account (and bucket and key, if given).

        :raises S3Error: ``NoSuchUpload``.
        """
        path = os.path.join(self._dir(upload_id), "upload.json")
        try:
            with open(path, "rb") as f:
                record: dict[str, Any] = json.loads(f.read())
        except (OSError, ValueError):
            raise S3Error("NoSuchUpload", UploadId=upload_id) from None
        if record.get("account") != access_key or (bucket is not None and record.get(
                "bucket") != bucket) or (key is not None and record.get("key") != key):
            raise S3Error("NoSuchUpload", UploadId=upload_id)
        return record

    def part_path(self, upload_id: str, number: int) -> str:
        """Where part ``number``'s bytes are kept."""
        return os.path.join(self._dir(upload_id), f"part-{number:05d}")

    def store_part(self, upload_id: str, number: int, source: BinaryIO, size: int,
                   info: dict[str, Any]) -> None:
        """Copy ``size`` bytes of ``source`` (from its start) into part ``number`` and
        record ``info``, durably (blocking: run it in a thread for large parts).

        :raises S3Error: ``ServiceUnavailable`` when the part cannot be kept on disk (the
            part stored before under that number, if any, is then left as it was, or
            gone if only its record could not be written).
        """
        path = self.part_path(upload_id, number)
        try:
            self._store_part(path, source, size, info)
        except OSError as error:
            raise disk_refused(error, f"part {number}") from None

    @staticmethod
    def _store_part(path: str, source: BinaryIO, size: int, info: dict[str, Any]) -> None:
        temporary = f"{path}.tmp-{secrets.token_hex(4)}"
        try:
            if not _linked(source, size, temporary):
                with open(temporary, "wb") as out:
                    source.seek(0)
                    left = size
                    while left > 0:
                        block = source.read(min(_COPY_BLOCK, left))
                        if not block:
                            raise S3Error("IncompleteBody")
                        out.write(block)
                        left -= len(block)
                    out.flush()
                    os.fsync(out.fileno())
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
        try:
            write_atomically(path + ".json", json.dumps(info).encode())
        except OSError:
            # new bytes, and the old record or none: no part under this number
            for leftover in (path, path + ".json"):
                try:
                    os.unlink(leftover)
                except OSError:
                    pass
            raise
        _sync_directory(os.path.dirname(path))

    def parts(self, upload_id: str) -> dict[int, dict[str, Any]]:
        """Part number -> recorded info, for every part stored."""
        directory = self._dir(upload_id)
        found = {}
        for name in os.listdir(directory):
            match = re.fullmatch(r"part-(\d{5})\.json", name)
            if match is None:
                continue
            try:
                with open(os.path.join(directory, name), "rb") as f:
                    found[int(match.group(1))] = json.loads(f.read())
            except (OSError, ValueError):
                continue
        return found

    def remove(self, upload_id: str) -> None:
        """Remove an upload's staging directory."""
        self.ahead.pop(upload_id, None)
        shutil.rmtree(self._dir(upload_id), ignore_errors=True)

    def uploads(self) -> list[tuple[str, dict[str, Any]]]:
        """(upload id, record) of every staged upload."""
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            if not _UPLOAD_ID.match(name):
                continue
            try:
                with open(os.path.join(self.root, name, "upload.json"), "rb") as f:
                    found.append((name, json.loads(f.read())))
            except (OSError, ValueError):
                continue
        return found

    def remove_older_than(self, cutoff: float) -> int:
        """Remove the uploads initiated before ``cutoff`` (seconds since the epoch); how many.
        A directory without a readable record is judged by its modification time."""
        removed = 0
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return 0
        for name in names:
            path = os.path.join(self.root, name)
            try:
                with open(os.path.join(path, "upload.json"), "rb") as f:
                    initiated = float(json.loads(f.read())["initiated"])
            except (OSError, ValueError, KeyError, TypeError):
                try:
                    initiated = os.stat(path).st_mtime
                except OSError:
                    continue
            if initiated < cutoff:
                self.ahead.pop(name, None)
                shutil.rmtree(path, ignore_errors=True)
                removed += 1
        return removed


class PartsUploadable:
    """The concatenation of part files, read at any offset (an ``Uploadable``)."""

    def __init__(self, paths: list[str], sizes: list[int],
                 known_key: KnownKey | None = None) -> None:
        self.known_key = known_key
        self._fds = [os.open(path, os.O_RDONLY) for path in paths]
        self._starts = []
        offset = 0
        for size in sizes:
            self._starts.append(offset)
            offset += size
        self._sizes = sizes
        self.size = offset

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` (fewer at the end), across part boundaries."""
        pieces = []
        index = bisect.bisect_right(self._starts, offset) - 1
        while length > 0 and 0 <= index < len(self._fds):
            within = offset - self._starts[index]
            take = min(length, self._sizes[index] - within)
            if take > 0:
                data = os.pread(self._fds[index], take, within)
                if len(data) != take:
                    raise OSError(f"part {index + 1} is shorter than recorded")
                pieces.append(data)
                offset += take
                length -= take
            index += 1
        return b"".join(pieces)

    def close(self) -> None:
        """Close the part files."""
        for fd in self._fds:
            os.close(fd)
        self._fds = []

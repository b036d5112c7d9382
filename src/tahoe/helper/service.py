"""The upload helper service (``[helper] enabled``): ``docs/formats/helper.md``.

A client asks :meth:`Helper.remote_upload_chk` about a storage index. If
every share of the file is already in the grid, the helper answers with
the UEB's hash and fields at once. Otherwise it hands back one
:class:`CHKUploadHelper` per storage index; the client gives it a reference
to its ciphertext, which the helper pulls in order into
``helper/CHK_incoming/<SI>``, appending to what an interrupted earlier
attempt left there (resumption), moves to ``helper/CHK_encoding/<SI>`` once
complete, then encodes and places with our uploader (from ciphertext: the
helper never has the key) and answers with the UEB's hash and fields.
Memory is one chunk of ciphertext and one segment at a time.
"""
from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from foolscap.api import Referenceable
from twisted.internet.defer import Deferred, gatherResults
from twisted.python import log
from twisted.python.failure import Failure
from zope.interface import implementer

from .._version import APPLICATION_VERSION
from ..client.broker import StorageBroker
from ..client.uploadable import FileUploadable
from ..client.uploader import Uploader
from ..immutable.layout import parse_header
from ..immutable.params import EncodingParameters
from ..immutable.ueb import parse_fields
from ..stats.registry import Statistics
from ..util import base32
from ..util.hashutil import uri_extension_hash
from .interfaces import HelperUploadResults, RICHKUploadHelper, RIHelper

#: Bytes of ciphertext asked for in one ``read_encrypted`` call.
CHUNK_SIZE = 128 * 1024
#: Enough of a share's start for any header (v1 is 0x24 bytes, v2 0x44).
HEADER_READ = 0x44
#: Files in CHK_incoming and CHK_encoding older than this count as old (Tahoe's 48 hours).
OLD_AGE = 2 * 86400
#: Disk space a fetch leaves free: a file that would not fit beside it is refused.
RESERVED_SPACE = 1024 * 1024

COUNTER_NAMES = ("chk_upload_helper.upload_requests",
                 "chk_upload_helper.upload_already_present",
                 "chk_upload_helper.upload_need_upload",
                 "chk_upload_helper.resumes",
                 "chk_upload_helper.fetched_bytes",
                 "chk_upload_helper.encoded_bytes")


class NoReaders(Exception):
    """Every client offering this file's ciphertext went away."""


class HelperFull(Exception):
    """The helper's disk has no room for the rest of this file's ciphertext."""


def disk_free(path: Path) -> int:
    """Bytes free for an unprivileged writer on the file system of ``path``."""
    return shutil.disk_usage(path).free


@implementer(RICHKUploadHelper)
class CHKUploadHelper(Referenceable):  # type: ignore[misc]
    """One file being fetched and uploaded; shared by every client uploading it.

    :param storage_index: the file's storage index.
    :param helper: the service (counters, the end of the upload).
    """

    VERSION = {b"http://allmydata.org/tahoe/protocols/helper/chk-upload/v1": {},
               b"application-version": APPLICATION_VERSION.encode("ascii")}

    def __init__(self, storage_index: bytes, helper: "Helper") -> None:
        self.storage_index = storage_index
        self.helper = helper
        name = base32.b2a(storage_index)
        self.incoming = helper.incoming_dir / name
        self.encoding = helper.encoding_dir / name
        self.readers: list[Any] = []
        self.started = time.time()
        self.size: int | None = None
        self.have = 0
        self.fetched = 0
        self.status = "waiting for the client"
        self._running = False
        self._waiting: list[Deferred] = []
        self._last_failure: Failure | None = None
        self._outcome: HelperUploadResults | Failure | None = None

    def remote_get_version(self) -> dict[bytes, Any]:
        return self.VERSION

    def remote_upload(self, reader: Any) -> Deferred:
        """Take ciphertext from ``reader`` (with any other client's); fire with the results."""
        d: Deferred = Deferred()
        if self._outcome is not None:  # a late caller of an upload that ended: its outcome
            if isinstance(self._outcome, Failure):
                d.errback(self._outcome)
            else:
                d.callback(self._outcome)
            return d
        self.readers.append(reader)
        self._waiting.append(d)
        if not self._running:
            self._running = True
            Deferred.fromCoroutine(self._run()).addBoth(self._done)
        return d

    async def _call(self, method: str, *args: Any) -> Any:
        """Call the first reader still there; a reader that fails is dropped."""
        while self.readers:
            reader = self.readers[0]
            try:
                return await reader.callRemote(method, *args)
            except Exception as error:  # noqa: BLE001 (any failure: try the next reader)
                self._last_failure = Failure(error)
                log.msg(f"helper {self.storage_index.hex()[:8]}: reader failed: {error!r}")
                if reader in self.readers:
                    self.readers.remove(reader)
        raise NoReaders(f"no client left to read ciphertext from ({self._last_failure})")

    async def _run(self) -> HelperUploadResults:
        fetch_started = time.time()
        if not self.encoding.exists():
            await self._fetch()
        fetch_total = time.time() - fetch_started
        k, happy, total, segment_size = await self._call("get_all_encoding_parameters")
        params = EncodingParameters(needed=k, happy=happy, total=total,
                                    max_segment_size=segment_size)
        self.status = "encoding and pushing"
        with open(self.encoding, "rb") as handle:
            source = FileUploadable(handle)
            result = await self.helper.uploader.upload_ciphertext(source, self.storage_index,
                                                                  params)
        self.status = "done"
        results = HelperUploadResults()
        results.timings = {"total_fetch": fetch_total, "cumulative_fetch": fetch_total,
                           **result.timings}
        results.uri_extension_hash = result.verify_cap.ueb_hash
        results.uri_extension_data = parse_fields(result.ueb.to_bytes())
        results.ciphertext_fetched = self.fetched
        results.preexisting_shares = result.preexisting_shares
        results.pushed_shares = result.pushed_shares
        results.file_size = result.verify_cap.size
        results.sharemap = {shnum: {name.encode("ascii") for name in names}
                            for shnum, names in result.sharemap.items()}
        servermap: dict[bytes, set[int]] = {}
        for shnum, names in result.sharemap.items():
            for name in names:
                servermap.setdefault(name.encode("ascii"), set()).add(shnum)
        results.servermap = servermap
        results.verifycapstr = result.verify_cap.to_string().encode("ascii")
        self.encoding.unlink()
        self.helper.count("chk_upload_helper.encoded_bytes", result.verify_cap.size)
        try:
            await self._call("close")
        except NoReaders:
            pass
        return results

    async def _fetch(self) -> None:
        """Pull the ciphertext after what CHK_incoming holds already, then move it."""
        self.status = "fetching ciphertext"
        size = await self._call("get_size")
        self.size = size
        if self.incoming.exists():
            self.have = self.incoming.stat().st_size
            self.helper.count("chk_upload_helper.resumes")
        if self.have > size:  # not this file's ciphertext after all: start over
            self.incoming.unlink()
            self.have = 0
        free = self.helper.free_space(self.helper.incoming_dir)
        if size - self.have > free - RESERVED_SPACE:
            raise HelperFull(f"the helper has {free} bytes of disk free; this file needs "
                             f"{size - self.have} more (and {RESERVED_SPACE} kept free)")
        with open(self.incoming, "ab") as out:
            while self.have < size:
                want = min(CHUNK_SIZE, size - self.have)
                pieces = await self._call("read_encrypted", self.have, want)
                got = 0
                for piece in pieces:
                    out.write(piece)
                    got += len(piece)
                if got == 0:
                    raise NoReaders("the client sent no ciphertext")
                out.flush()
                self.have += got
                self.fetched += got
                self.helper.count("chk_upload_helper.fetched_bytes", got)
        os.replace(self.incoming, self.encoding)

    def _done(self, outcome: Any) -> None:
        """Answer every waiting client, then leave the service's table of active uploads."""
        self._outcome = outcome
        waiting, self._waiting = self._waiting, []
        self.readers = []
        if isinstance(outcome, Failure):
            log.msg(f"helper {self.storage_index.hex()[:8]}: upload failed: "
                    f"{outcome.getErrorMessage()}")
            self.status = f"failed: {outcome.getErrorMessage()}"
        self.helper.upload_finished(self)
        for d in waiting:
            if isinstance(outcome, Failure):
                d.errback(outcome)
            else:
                d.callback(outcome)


@implementer(RIHelper)
class Helper(Referenceable):  # type: ignore[misc]
    """The service registered at ``private/helper.furl``.

    :param basedir: the helper's directory (``BASEDIR/helper``).
    :param broker: the storage servers to check and to upload to.
    :param uploader: places the shares (its :meth:`~Uploader.upload_ciphertext`).
    :param stats: the node's statistics, where the counters also go.
    :param free_space: bytes free on the file system of a path (a file whose ciphertext
        would not fit in it, less :data:`RESERVED_SPACE`, is refused before any is fetched).
    """

    VERSION = {b"http://allmydata.org/tahoe/protocols/helper/v1": {},
               b"application-version": APPLICATION_VERSION.encode("ascii")}

    def __init__(self, basedir: Path, broker: StorageBroker, uploader: Uploader,
                 stats: Statistics | None = None,
                 free_space: Callable[[Path], int] = disk_free) -> None:
        self.free_space = free_space
        self.incoming_dir = basedir / "CHK_incoming"
        self.encoding_dir = basedir / "CHK_encoding"
        self.incoming_dir.mkdir(parents=True, exist_ok=True)
        self.encoding_dir.mkdir(parents=True, exist_ok=True)
        self.broker = broker
        self.uploader = uploader
        self.stats = stats
        self.active: dict[bytes, CHKUploadHelper] = {}
        self.counters = dict.fromkeys(COUNTER_NAMES, 0)
        if stats is not None:
            stats.add_producer(self.stats_document)

    def count(self, name: str, amount: int = 1) -> None:
        """Add to one of the ``chk_upload_helper.*`` counters."""
        self.counters[name] += amount
        if self.stats is not None:
            self.stats.count(name, amount)

    def gauges(self) -> dict[str, int]:
        """Active uploads and what CHK_incoming and CHK_encoding hold (count, bytes, and bytes
        in files older than 48 hours), under Tahoe's names."""
        now = time.time()
        values = {"chk_upload_helper.active_uploads": len(self.active)}
        for label, directory in (("incoming", self.incoming_dir),
                                 ("encoding", self.encoding_dir)):
            count = size = old = 0
            for entry in os.scandir(directory):
                info = entry.stat()
                count += 1
                size += info.st_size
                if now - info.st_mtime > OLD_AGE:
                    old += info.st_size
            values[f"chk_upload_helper.{label}_count"] = count
            values[f"chk_upload_helper.{label}_size"] = size
            values[f"chk_upload_helper.{label}_size_old"] = old
        return values

    def stats_document(self) -> dict[str, int]:
        """The gauges and counters together: the helper status page, and (as Tahoe's helper
        reports them) the ``stats`` part of ``/statistics``."""
        return {**self.gauges(), **self.counters}

    def remote_get_version(self) -> dict[bytes, Any]:
        return self.VERSION

    def remote_upload_chk(self, storage_index: bytes) -> Deferred:
        """``(results, None)`` when the file is in the grid, else ``(None, upload helper)``."""
        self.count("chk_upload_helper.upload_requests")
        if storage_index in self.active:
            return Deferred.fromCoroutine(self._active(storage_index))
        return Deferred.fromCoroutine(self._upload_chk(storage_index))

    async def _active(self, storage_index: bytes) -> tuple[None, CHKUploadHelper]:
        return None, self.active[storage_index]

    async def _upload_chk(self, storage_index: bytes
                          ) -> tuple[HelperUploadResults | None, CHKUploadHelper | None]:
        present = await self.find_in_grid(storage_index)
        if present is not None:
            self.count("chk_upload_helper.upload_already_present")
            return present, None
        self.count("chk_upload_helper.upload_need_upload")
        upload = self.active.get(storage_index)
        if upload is None:
            upload = self.active[storage_index] = CHKUploadHelper(storage_index, self)
        return None, upload

    def upload_finished(self, upload: CHKUploadHelper) -> None:
        """Called by an upload that ended (well or not)."""
        if self.active.get(upload.storage_index) is upload:
            del self.active[upload.storage_index]

    async def find_in_grid(self, storage_index: bytes) -> HelperUploadResults | None:
        """Results for a file whose every share (N of the UEB) some server holds, else None."""
        servers = self.broker.connected_servers()
        answers = await gatherResults(
            [Deferred.fromCoroutine(_quiet_buckets(server.storage, storage_index))
             for server in servers])
        sharemap: dict[int, set[bytes]] = {}
        readers = []
        for server, buckets in zip(servers, answers):
            for shnum, reader in buckets.items():
                sharemap.setdefault(shnum, set()).add(server.server_id)
                readers.append(reader)
        for reader in readers:
            ueb = await _read_ueb(reader)
            if ueb is None:
                continue
            fields = parse_fields(ueb)
            if len(sharemap) < int(fields.get("total_shares", 0)):
                return None
            results = HelperUploadResults()
            results.uri_extension_hash = uri_extension_hash(ueb)
            results.uri_extension_data = fields
            results.sharemap = sharemap
            results.preexisting_shares = len(sharemap)
            results.pushed_shares = 0
            return results
        return None


async def _quiet_buckets(storage: Any, storage_index: bytes) -> dict[int, Any]:
    """A server's buckets for the file; a server that fails holds none."""
    try:
        return dict(await storage.get_buckets(storage_index))
    except Exception as error:  # noqa: BLE001 (a lost server is only one less answer)
        log.msg(f"helper: get_buckets failed: {error!r}")
        return {}


async def _read_ueb(reader: Any) -> bytes | None:
    """The UEB bytes of one share, or None if the share cannot give them."""
    try:
        layout = parse_header(await reader.read(0, HEADER_READ))
        field = await reader.read(layout.uri_extension, layout.ueb_length_size)
        length = layout.parse_ueb_length(field)
        ueb: bytes = await reader.read(layout.uri_extension + layout.ueb_length_size, length)
        parse_fields(ueb)
    except Exception as error:  # noqa: BLE001 (a bad share only means: look elsewhere)
        log.msg(f"helper: reading a UEB failed: {error!r}")
        return None
    return ueb

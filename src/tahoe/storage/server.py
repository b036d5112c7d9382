"""The storage server's domain object: ``RIStorageServer`` without the transport.

Follows ``storage-protocol.md`` §2 (the calls), §4 (the directory tree), §5
(leases) and §6 (space). A Foolscap (or HTTP) adapter delegates each remote
call to the method of the same name and turns the errors of
``tahoe.storage.errors`` into remote failures.

Every call first checks all its arguments (``arguments``), then everything
on disk it depends on (container kinds, write enablers, space for new
leases), and only then changes anything: a call that raises has changed
nothing.

The share index (:mod:`.indexing`) answers "which shares does this storage
index have" without touching the disk, once it is fresh; until then (a
rebuild in progress) the bucket directories do. Every change to a share
file holds the lock of its prefix (garbage collection runs in other threads)
and is followed by an index update: the index runs late, never ahead.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from typing import Any, Callable

from attrs import frozen
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from . import disk, paths
from .advisories import advisory_file_name, advisory_text
from .arguments import (check_allocated_size, check_secret, check_share_number,
                        check_share_numbers, check_share_type, check_storage_index)
from .bucket import BucketReader, BucketWriter, WriterState, WriterTimeouts
from .containers import ShareKind, open_container
from .errors import BadRequest, ContainerError, NoSpace, WrongShareKind
from .immutable_container import HEADER_SIZE, ImmutableContainer
from .indexing import IndexKeeper
from .leases import (IMMUTABLE_LEASE_SIZE, OWNER_ADD_LEASE, OWNER_ALLOCATE, expiration_for,
                     immutable_lease_record)
from .mutable_container import MAX_SIZE as MAX_MUTABLE_SIZE
from .mutable_container import MutableContainer
from .quarantine import QUARANTINE_DIR, quarantine_if_corrupt
from .share_index import CORRUPT, IMMUTABLE, MUTABLE, IndexedShare
from .slots import SlotOperations
from .space import available_space, fit_allocations, remaining_space, reported_space

STORAGE_V1 = b"http://allmydata.org/tahoe/protocols/storage/v1"
#: Seconds the index rows of closed shares wait to be written together (``batch_index``):
#: one transaction (its locks and log write) for all the shares of a second, not one each.
INDEX_BATCH_DELAY = 1.0
NODEID_SIZE = 20

DiskStats = Callable[[str], "int | None"]


@frozen
class StorageStats:
    """Numbers for the node's statistics page.

    :ivar allocated: bytes promised to open bucket writers.
    :ivar available: available space (§6.1), ``None`` for no limit.
    :ivar reserved_space: the configured reserve, bytes.
    :ivar open_buckets: number of open bucket writers.
    :ivar accepting_immutable_shares: whether new immutable shares may come.
    """

    allocated: int
    available: int | None
    reserved_space: int
    open_buckets: int
    accepting_immutable_shares: bool


class StorageServer:
    """The shares under one storage directory, served by the rules of Tahoe-LAFS 1.20.

    :param storage_dir: ``NODEDIR/storage``; ``shares/``, ``shares/incoming/``
        and ``corruption-advisories/`` are created inside it, and anything
        under ``shares/incoming/`` is deleted (uploads cut off by a stop).
    :param nodeid: this server's 20-byte binary tub id: written into new
        mutable containers and leases, and named by ``BadWriteEnablerError``.
    :param clock: gives lease times (``seconds()``) and runs the bucket
        writers' inactivity timeouts (``callLater``).
    :param application_version: reported by :meth:`get_version`, e.g.
        ``b"tahoe-lafs/1.20.0"``.
    :param reserved_space: bytes to keep free (§6.1).
    :param readonly: accept no new immutable shares (mutable writes still
        work, as in Tahoe 1.20).
    :param debug_discard: answer uploads as usual but throw the share data
        away (immutable shares then read as zeros); for testing clients.
    :param disk_stats: given the ``shares`` directory, the bytes free for
        non-root users, ``None`` if the platform cannot tell, or an
        ``OSError``. Defaults to ``statvfs``.
    :param index_path: where the share index lives (default
        ``storage/share-index.sqlite``); :meth:`close` closes it.
    :param batch_index: write the index rows of the shares closed within
        :data:`INDEX_BATCH_DELAY` together, in one transaction (a node's server; tests
        driving a fake clock get each row at once unless they ask for this). A row is
        written sooner when the server asks about its storage index, or the totals are
        read; the index may run late, never ahead, and a crash makes it rebuild anyway.
    :raises ValueError: if ``nodeid`` is not 20 bytes or ``reserved_space`` is negative.
    """

    _log = Logger()

    def __init__(self, storage_dir: str | os.PathLike[str], nodeid: bytes, clock: IReactorTime,
                 *, application_version: bytes, reserved_space: int = 0, readonly: bool = False,
                 debug_discard: bool = False, disk_stats: DiskStats | None = None,
                 index_path: str | os.PathLike[str] | None = None,
                 batch_index: bool = False) -> None:
        if not isinstance(nodeid, bytes) or len(nodeid) != NODEID_SIZE:
            raise ValueError("nodeid must be the 20-byte binary tub id")
        if reserved_space < 0:
            raise ValueError("reserved_space must not be negative")
        self._root = os.fspath(storage_dir)
        self._nodeid = nodeid
        self._clock = clock
        self._application_version = application_version
        self._reserved_space = reserved_space
        self._readonly = readonly
        self._discard = debug_discard
        self._disk_stats = disk_stats or disk.free_space_for_nonroot
        self._writers: dict[tuple[bytes, int], BucketWriter] = {}
        self._timeouts = WriterTimeouts(clock)
        self._allocated = 0  # the allocated sizes of self._writers
        self._writer_listeners: list[Callable[[BucketWriter], None]] = []
        self._shares_dir = os.path.join(self._root, paths.SHARES_DIR)
        self._advisory_dir = os.path.join(self._root, paths.CORRUPTION_DIR)
        os.makedirs(self._shares_dir, exist_ok=True)
        os.makedirs(self._advisory_dir, exist_ok=True)
        # the index judges whether it is fresh before incoming/ is touched
        self.index = IndexKeeper(self._root, index_path)
        if batch_index:  # the rows of shares closed within a second written together
            self.index.batch_closes(clock, INDEX_BATCH_DELAY)
        disk.empty_directory(os.path.join(self._shares_dir, paths.INCOMING_DIR))
        self._slots = SlotOperations(self._path, self._share_files, nodeid, self.available_space,
                                     self._disk_free)

    def close(self) -> None:
        """A clean stop: the share index is kept for the next start (call once the
        crawlers have stopped)."""
        self.index.close()

    @contextlib.contextmanager
    def _changing(self, storage_index: bytes, shnums: Callable[[], Iterable[int]]
                  ) -> Iterator[None]:
        """Hold the bucket's lock while share files of ``storage_index`` change, then bring
        the index in step with the shares ``shnums()`` names (after the files, also
        when the change failed half way)."""
        with self.index.lock(storage_index):
            try:
                yield
            finally:
                self.index.shares_changed(storage_index, shnums())

    # space

    def available_space(self) -> int | None:
        """Bytes still free after the reserve (§6.1): 0 if read-only or if the
        disk-stats call fails, ``None`` if there is no way to ask."""
        try:
            free = self._disk_stats(self._shares_dir)
        except OSError as e:
            self._log.warn("disk stats failed: {error}", error=e)
            free = 0
        return available_space(free, self._reserved_space, self._readonly)

    def _disk_free(self) -> int | None:
        """Bytes the disk itself has free (reserve and read-only aside); None if unknown."""
        try:
            return self._disk_stats(self._shares_dir)
        except OSError:
            return None

    def allocated_size(self) -> int:
        """Bytes promised to bucket writers still open (kept as they open and finish)."""
        return self._allocated

    def stats(self) -> StorageStats:
        """A snapshot of the numbers an operator watches."""
        available = self.available_space()
        accepting = not self._readonly and (available is None or available > 0)
        return StorageStats(self.allocated_size(), available, self._reserved_space,
                            len(self._writers), accepting)

    # RIStorageServer

    def get_version(self) -> dict[bytes, Any]:
        """The version dict of §2.2, with bytes keys; available space measured now."""
        space = reported_space(self.available_space())
        return {
            STORAGE_V1: {
                b"maximum-immutable-share-size": space,
                b"maximum-mutable-share-size": MAX_MUTABLE_SIZE,
                b"available-space": space,
                b"tolerates-immutable-read-overrun": True,
                b"delete-mutable-shares-with-zero-length-writev": True,
                b"fills-holes-with-zero-bytes": True,
                b"prevents-read-past-end-of-share-data": True,
            },
            b"application-version": self._application_version,
        }

    def allocate_buckets(self, storage_index: bytes, renew_secret: bytes, cancel_secret: bytes,
                         sharenums: set[int], allocated_size: int
                         ) -> tuple[set[int], dict[int, BucketWriter]]:
        """Accept new immutable shares and renew leases on the ones held (§2.3).

        :param sharenums: a set (or frozenset) of at most 256 share numbers.
        :param allocated_size: bytes of share data per share, 0..2**64-1.
        :returns: ``(alreadygot, writers)``: every share number held in final
            form for this storage index (requested or not), and a writer for
            each requested share that is neither held, nor being uploaded,
            nor beyond the available space (those are silently left out).
        :raises BadRequest: for any malformed argument.
        :raises NoSpace: if a held share needs a new lease and there is no room.
        :raises ContainerError: if a held share is not an immutable container.
        """
        check_storage_index(storage_index, for_write=True)
        check_secret(renew_secret, "renew secret")
        check_secret(cancel_secret, "cancel secret")
        requested = check_share_numbers(sharenums, (set, frozenset))
        check_allocated_size(allocated_size)
        expiration = expiration_for(self._clock.seconds())

        held: dict[int, str] = {}
        if self._may_hold_shares(storage_index):
            with self._changing(storage_index, lambda: held):
                held = self._share_files(storage_index)
                self._renew_or_add_leases(held, OWNER_ALLOCATE, renew_secret, cancel_secret,
                                          expiration, kinds=(ShareKind.IMMUTABLE,))

        candidates = [n for n in sorted(requested) if n not in held
                      and not self._upload_in_progress(storage_index, n)]
        granted: list[int] = []
        if candidates and not self._readonly:
            remaining = remaining_space(self.available_space(), [self.allocated_size()])
            granted = fit_allocations(candidates, allocated_size, remaining)
        return set(held), self._create_writers(storage_index, granted, allocated_size,
                                                renew_secret, cancel_secret, expiration,
                                                new_bucket=not held)

    def add_lease(self, storage_index: bytes, renew_secret: bytes, cancel_secret: bytes) -> None:
        """Renew or add a lease (owner number 1) on every share of a storage index (§2.4).

        An unknown (or shorter than 16 bytes) storage index is not an error.

        :raises BadRequest: for any malformed argument.
        :raises NoSpace: if a share needs a new lease record and there is no room.
        """
        full = check_storage_index(storage_index, for_write=False)
        check_secret(renew_secret, "renew secret")
        check_secret(cancel_secret, "cancel secret")
        if not full:
            return None
        expiration = expiration_for(self._clock.seconds())
        held: dict[int, str] = {}
        with self._changing(storage_index, lambda: held):
            held = self._share_files(storage_index)
            self._renew_or_add_leases(held, OWNER_ADD_LEASE, renew_secret, cancel_secret,
                                      expiration, kinds=(ShareKind.IMMUTABLE, ShareKind.MUTABLE))
        return None

    def get_buckets(self, storage_index: bytes) -> dict[int, BucketReader]:
        """A reader for every final immutable share of a storage index (§2.5).

        Shares still being uploaded are not included; an unknown storage index
        gives ``{}``. Share files that are mutable or unreadable are left out
        (and logged).

        :raises BadStorageIndex: if it is not bytes or longer than 16 bytes.
        """
        if not check_storage_index(storage_index, for_write=False):
            return {}
        return {shnum: BucketReader(path, storage_index, shnum, length, self.advise_corrupt_share,
                                    self.index.files_gone)
                for shnum, path, kind, length in self._containers(storage_index)
                if kind == IMMUTABLE}

    def slot_readv(self, storage_index: bytes, shares: list[int],
                   readv: list[tuple[int, int]]) -> dict[int, list[bytes]]:
        """Read mutable shares (§2.6): ``{shnum: [data per read vector]}``.

        :param shares: share numbers to read; empty means all.
        :raises BadRequest: for any malformed argument.
        """
        return self._slots.readv(storage_index, shares, readv)

    def slot_testv_and_readv_and_writev(
            self, storage_index: bytes, secrets: tuple[bytes, bytes, bytes],
            tw_vectors: dict[int, tuple[list[tuple[int, int, bytes, bytes]],
                                        list[tuple[int, bytes]], int | None]],
            r_vector: list[tuple[int, int]]) -> tuple[bool, dict[int, list[bytes]]]:
        """Test, read and write mutable shares in one atomic step (§2.7).

        :returns: ``(all tests passed, {shnum: [data read before the writes]})``
            with an entry for every share that existed.
        :raises BadRequest: for any malformed argument, including test
            operators other than ``b"eq"``.
        :raises BadWriteEnablerError: if any existing share's write enabler differs.
        :raises DataTooLargeError: if a write would end past the maximum size.
        :raises NoSpace: if a share needs an extra lease record and there is no room.
        :raises ContainerError: if an existing share is not a mutable container.
        """
        written: Iterable[int] = ()
        if isinstance(tw_vectors, dict):
            written = [n for n in tw_vectors if type(n) is int and 0 <= n < 256]
        with self._changing(storage_index, lambda: written):
            return self._slots.testv_and_readv_and_writev(
                storage_index, secrets, tw_vectors, r_vector, self._clock.seconds())

    def advise_corrupt_share(self, share_type: bytes, storage_index: bytes, shnum: int,
                             reason: bytes) -> None:
        """Keep a client's corruption report in ``corruption-advisories/`` (§2.8, §4.6);
        an immutable share that indeed fails a check against itself is moved aside
        (:mod:`.quarantine`), so that a repair can put a good copy in its place.

        A report about a share this server does not hold, or one larger than
        the available space, is only logged.

        :raises BadRequest: for a share type other than immutable/mutable, a
            bad share number or storage index, or a reason that is not bytes.
        """
        kind = check_share_type(share_type)
        full = check_storage_index(storage_index, for_write=False)
        check_share_number(shnum)
        if not isinstance(reason, bytes):
            raise BadRequest("reason must be bytes")
        if not full or shnum not in self._share_files(storage_index):
            self._log.info("corruption advisory for a share not held: {si} {shnum}: {reason!r}",
                           si=storage_index.hex(), shnum=shnum, reason=reason)
            return None
        report = advisory_text(kind, storage_index, shnum, reason)
        available = self.available_space()
        if available is not None and len(report) > available:
            self._log.warn("no space to keep a corruption advisory: {reason!r}", reason=reason)
            return None
        name = advisory_file_name(self._clock.seconds(), storage_index, shnum)
        disk.write_new_file(os.path.join(self._advisory_dir, name), report)
        self._log.info("corruption advisory written: {name}", name=name)
        if kind == "immutable":
            path = self._share_files(storage_index)[shnum]
            with self._changing(storage_index, lambda: [shnum]):
                problems = quarantine_if_corrupt(self._root, storage_index, shnum, path,
                                                 self._clock.seconds())
            if problems:
                self._log.warn("share {si} {shnum} is corrupt ({problems}): moved to {dir}/",
                               si=storage_index.hex(), shnum=shnum,
                               problems="; ".join(problems), dir=QUARANTINE_DIR)
        return None

    # for transports

    def add_writer_listener(self, listener: Callable[[BucketWriter], None]) -> None:
        """Call ``listener(writer)`` whenever a bucket writer closes, aborts or times out."""
        self._writer_listeners.append(listener)

    def share_numbers(self, storage_index: bytes) -> set[int]:
        """Every final share number of a (16-byte) storage index, of either kind."""
        return set(self._share_files(storage_index))

    def mutable_share_lengths(self, storage_index: bytes) -> dict[int, int]:
        """Share number -> data length of each final mutable share of a storage index.

        Unreadable share files are left out (and logged).
        """
        return {shnum: length for shnum, _, kind, length in self._containers(storage_index)
                if kind == MUTABLE}

    def _containers(self, storage_index: bytes) -> Iterator[tuple[int, str, int, int]]:
        """Each final share's number, path, kind (:data:`~.share_index.IMMUTABLE` or
        ``MUTABLE``) and data length, in share-number order: from the index when it
        can be trusted, else from the files; unreadable share files are skipped (and
        logged)."""
        indexed = self.index.present_shares(storage_index)
        if indexed is not None:
            for shnum, (path, share) in sorted(indexed.items()):
                if share.kind == CORRUPT:
                    self._log.warn("skipping share {path}: not a share container", path=path)
                    continue
                yield shnum, path, share.kind, share.data_length
            return
        for shnum, path in sorted(self._share_files(storage_index).items()):
            try:
                with disk.open_file(path) as file:
                    container = open_container(file)
            except (OSError, ContainerError) as e:
                self._log.warn("skipping share {path}: {error}", path=path, error=e)
                continue
            kind = IMMUTABLE if isinstance(container, ImmutableContainer) else MUTABLE
            yield shnum, path, kind, container.data_length

    # helpers

    def _path(self, parts: paths.Parts) -> str:
        return os.path.join(self._root, *parts)

    def _share_files(self, storage_index: bytes) -> dict[int, str]:
        """Share number -> path of every final share (the index's, or the directory's)."""
        indexed = self.index.present_shares(storage_index)
        if indexed is not None:
            return {shnum: path for shnum, (path, _) in indexed.items()}
        return disk.list_shares(self._path(paths.share_dir_parts(storage_index)))

    def _may_hold_shares(self, storage_index: bytes) -> bool:
        """False when the index (trusted for this storage index) holds no share of it: then
        there is no lease to renew, and no need to take the bucket's lock to find that out
        (only this thread adds shares; garbage collection only takes them away)."""
        return self.index.indexed_shares(storage_index) != {}

    def _upload_in_progress(self, storage_index: bytes, shnum: int) -> bool:
        # (incoming/ holds only the files of this server's writers: it is emptied at start)
        return (storage_index, shnum) in self._writers

    def _create_writers(self, storage_index: bytes, shnums: list[int], allocated_size: int,
                        renew_secret: bytes, cancel_secret: bytes, expiration: int,
                        new_bucket: bool) -> dict[int, BucketWriter]:
        """A writer per share number (nothing on disk yet: see :mod:`.bucket`); if one cannot
        be made, none is left behind."""
        writers: dict[int, BucketWriter] = {}
        if not shnums:
            return writers
        lease = (immutable_lease_record(OWNER_ALLOCATE, renew_secret, cancel_secret, expiration),
                 expiration)
        try:
            for shnum in shnums:
                writers[shnum] = BucketWriter.create(
                    storage_index, shnum, allocated_size, lease,
                    f"{self._root}/{paths.incoming_path(storage_index, shnum)}",
                    f"{self._root}/{paths.share_path(storage_index, shnum)}",
                    self._timeouts, self._discard, self._writer_finished,
                    self.index.lock(storage_index), new_bucket)
                self._writers[(storage_index, shnum)] = writers[shnum]
                self._allocated += allocated_size
        except BaseException:
            for writer in writers.values():
                writer.abort()
            raise
        return writers

    def _writer_finished(self, writer: BucketWriter) -> None:
        if self._writers.pop((writer.storage_index, writer.shnum), None) is writer:
            self._allocated -= writer.allocated_size
        if writer.state is WriterState.CLOSED:
            # the writer made the file: its row needs no reading of it
            self.index.share_closed(writer.storage_index, writer.shnum, IndexedShare(
                writer.storage_index, writer.shnum, IMMUTABLE,
                HEADER_SIZE + writer.allocated_size + IMMUTABLE_LEASE_SIZE, writer.disk_bytes,
                0, writer.allocated_size, (writer.expiration,)))
        for listener in self._writer_listeners:
            listener(writer)

    def _renew_or_add_leases(self, shares: dict[int, str], owner_num: int, renew_secret: bytes,
                             cancel_secret: bytes, expiration: int,
                             kinds: tuple[ShareKind, ...]) -> None:
        """Add-or-renew on every share, after checking all of them first (§5.4)."""
        needed = 0
        for path in shares.values():
            with disk.open_file(path) as file:
                container = open_container(file)
                kind = _kind_of(container)
                if kind not in kinds:
                    raise WrongShareKind(f"{path} is a {kind.value} share")
                needed = max(needed, container.lease_space_needed(renew_secret))
        available = self.available_space() if needed else None
        if needed and available is not None and available < needed:
            raise NoSpace(f"need {needed} bytes for a new lease, {available} available")
        for path in shares.values():
            with disk.open_file(path, writable=True) as file:
                container = open_container(file)
                if isinstance(container, ImmutableContainer):
                    container.add_or_renew_lease(owner_num, renew_secret, cancel_secret,
                                                 expiration, None)
                else:
                    container.add_or_renew_lease(OWNER_ADD_LEASE, renew_secret, cancel_secret,
                                                 expiration, self._nodeid, None)


def _kind_of(container: ImmutableContainer | MutableContainer) -> ShareKind:
    if isinstance(container, ImmutableContainer):
        return ShareKind.IMMUTABLE
    return ShareKind.MUTABLE

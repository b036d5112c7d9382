"""Mutable-share ("slot") reads and test-and-set writes on disk.

Follows ``storage-protocol.md`` §2.6 and §2.7, with the container format of
§4.5. ``StorageServer`` delegates its two slot calls here. A call checks its
arguments, opens every existing share of the storage index, checks every
write enabler, evaluates every test and does every read before it writes
anything.
"""
from __future__ import annotations

import contextlib
import os
from typing import Callable

from twisted.logger import Logger

from . import disk, paths
from .arguments import (ShareWrite, check_share_numbers, check_storage_index, parse_read_vector,
                        parse_secrets, parse_tw_vectors)
from .collector import delete_share_file
from .containers import open_container
from .errors import ContainerError, DataTooLargeError, NoSpace, WrongShareKind
from .leases import MUTABLE_LEASE_SIZE, OWNER_ADD_LEASE, expiration_for
from .mutable_container import FRESH_SIZE, MAX_SIZE, MutableContainer

ReadData = dict[int, list[bytes]]


def _absent_share(offset: int, length: int) -> bytes:
    """A share that does not exist reads as empty everywhere."""
    return b""


class SlotOperations:
    """The mutable-share calls of one storage directory.

    :param path: joins path parts (``paths``) onto the storage directory.
    :param share_files: storage index -> ``{shnum: path}`` of its final shares.
    :param nodeid: this server's 20-byte tub id, for new containers and leases.
    :param available_space: the server's available space (``None``: no limit).
    :param disk_free: the bytes the disk itself has free (``None``: unknown), reserve and
        read-only aside.
    """

    _log = Logger()

    def __init__(self, path: Callable[[paths.Parts], str],
                 share_files: Callable[[bytes], dict[int, str]], nodeid: bytes,
                 available_space: Callable[[], int | None],
                 disk_free: Callable[[], int | None] = lambda: None) -> None:
        self._path = path
        self._share_files = share_files
        self._nodeid = nodeid
        self._available_space = available_space
        self._disk_free = disk_free

    def readv(self, storage_index: bytes, shares: list[int],
              readv: list[tuple[int, int]]) -> ReadData:
        """``slot_readv``: read vectors from the mutable shares asked for (all if none).

        Absent shares, and share files that are not mutable containers, give
        no entry; reads are cut short at the end of the data.

        :raises BadRequest: for any malformed argument.
        """
        full = check_storage_index(storage_index, for_write=False)
        wanted = check_share_numbers(shares, (list, tuple))
        reads = parse_read_vector(readv)
        if not full:
            return {}
        result = {}
        for shnum, path in sorted(self._share_files(storage_index).items()):
            if wanted and shnum not in wanted:
                continue
            try:
                with disk.open_file(path) as file:
                    container = open_container(file)
                    if isinstance(container, MutableContainer):
                        result[shnum] = [container.read_share_data(r.offset, r.length)
                                         for r in reads]
            except (OSError, ContainerError) as e:
                self._log.warn("skipping share {path}: {error}", path=path, error=e)
        return result

    def testv_and_readv_and_writev(self, storage_index: bytes, secrets: object,
                                   tw_vectors: object, r_vector: object,
                                   now: float) -> tuple[bool, ReadData]:
        """``slot_testv_and_readv_and_writev`` at time ``now`` (see ``StorageServer``)."""
        check_storage_index(storage_index, for_write=True)
        write_enabler, renew_secret, cancel_secret = parse_secrets(secrets)
        requests = parse_tw_vectors(tw_vectors)
        reads = parse_read_vector(r_vector)
        for request in requests.values():
            for write in request.writes:
                if write.offset + len(write.data) > MAX_SIZE:
                    raise DataTooLargeError(MAX_SIZE, write.offset, len(write.data))
        held = self._share_files(storage_index)
        with contextlib.ExitStack() as files:
            containers = {}
            for shnum, path in sorted(held.items()):
                container = open_container(files.enter_context(disk.open_file(path, writable=True)))
                if not isinstance(container, MutableContainer):
                    raise WrongShareKind(f"{path} is not a mutable share")
                containers[shnum] = container
            for container in containers.values():
                container.check_write_enabler(write_enabler)
            passed = all(request.passes(containers[shnum].read_share_data
                                        if shnum in containers else _absent_share)
                         for shnum, request in requests.items())
            read_data = {shnum: [container.read_share_data(r.offset, r.length) for r in reads]
                         for shnum, container in containers.items()}
            if not passed:
                return False, read_data
            self._check_space(containers, requests, renew_secret)
            lease = (OWNER_ADD_LEASE, renew_secret, cancel_secret, expiration_for(now),
                     self._nodeid, None)
            for shnum, request in sorted(requests.items()):
                if request.new_length == 0:
                    continue
                if shnum in containers:
                    self._write(containers[shnum], request, lease)
                    continue
                path = self._path(paths.share_path_parts(storage_index, shnum))
                try:
                    self._write(MutableContainer.create(
                        files.enter_context(disk.create_file(path)), self._nodeid,
                        write_enabler), request, lease)
                except BaseException:
                    # A new share the disk refused part way (full) goes again: left
                    # without its header it would refuse every later write to this
                    # storage index, left without its lease it would be kept for ever.
                    delete_share_file(path)
                    raise
        deleted = [shnum for shnum, request in requests.items()
                   if request.new_length == 0 and shnum in held]
        for shnum in deleted:
            os.remove(held[shnum])
        share_dir = self._path(paths.share_dir_parts(storage_index))
        if deleted and not disk.list_shares(share_dir):
            disk.remove_empty_dirs(share_dir, os.path.dirname(share_dir))
        return True, read_data

    def _check_space(self, containers: dict[int, MutableContainer],
                     requests: dict[int, ShareWrite], renew_secret: bytes) -> None:
        """Raise ``NoSpace`` now, before anything is written, if a surviving share would
        need a lease record with no room, or if the disk itself has not the room the
        shares would grow by (their data past its end, new shares). A full disk then
        refuses the whole write, instead of failing part way through it and leaving a
        share half old, half new, which readers reject as corrupt (on a grid whose
        servers all filled, every share of a directory that grew). As in Tahoe 1.20, the
        reserve and ``readonly`` do not stop mutable writes: only a disk that would
        refuse them anyway."""
        needed = max((containers[shnum].lease_space_needed(renew_secret)
                      for shnum, request in requests.items()
                      if request.new_length != 0 and shnum in containers), default=0)
        if needed:
            available = self._available_space()
            if available is not None and available < needed:
                raise NoSpace(f"need {needed} bytes for a new lease, {available} available")
        growth = 0
        for shnum, request in requests.items():
            if request.new_length == 0:
                continue
            end = max((write.offset + len(write.data) for write in request.writes), default=0)
            if shnum in containers:
                growth += max(0, end - containers[shnum].data_length)
            else:
                growth += FRESH_SIZE + end + MUTABLE_LEASE_SIZE
        if growth:
            free = self._disk_free()
            if free is not None and free < needed + growth:
                raise NoSpace(f"the disk has {free} bytes free; the shares need"
                              f" {needed + growth} more")

    @classmethod
    def _write(cls, container: MutableContainer, request: ShareWrite,
               lease: tuple[int, bytes, bytes, int, bytes, None]) -> None:
        """Apply a share's writes, then add or renew the writer's lease."""
        cls._apply(container, request)
        container.add_or_renew_lease(*lease)

    @staticmethod
    def _apply(container: MutableContainer, request: ShareWrite) -> None:
        for write in request.writes:
            container.write_share_data(write.offset, write.data)
        if request.new_length is not None:
            container.truncate_data(request.new_length)

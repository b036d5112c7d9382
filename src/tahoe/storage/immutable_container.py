"""The immutable share container: 12-byte header, share data, 72-byte lease records.

Follows ``storage-protocol.md`` §4.4 and §5.4 (see
``docs/formats/storage-containers.md``)::

    0x00  >L  container version (2; 1 = legacy, cleartext lease secrets)
    0x04  >L  data-length field = min(allocated_size, 2**32-1), informational only
    0x08  >L  number of leases N
    0x0c      share data (D bytes)
    0x0c+D    N lease records of 72 bytes

The data length D is always computed as ``file size - 12 - 72 N``; the
header field is never trusted.
"""
from __future__ import annotations

import struct

from attrs import frozen

from .errors import CorruptContainer, DataTooLargeError, NoSpace, UnknownContainer
from .leases import (IMMUTABLE_LEASE, IMMUTABLE_LEASE_SIZE, Lease, find_lease, new_lease,
                     pack_immutable_lease, parse_immutable_lease)
from .randomaccess import RandomAccessFile

HEADER = struct.Struct(">LLL")
HEADER_SIZE = HEADER.size  # 12
DATA_OFFSET = HEADER_SIZE
VERSIONS = (1, 2)
#: The version this server writes (hashed lease secrets).
CURRENT_VERSION = 2
DATA_LENGTH_FIELD_MAX = 2 ** 32 - 1
_COUNT = struct.Struct(">L")
_COUNT_OFFSET = 8


@frozen
class ImmutableHeader:
    """The three header fields of an immutable container."""

    version: int
    data_length_field: int
    num_leases: int


def pack_header(version: int, allocated_size: int, num_leases: int) -> bytes:
    """The 12-byte header; the data-length field saturates at 2**32-1."""
    return HEADER.pack(version, min(allocated_size, DATA_LENGTH_FIELD_MAX), num_leases)


def parse_header(data: bytes) -> ImmutableHeader:
    """Parse the first 12 bytes of an immutable container.

    :raises CorruptContainer: if fewer than 12 bytes are given.
    :raises UnknownContainer: if the version is not 1 or 2.
    """
    if len(data) < HEADER_SIZE:
        raise CorruptContainer(f"immutable container is shorter than its {HEADER_SIZE}-byte header")
    version, length_field, count = HEADER.unpack_from(data)
    if version not in VERSIONS:
        raise UnknownContainer(f"immutable container version {version} is not 1 or 2")
    return ImmutableHeader(version, length_field, count)


def new_container_writes(allocated_size: int, lease_record: bytes, offset: int, data: bytes,
                         version: int = CURRENT_VERSION) -> list[tuple[int, bytes]]:
    """The writes, ``(file offset, bytes)``, that make a new container of its final size in
    an empty file: the header, ``data`` at share-data ``offset`` and one lease record.
    Pieces that touch are joined, so a ``data`` that is the whole share data gives one
    write; the bytes in between are left as a hole (zeros).

    :raises ValueError: for a negative size, or data that does not fit.
    """
    if allocated_size < 0:
        raise ValueError("allocated_size must not be negative")
    if offset < 0 or offset + len(data) > allocated_size:
        raise ValueError("the data does not fit in the share")
    pieces = [(0, pack_header(version, allocated_size, 1)), (DATA_OFFSET + offset, data),
              (DATA_OFFSET + allocated_size, lease_record)]
    writes: list[tuple[int, bytes]] = []
    for position, piece in pieces:
        if writes and writes[-1][0] + len(writes[-1][1]) == position:
            writes[-1] = (writes[-1][0], writes[-1][1] + piece)
        elif piece:
            writes.append((position, piece))
    return writes


class ImmutableContainer:
    """One immutable share container over a :class:`RandomAccessFile`.

    Open an existing one with :meth:`open`, make a new one with :meth:`create`.
    """

    def __init__(self, file: RandomAccessFile, version: int, num_leases: int,
                 data_length: int, region: int | None = None) -> None:
        """:param data_length: the share data's length (reads stop there).
        :param region: the bytes between the header and the leases, when more than
            ``data_length`` (records a change left there as it was interrupted)."""
        self._file = file
        self._version = version
        self._num_leases = num_leases
        self._data_length = data_length
        self._region = data_length if region is None else region

    @classmethod
    def open(cls, file: RandomAccessFile) -> "ImmutableContainer":
        """Read the header of an existing container.

        :raises CorruptContainer: if the file is too short for its header and leases.
        :raises UnknownContainer: if the version is not 1 or 2.
        """
        header = parse_header(file.read_at(0, HEADER_SIZE))
        region = file.size() - HEADER_SIZE - IMMUTABLE_LEASE_SIZE * header.num_leases
        if region < 0:
            raise CorruptContainer(
                f"immutable container claims {header.num_leases} leases, more than fit")
        # The leases are the last records of the file, and the share data is what comes
        # before them (Tahoe's rule: the header's length field is not trusted), except
        # that a lease change interrupted half way leaves whole records between the
        # allocated size the header keeps and the leases: those are never share data.
        data_length = region
        extra = region - header.data_length_field
        if 0 < extra and extra % IMMUTABLE_LEASE_SIZE == 0 \
                and header.data_length_field < DATA_LENGTH_FIELD_MAX:
            data_length = header.data_length_field
        return cls(file, header.version, header.num_leases, data_length, region)

    @classmethod
    def create(cls, file: RandomAccessFile, allocated_size: int, first_lease: Lease,
               version: int = CURRENT_VERSION) -> "ImmutableContainer":
        """Write a new container of its final size into an empty file.

        The share data region is left as a hole (it reads as zeros); the first
        lease goes right after it. ``first_lease`` must already be in the
        stored form for ``version`` (see :func:`leases.new_lease`).

        :raises ValueError: for a negative size or an unknown version.
        """
        if version not in VERSIONS:
            raise ValueError(f"immutable container version {version} is not 1 or 2")
        for offset, piece in new_container_writes(allocated_size, pack_immutable_lease(first_lease),
                                                  0, b"", version):
            file.write_at(offset, piece)
        return cls(file, version, 1, allocated_size)

    @property
    def version(self) -> int:
        """1 (cleartext lease secrets) or 2 (BLAKE2b-hashed)."""
        return self._version

    @property
    def hashed(self) -> bool:
        """Whether lease secrets are stored hashed (version 2)."""
        return self._version == 2

    @property
    def data_length(self) -> int:
        """Bytes of share data (the ``allocated_size`` it was created with)."""
        return self._data_length

    @property
    def num_leases(self) -> int:
        """Number of lease records."""
        return self._num_leases

    @property
    def _lease_offset(self) -> int:
        return DATA_OFFSET + self._region

    def read_share_data(self, offset: int, length: int) -> bytes:
        """Share-data bytes ``[offset, offset+length)``, cut short at the end of the data.

        Never reads into the lease area; a read starting at or past the end
        gives ``b""``. ``offset`` and ``length`` must not be negative.
        """
        length = max(0, min(length, self._data_length - offset))
        if length == 0:
            return b""
        return self._file.read_at(DATA_OFFSET + offset, length)

    def write_share_data(self, offset: int, data: bytes | memoryview) -> None:
        """Write share data at ``offset`` (not negative).

        :raises DataTooLargeError: ``(data length, offset, len(data))`` if the
            write would reach past the share data; nothing is written then.
        """
        if offset + len(data) > self._data_length:
            raise DataTooLargeError(self._data_length, offset, len(data))
        self._file.write_at(DATA_OFFSET + offset, data)

    def leases(self) -> list[Lease]:
        """Every lease record, in file order."""
        block = self._file.read_at(self._lease_offset, IMMUTABLE_LEASE_SIZE * self._num_leases)
        return [parse_immutable_lease(block[i:i + IMMUTABLE_LEASE_SIZE])
                for i in range(0, len(block), IMMUTABLE_LEASE_SIZE)]

    def lease_expirations(self) -> tuple[int, ...]:
        """Every lease's expiration time, in file order (no lease objects made)."""
        block = self._file.read_at(self._lease_offset, IMMUTABLE_LEASE_SIZE * self._num_leases)
        return tuple(fields[3] for fields in IMMUTABLE_LEASE.iter_unpack(block))

    def find_lease(self, renew_secret: bytes) -> int | None:
        """Index of the first lease whose renew secret matches, or ``None``."""
        return find_lease(self.leases(), renew_secret, self.hashed)

    def lease_space_needed(self, renew_secret: bytes) -> int:
        """Bytes a lease operation with this renew secret would add: 0 or 72."""
        return 0 if self.find_lease(renew_secret) is not None else IMMUTABLE_LEASE_SIZE

    def set_lease(self, index: int, lease: Lease) -> None:
        """Overwrite lease record ``index`` (0-based, below :attr:`num_leases`)."""
        if not 0 <= index < self._num_leases:
            raise IndexError(f"no lease {index}")
        self._file.write_at(self._lease_offset + index * IMMUTABLE_LEASE_SIZE,
                            pack_immutable_lease(lease))

    def append_lease(self, lease: Lease) -> None:
        """Append a lease record after the last one and count it.

        Crash-safe, as :meth:`remove_leases`: appending the record and then counting it
        (Tahoe's order) leaves a window in which the count says the old number of leases
        while the file ends with the new record, so the first lease reads as share data
        and is lost. So the new record is appended followed by a copy of the old ones
        (the last records are still exactly the old leases), then counted (the last
        records are the new lease and the old ones), and the file is cut after the new
        record, which leaves Tahoe's layout: the old records, then the new one. A write
        the disk cuts short (a full disk) is undone.
        """
        start = self._lease_offset
        old = self._file.read_at(start, IMMUTABLE_LEASE_SIZE * self._num_leases)
        record = pack_immutable_lease(lease)
        self._append(record + old)
        self._num_leases += 1
        self._file.write_at(_COUNT_OFFSET, _COUNT.pack(self._num_leases))
        self._file.truncate(start + len(old) + len(record))

    def _append(self, records: bytes) -> None:
        """Write ``records`` at the end of the file, or, if that fails, leave it as it was."""
        end = self._file.size()
        try:
            self._file.write_at(end, records)
        except BaseException:
            self._file.truncate(end)
            raise

    def add_or_renew_lease(self, owner_num: int, renew_secret: bytes, cancel_secret: bytes,
                           expiration: int, available_space: int | None) -> None:
        """Renew the first lease matching ``renew_secret``, or append a new one (§5.4).

        Renewal only ever extends the expiration; owner number and cancel
        field stay as they were.

        :param available_space: bytes available for a new record, or ``None``
            for no limit.
        :raises NoSpace: if a record must be appended and fewer than 72 bytes
            are available; nothing is changed then.
        """
        leases = self.leases()
        index = find_lease(leases, renew_secret, self.hashed)
        if index is not None:
            renewed = leases[index].renewed(expiration)
            if renewed is not leases[index]:
                self.set_lease(index, renewed)
            return
        if available_space is not None and available_space < IMMUTABLE_LEASE_SIZE:
            raise NoSpace(f"need {IMMUTABLE_LEASE_SIZE} bytes for a new lease")
        self.append_lease(new_lease(owner_num, renew_secret, cancel_secret, expiration,
                                    self.hashed))

    def remove_lease(self, index: int) -> None:
        """Remove lease record ``index``: the others move up and the file shrinks."""
        self.remove_leases([index])

    def remove_leases(self, indexes: "list[int] | tuple[int, ...]") -> None:
        """Remove the lease records at ``indexes``: the others move up, in their order, and
        the file shrinks.

        Crash-safe: a process that dies between any two of its writes leaves every
        remaining lease readable where the lease count and the file size say the leases
        are, and nothing but lease records there. (Writing the records, then the count,
        then cutting the file, as Tahoe does, leaves a window in which the count already
        says fewer leases but the file still holds them all: the last records are read,
        which may be the removed ones, and a live lease is lost.) So the remaining
        records are first appended after the old ones, then counted (they are now the
        last records, the old ones reading as a tail of share data, never as leases),
        then written at their final place, and the file is cut there last.
        """
        leases = self.leases()
        gone = set(indexes)
        if not gone <= set(range(len(leases))):
            raise IndexError(f"no lease {sorted(gone - set(range(len(leases))))[0]}")
        remaining = b"".join(pack_immutable_lease(lease) for i, lease in enumerate(leases)
                             if i not in gone)
        start = self._lease_offset
        self._append(remaining)
        count = len(remaining) // IMMUTABLE_LEASE_SIZE
        self._file.write_at(_COUNT_OFFSET, _COUNT.pack(count))
        self._file.write_at(start, remaining)
        self._file.truncate(start + len(remaining))
        self._num_leases = count

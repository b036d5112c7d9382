"""The mutable share container: magic, write enabler, four lease slots, data, extra leases.

Follows ``storage-protocol.md`` §4.5, §2.7 and §5.4 (see
``docs/formats/storage-containers.md``)::

    0    32   magic (v2 written here; v1 read: cleartext lease secrets)
    32   20   write-enabler nodeid: the server that created the share
    52   32   write enabler (cleartext, compared in constant time)
    84   8    >Q data length
    92   8    >Q extra-lease offset X (= 468 + container data size)
    100  368  four 92-byte lease slots
    468       share data
    X    4    >L number of extra leases, then the 92-byte extra records

The container never shrinks: a write ending past X moves the extra-lease
block to ``468 + end`` and zeroes the old copy; ``new_length`` truncation only
lowers the data length.
"""
from __future__ import annotations

import hmac
import struct

from ..util import base32
from ..util.hashutil import tagged_hash
from .errors import (BadWriteEnablerError, CorruptContainer, DataTooLargeError, NoSpace,
                     UnknownContainer)
from .leases import (EMPTY_MUTABLE_SLOT, MUTABLE_LEASE, MUTABLE_LEASE_SIZE, NODEID_SIZE,
                     SECRET_SIZE, Lease, find_lease, new_lease, pack_mutable_lease,
                     parse_mutable_lease)
from .randomaccess import RandomAccessFile, write_zeros

MAGIC_V1 = b"Tahoe mutable container v1\n" + bytes.fromhex("750944038e")
_MAGIC_V2_TEXT = b"Tahoe mutable container v2\n"
MAGIC_V2 = _MAGIC_V2_TEXT + tagged_hash(b"allmydata_mutable_container_header", _MAGIC_V2_TEXT)[:5]
MAGICS = {MAGIC_V1: 1, MAGIC_V2: 2}
MAGIC_SIZE = 32

HEADER = struct.Struct(">32s20s32sQQ")
HEADER_SIZE = HEADER.size  # 100
_DATA_LENGTH_OFFSET = 84
_EXTRA_OFFSET_OFFSET = 92
_QWORD = struct.Struct(">Q")
_COUNT = struct.Struct(">L")
NUM_SLOTS = 4
DATA_OFFSET = HEADER_SIZE + NUM_SLOTS * MUTABLE_LEASE_SIZE  # 468
FRESH_SIZE = DATA_OFFSET + _COUNT.size  # 472
#: Largest container data size (``maximum-mutable-share-size``).
MAX_SIZE = 69_105 * 1000 ** 4


def version_of_magic(magic: bytes) -> int | None:
    """1 or 2 for a mutable container magic, ``None`` for anything else."""
    return MAGICS.get(bytes(magic[:MAGIC_SIZE]))


class MutableContainer:
    """One mutable share container over a :class:`RandomAccessFile`.

    Open an existing one with :meth:`open`, make a new one with :meth:`create`.
    Lease indexes 0-3 are the header slots, 4 and up the extra leases.
    """

    def __init__(self, file: RandomAccessFile, version: int, nodeid: bytes,
                 write_enabler: bytes, data_length: int, extra_lease_offset: int,
                 num_extra_leases: int) -> None:
        self._file = file
        self._version = version
        self._nodeid = nodeid
        self._write_enabler = write_enabler
        self._data_length = data_length
        self._extra_offset = extra_lease_offset
        self._num_extra = num_extra_leases

    @classmethod
    def open(cls, file: RandomAccessFile) -> "MutableContainer":
        """Read the header of an existing container.

        :raises UnknownContainer: if the magic is not a mutable container's.
        :raises CorruptContainer: if the offsets disagree with the file size.
        """
        header = file.read_at(0, HEADER_SIZE)
        if len(header) < HEADER_SIZE:
            raise CorruptContainer("mutable container is shorter than its header")
        magic, nodeid, write_enabler, data_length, extra_offset = HEADER.unpack(header)
        version = version_of_magic(magic)
        if version is None:
            raise UnknownContainer("not a mutable container magic")
        size = file.size()
        if extra_offset < DATA_OFFSET + data_length or extra_offset + _COUNT.size > size:
            raise CorruptContainer("mutable container's extra-lease offset is inconsistent")
        (count,) = _COUNT.unpack(file.read_at(extra_offset, _COUNT.size))
        if extra_offset + _COUNT.size + count * MUTABLE_LEASE_SIZE > size:
            raise CorruptContainer(f"mutable container claims {count} extra leases, more than fit")
        return cls(file, version, nodeid, write_enabler, data_length, extra_offset, count)

    @classmethod
    def create(cls, file: RandomAccessFile, nodeid: bytes, write_enabler: bytes,
               version: int = 2) -> "MutableContainer":
        """Write a fresh 472-byte container (no data, empty slots) into an empty file.

        :raises ValueError: if ``nodeid`` is not 20 bytes, ``write_enabler`` not
            32, or the version not 1 or 2.
        """
        if len(nodeid) != NODEID_SIZE or len(write_enabler) != SECRET_SIZE:
            raise ValueError("nodeid must be 20 bytes and write_enabler 32")
        magic = {1: MAGIC_V1, 2: MAGIC_V2}.get(version)
        if magic is None:
            raise ValueError(f"mutable container version {version} is not 1 or 2")
        file.write_at(0, HEADER.pack(magic, nodeid, write_enabler, 0, DATA_OFFSET)
                      + pack_mutable_lease(EMPTY_MUTABLE_SLOT) * NUM_SLOTS + _COUNT.pack(0))
        return cls(file, version, nodeid, write_enabler, 0, DATA_OFFSET, 0)

    @property
    def version(self) -> int:
        """1 (cleartext lease secrets) or 2 (BLAKE2b-hashed)."""
        return self._version

    @property
    def hashed(self) -> bool:
        """Whether lease secrets are stored hashed (version 2)."""
        return self._version == 2

    @property
    def write_enabler_nodeid(self) -> bytes:
        """The 20-byte node id of the server that created the share."""
        return self._nodeid

    @property
    def write_enabler(self) -> bytes:
        """The stored write enabler."""
        return self._write_enabler

    @property
    def data_length(self) -> int:
        """Bytes of logical share data."""
        return self._data_length

    @property
    def extra_lease_offset(self) -> int:
        """File offset of the extra-lease count (468 + container data size)."""
        return self._extra_offset

    def check_write_enabler(self, write_enabler: bytes) -> None:
        """Compare a presented write enabler with the stored one, in constant time.

        :raises BadWriteEnablerError: naming the stored nodeid, on mismatch.
        """
        if not hmac.compare_digest(self._write_enabler, write_enabler):
            raise BadWriteEnablerError(base32.b2a(self._nodeid))

    # share data

    def read_share_data(self, offset: int, length: int) -> bytes:
        """Data bytes ``[offset, offset+length)``, cut short at the data length."""
        length = max(0, min(length, self._data_length - offset))
        if length == 0:
            return b""
        return self._file.read_at(DATA_OFFSET + offset, length)

    def write_share_data(self, offset: int, data: bytes | memoryview) -> None:
        """Write data at ``offset``, growing the container and zero-filling any gap.

        :raises DataTooLargeError: if the write would end past :data:`MAX_SIZE`;
            nothing is written then.
        """
        end = offset + len(data)
        if end > MAX_SIZE:
            raise DataTooLargeError(MAX_SIZE, offset, len(data))
        if end > self._data_length:
            old_size = self._file.size()
            if DATA_OFFSET + end > self._extra_offset:
                self._move_extra_leases(DATA_OFFSET + end)
            if offset > self._data_length:
                # Bytes past the old end of file are a hole and read as zeros already.
                gap_start = DATA_OFFSET + self._data_length
                gap_end = min(DATA_OFFSET + offset, old_size)
                if gap_end > gap_start:
                    write_zeros(self._file, gap_start, gap_end - gap_start)
            self._data_length = end
            self._file.write_at(_DATA_LENGTH_OFFSET, _QWORD.pack(end))
        if data:
            self._file.write_at(DATA_OFFSET + offset, data)

    def truncate_data(self, new_length: int) -> None:
        """Lower the data length to ``new_length``; a larger value is ignored."""
        if new_length < self._data_length:
            self._data_length = new_length
            self._file.write_at(_DATA_LENGTH_OFFSET, _QWORD.pack(new_length))

    def _move_extra_leases(self, new_offset: int) -> None:
        """Move the extra-lease block to ``new_offset`` (past its old place), Tahoe's layout
        the end of it, and crash-safe: whenever the process may die, the header's offset
        points at a whole copy of the block. (Zeroing the old copy first, as Tahoe does,
        loses the extra leases to a crash before the offset is written.) A copy is never
        written over the one the header points at: when the new place overlaps the old
        one, the block goes first to a place past both, then to the new place, and the
        file is cut after it."""
        old_offset = self._extra_offset
        block_size = _COUNT.size + self._num_extra * MUTABLE_LEASE_SIZE
        block = self._file.read_at(old_offset, block_size)
        if self._num_extra and new_offset < old_offset + block_size:
            far = new_offset + block_size
            self._file.write_at(far, block)
            self._set_extra_offset(far)
            self._file.write_at(new_offset, block)
            self._set_extra_offset(new_offset)
            self._file.truncate(new_offset + block_size)
        else:
            self._file.write_at(new_offset, block)
            self._set_extra_offset(new_offset)
        # the old copy, where the new one is not, reads as zeros (it is share data now)
        stale_end = min(old_offset + block_size, new_offset)
        if stale_end > old_offset:
            write_zeros(self._file, old_offset, stale_end - old_offset)

    def _set_extra_offset(self, offset: int) -> None:
        self._extra_offset = offset
        self._file.write_at(_EXTRA_OFFSET_OFFSET, _QWORD.pack(offset))

    # leases

    def _lease_position(self, index: int) -> int:
        if index < NUM_SLOTS:
            return HEADER_SIZE + index * MUTABLE_LEASE_SIZE
        return self._extra_offset + _COUNT.size + (index - NUM_SLOTS) * MUTABLE_LEASE_SIZE

    @property
    def num_records(self) -> int:
        """Number of lease records, empty slots included (4 + extra leases)."""
        return NUM_SLOTS + self._num_extra

    def lease_records(self) -> list[Lease]:
        """Every record, empty slots (owner number 0) included, in index order."""
        slots = self._file.read_at(HEADER_SIZE, NUM_SLOTS * MUTABLE_LEASE_SIZE)
        extra = self._file.read_at(self._lease_position(NUM_SLOTS),
                                   self._num_extra * MUTABLE_LEASE_SIZE)
        block = slots + extra
        return [parse_mutable_lease(block[i:i + MUTABLE_LEASE_SIZE])
                for i in range(0, len(block), MUTABLE_LEASE_SIZE)]

    def lease_expirations(self) -> tuple[int, ...]:
        """The expiration time of every lease in use, in index order (no lease objects)."""
        slots = self._file.read_at(HEADER_SIZE, NUM_SLOTS * MUTABLE_LEASE_SIZE)
        extra = self._file.read_at(self._lease_position(NUM_SLOTS),
                                   self._num_extra * MUTABLE_LEASE_SIZE)
        return tuple(expiration for owner, expiration, *_ in
                     MUTABLE_LEASE.iter_unpack(slots + extra) if owner != 0)

    def leases(self) -> list[Lease]:
        """The leases in use (empty slots left out)."""
        return [lease for lease in self.lease_records() if not lease.is_empty_slot]

    def find_lease(self, renew_secret: bytes) -> int | None:
        """Index of the first lease in use whose renew secret matches, or ``None``."""
        return find_lease(self.lease_records(), renew_secret, self.hashed, skip_empty_slots=True)

    def lease_space_needed(self, renew_secret: bytes) -> int:
        """Bytes a lease operation would add: 92 only if no lease matches and no slot is free."""
        records = self.lease_records()
        if find_lease(records, renew_secret, self.hashed, skip_empty_slots=True) is not None:
            return 0
        if any(lease.is_empty_slot for lease in records):
            return 0
        return MUTABLE_LEASE_SIZE

    def set_lease(self, index: int, lease: Lease) -> None:
        """Overwrite record ``index`` (below :attr:`num_records`)."""
        if not 0 <= index < self.num_records:
            raise IndexError(f"no lease record {index}")
        self._file.write_at(self._lease_position(index), pack_mutable_lease(lease))

    def add_lease(self, lease: Lease, available_space: int | None) -> int:
        """Put a lease in the first empty slot (header, then extra), else append one.

        :param available_space: bytes available for an appended record, or
            ``None`` for no limit.
        :returns: the index the lease went to.
        :raises NoSpace: if a record must be appended and fewer than 92 bytes
            are available; nothing is changed then.
        """
        for index, record in enumerate(self.lease_records()):
            if record.is_empty_slot:
                self.set_lease(index, lease)
                return index
        if available_space is not None and available_space < MUTABLE_LEASE_SIZE:
            raise NoSpace(f"need {MUTABLE_LEASE_SIZE} bytes for a new lease")
        index = self.num_records
        self._file.write_at(self._lease_position(index), pack_mutable_lease(lease))
        self._num_extra += 1
        self._file.write_at(self._extra_offset, _COUNT.pack(self._num_extra))
        return index

    def add_or_renew_lease(self, owner_num: int, renew_secret: bytes, cancel_secret: bytes,
                           expiration: int, nodeid: bytes, available_space: int | None) -> None:
        """Renew the first lease matching ``renew_secret``, or add a new one (§5.4).

        Renewal only ever extends the expiration. A new lease records ``nodeid``
        (this server's) and the secrets in this container's stored form.

        :raises NoSpace: see :meth:`add_lease`.
        """
        records = self.lease_records()
        index = find_lease(records, renew_secret, self.hashed, skip_empty_slots=True)
        if index is not None:
            renewed = records[index].renewed(expiration)
            if renewed is not records[index]:
                self.set_lease(index, renewed)
            return
        self.add_lease(new_lease(owner_num, renew_secret, cancel_secret, expiration,
                                 self.hashed, nodeid), available_space)

    def remove_lease(self, index: int) -> None:
        """Empty record ``index`` by zeroing it; the file is not compacted (§5.5)."""
        self.set_lease(index, EMPTY_MUTABLE_SLOT)

    def remove_leases(self, indexes: "list[int] | tuple[int, ...]") -> None:
        """Empty the records at ``indexes``, one write each (a crash between two leaves
        the others as they were)."""
        for index in indexes:
            self.remove_lease(index)

    # test and read vectors

    def read_vector(self, readv: "list[tuple[int, int]] | tuple[tuple[int, int], ...]") -> list[bytes]:
        """One :meth:`read_share_data` result per ``(offset, length)`` pair."""
        return [self.read_share_data(offset, length) for offset, length in readv]

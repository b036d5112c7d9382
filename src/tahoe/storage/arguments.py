"""Checking the arguments of the storage interface and parsing its vectors into values.

Follows ``storage-protocol.md`` §2.1, §2.3 and §2.6-§2.7. Foolscap's schema
checks already catch most of this on the wire; the server checks again so
that nothing malformed reaches the disk, whatever transport delivered it.
Every check raises a :class:`~tahoe.storage.errors.BadRequest` subclass.
"""
from __future__ import annotations

from typing import Callable, Mapping

from attrs import frozen

from .errors import (BadAllocatedSize, BadOffset, BadSecret, BadShareNumber, BadShareType,
                     BadStorageIndex, MalformedVector, UnknownTestOperator)

STORAGE_INDEX_SIZE = 16
SECRET_SIZE = 32
MAX_SHARES = 256
#: Offsets are Foolscap ``Offset`` values: below 2**64.
OFFSET_LIMIT = 2 ** 64
TEST_OPERATORS = (b"eq",)
SHARE_TYPES = (b"immutable", b"mutable")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_storage_index(storage_index: object, for_write: bool) -> bool:
    """Check a storage index; tell whether it can name any share.

    :param for_write: writes need exactly 16 bytes; reads accept up to 16
        (a shorter one, as Tahoe allows, simply finds nothing).
    :returns: True if it is 16 bytes long.
    :raises BadStorageIndex: if it is not bytes, longer than 16 bytes, or
        shorter than 16 for a write.
    """
    if not isinstance(storage_index, bytes) or len(storage_index) > STORAGE_INDEX_SIZE:
        raise BadStorageIndex("a storage index is at most 16 bytes")
    if for_write and len(storage_index) != STORAGE_INDEX_SIZE:
        raise BadStorageIndex(f"a storage index to write must be 16 bytes, not {len(storage_index)}")
    return len(storage_index) == STORAGE_INDEX_SIZE


def check_secret(secret: object, name: str) -> bytes:
    """Check that a lease secret or write enabler is 32 bytes.

    :raises BadSecret: otherwise.
    """
    if not isinstance(secret, bytes) or len(secret) != SECRET_SIZE:
        raise BadSecret(f"{name} must be {SECRET_SIZE} bytes")
    return secret


def check_share_number(shnum: object) -> int:
    """Check a share number: an int in 0..255.

    :raises BadShareNumber: otherwise.
    """
    if not _is_int(shnum) or not 0 <= shnum < MAX_SHARES:  # type: ignore[operator]
        raise BadShareNumber(f"share number must be an int in 0..255, not {shnum!r}")
    return shnum  # type: ignore[return-value]


def check_share_numbers(shnums: object, container: tuple[type, ...]) -> frozenset[int]:
    """Check a collection of share numbers, of one of the ``container`` types.

    (A set of valid share numbers cannot hold more than 256 of them.)

    :raises BadShareNumber: for a wrong collection type or a bad number.
    """
    if not isinstance(shnums, container):
        raise BadShareNumber(f"share numbers must be a {' or '.join(c.__name__ for c in container)}")
    return frozenset(check_share_number(n) for n in shnums)  # type: ignore[attr-defined]


def check_offset(value: object, name: str = "offset") -> int:
    """Check an offset or length: an int in 0..2**64-1.

    :raises BadOffset: otherwise.
    """
    if not _is_int(value) or not 0 <= value < OFFSET_LIMIT:  # type: ignore[operator]
        raise BadOffset(f"{name} must be an int in 0..2**64-1, not {value!r}")
    return value  # type: ignore[return-value]


def check_allocated_size(value: object) -> int:
    """Check an ``allocated_size``: an int in 0..2**64-1.

    :raises BadAllocatedSize: otherwise.
    """
    if not _is_int(value) or not 0 <= value < OFFSET_LIMIT:  # type: ignore[operator]
        raise BadAllocatedSize(f"allocated_size must be an int in 0..2**64-1, not {value!r}")
    return value  # type: ignore[return-value]


def check_share_type(share_type: object) -> str:
    """Check a corruption advisory's share type; return it as text.

    :raises BadShareType: unless it is ``b"immutable"`` or ``b"mutable"``.
    """
    if share_type not in SHARE_TYPES:
        raise BadShareType(f"share type must be b'immutable' or b'mutable', not {share_type!r}")
    return share_type.decode("ascii")  # type: ignore[union-attr]


@frozen
class ReadVector:
    """Read ``length`` bytes at ``offset`` of a share's data."""

    offset: int
    length: int


@frozen
class TestVector:
    """Pass when the data read at ``offset`` for ``length`` bytes equals ``specimen``."""

    __test__ = False  # not a pytest test class

    offset: int
    length: int
    operator: bytes
    specimen: bytes

    def passes(self, read: Callable[[int, int], bytes]) -> bool:
        """Evaluate against a share read with ``read(offset, length)``."""
        return read(self.offset, self.length) == self.specimen


@frozen
class WriteVector:
    """Write ``data`` at ``offset`` of a share's data."""

    offset: int
    data: bytes


@frozen
class ShareWrite:
    """What ``slot_testv_and_readv_and_writev`` asks of one share."""

    tests: tuple[TestVector, ...]
    writes: tuple[WriteVector, ...]
    new_length: int | None

    def passes(self, read: Callable[[int, int], bytes]) -> bool:
        """Whether every test passes against a share read with ``read``."""
        return all(test.passes(read) for test in self.tests)


def _sequence(value: object, what: str) -> list | tuple:  # type: ignore[type-arg]
    if not isinstance(value, (list, tuple)):
        raise MalformedVector(f"{what} must be a list or tuple")
    return value


def _entry(value: object, size: int, what: str) -> list | tuple:  # type: ignore[type-arg]
    if not isinstance(value, (list, tuple)) or len(value) != size:
        raise MalformedVector(f"each {what} entry must be a tuple of {size}")
    return value


def _field(value: object, what: str) -> int:
    if not _is_int(value) or not 0 <= value < OFFSET_LIMIT:  # type: ignore[operator]
        raise MalformedVector(f"{what} must be an int in 0..2**64-1, not {value!r}")
    return value  # type: ignore[return-value]


def _bytes(value: object, what: str) -> bytes:
    if not isinstance(value, bytes):
        raise MalformedVector(f"{what} must be bytes")
    return value


def parse_read_vector(readv: object) -> tuple[ReadVector, ...]:
    """Parse a list of ``(offset, length)`` pairs.

    :raises MalformedVector: for a wrong shape or type, or a negative field.
    """
    return tuple(ReadVector(_field(o, "read offset"), _field(n, "read length"))
                 for o, n in (_entry(e, 2, "read vector")
                              for e in _sequence(readv, "read vector")))


def parse_test_vector(testv: object) -> tuple[TestVector, ...]:
    """Parse a list of ``(offset, length, operator, specimen)`` tuples.

    :raises UnknownTestOperator: for an operator other than ``b"eq"``.
    :raises MalformedVector: for a wrong shape or type, or a negative field.
    """
    parsed = []
    for entry in _sequence(testv, "test vector"):
        offset, length, operator, specimen = _entry(entry, 4, "test vector")
        test = TestVector(_field(offset, "test offset"), _field(length, "test length"),
                          _bytes(operator, "test operator"), _bytes(specimen, "test specimen"))
        if test.operator not in TEST_OPERATORS:
            raise UnknownTestOperator(f"unknown test operator {test.operator!r}; only b'eq'")
        parsed.append(test)
    return tuple(parsed)


def parse_write_vector(datav: object) -> tuple[WriteVector, ...]:
    """Parse a list of ``(offset, data)`` pairs.

    :raises MalformedVector: for a wrong shape or type, or a negative offset.
    """
    return tuple(WriteVector(_field(o, "write offset"), _bytes(d, "write data"))
                 for o, d in (_entry(e, 2, "write vector")
                              for e in _sequence(datav, "write vector")))


def parse_tw_vectors(tw_vectors: object) -> dict[int, ShareWrite]:
    """Parse ``{shnum: (testv, datav, new_length)}``.

    :raises BadShareNumber: for a key that is not a share number.
    :raises MalformedVector: for anything else malformed.
    """
    if not isinstance(tw_vectors, Mapping):
        raise MalformedVector("test-and-write vectors must be a dict")
    parsed = {}
    for shnum, value in tw_vectors.items():
        testv, datav, new_length = _entry(value, 3, "test-and-write vector")
        if new_length is not None:
            new_length = _field(new_length, "new_length")
        parsed[check_share_number(shnum)] = ShareWrite(
            parse_test_vector(testv), parse_write_vector(datav), new_length)
    return parsed


def parse_secrets(secrets: object) -> tuple[bytes, bytes, bytes]:
    """Parse ``(write_enabler, renew_secret, cancel_secret)``.

    :raises BadSecret: for a wrong shape or a secret that is not 32 bytes.
    """
    if not isinstance(secrets, (tuple, list)) or len(secrets) != 3:
        raise BadSecret("secrets must be a tuple (write_enabler, renew_secret, cancel_secret)")
    write_enabler, renew, cancel = secrets
    return (check_secret(write_enabler, "write enabler"), check_secret(renew, "renew secret"),
            check_secret(cancel, "cancel secret"))

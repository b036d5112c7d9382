"""Telling immutable and mutable share files apart by their first 32 bytes.

Follows ``storage-protocol.md`` §4.1, §4.4 and §4.5: a mutable container
starts with one of two 32-byte magics; an immutable one with a 4-byte
version of 1 or 2. A mutable magic's first four bytes (``Taho``) are not a
valid immutable version, so the two never collide.
"""
from __future__ import annotations

import enum
import struct

from .errors import UnknownContainer
from .immutable_container import VERSIONS, ImmutableContainer
from .mutable_container import MAGIC_SIZE, MutableContainer, version_of_magic
from .randomaccess import RandomAccessFile

#: How many leading bytes :func:`identify` needs.
IDENTIFY_SIZE = MAGIC_SIZE


class ShareKind(enum.Enum):
    """The two kinds of share container; the value is the advisory ``share_type`` text."""

    IMMUTABLE = "immutable"
    MUTABLE = "mutable"


def identify(first_bytes: bytes) -> ShareKind:
    """The kind of container whose file starts with ``first_bytes`` (up to 32 bytes).

    :raises UnknownContainer: if it is neither.
    """
    if version_of_magic(first_bytes) is not None:
        return ShareKind.MUTABLE
    if len(first_bytes) >= 4 and struct.unpack_from(">L", first_bytes)[0] in VERSIONS:
        return ShareKind.IMMUTABLE
    raise UnknownContainer("neither an immutable nor a mutable share container")


def open_container(file: RandomAccessFile) -> ImmutableContainer | MutableContainer:
    """Open a share file of either kind.

    :raises UnknownContainer: if it is neither kind.
    :raises CorruptContainer: if its header disagrees with its size.
    """
    if identify(file.read_at(0, IDENTIFY_SIZE)) is ShareKind.MUTABLE:
        return MutableContainer.open(file)
    return ImmutableContainer.open(file)

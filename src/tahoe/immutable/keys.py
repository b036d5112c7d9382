"""Convergent encryption key and storage index of a CHK file (``reference/immutable.md`` §3.2-3.3)."""
from __future__ import annotations

from attrs import frozen

from ..util.hashutil import (CONVERGENT_KEY_TAG, KEY_SIZE, TaggedHasher,
                             storage_index_from_key)
from ..util.netstring import netstring
from .params import SegmentGeometry

__all__ = ["convergence_tag", "ConvergentKeyHasher", "KnownKey", "convergent_key",
           "storage_index_from_key"]


def convergence_tag(convergence_secret: bytes, needed: int, total: int, segment_size: int) -> bytes:
    """The extended tag that is hashed (netstring-wrapped) before the plaintext.

    ``segment_size`` is the *actual* segment size, not the maximum.
    """
    params = b"%d,%d,%d" % (needed, total, segment_size)
    return CONVERGENT_KEY_TAG + netstring(convergence_secret) + netstring(params)


@frozen
class KnownKey:
    """A convergent key hashed before its upload (while the plaintext arrived), with the
    parameters it was hashed for: it is the file's key only for a geometry of the same
    k, N and actual segment size (:meth:`fits`)."""

    needed: int
    total: int
    segment_size: int
    key: bytes

    def fits(self, geometry: SegmentGeometry) -> bool:
        """Whether this is the key of a file of ``geometry`` (the same plaintext)."""
        return (self.needed, self.total, self.segment_size) == (
            geometry.needed, geometry.total, geometry.segment_size)


class ConvergentKeyHasher:
    """Hash a plaintext in pieces to get its 16-byte convergent AES key.

    :param geometry: the file's segment geometry; its k, N and actual
        segment size enter the key (happy does not).
    """

    def __init__(self, convergence_secret: bytes, geometry: SegmentGeometry) -> None:
        self._params = (geometry.needed, geometry.total, geometry.segment_size)
        tag = convergence_tag(convergence_secret, *self._params)
        self._hasher = TaggedHasher(tag, KEY_SIZE)

    def update(self, data: bytes | memoryview) -> None:
        """Feed the next piece of plaintext."""
        self._hasher.update(data)

    def key(self) -> bytes:
        """The key for the plaintext fed so far."""
        return self._hasher.digest()

    def known(self) -> KnownKey:
        """The key for the plaintext fed so far, with the parameters it holds for."""
        return KnownKey(*self._params, self.key())


def convergent_key(convergence_secret: bytes, geometry: SegmentGeometry, plaintext: bytes) -> bytes:
    """The convergent key of a whole plaintext held in memory."""
    hasher = ConvergentKeyHasher(convergence_secret, geometry)
    hasher.update(plaintext)
    return hasher.key()

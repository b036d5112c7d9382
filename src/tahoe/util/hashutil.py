"""SHA-256d and Tahoe's tagged hashes, with every immutable-file tag.

Follows ``reference/immutable.md`` §2 (see ``docs/formats/encodings.md``).
"""
from __future__ import annotations

import functools
import hashlib

from .netstring import netstring

HASH_SIZE = 32
KEY_SIZE = 16

# Tags of the immutable-file format (reference/immutable.md §2.3).
CONVERGENT_KEY_TAG = b"allmydata_immutable_content_to_key_with_added_secret_v1+"
STORAGE_INDEX_TAG = b"allmydata_immutable_key_to_storage_index_v1"
BLOCK_TAG = b"allmydata_encoded_subshare_v1"
CRYPTTEXT_SEGMENT_TAG = b"allmydata_crypttext_segment_v1"
CRYPTTEXT_TAG = b"allmydata_crypttext_v1"
UEB_TAG = b"allmydata_uri_extension_v1"
MERKLE_EMPTY_LEAF_TAG = b"Merkle tree empty leaf"
MERKLE_INTERNAL_NODE_TAG = b"Merkle tree internal node"
CLIENT_RENEWAL_TAG = b"allmydata_client_renewal_secret_v1"
CLIENT_CANCEL_TAG = b"allmydata_client_cancel_secret_v1"
FILE_RENEWAL_TAG = b"allmydata_file_renewal_secret_v1"
FILE_CANCEL_TAG = b"allmydata_file_cancel_secret_v1"
BUCKET_RENEWAL_TAG = b"allmydata_bucket_renewal_secret_v1"
BUCKET_CANCEL_TAG = b"allmydata_bucket_cancel_secret_v1"
PLAINTEXT_TAG = b"allmydata_plaintext_v1"
PLAINTEXT_SEGMENT_TAG = b"allmydata_plaintext_segment_v1"
BACKUPDB_DIRHASH_TAG = b"allmydata_backupdb_dirhash_v1"

IMMUTABLE_TAGS = {
    "CONVERGENT_KEY_TAG": CONVERGENT_KEY_TAG,
    "STORAGE_INDEX_TAG": STORAGE_INDEX_TAG,
    "BLOCK_TAG": BLOCK_TAG,
    "CRYPTTEXT_SEGMENT_TAG": CRYPTTEXT_SEGMENT_TAG,
    "CRYPTTEXT_TAG": CRYPTTEXT_TAG,
    "UEB_TAG": UEB_TAG,
    "MERKLE_EMPTY_LEAF_TAG": MERKLE_EMPTY_LEAF_TAG,
    "MERKLE_INTERNAL_NODE_TAG": MERKLE_INTERNAL_NODE_TAG,
    "CLIENT_RENEWAL_TAG": CLIENT_RENEWAL_TAG,
    "CLIENT_CANCEL_TAG": CLIENT_CANCEL_TAG,
    "FILE_RENEWAL_TAG": FILE_RENEWAL_TAG,
    "FILE_CANCEL_TAG": FILE_CANCEL_TAG,
    "BUCKET_RENEWAL_TAG": BUCKET_RENEWAL_TAG,
    "BUCKET_CANCEL_TAG": BUCKET_CANCEL_TAG,
    "PLAINTEXT_TAG": PLAINTEXT_TAG,
    "PLAINTEXT_SEGMENT_TAG": PLAINTEXT_SEGMENT_TAG,
}


@functools.lru_cache(maxsize=64)
def _tag_state(tag: bytes) -> "hashlib._Hash":
    """A SHA-256 that has hashed ``netstring(tag)``: callers hash on from a copy of it
    (one small upload hashes a tag some sixty times)."""
    return hashlib.sha256(netstring(tag))


def sha256d(data: bytes) -> bytes:
    """Return SHA256(SHA256(data)), 32 bytes."""
    return hashlib.sha256(hashlib.sha256(data).digest()).digest()


class TaggedHasher:
    """Incremental ``tagged_hash``: feed the value in pieces, then :meth:`digest`."""

    __slots__ = ("_inner", "_truncate")

    def __init__(self, tag: bytes, truncate_to: int = HASH_SIZE) -> None:
        self._inner = _tag_state(tag).copy()
        self._truncate = truncate_to

    def update(self, data: bytes | memoryview) -> None:
        """Hash more of the value."""
        self._inner.update(data)

    def digest(self) -> bytes:
        """Return the (possibly truncated) SHA-256d of tag and value so far."""
        return hashlib.sha256(self._inner.digest()).digest()[: self._truncate]


def tagged_hash(tag: bytes, value: bytes | memoryview, truncate_to: int = HASH_SIZE) -> bytes:
    """Return ``SHA256d(netstring(tag) || value)``, cut to ``truncate_to`` bytes."""
    inner = _tag_state(tag).copy()
    inner.update(value)
    return hashlib.sha256(inner.digest()).digest()[:truncate_to]


def tagged_pair_hash(tag: bytes, first: bytes, second: bytes,
                     truncate_to: int = HASH_SIZE) -> bytes:
    """Return ``SHA256d(netstring(tag) || netstring(first) || netstring(second))``."""
    inner = _tag_state(tag).copy()
    inner.update(b"%d:%s,%d:%s," % (len(first), first, len(second), second))
    return hashlib.sha256(inner.digest()).digest()[:truncate_to]


def block_hash(block: bytes | memoryview) -> bytes:
    """Hash one erasure-coded block (a leaf of a block hash tree)."""
    return tagged_hash(BLOCK_TAG, block)


def crypttext_segment_hash(segment: bytes | memoryview) -> bytes:
    """Hash one unpadded ciphertext segment (a leaf of the crypttext hash tree)."""
    return tagged_hash(CRYPTTEXT_SEGMENT_TAG, segment)


def crypttext_hasher() -> TaggedHasher:
    """Start the flat hash of a whole ciphertext."""
    return TaggedHasher(CRYPTTEXT_TAG)


def uri_extension_hash(ueb: bytes) -> bytes:
    """Hash a serialized URI extension block; the result goes in the cap."""
    return tagged_hash(UEB_TAG, ueb)


def backupdb_dirhash(contents: bytes) -> bytes:
    """The hash ``tahoe backup`` files a directory's packed contents under (backupdb)."""
    return tagged_hash(BACKUPDB_DIRHASH_TAG, contents)


def storage_index_from_key(key: bytes) -> bytes:
    """Derive the 16-byte storage index from a 16-byte AES key."""
    return tagged_hash(STORAGE_INDEX_TAG, key, KEY_SIZE)


@functools.lru_cache(maxsize=256)
def merkle_empty_leaf_hash(leaf_position: int) -> bytes:
    """Hash of the padding leaf at ``leaf_position`` in a Merkle tree's leaf row."""
    return tagged_hash(MERKLE_EMPTY_LEAF_TAG, b"%d" % leaf_position)


def merkle_internal_hash(left: bytes, right: bytes) -> bytes:
    """Hash two child nodes into their parent."""
    return tagged_pair_hash(MERKLE_INTERNAL_NODE_TAG, left, right)

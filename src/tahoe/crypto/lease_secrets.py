"""Lease renewal and cancel secrets, per client, file and server.

Follows ``reference/immutable.md`` §9 and ``storage-protocol.md`` §5.3.
"""
from __future__ import annotations

import functools

from attrs import frozen

from ..util import hashutil
from ..util.hashutil import tagged_hash, tagged_pair_hash

LEASE_SEED_SIZE = 20


@frozen
class LeaseSecrets:
    """The renew and cancel secrets sent with one allocation or lease operation."""

    renew: bytes
    cancel: bytes


def client_renewal_secret(lease_secret: bytes) -> bytes:
    """The client-wide renewal secret (the node secret acts as the tag)."""
    return tagged_hash(lease_secret, hashutil.CLIENT_RENEWAL_TAG)


def client_cancel_secret(lease_secret: bytes) -> bytes:
    """The client-wide cancel secret (the node secret acts as the tag)."""
    return tagged_hash(lease_secret, hashutil.CLIENT_CANCEL_TAG)


def file_renewal_secret(client_renewal: bytes, storage_index: bytes) -> bytes:
    """The renewal secret for one file (storage index)."""
    return tagged_pair_hash(hashutil.FILE_RENEWAL_TAG, client_renewal, storage_index)


def file_cancel_secret(client_cancel: bytes, storage_index: bytes) -> bytes:
    """The cancel secret for one file (storage index)."""
    return tagged_pair_hash(hashutil.FILE_CANCEL_TAG, client_cancel, storage_index)


def bucket_renewal_secret(file_renewal: bytes, lease_seed: bytes) -> bytes:
    """The renewal secret sent to the server whose lease seed (tub id) is given."""
    return tagged_pair_hash(hashutil.BUCKET_RENEWAL_TAG, file_renewal, lease_seed)


def bucket_cancel_secret(file_cancel: bytes, lease_seed: bytes) -> bytes:
    """The cancel secret sent to the server whose lease seed (tub id) is given."""
    return tagged_pair_hash(hashutil.BUCKET_CANCEL_TAG, file_cancel, lease_seed)


@frozen
class ClientLeaseSecrets:
    """The two client-wide secrets derived once from ``private/secret``."""

    renewal: bytes
    cancel: bytes

    @classmethod
    def from_lease_secret(cls, lease_secret: bytes) -> "ClientLeaseSecrets":
        """Derive both client secrets from the node's lease secret."""
        return cls(client_renewal_secret(lease_secret), client_cancel_secret(lease_secret))

    def for_server(self, storage_index: bytes, lease_seed: bytes) -> LeaseSecrets:
        """The secrets to send to one server for one storage index.

        :param lease_seed: the server's 20-byte binary Foolscap tub id.
        :raises ValueError: if the lease seed is not 20 bytes.
        """
        if len(lease_seed) != LEASE_SEED_SIZE:
            raise ValueError(f"lease seed must be {LEASE_SEED_SIZE} bytes, not {len(lease_seed)}")
        file_renewal, file_cancel = self._for_file(storage_index)
        return LeaseSecrets(renew=bucket_renewal_secret(file_renewal, lease_seed),
                            cancel=bucket_cancel_secret(file_cancel, lease_seed))

    @functools.lru_cache(maxsize=64)  # noqa: B019 (a node keeps its secrets for good)
    def _for_file(self, storage_index: bytes) -> tuple[bytes, bytes]:
        """The file's two secrets: asked for once per server of an upload."""
        return (file_renewal_secret(self.renewal, storage_index),
                file_cancel_secret(self.cancel, storage_index))

"""Lease records, secret hashing, renewal rules and expiry predicates.

Follows ``storage-protocol.md`` §4.4 and §4.5 (record layouts) and §5
(duration, matching, renewal, garbage collection); see
``docs/formats/storage-containers.md``.

A :class:`Lease` holds the *stored* form of the secrets: BLAKE2b-256 digests
in version-2 containers, the secrets themselves in version-1 containers.
"""
from __future__ import annotations

import hashlib
import hmac
import struct
from typing import Literal, Sequence

from attrs import field, frozen

from .errors import CorruptContainer

#: Every grant or renewal lasts 31 days, in seconds.
LEASE_DURATION = 31 * 24 * 60 * 60
SECRET_SIZE = 32
NODEID_SIZE = 20
#: Owner number of leases made by ``allocate_buckets``.
OWNER_ALLOCATE = 0
#: Owner number of leases made by ``add_lease`` and mutable writes.
OWNER_ADD_LEASE = 1

IMMUTABLE_LEASE = struct.Struct(">L32s32sL")
MUTABLE_LEASE = struct.Struct(">LL32s32s20s")
IMMUTABLE_LEASE_SIZE = IMMUTABLE_LEASE.size  # 72
MUTABLE_LEASE_SIZE = MUTABLE_LEASE.size  # 92
_EMPTY_NODEID = bytes(NODEID_SIZE)


def _bytes_of(length: int):  # type: ignore[no-untyped-def]
    def check(instance: object, attribute: object, value: object) -> None:
        if not isinstance(value, bytes) or len(value) != length:
            raise ValueError(f"{getattr(attribute, 'name', '?')} must be {length} bytes")
    return check


def _uint32(instance: object, attribute: object, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2 ** 32:
        raise ValueError(f"{getattr(attribute, 'name', '?')} must be an int in 0..2**32-1")


@frozen
class Lease:
    """One lease record as stored in a container.

    :ivar owner_num: 0 for ``allocate_buckets``, 1 for ``add_lease`` and mutable
        writes; in a mutable container 0 marks an empty slot.
    :ivar renew_field: the stored renew secret (hashed or cleartext), 32 bytes.
    :ivar cancel_field: the stored cancel secret (hashed or cleartext), 32 bytes.
    :ivar expiration: seconds since the epoch, an int below 2**32.
    :ivar nodeid: the 20-byte node id of the accepting server (mutable records
        only; zeros in immutable ones, which do not store it).
    """

    owner_num: int = field(validator=_uint32)
    renew_field: bytes = field(validator=_bytes_of(SECRET_SIZE))
    cancel_field: bytes = field(validator=_bytes_of(SECRET_SIZE))
    expiration: int = field(validator=_uint32)
    nodeid: bytes = field(default=_EMPTY_NODEID, validator=_bytes_of(NODEID_SIZE))

    @property
    def is_empty_slot(self) -> bool:
        """True for an unused mutable lease slot (owner number 0)."""
        return self.owner_num == 0

    def renewed(self, expiration: int) -> "Lease":
        """This lease with ``expiration``, unless that would shorten it (§5.4)."""
        if expiration > self.expiration:
            return Lease(self.owner_num, self.renew_field, self.cancel_field, expiration,
                         self.nodeid)
        return self


def pack_immutable_lease(lease: Lease) -> bytes:
    """The 72-byte immutable record ``>L32s32sL`` (owner, renew, cancel, expiration)."""
    return IMMUTABLE_LEASE.pack(lease.owner_num, lease.renew_field, lease.cancel_field,
                                lease.expiration)


def parse_immutable_lease(record: bytes) -> Lease:
    """Parse a 72-byte immutable lease record.

    :raises CorruptContainer: if ``record`` is not 72 bytes.
    """
    if len(record) != IMMUTABLE_LEASE_SIZE:
        raise CorruptContainer(f"immutable lease record is {len(record)} bytes, not 72")
    owner, renew, cancel, expiration = IMMUTABLE_LEASE.unpack(record)
    return Lease(owner, renew, cancel, expiration)


def pack_mutable_lease(lease: Lease) -> bytes:
    """The 92-byte mutable record ``>LL32s32s20s`` (owner, expiration, renew, cancel, nodeid)."""
    return MUTABLE_LEASE.pack(lease.owner_num, lease.expiration, lease.renew_field,
                              lease.cancel_field, lease.nodeid)


def parse_mutable_lease(record: bytes) -> Lease:
    """Parse a 92-byte mutable lease record.

    :raises CorruptContainer: if ``record`` is not 92 bytes.
    """
    if len(record) != MUTABLE_LEASE_SIZE:
        raise CorruptContainer(f"mutable lease record is {len(record)} bytes, not 92")
    owner, expiration, renew, cancel, nodeid = MUTABLE_LEASE.unpack(record)
    return Lease(owner, renew, cancel, expiration, nodeid)


EMPTY_MUTABLE_SLOT = Lease(0, bytes(SECRET_SIZE), bytes(SECRET_SIZE), 0)


def stored_secret(secret: bytes, hashed: bool) -> bytes:
    """The form in which a container keeps a secret.

    :param hashed: True for version-2 containers: unkeyed BLAKE2b with a
        32-byte digest; False for version 1: the secret itself.
    """
    if hashed:
        return hashlib.blake2b(secret, digest_size=SECRET_SIZE).digest()
    return secret


#: The latest expiration a lease record can hold (a 4-byte field: early 2106).
MAX_EXPIRATION = 2 ** 32 - 1


def expiration_for(now: float) -> int:
    """The expiration of a lease granted or renewed at ``now`` (seconds): 31 days later,
    within what the 4-byte field holds (a clock set past 2106, or before 1970, must not
    make every allocation fail)."""
    return min(max(int(now) + LEASE_DURATION, 0), MAX_EXPIRATION)


def new_lease(owner_num: int, renew_secret: bytes, cancel_secret: bytes, expiration: int,
              hashed: bool, nodeid: bytes = _EMPTY_NODEID) -> Lease:
    """A lease record for secrets as presented by a client.

    :param hashed: whether the container stores hashed secrets (version 2).
    """
    return Lease(owner_num, stored_secret(renew_secret, hashed),
                 stored_secret(cancel_secret, hashed), expiration, nodeid)


def immutable_lease_record(owner_num: int, renew_secret: bytes, cancel_secret: bytes,
                           expiration: int) -> bytes:
    """The stored (hashed, version 2) immutable record of a new lease, packed at once from
    secrets and an expiration already checked (no :class:`Lease` value is made)."""
    return IMMUTABLE_LEASE.pack(owner_num, stored_secret(renew_secret, True),
                                stored_secret(cancel_secret, True), expiration)


def renew_secret_matches(lease: Lease, renew_secret: bytes, hashed: bool) -> bool:
    """Whether a presented renew secret matches a stored lease, compared in constant time."""
    return hmac.compare_digest(lease.renew_field, stored_secret(renew_secret, hashed))


def find_lease(leases: Sequence[Lease], renew_secret: bytes, hashed: bool,
               skip_empty_slots: bool = False) -> int | None:
    """The index of the first lease whose renew secret matches, or ``None`` (§5.4).

    :param skip_empty_slots: ignore records with owner number 0 (mutable containers).
    """
    wanted = stored_secret(renew_secret, hashed)
    for index, lease in enumerate(leases):
        if skip_empty_slots and lease.is_empty_slot:
            continue
        if hmac.compare_digest(lease.renew_field, wanted):
            return index
    return None


def expired_by_cutoff(expiration: int, cutoff: int) -> bool:
    """Cutoff-date mode: expired when the lease was granted before ``cutoff`` (§5.5).

    The grant time is taken to be ``expiration - 31 days``.
    """
    return expiration - LEASE_DURATION < cutoff


def expired_by_age(expiration: int, now: float, override_duration: int | None = None) -> bool:
    """Age mode: whether a lease has expired at ``now`` (§5.5).

    With ``override_duration`` (seconds), the lease is expired when its age,
    ``now - (expiration - 31 days)``, exceeds the override. Without it, we apply
    the *intended* rule, "expired when ``now > expiration``". Tahoe 1.20 compares
    the age with the absolute expiration timestamp instead, so its age mode
    without override never expires anything; we deliberately do not copy that.
    """
    if override_duration is not None:
        return now - (expiration - LEASE_DURATION) > override_duration
    return now > expiration


ExpiryMode = Literal["age", "cutoff-date"]


@frozen
class ExpiryPolicy:
    """The ``[storage]expire.*`` settings that decide which leases garbage collection removes.

    :ivar mode: ``"age"`` or ``"cutoff-date"``.
    :ivar override_lease_duration: age mode only, seconds, or ``None``.
    :ivar cutoff_date: cutoff-date mode only (required there), seconds since the epoch.
    :ivar immutable: whether immutable shares may expire.
    :ivar mutable: whether mutable shares may expire.
    :raises ValueError: for an unknown mode or a cutoff-date mode without a date.
    """

    mode: ExpiryMode
    override_lease_duration: int | None = None
    cutoff_date: int | None = None
    immutable: bool = True
    mutable: bool = True

    def __attrs_post_init__(self) -> None:
        if self.mode not in ("age", "cutoff-date"):
            raise ValueError(f"unknown expire.mode {self.mode!r}")
        if self.mode == "cutoff-date" and self.cutoff_date is None:
            raise ValueError("expire.mode = cutoff-date needs expire.cutoff_date")

    def lease_expired(self, lease: Lease, now: float) -> bool:
        """Whether ``lease`` counts as expired at ``now`` under this policy."""
        return self.expired(lease.expiration, now)

    def expired(self, expiration: int, now: float) -> bool:
        """Whether a lease with this expiration time counts as expired at ``now``."""
        if self.mode == "cutoff-date":
            assert self.cutoff_date is not None
            return expired_by_cutoff(expiration, self.cutoff_date)
        return expired_by_age(expiration, now, self.override_lease_duration)

    def applies_to(self, kind: str) -> bool:
        """Whether shares of ``kind`` (``"immutable"`` or ``"mutable"``) may expire at all."""
        return self.immutable if kind == "immutable" else self.mutable

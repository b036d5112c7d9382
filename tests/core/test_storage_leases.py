"""Lease records, hashed secrets, renewal and expiry rules."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.crypto.lease_secrets import ClientLeaseSecrets
from tahoe.storage import leases
from tahoe.storage.errors import CorruptContainer
from tahoe.storage.leases import ExpiryPolicy, Lease
from tahoe.util import base32
from tahoe.util.hashutil import tagged_hash, tagged_pair_hash
from tahoe.util.netstring import netstring
from tests.vectors import load

SECRETS = load("storage-lease-secrets.json")
IMMUTABLE = load("storage-immutable-container.json")
DAY = 86400


def lease_values() -> st.SearchStrategy[Lease]:
    """Arbitrary lease records (mutable ones carry a node id)."""
    u32 = st.integers(0, 2 ** 32 - 1)
    b32 = st.binary(min_size=32, max_size=32)
    return st.builds(Lease, u32, b32, b32, u32, st.binary(min_size=20, max_size=20))


def test_hash_primitives() -> None:
    """The netstring and tagged-hash primitives behind the secrets equal the vectors."""
    primitives = SECRETS["primitives"]
    assert netstring(b"abc").decode() == primitives["netstring(b'abc')"]
    assert tagged_hash(b"tag", b"value").hex() == primitives["tagged_hash(b'tag', b'value')_hex"]
    assert (tagged_pair_hash(b"tag", b"v1", b"v2").hex()
            == primitives["tagged_pair_hash(b'tag', b'v1', b'v2')_hex"])


@pytest.mark.parametrize("row", SECRETS["rows"], ids=lambda r: r["renew_secret_sent_on_wire_base32"][:8])
def test_lease_secrets_and_stored_forms(row: dict) -> None:
    """The client's secrets and their on-disk BLAKE2b-256 forms equal the vectors."""
    client = ClientLeaseSecrets.from_lease_secret(
        base32.a2b(row["lease_secret_base32 (private/secret)"]))
    sent = client.for_server(base32.a2b(row["storage_index_base32"]),
                             base32.a2b(row["server_tubid_base32"]))
    assert client.renewal.hex() == row["client_renewal_secret_hex"]
    assert client.cancel.hex() == row["client_cancel_secret_hex"]
    assert sent.renew.hex() == row["renew_secret_sent_on_wire_hex"]
    assert base32.b2a(sent.renew) == row["renew_secret_sent_on_wire_base32"]
    assert sent.cancel.hex() == row["cancel_secret_sent_on_wire_hex"]
    assert leases.stored_secret(sent.renew, hashed=True).hex() == row["renew_field_stored_on_disk_v2_hex"]
    assert leases.stored_secret(sent.cancel, hashed=True).hex() == row["cancel_field_stored_on_disk_v2_hex"]
    assert leases.stored_secret(sent.renew, hashed=False) == sent.renew


def test_container_vector_secret_chain() -> None:
    """The immutable-container vector's secrets come from the same chain and hash as stored."""
    inputs = IMMUTABLE["inputs"]
    chain = inputs["lease_secret_chain"]
    client = ClientLeaseSecrets.from_lease_secret(bytes.fromhex(inputs["client_lease_secret_hex"]))
    sent = client.for_server(bytes.fromhex(inputs["storage_index_hex"]),
                             bytes.fromhex(inputs["server_nodeid_hex"]))
    assert sent.renew.hex() == chain["bucket_renewal"]
    assert sent.cancel.hex() == chain["bucket_cancel"]
    step = IMMUTABLE["steps"][1]
    assert (leases.stored_secret(sent.renew, True).hex()
            == step["expected_lease0_renew_field_is_blake2b_256_of_bucket_renewal_secret"])
    assert (leases.stored_secret(sent.cancel, True).hex()
            == step["expected_lease0_cancel_field_is_blake2b_256_of_bucket_cancel_secret"])


def test_record_sizes() -> None:
    """Immutable records are 72 bytes and mutable ones 92."""
    assert leases.IMMUTABLE_LEASE_SIZE == 72
    assert leases.MUTABLE_LEASE_SIZE == 92
    assert leases.LEASE_DURATION == 2_678_400


def test_immutable_record_layout() -> None:
    """An immutable record is owner, renew, cancel, expiration (node id not stored)."""
    lease = Lease(1, b"R" * 32, b"C" * 32, 0x01020304, b"N" * 20)
    packed = leases.pack_immutable_lease(lease)
    assert packed == b"\x00\x00\x00\x01" + b"R" * 32 + b"C" * 32 + b"\x01\x02\x03\x04"
    assert leases.parse_immutable_lease(packed) == Lease(1, b"R" * 32, b"C" * 32, 0x01020304)


def test_mutable_record_layout() -> None:
    """A mutable record is owner, expiration, renew, cancel, node id."""
    lease = Lease(1, b"R" * 32, b"C" * 32, 0x01020304, b"N" * 20)
    packed = leases.pack_mutable_lease(lease)
    assert packed == b"\x00\x00\x00\x01\x01\x02\x03\x04" + b"R" * 32 + b"C" * 32 + b"N" * 20
    assert leases.parse_mutable_lease(packed) == lease


@given(lease_values())
@settings(deadline=None)
def test_records_round_trip(lease: Lease) -> None:
    """Packing then parsing a record gives back the lease."""
    assert leases.parse_mutable_lease(leases.pack_mutable_lease(lease)) == lease
    immutable = leases.parse_immutable_lease(leases.pack_immutable_lease(lease))
    assert immutable == Lease(lease.owner_num, lease.renew_field, lease.cancel_field,
                              lease.expiration)


@pytest.mark.parametrize("size", [0, 71, 73, 91])
def test_short_records_are_refused(size: int) -> None:
    """A record of the wrong size is a corrupt container, not a crash."""
    with pytest.raises(CorruptContainer):
        leases.parse_immutable_lease(bytes(size))
    with pytest.raises(CorruptContainer):
        leases.parse_mutable_lease(bytes(size))


@pytest.mark.parametrize("kwargs", [dict(owner_num=-1), dict(owner_num=2 ** 32),
                                    dict(expiration=2 ** 32), dict(renew_field=b"x" * 31),
                                    dict(cancel_field="x" * 32), dict(nodeid=b"n" * 19),
                                    dict(expiration=True)])
def test_lease_fields_are_validated(kwargs: dict) -> None:
    """A lease value refuses fields that do not fit its record."""
    fields = dict(owner_num=0, renew_field=bytes(32), cancel_field=bytes(32), expiration=0)
    fields.update(kwargs)
    with pytest.raises(ValueError):
        Lease(**fields)


def test_expiration_is_31_days_truncated() -> None:
    """A grant at a fractional time expires 31 days after its integer part."""
    assert leases.expiration_for(1700000000.9) == 1702678400


def test_renewal_never_shortens() -> None:
    """Renewing to an earlier time keeps the lease as it was; a later time replaces only the expiration."""
    lease = Lease(0, b"r" * 32, b"c" * 32, 1000)
    assert lease.renewed(999) is lease
    assert lease.renewed(1000) is lease
    assert lease.renewed(1001) == Lease(0, b"r" * 32, b"c" * 32, 1001)


def test_find_lease_takes_the_first_match() -> None:
    """The first lease whose renew secret matches is chosen; cancel fields are ignored."""
    renew = b"s" * 32
    stored = leases.stored_secret(renew, True)
    records = [Lease(1, bytes(32), bytes(32), 5), Lease(1, stored, b"a" * 32, 6),
               Lease(1, stored, b"b" * 32, 7)]
    assert leases.find_lease(records, renew, hashed=True) == 1
    assert leases.find_lease(records, renew, hashed=False) is None
    assert leases.find_lease(records, b"t" * 32, hashed=True) is None
    assert leases.renew_secret_matches(records[1], renew, hashed=True)


def test_find_lease_can_skip_empty_slots() -> None:
    """Empty mutable slots (owner 0) never match when asked to skip them."""
    zero = bytes(32)
    records = [Lease(0, zero, zero, 0), Lease(1, zero, zero, 9)]
    assert leases.find_lease(records, zero, hashed=False) == 0
    assert leases.find_lease(records, zero, hashed=False, skip_empty_slots=True) == 1


def test_new_lease_stores_hashed_or_cleartext() -> None:
    """A new lease keeps BLAKE2b digests for v2 containers and the secrets for v1."""
    hashed = leases.new_lease(1, b"r" * 32, b"c" * 32, 77, hashed=True, nodeid=b"n" * 20)
    assert hashed.renew_field == leases.stored_secret(b"r" * 32, True) != b"r" * 32
    assert hashed.nodeid == b"n" * 20
    clear = leases.new_lease(0, b"r" * 32, b"c" * 32, 77, hashed=False)
    assert (clear.renew_field, clear.cancel_field) == (b"r" * 32, b"c" * 32)


def test_cutoff_mode() -> None:
    """Cutoff-date mode expires leases granted before the cutoff."""
    granted = 1_700_000_000
    expiration = granted + leases.LEASE_DURATION
    assert leases.expired_by_cutoff(expiration, granted + 1)
    assert not leases.expired_by_cutoff(expiration, granted)
    policy = ExpiryPolicy("cutoff-date", cutoff_date=granted + 1)
    assert policy.lease_expired(Lease(1, bytes(32), bytes(32), expiration), now=0)


def test_age_mode_with_override() -> None:
    """With an override, a lease expires once its age exceeds the override."""
    granted = 1_700_000_000
    expiration = granted + leases.LEASE_DURATION
    assert not leases.expired_by_age(expiration, granted + 7 * DAY, override_duration=7 * DAY)
    assert leases.expired_by_age(expiration, granted + 7 * DAY + 1, override_duration=7 * DAY)


def test_age_mode_without_override_uses_the_intended_rule() -> None:
    """Without an override a lease expires when now passes its expiration (not Tahoe 1.20's never)."""
    expiration = 1_702_678_400
    assert not leases.expired_by_age(expiration, expiration)
    assert leases.expired_by_age(expiration, expiration + 1)
    policy = ExpiryPolicy("age")
    lease = Lease(1, bytes(32), bytes(32), expiration)
    assert policy.lease_expired(lease, expiration + 25 * 365 * DAY)
    assert not policy.lease_expired(lease, expiration - 1)


def test_policy_validation_and_kinds() -> None:
    """A policy needs a known mode, a cutoff date in cutoff mode, and can spare a share kind."""
    with pytest.raises(ValueError):
        ExpiryPolicy("sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ExpiryPolicy("cutoff-date")
    policy = ExpiryPolicy("age", immutable=False)
    assert not policy.applies_to("immutable")
    assert policy.applies_to("mutable")


def test_expiration_stays_within_its_four_bytes() -> None:
    """A clock past early 2106 (or before 1970) still gives a lease a storable expiration."""
    from tahoe.storage.leases import MAX_EXPIRATION, expiration_for
    assert expiration_for(2 ** 32 + 5) == MAX_EXPIRATION == 2 ** 32 - 1
    assert expiration_for(-10 ** 9) == 0
    assert expiration_for(1_700_000_000) == 1_700_000_000 + 31 * 86400


def test_a_new_immutable_lease_record_packed_at_once() -> None:
    """``immutable_lease_record`` packs the stored (hashed) record ``new_lease`` would give."""
    from tahoe.storage.leases import (OWNER_ALLOCATE, immutable_lease_record, new_lease,
                                      pack_immutable_lease)
    renew, cancel = b"r" * 32, b"c" * 32
    assert immutable_lease_record(OWNER_ALLOCATE, renew, cancel, 1234) == pack_immutable_lease(
        new_lease(OWNER_ALLOCATE, renew, cancel, 1234, hashed=True))

"""The mutable share container, byte for byte against Tahoe 1.20's."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.storage import mutable_container as mc
from tahoe.storage.arguments import TestVector
from tahoe.storage.errors import (BadWriteEnablerError, CorruptContainer, DataTooLargeError,
                                  NoSpace, UnknownContainer)
from tahoe.storage.leases import OWNER_ADD_LEASE, Lease, expiration_for, stored_secret
from tahoe.storage.mutable_container import MutableContainer
from tahoe.storage.randomaccess import MemoryFile
from tahoe.util.hashutil import tagged_hash
from tests.vectors import load

VECTOR = load("storage-mutable-container.json")
INPUTS = VECTOR["inputs"]
NODEID = bytes.fromhex(INPUTS["server_nodeid_hex"])
WE = bytes.fromhex(INPUTS["write_enabler_hex"])
RENEW = bytes.fromhex(INPUTS["bucket_renewal_secret_hex"])
CANCEL = bytes.fromhex(INPUTS["bucket_cancel_secret_hex"])
T = INPUTS["time_of_first_write"]
HOUR = 3600


def slot_leases(parsed: dict) -> list[Lease]:
    """Every record (slots, then extras) of a parsed vector container."""
    return [Lease(p["owner_num"], bytes.fromhex(p["renew_secret_field_hex"]),
                  bytes.fromhex(p["cancel_secret_field_hex"]), p["expiration_time"],
                  bytes.fromhex(p["nodeid_hex"]))
            for p in parsed["lease_slots"] + parsed["extra_leases"]]


def renew(container: MutableContainer, secret: bytes, cancel: bytes, now: float) -> None:
    """Add or renew a lease as a slot write does."""
    container.add_or_renew_lease(OWNER_ADD_LEASE, secret, cancel, expiration_for(now), NODEID, None)


def test_magics() -> None:
    """Both magics equal Tahoe's, and v2's tail is the tagged hash of its text."""
    assert mc.MAGIC_V1.hex() == VECTOR["magic_v1_hex"]
    assert mc.MAGIC_V2.hex() == VECTOR["magic_v2_hex"]
    text = b"Tahoe mutable container v2\n"
    assert mc.MAGIC_V2 == text + tagged_hash(b"allmydata_mutable_container_header", text)[:5]
    assert (mc.DATA_OFFSET, mc.FRESH_SIZE, mc.MAX_SIZE) == (468, 472, 69105000000000000)


def test_fresh_container() -> None:
    """A new container is Tahoe's 472 bytes."""
    file = MemoryFile()
    MutableContainer.create(file, NODEID, WE)
    assert file.getvalue().hex() == VECTOR["fresh_container"]["file_hex"]


def test_container_steps_match_tahoe() -> None:
    """Create, extend with zero-fill, a failed test, a second lease, truncation and extra leases give Tahoe's bytes."""
    steps = VECTOR["steps"]
    file = MemoryFile()
    container = MutableContainer.create(file, NODEID, WE)
    container.write_share_data(0, b"mutable share data v1")
    renew(container, RENEW, CANCEL, T)
    assert file.getvalue().hex() == steps[0]["file_hex"]

    assert TestVector(0, 7, b"eq", b"mutable").passes(container.read_share_data)
    assert container.read_vector([(0, 7), (28, 10)]) == [b"mutable", b""]
    container.write_share_data(30, b"XYZ")
    renew(container, RENEW, CANCEL, T + HOUR)
    assert file.getvalue().hex() == steps[1]["file_hex"]

    assert not TestVector(0, 1, b"eq", b"").passes(container.read_share_data)
    assert file.getvalue().hex() == steps[2]["file_hex"]

    renew2 = bytes.fromhex(steps[3]["second_client_bucket_renewal_hex"])
    cancel2 = bytes.fromhex(steps[3]["second_client_bucket_cancel_hex"])
    assert stored_secret(renew2, True).hex() == steps[3]["expected_renew_field"]
    renew(container, renew2, cancel2, T + 2 * HOUR)
    assert file.getvalue().hex() == steps[3]["file_hex"]

    container.truncate_data(10)
    renew(container, RENEW, CANCEL, T + 3 * HOUR)
    assert file.getvalue().hex() == steps[4]["file_hex"]

    for lease in slot_leases(steps[5]["parsed"])[2:]:
        container.add_lease(lease, available_space=92)
    assert file.getvalue().hex() == steps[5]["file_hex"]


@pytest.mark.parametrize("index", range(6))
def test_parse_tahoe_containers(index: int) -> None:
    """Every Tahoe-written step parses to the vector's fields."""
    step = VECTOR["steps"][index]
    parsed = step["parsed"]
    file = MemoryFile(bytes.fromhex(step["file_hex"]))
    container = MutableContainer.open(file)
    assert container.version == 2
    assert container.write_enabler_nodeid.hex() == parsed["write_enabler_nodeid_hex"]
    assert container.write_enabler.hex() == parsed["write_enabler_hex"]
    assert container.data_length == parsed["data_length"]
    assert container.extra_lease_offset == parsed["extra_lease_offset"]
    assert container.read_share_data(0, 10 ** 6).hex() == parsed["share_data_hex"]
    assert container.lease_records() == slot_leases(parsed)
    assert file.size() == parsed["file_length"]


def test_readv_vector() -> None:
    """Reads are cut short at the data length, and start past it give b''."""
    step = VECTOR["steps"][1]
    container = MutableContainer.open(MemoryFile(bytes.fromhex(step["file_hex"])))
    expected = VECTOR["slot_readv_all_shares"]["result"]["0"]
    assert [d.hex() for d in container.read_vector([(0, 100), (31, 2), (200, 5)])] == expected


def test_bad_write_enabler_message() -> None:
    """A wrong write enabler raises with Tahoe's message naming the recording node."""
    container = MutableContainer.open(MemoryFile(bytes.fromhex(VECTOR["steps"][0]["file_hex"])))
    container.check_write_enabler(WE)
    with pytest.raises(BadWriteEnablerError) as info:
        container.check_write_enabler(bytes(32))
    assert str(info.value) == VECTOR["bad_write_enabler"]["raised"]["message"]


def test_renewal_and_slot_reuse() -> None:
    """Renewals never shorten; a zeroed slot is reused before anything is appended."""
    file = MemoryFile()
    container = MutableContainer.create(file, NODEID, WE)
    renew(container, RENEW, CANCEL, T)
    renew(container, RENEW, CANCEL, T - 100)
    assert container.leases()[0].expiration == expiration_for(T)
    for i in range(5):
        renew(container, bytes([i + 1]) * 32, CANCEL, T)
    assert container.num_records == 6 and len(container.leases()) == 6
    container.remove_lease(1)
    assert container.lease_records()[1].is_empty_slot
    assert container.lease_space_needed(b"\x09" * 32) == 0
    assert container.add_lease(Lease(1, b"n" * 32, b"c" * 32, 5, NODEID), 0) == 1
    assert container.lease_space_needed(b"\x09" * 32) == 92
    assert container.lease_space_needed(RENEW) == 0


def test_extra_lease_without_space_raises() -> None:
    """Appending an extra lease with fewer than 92 bytes available raises NoSpace and changes nothing."""
    file = MemoryFile(bytes.fromhex(VECTOR["steps"][5]["file_hex"]))
    container = MutableContainer.open(file)
    before = file.getvalue()
    with pytest.raises(NoSpace):
        container.add_or_renew_lease(1, b"z" * 32, b"c" * 32, 1, NODEID, 91)
    assert file.getvalue() == before


def test_growth_moves_extra_leases_and_zeroes_old_copy() -> None:
    """Growing past the extra-lease block moves it after the new end and zeroes the gap."""
    file = MemoryFile(bytes.fromhex(VECTOR["steps"][5]["file_hex"]))
    container = MutableContainer.open(file)
    records = container.lease_records()
    container.write_share_data(300, b"end")
    assert container.extra_lease_offset == 468 + 303
    assert container.lease_records() == records
    assert container.read_share_data(0, 1000) == b"mutable sh" + bytes(290) + b"end"
    assert MutableContainer.open(file).lease_records() == records


def test_too_large_writes_raise() -> None:
    """A write ending past the maximum container size raises DataTooLargeError and changes nothing."""
    file = MemoryFile()
    container = MutableContainer.create(file, NODEID, WE)
    before = file.getvalue()
    with pytest.raises(DataTooLargeError):
        container.write_share_data(mc.MAX_SIZE, b"x")
    assert file.getvalue() == before


def test_v1_container() -> None:
    """A v1 container keeps lease secrets in cleartext and is read back as v1."""
    file = MemoryFile()
    container = MutableContainer.create(file, NODEID, WE, version=1)
    renew(container, RENEW, CANCEL, T)
    assert file.getvalue()[:32] == mc.MAGIC_V1
    reopened = MutableContainer.open(file)
    assert reopened.version == 1 and not reopened.hashed
    assert reopened.leases()[0].renew_field == RENEW
    assert reopened.find_lease(RENEW) == 0


@pytest.mark.parametrize("mangle,error", [
    (lambda b: b[:50], CorruptContainer),
    (lambda b: b"X" + b[1:], UnknownContainer),
    (lambda b: b[:92] + (10 ** 6).to_bytes(8, "big") + b[100:], CorruptContainer),
    (lambda b: b[:84] + (10 ** 3).to_bytes(8, "big") + b[92:], CorruptContainer),
    (lambda b: b[:468] + b"\x00\x00\x00\x05", CorruptContainer),
])
def test_malformed_containers_are_refused(mangle, error: type) -> None:  # type: ignore[no-untyped-def]
    """Short files, unknown magics and inconsistent offsets or counts are refused."""
    fresh = bytes.fromhex(VECTOR["fresh_container"]["file_hex"])
    with pytest.raises(error):
        MutableContainer.open(MemoryFile(mangle(fresh)))


operations = st.lists(st.one_of(
    st.tuples(st.just("write"), st.integers(0, 700), st.binary(max_size=80)),
    st.tuples(st.just("truncate"), st.integers(0, 800)),
    st.tuples(st.just("lease"), st.integers(0, 12)),
), max_size=25)


@given(operations)
@settings(deadline=None, max_examples=200)
def test_random_operations_match_a_bytearray_model(ops: list) -> None:  # type: ignore[type-arg]
    """Writes, truncations and lease additions keep data equal to a bytearray model and leases intact."""
    file = MemoryFile()
    container = MutableContainer.create(file, NODEID, WE)
    model = bytearray()
    model_leases: dict[bytes, Lease] = {}
    extent = 0
    for op in ops:
        if op[0] == "write":
            _, offset, data = op
            if offset > len(model):
                model.extend(bytes(offset - len(model)))
            model[offset:offset + len(data)] = data
            extent = max(extent, offset + len(data))
            container.write_share_data(offset, data)
        elif op[0] == "truncate":
            del model[op[1]:]
            container.truncate_data(op[1])
        else:
            secret = bytes([op[1]]) * 32
            renew(container, secret, CANCEL, T + op[1])
            model_leases.setdefault(stored_secret(secret, True), Lease(
                1, stored_secret(secret, True), stored_secret(CANCEL, True),
                expiration_for(T + op[1]), NODEID))
    reopened = MutableContainer.open(file)
    assert reopened.read_share_data(0, 10 ** 4) == bytes(model)
    assert reopened.data_length == len(model)
    assert reopened.extra_lease_offset == 468 + extent
    assert sorted(reopened.leases(), key=lambda l: l.renew_field) == sorted(
        model_leases.values(), key=lambda l: l.renew_field)

"""The immutable share container, byte for byte against Tahoe 1.20's."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.storage import immutable_container as ic
from tahoe.storage.containers import ShareKind, identify, open_container
from tahoe.storage.errors import (CorruptContainer, DataTooLargeError, NoSpace,
                                  UnknownContainer)
from tahoe.storage.immutable_container import ImmutableContainer
from tahoe.storage.leases import (OWNER_ADD_LEASE, OWNER_ALLOCATE, Lease, expiration_for,
                                  new_lease)
from tahoe.storage.mutable_container import MAGIC_V1, MAGIC_V2
from tahoe.storage.randomaccess import MemoryFile
from tests.vectors import load

VECTOR = load("storage-immutable-container.json")
INPUTS = VECTOR["inputs"]
T0 = INPUTS["allocate_time"]
DAY = 86400
DATA = bytes.fromhex(INPUTS["share_data_hex"])
RENEW1 = bytes.fromhex(INPUTS["lease_secret_chain"]["bucket_renewal"])
CANCEL1 = bytes.fromhex(INPUTS["lease_secret_chain"]["bucket_cancel"])
RENEW2 = bytes.fromhex(VECTOR["steps"][2]["other_client_chain"]["bucket_renewal"])
CANCEL2 = bytes.fromhex(VECTOR["steps"][2]["other_client_chain"]["bucket_cancel"])


def parsed_leases(parsed: dict) -> list[Lease]:
    """The vector's parsed lease list as lease values."""
    return [Lease(p["owner_num"], bytes.fromhex(p["renew_secret_field_hex"]),
                  bytes.fromhex(p["cancel_secret_field_hex"]), p["expiration_time"])
            for p in parsed["leases"]]


def allocated_container() -> tuple[MemoryFile, ImmutableContainer]:
    """A container as allocate_buckets makes it at T0."""
    file = MemoryFile()
    lease = new_lease(OWNER_ALLOCATE, RENEW1, CANCEL1, expiration_for(T0), hashed=True)
    return file, ImmutableContainer.create(file, INPUTS["allocated_size"], lease)


def test_container_steps_match_tahoe() -> None:
    """Allocate, two writes, a second client's lease, a renewal and a re-allocation give Tahoe's bytes."""
    steps = VECTOR["steps"]
    file, container = allocated_container()
    assert file.getvalue().hex() == steps[0]["incoming_file_hex_right_after_allocate"]
    assert file.size() == steps[0]["incoming_file_length"]

    container.write_share_data(0, DATA[:40])
    container.write_share_data(40, DATA[40:64])
    assert file.getvalue().hex() == steps[1]["final_file_hex"]

    container.add_or_renew_lease(OWNER_ADD_LEASE, RENEW2, CANCEL2, expiration_for(T0 + DAY), 72)
    assert file.getvalue().hex() == steps[2]["final_file_hex"]

    container.add_or_renew_lease(OWNER_ADD_LEASE, RENEW1, CANCEL1,
                                 expiration_for(T0 + 2 * DAY), 0)
    assert file.getvalue().hex() == steps[3]["final_file_hex"]

    container.add_or_renew_lease(OWNER_ALLOCATE, RENEW2, CANCEL2,
                                 expiration_for(T0 + 3 * DAY), 0)
    assert file.getvalue().hex() == steps[4]["final_file_hex_share0"]
    assert container.leases() == parsed_leases(steps[4]["parsed_share0"])


@pytest.mark.parametrize("step,key", [(1, "parsed"), (2, "parsed"), (3, "parsed"),
                                      (4, "parsed_share0")])
def test_parse_tahoe_containers(step: int, key: str) -> None:
    """Tahoe-written containers parse to the vector's fields."""
    hex_key = "final_file_hex_share0" if key == "parsed_share0" else "final_file_hex"
    parsed = VECTOR["steps"][step][key]
    file = MemoryFile(bytes.fromhex(VECTOR["steps"][step][hex_key]))
    container = ImmutableContainer.open(file)
    header = ic.parse_header(file.getvalue())
    assert (header.version, header.data_length_field, header.num_leases) == (
        parsed["version"], parsed["data_length_field"], parsed["num_leases"])
    assert container.data_length == parsed["share_data_length"]
    assert container.read_share_data(0, 10 ** 6).hex() == parsed["share_data_hex"]
    assert container.leases() == parsed_leases(parsed)


@pytest.mark.parametrize("case", VECTOR["reads"], ids=lambda c: f"{c['offset']}+{c['length']}")
def test_reads_are_cut_short(case: dict) -> None:
    """Reads past the end of the share data are cut short, never into the leases."""
    container = ImmutableContainer.open(MemoryFile(bytes.fromhex(VECTOR["steps"][4]["final_file_hex_share0"])))
    assert container.read_share_data(case["offset"], case["length"]).hex() == case["result_hex"]


@pytest.mark.parametrize("name", ["legacy_v1_container", "small_v2_container"])
def test_v1_and_v2_small_containers(name: str) -> None:
    """A legacy v1 container (cleartext secrets) and its v2 twin are read and rebuilt exactly."""
    case = VECTOR[name]
    parsed = case["parsed"]
    container = ImmutableContainer.open(MemoryFile(bytes.fromhex(case["file_hex"])))
    assert container.version == parsed["version"]
    assert container.read_share_data(0, 100).hex() == parsed["share_data_hex"]
    assert container.leases() == parsed_leases(parsed)
    renew, cancel = b"R" * 32, b"C" * 32
    assert container.find_lease(renew) == 0
    rebuilt = MemoryFile()
    lease = new_lease(0, renew, cancel, 1700000000, hashed=parsed["version"] == 2)
    ImmutableContainer.create(rebuilt, 8, lease, version=parsed["version"]).write_share_data(
        0, bytes.fromhex(parsed["share_data_hex"]))
    assert rebuilt.getvalue().hex() == case["file_hex"]


def test_v1_container_gets_cleartext_leases() -> None:
    """A lease added to a v1 container is stored in cleartext, as in that container's other leases."""
    file = MemoryFile(bytes.fromhex(VECTOR["legacy_v1_container"]["file_hex"]))
    container = ImmutableContainer.open(file)
    container.add_or_renew_lease(1, b"S" * 32, b"D" * 32, 1800000000, None)
    assert container.leases()[1] == Lease(1, b"S" * 32, b"D" * 32, 1800000000)
    assert ImmutableContainer.open(file).num_leases == 2


def test_header_saturates() -> None:
    """The data-length field saturates at 2**32-1."""
    case = VECTOR["header_saturation"]
    assert ic.pack_header(2, case["allocated_size"], 0).hex() == case["header_hex"]


def test_data_length_comes_from_the_file_size() -> None:
    """The data length is computed from the file size, not from the header field."""
    file = MemoryFile(bytes.fromhex(VECTOR["steps"][4]["final_file_hex_share0"]))
    file.write_at(4, b"\x00\x00\x00\x05")
    assert ImmutableContainer.open(file).data_length == 64


def test_writes_past_the_data_raise() -> None:
    """A write reaching into the lease area raises DataTooLargeError and changes nothing."""
    file, container = allocated_container()
    before = file.getvalue()
    with pytest.raises(DataTooLargeError) as info:
        container.write_share_data(60, b"12345")
    assert info.value.args == (64, 60, 5)
    assert file.getvalue() == before


def test_new_lease_without_space_raises() -> None:
    """Adding a lease with fewer than 72 bytes available raises NoSpace and changes nothing."""
    file, container = allocated_container()
    before = file.getvalue()
    assert container.lease_space_needed(RENEW2) == 72
    assert container.lease_space_needed(RENEW1) == 0
    with pytest.raises(NoSpace):
        container.add_or_renew_lease(1, RENEW2, CANCEL2, expiration_for(T0), 71)
    assert file.getvalue() == before
    container.add_or_renew_lease(1, RENEW1, CANCEL1, expiration_for(T0 + 1), 0)
    assert container.leases()[0].expiration == expiration_for(T0 + 1)


def test_remove_lease_compacts_and_truncates() -> None:
    """Removing a lease moves the later ones up and shrinks the file."""
    file = MemoryFile(bytes.fromhex(VECTOR["steps"][4]["final_file_hex_share0"]))
    container = ImmutableContainer.open(file)
    second = container.leases()[1]
    container.remove_lease(0)
    assert file.size() == 12 + 64 + 72
    reopened = ImmutableContainer.open(file)
    assert reopened.leases() == [second]
    assert reopened.read_share_data(0, 64) == DATA
    with pytest.raises(IndexError):
        reopened.remove_lease(1)


@pytest.mark.parametrize("content,error", [
    (b"", CorruptContainer), (b"\x00\x00\x00\x02\x00\x00", CorruptContainer),
    (b"\x00\x00\x00\x03" + bytes(8), UnknownContainer),
    (b"\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x02" + bytes(100), CorruptContainer),
])
def test_malformed_containers_are_refused(content: bytes, error: type) -> None:
    """Truncated headers, unknown versions and impossible lease counts are refused."""
    with pytest.raises(error):
        ImmutableContainer.open(MemoryFile(content))


def test_kinds_are_told_apart() -> None:
    """The first bytes tell immutable containers, both mutable magics and garbage apart."""
    immutable = bytes.fromhex(VECTOR["steps"][1]["final_file_hex"])
    assert identify(immutable[:32]) is ShareKind.IMMUTABLE
    assert identify(MAGIC_V1) is ShareKind.MUTABLE
    assert identify(MAGIC_V2) is ShareKind.MUTABLE
    assert isinstance(open_container(MemoryFile(immutable)), ImmutableContainer)
    for garbage in (b"", b"\x00\x00", b"\x00\x00\x00\x00", b"Tahoe mutable container v3\n" + bytes(5)):
        with pytest.raises(UnknownContainer):
            identify(garbage)


@given(st.integers(1, 300), st.lists(st.tuples(st.integers(0, 300), st.binary(max_size=64)),
                                     max_size=20))
@settings(deadline=None)
def test_random_writes_read_back(size: int, writes: list[tuple[int, bytes]]) -> None:
    """Writes inside the allocation read back as a bytearray model; others raise and change nothing."""
    file = MemoryFile()
    container = ImmutableContainer.create(file, size, Lease(0, bytes(32), bytes(32), 0))
    model = bytearray(size)
    for offset, data in writes:
        if offset + len(data) > size:
            before = file.getvalue()
            with pytest.raises(DataTooLargeError):
                container.write_share_data(offset, data)
            assert file.getvalue() == before
        else:
            container.write_share_data(offset, data)
            model[offset:offset + len(data)] = data
    assert container.read_share_data(0, size + 10) == bytes(model)
    assert ImmutableContainer.open(file).leases() == [Lease(0, bytes(32), bytes(32), 0)]


@given(st.integers(0, 300), st.integers(0, 300), st.binary(max_size=300))
@settings(deadline=None)
def test_a_new_container_made_with_its_first_write(size: int, offset: int, data: bytes) -> None:
    """``new_container_writes`` gives the bytes of a created container with that write in,
    touching pieces joined: a write of all the share data is one write of the whole file."""
    lease = Lease(0, bytes(32), b"c" * 32, 7)
    if offset + len(data) > size:
        with pytest.raises(ValueError):
            ic.new_container_writes(size, ic.pack_immutable_lease(lease), offset, data)
        return
    writes = ic.new_container_writes(size, ic.pack_immutable_lease(lease), offset, data)
    made = MemoryFile()
    for position, piece in writes:
        made.write_at(position, piece)
    expected = MemoryFile()
    ImmutableContainer.create(expected, size, lease).write_share_data(offset, data)
    assert made.getvalue() == expected.getvalue()
    assert all(piece for _, piece in writes)
    assert all(a + len(p) < b for (a, p), (b, _) in zip(writes, writes[1:]))
    if offset == 0 and len(data) == size:
        assert writes == [(0, expected.getvalue())]

"""Argument checks, vector parsing, written-range tracking and corruption reports."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.storage import arguments as a
from tahoe.storage.advisories import advisory_file_name, advisory_text
from tahoe.storage.errors import (BadAllocatedSize, BadOffset, BadRequest, BadSecret,
                                  BadShareNumber, BadShareType, BadStorageIndex,
                                  MalformedVector, UnknownTestOperator)
from tahoe.storage.ranges import RangeSet

SI = bytes(range(16))


def test_storage_index_checks() -> None:
    """Writes need 16 bytes; reads accept up to 16 and say whether any share can match."""
    assert a.check_storage_index(SI, for_write=True)
    assert a.check_storage_index(SI, for_write=False)
    assert not a.check_storage_index(SI[:15], for_write=False)
    for bad, for_write in [(SI[:15], True), (SI + b"x", False), ("a" * 16, False),
                           (bytearray(SI), True), (None, False)]:
        with pytest.raises(BadStorageIndex):
            a.check_storage_index(bad, for_write)


@pytest.mark.parametrize("bad", [b"x" * 31, b"x" * 33, "x" * 32, None, bytearray(32)])
def test_secret_checks(bad: object) -> None:
    """Secrets are exactly 32 bytes."""
    with pytest.raises(BadSecret):
        a.check_secret(bad, "renew secret")
    assert a.check_secret(b"x" * 32, "renew secret") == b"x" * 32


@pytest.mark.parametrize("bad", [-1, 256, True, "1", 1.0, None])
def test_share_number_checks(bad: object) -> None:
    """Share numbers are ints in 0..255."""
    with pytest.raises(BadShareNumber):
        a.check_share_number(bad)
    with pytest.raises(BadShareNumber):
        a.check_share_numbers({0, bad}, (set,))


def test_share_number_collections() -> None:
    """A collection must be of an accepted type."""
    assert a.check_share_numbers({0, 255}, (set, frozenset)) == frozenset({0, 255})
    assert a.check_share_numbers([3, 3], (list, tuple)) == frozenset({3})
    with pytest.raises(BadShareNumber):
        a.check_share_numbers([0, 1], (set, frozenset))
    with pytest.raises(BadShareNumber):
        a.check_share_numbers({0: 1}, (set,))


@pytest.mark.parametrize("bad", [-1, 2 ** 64, True, "0", None, 1.5])
def test_offset_and_size_checks(bad: object) -> None:
    """Offsets and allocated sizes are ints in 0..2**64-1."""
    with pytest.raises(BadOffset):
        a.check_offset(bad)
    with pytest.raises(BadAllocatedSize):
        a.check_allocated_size(bad)
    assert a.check_offset(2 ** 64 - 1) == 2 ** 64 - 1


def test_bad_requests_are_value_errors() -> None:
    """Every bad-argument error is also a ValueError."""
    assert issubclass(BadRequest, ValueError)
    assert issubclass(UnknownTestOperator, MalformedVector)


def test_share_type() -> None:
    """Only b'immutable' and b'mutable' are share types."""
    assert a.check_share_type(b"immutable") == "immutable"
    assert a.check_share_type(b"mutable") == "mutable"
    for bad in (b"other", "mutable", None):
        with pytest.raises(BadShareType):
            a.check_share_type(bad)


def test_parse_vectors() -> None:
    """Well-formed vectors become frozen values; lists and tuples are both accepted."""
    tw = {3: ([(0, 1, b"eq", b"")], [(0, b"data"), [5, b"x"]], None), 4: ([], [], 0)}
    parsed = a.parse_tw_vectors(tw)
    assert parsed[3] == a.ShareWrite((a.TestVector(0, 1, b"eq", b""),),
                                     (a.WriteVector(0, b"data"), a.WriteVector(5, b"x")), None)
    assert parsed[4].new_length == 0
    assert a.parse_read_vector([(0, 5), (10, 0)]) == (a.ReadVector(0, 5), a.ReadVector(10, 0))
    assert a.parse_secrets((b"w" * 32, b"r" * 32, b"c" * 32)) == (b"w" * 32, b"r" * 32, b"c" * 32)


@pytest.mark.parametrize("tw", [
    [], {0: ([], [])}, {0: ([], [], None, None)}, {0: "abc"},
    {0: ([(0, 1, b"eq")], [], None)}, {0: ([(-1, 1, b"eq", b"")], [], None)},
    {0: ([(0, -1, b"eq", b"")], [], None)}, {0: ([(0, 1, "eq", b"")], [], None)},
    {0: ([(0, 1, b"eq", "x")], [], None)}, {0: ([], [(0, "text")], None)},
    {0: ([], [(-5, b"x")], None)}, {0: ([], [(0, b"x", 1)], None)}, {0: ([], b"xx", None)},
    {0: ([], [], -1)}, {0: ([], [], "5")}, {0: ([], [], 2 ** 64)}, {0: (None, [], None)},
    {0: ([], [(True, b"x")], None)},
])
def test_malformed_tw_vectors(tw: object) -> None:
    """Wrong shapes, wrong types and negative fields are refused."""
    with pytest.raises(MalformedVector):
        a.parse_tw_vectors(tw)


@pytest.mark.parametrize("tw,error", [({-1: ([], [], None)}, BadShareNumber),
                                      ({"0": ([], [], None)}, BadShareNumber),
                                      ({0: ([(0, 1, b"lt", b"")], [], None)}, UnknownTestOperator),
                                      ({0: ([(0, 1, b"EQ", b"")], [], None)}, UnknownTestOperator)])
def test_tw_vector_keys_and_operators(tw: object, error: type) -> None:
    """Keys must be share numbers and the only operator is b'eq'."""
    with pytest.raises(error):
        a.parse_tw_vectors(tw)


@pytest.mark.parametrize("readv", [None, [(0,)], [(0, 1, 2)], [(-1, 5)], [(0, -5)], [("0", 5)], {(0, 1)}])
def test_malformed_read_vectors(readv: object) -> None:
    """Read vectors are lists of (offset, length) with non-negative ints."""
    with pytest.raises(MalformedVector):
        a.parse_read_vector(readv)


@pytest.mark.parametrize("secrets", [None, (b"w" * 32, b"r" * 32), (b"w" * 32, b"r" * 32, b"c" * 31)])
def test_malformed_secrets(secrets: object) -> None:
    """Slot secrets are three 32-byte values."""
    with pytest.raises(BadSecret):
        a.parse_secrets(secrets)


def test_test_vector_evaluation() -> None:
    """A test passes when the (cut short) read equals the specimen."""
    data = b"hello"

    def read(offset: int, length: int) -> bytes:
        return data[offset:offset + length]
    assert a.TestVector(0, 5, b"eq", b"hello").passes(read)
    assert a.TestVector(3, 10, b"eq", b"lo").passes(read)
    assert not a.TestVector(0, 1, b"eq", b"").passes(read)
    assert a.ShareWrite((), (), None).passes(read)


def test_range_set_examples() -> None:
    """Ranges merge when they touch or overlap, and overlaps are clipped."""
    ranges = RangeSet()
    ranges.add(10, 20)
    ranges.add(30, 40)
    assert ranges.overlaps(0, 10) == []
    assert ranges.overlaps(15, 35) == [(15, 20), (30, 35)]
    ranges.add(20, 30)
    assert ranges.ranges() == [(10, 40)] and len(ranges) == 1
    ranges.add(5, 5)
    assert ranges.ranges() == [(10, 40)]


@given(st.lists(st.tuples(st.integers(0, 100), st.integers(0, 30)), max_size=30),
       st.integers(0, 100), st.integers(0, 40))
@settings(deadline=None)
def test_range_set_matches_a_set_model(adds: list[tuple[int, int]], start: int, size: int) -> None:
    """Ranges and overlaps agree with a plain set of covered positions."""
    ranges = RangeSet()
    covered: set[int] = set()
    for begin, length in adds:
        ranges.add(begin, begin + length)
        covered.update(range(begin, begin + length))
    assert {i for lo, hi in ranges.ranges() for i in range(lo, hi)} == covered
    pairs = ranges.ranges()
    assert all(hi1 < lo2 for (_, hi1), (lo2, _) in zip(pairs, pairs[1:]))
    got = {i for lo, hi in ranges.overlaps(start, start + size) for i in range(lo, hi)}
    assert got == covered & set(range(start, start + size))


def test_advisory_names() -> None:
    """Report names are the UTC time without colons, then SI and share number."""
    si = bytes.fromhex("38d12ea01522a9e5b560408581e103fc")
    assert (advisory_file_name(1700000000.25, si, 3)
            == "2023-11-14T221320.250000--hdis5iaveku6lnlaiccydyid7q-3")
    assert advisory_file_name(1700000000, si, 0) == "2023-11-14T221320--hdis5iaveku6lnlaiccydyid7q-0"


def test_advisory_text() -> None:
    """The report is Tahoe's five header lines, the reason and a newline."""
    si = bytes.fromhex("38d12ea01522a9e5b560408581e103fc")
    assert advisory_text("immutable", si, 7, b"bad block \xe2\x9c\x93") == (
        b"report: Share Corruption\ntype: immutable\n"
        b"storage_index: hdis5iaveku6lnlaiccydyid7q\nshare_number: 7\n\n"
        b"bad block \xe2\x9c\x93\n")

"""Publish/read round trips, corruption detection, version choice and test-and-set writes."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.caps.mutable import MutableFormat
from tahoe.mutable import layout
from tahoe.mutable.encoder import EncodedVersion, encode_version, salts_needed
from tahoe.mutable.errors import (CorruptShare, MutableFormatError, NotEnoughShares,
                                  UncoordinatedWriteError, UnrecoverableFile)
from tahoe.mutable.keys import MutableKeys
from tahoe.mutable.reader import VersionDecoder, check_header, decode_shares, verify_share
from tahoe.mutable.servermap import (ServerMap, ServerState, best_version, recoverable_versions,
                                     write_mode_complete)
from tahoe.mutable.slot_writes import (NEW_SHARE_TEST, check_write_answer, checkstring_test,
                                       place_shares, plan_publish, read_vector, share_write)
from tahoe.mutable.version import VersionInfo
from tests.core.test_mutable_keys import FIXED_KEYS, LEGACY_KEYS
from tests.vectors import load

TRACE = load("mutable-rpc-trace.json")["traces"]
SDMF_VECTOR = load("mutable-sdmf-share.json")


def publish(plaintext: bytes, file_format: MutableFormat, needed: int, total: int,
            seqnum: int = 1, keys: MutableKeys = FIXED_KEYS, segment_size: int | None = None,
            seed: int = 0) -> EncodedVersion:
    """Encode with deterministic salts derived from ``seed``."""
    count = salts_needed(file_format, len(plaintext), needed, segment_size)
    salts = [bytes([(seed + i) % 256]) * 16 for i in range(count)]
    return encode_version(file_format, plaintext, keys, seqnum=seqnum, needed=needed,
                          total=total, salts=salts, pss_salt=bytes([seed % 256]) * 32,
                          segment_size=segment_size)


@st.composite
def published(draw: st.DrawFn) -> tuple[bytes, EncodedVersion]:
    """A random small file published in a random format with random k-of-N."""
    total = draw(st.integers(1, 12))
    needed = draw(st.integers(1, total))
    file_format = draw(st.sampled_from(MutableFormat))
    segment_size = None
    if file_format is MutableFormat.MDMF and draw(st.booleans()):
        segment_size = needed * draw(st.integers(16, 80))
    plaintext = draw(st.binary(max_size=2000))
    keys = draw(st.sampled_from([FIXED_KEYS, LEGACY_KEYS]))
    return plaintext, publish(plaintext, file_format, needed, total, draw(st.integers(1, 99)),
                              keys, segment_size, draw(st.integers(0, 255)))


def keys_of(encoded: EncodedVersion) -> MutableKeys:
    """Which vector key signed this version."""
    data = encoded.shares[0].data
    for keys in (FIXED_KEYS, LEGACY_KEYS):
        if keys.verifying_key.der in data:
            return keys
    raise AssertionError("unknown key")


@given(published(), st.data())
@settings(deadline=None)
def test_publish_then_read_round_trips(case: tuple[bytes, EncodedVersion],
                                       data: st.DataObject) -> None:
    """Any k shares of a published version decode to the plaintext; every share verifies."""
    plaintext, encoded = case
    keys = keys_of(encoded)
    version = encoded.version
    chosen = data.draw(st.permutations(range(version.total)))[:version.needed]
    result = decode_shares(keys.readkey, keys.fingerprint,
                           {n: encoded.shares[n].data for n in chosen})
    assert result.plaintext == plaintext and result.version == version
    assert result.used == tuple(sorted(chosen)) and result.corrupt == {}
    for share in encoded.shares:
        assert verify_share(share.shnum, share.data, keys.fingerprint, keys.writekey) == version
        assert check_header(share.shnum, share.data, keys.fingerprint).version == version


def _covered_positions(data: bytes) -> list[int]:
    header = layout.parse_header(data)
    positions = list(range(header.offsets.eof))
    if header.has_salts:
        gap = range(header.offsets.verification_key_end, header.offsets.share_data)
        positions = [p for p in positions if p not in gap]
    return positions


@given(published(), st.data())
@settings(deadline=None, max_examples=150)
def test_any_flipped_byte_is_detected(case: tuple[bytes, EncodedVersion],
                                      data: st.DataObject) -> None:
    """Flipping bits of any byte a writer determines makes the share fail verification."""
    plaintext, encoded = case
    keys = keys_of(encoded)
    shnum = data.draw(st.integers(0, encoded.version.total - 1))
    share = bytearray(encoded.shares[shnum].data)
    position = data.draw(st.sampled_from(_covered_positions(bytes(share))))
    share[position] ^= data.draw(st.integers(1, 255))
    with pytest.raises(CorruptShare) as info:
        verify_share(shnum, bytes(share), keys.fingerprint, keys.writekey)
    assert info.value.shnum == shnum
    shares = {s.shnum: s.data for s in encoded.shares}
    shares[shnum] = bytes(share)
    try:
        result = decode_shares(keys.readkey, keys.fingerprint, shares)
    except MutableFormatError:
        assert encoded.version.total == encoded.version.needed
        return
    assert result.plaintext == plaintext


@given(st.dictionaries(st.integers(0, 12), st.binary(max_size=300), max_size=6), st.data())
@settings(deadline=None)
def test_garbage_shares_fail_cleanly(garbage: dict[int, bytes], data: st.DataObject) -> None:
    """Garbage, alone or spliced into real shares, raises only our errors."""
    encoded = publish(b"hello world" * 20, data.draw(st.sampled_from(MutableFormat)), 3, 10)
    shares = {s.shnum: s.data for s in encoded.shares}
    for shnum, junk in garbage.items():
        real = shares.get(shnum, b"")
        start = data.draw(st.integers(0, len(real)))
        shares[shnum] = real[:start] + junk + real[start + len(junk):]
        for parser in (layout.parse_header, layout.parse_share):
            try:
                parser(shares[shnum])
            except MutableFormatError:
                pass
        try:
            verify_share(shnum, shares[shnum], FIXED_KEYS.fingerprint, FIXED_KEYS.writekey)
        except CorruptShare:
            pass
    try:
        result = decode_shares(FIXED_KEYS.readkey, FIXED_KEYS.fingerprint, shares)
    except MutableFormatError:
        return
    assert result.plaintext == b"hello world" * 20


def test_corrupt_shares_are_named_and_replaced() -> None:
    """A bad share among the lowest k is reported and the next good one used."""
    encoded = publish(b"x" * 500, MutableFormat.SDMF, 3, 6)
    shares = {s.shnum: s.data for s in encoded.shares}
    damaged = bytearray(shares[1])
    damaged[-1300] ^= 0xFF  # inside the block
    shares[1] = bytes(damaged)
    shares[2] = shares[2][:300]
    result = decode_shares(FIXED_KEYS.readkey, FIXED_KEYS.fingerprint, shares)
    assert result.plaintext == b"x" * 500 and result.used == (0, 3, 4)
    assert set(result.corrupt) == {1, 2}
    with pytest.raises(NotEnoughShares) as info:
        decode_shares(FIXED_KEYS.readkey, FIXED_KEYS.fingerprint,
                      {n: shares[n] for n in (0, 1, 3)}, version=encoded.version)
    assert 1 in info.value.bad


def test_unsigned_offset_damage_does_not_hide_the_file() -> None:
    """With k=1 a share with a damaged offset table looks like its own version; reading falls back."""
    encoded = publish(b"abc" * 10, MutableFormat.SDMF, 1, 3)
    shares = {s.shnum: s.data for s in encoded.shares}
    damaged = bytearray(shares[0])
    damaged[86] ^= 0x02  # o_share_data: not signed, so the header still checks out
    shares[0] = bytes(damaged)
    assert check_header(0, shares[0], FIXED_KEYS.fingerprint).version != encoded.version
    result = decode_shares(FIXED_KEYS.readkey, FIXED_KEYS.fingerprint, shares)
    assert result.plaintext == b"abc" * 10 and result.version == encoded.version
    assert 0 in result.corrupt and result.used == (1,)


def test_wrong_key_shares_are_corrupt() -> None:
    """Shares signed by another key do not match the cap's fingerprint."""
    encoded = publish(b"abc", MutableFormat.MDMF, 2, 3, keys=LEGACY_KEYS)
    shares = {s.shnum: s.data for s in encoded.shares}
    with pytest.raises(UnrecoverableFile, match="fingerprint"):
        decode_shares(FIXED_KEYS.readkey, FIXED_KEYS.fingerprint, shares)


def test_best_version_among_mixed_shares() -> None:
    """The highest recoverable seqnum wins; an unrecoverable newer version is ignored."""
    old = publish(b"old", MutableFormat.SDMF, 2, 4, seqnum=4)
    new = publish(b"new contents", MutableFormat.MDMF, 2, 4, seqnum=5, seed=9)
    shares = {0: new.shares[0].data, 1: old.shares[1].data, 2: old.shares[2].data,
              3: old.shares[3].data}
    result = decode_shares(FIXED_KEYS.readkey, FIXED_KEYS.fingerprint, shares)
    assert result.plaintext == b"old" and result.version.seqnum == 4
    shares[1] = new.shares[1].data
    result = decode_shares(FIXED_KEYS.readkey, FIXED_KEYS.fingerprint, shares)
    assert result.plaintext == b"new contents" and result.version.format is MutableFormat.MDMF


def _version(seqnum: int, root: int, needed: int = 2, total: int = 3) -> VersionInfo:
    return VersionInfo(seqnum, bytes([root]) * 32, bytes(16), 6, 6, needed, total,
                       bytes(75), (1, 2, 3, 4, 5, 6))


def test_version_order_and_recoverability() -> None:
    """Seqnum first, then the root hash; versions need k distinct share numbers below N."""
    low, high_root, newer = _version(3, 1), _version(3, 9), _version(4, 0)
    observations = [(low, 0), (low, 1), (high_root, 0), (high_root, 2), (newer, 1), (newer, 1)]
    assert recoverable_versions(observations) == {low, high_root}
    assert best_version(observations) == high_root
    assert best_version([(newer, 0), (newer, 7)]) is None
    assert best_version([]) is None


def test_servermap_bookkeeping() -> None:
    """The map tracks shares per version, the next seqnum and bad shares' checkstrings."""
    smap = ServerMap()
    assert smap.next_seqnum() == 1 and smap.best_recoverable_version() is None
    assert smap.newer_unrecoverable_seen()
    v3, v4 = _version(3, 1), _version(4, 1)
    smap.add_share("a", 0, v3)
    smap.add_share("b", 1, v3)
    smap.add_share("c", 2, v4)
    assert smap.best_recoverable_version() == v3
    assert smap.newer_unrecoverable_seen()
    assert smap.next_seqnum() == 5 and smap.unrecoverable_versions() == {v4}
    assert smap.shares_of(v3) == {0: {"a"}, 1: {"b"}}
    smap.mark_bad("c", 2, b"first 75 bytes")
    assert smap.next_seqnum() == 5  # a version once seen still counts
    assert not smap.newer_unrecoverable_seen()
    assert smap.checkstring_for("c", 2) == b"first 75 bytes"
    assert smap.checkstring_for("a", 0) == v3.checkstring
    assert smap.checkstring_for("z", 0) is None
    assert smap.servers_with_shares() == {"a", "b", "c"}


def test_write_mode_stop_rule() -> None:
    """Done after k empty answers following the last share holder, with nothing pending before."""
    S = ServerState
    assert write_mode_complete([S.HAS_SHARES, S.EMPTY, S.FAILED, S.EMPTY, S.EMPTY], 3)
    assert not write_mode_complete([S.HAS_SHARES, S.EMPTY, S.EMPTY], 3)
    assert not write_mode_complete([S.PENDING, S.HAS_SHARES, S.EMPTY, S.EMPTY, S.EMPTY], 3)
    assert write_mode_complete([S.HAS_SHARES, S.EMPTY, S.EMPTY, S.EMPTY, S.PENDING], 3)
    assert not write_mode_complete([S.EMPTY] * 5, 3)
    assert not write_mode_complete([S.HAS_SHARES, S.EMPTY, S.HAS_SHARES, S.EMPTY], 2)


def test_new_file_placement_follows_the_permuted_list() -> None:
    """With N servers and no shares, share i goes to the i-th permuted server (vector)."""
    servers = [f"s{i}" for i in range(10)]
    goal = place_shares(servers, set(), 10)
    assert goal == {(f"s{i}", i) for i in range(10)}
    assert SDMF_VECTOR["share_placement_server_index"]  # the vector states the same rule
    assert place_shares(servers[:3], set(), 5) == {("s0", 0), ("s1", 1), ("s2", 2),
                                                   ("s0", 3), ("s1", 4)}


def test_placement_keeps_existing_shares_and_prefers_empty_servers() -> None:
    """Known shares stay where they are; homeless ones go to the least loaded servers."""
    servers = ["a", "b", "c", "d"]
    goal = place_shares(servers, {("a", 0), ("a", 1), ("c", 2)}, 5, bad_servers={"d"})
    assert {("a", 0), ("a", 1), ("c", 2)} <= goal
    assert {("b", 3), ("c", 4)} <= goal and len(goal) == 5
    with pytest.raises(ValueError):
        place_shares(["a"], set(), 1, bad_servers={"a"})


def test_overwrite_tests_against_the_old_checkstrings() -> None:
    """In-place rewrites test the version seen there; new placements test for absence."""
    old = publish(b"version one\n", MutableFormat.SDMF, 3, 10)
    smap = ServerMap()
    for shnum in range(9):
        smap.add_share(f"s{shnum}", shnum, old.version)
    smap.mark_bad("s9", 9, b"B" * 75)
    new = publish(b"version two, longer\n", MutableFormat.SDMF, 3, 10, seqnum=2, seed=3)
    plan = plan_publish(new, smap, [f"s{i}" for i in range(10)] + ["spare"])
    assert "spare" not in plan
    for server, writes in plan.items():
        (write,) = writes
        testv, writev, new_length = write.to_wire()
        expected = b"B" * 75 if server == "s9" else old.version.checkstring
        assert testv == [checkstring_test(expected)] and len(expected) in (57, 75)
        assert writev == [(0, new.shares[write.shnum].data)] and new_length is None
    for call in TRACE["3_overwrite"]["calls"]:
        if call["call"] == "slot_testv_and_readv_and_writev":
            for vectors in call["tw_vectors"].values():
                assert [(t["offset"], t["length"]) for t in vectors["test_vectors"]] == [(0, 57)]
                assert vectors["test_vectors"][0]["specimen_hex"][:18] == "000000000000000001"
            assert [tuple(r) for r in call["read_vector"]] == read_vector(MutableFormat.SDMF)
    assert share_write(new.shares[0], None).test_vectors == (NEW_SHARE_TEST,)


def test_write_answers() -> None:
    """A failed test or an unknown share of another version means an uncoordinated write."""
    ours = b"C" * 57
    check_write_answer(True, {3: [ours], 4: [b"D" * 57]}, {3, 4}, ours)
    check_write_answer(True, {3: [ours], 5: [ours]}, {3}, ours)
    with pytest.raises(UncoordinatedWriteError, match="test vector"):
        check_write_answer(False, {}, {3}, ours)
    with pytest.raises(UncoordinatedWriteError, match=r"\[5\]"):
        check_write_answer(True, {3: [ours], 5: [b"E" * 57]}, {3}, ours)


def test_version_decoder_segment_by_segment() -> None:
    """A shell can check hashes, then blocks per segment, then decode each segment."""
    plaintext = bytes(range(256)) * 3
    encoded = publish(plaintext, MutableFormat.MDMF, 2, 4, segment_size=100)
    decoder = VersionDecoder(encoded.version, FIXED_KEYS.readkey)
    headers = {n: layout.parse_header(encoded.shares[n].data) for n in (1, 3)}
    for shnum, header in headers.items():
        data = encoded.shares[shnum].data
        chain = data[slice(*_span(header.share_hash_chain_range()))]
        tree = data[slice(*_span(header.block_hash_tree_range()))]
        decoder.accept_hashes(shnum, chain, tree)
    assert decoder.trusted_shares == {1, 3}
    pieces = []
    for segnum in range(decoder.geometry.num_segments):
        blocks = {}
        for shnum, header in headers.items():
            entry = encoded.shares[shnum].data[slice(*_span(header.block_range(segnum)))]
            blocks[shnum] = decoder.check_block(shnum, segnum, entry)
        pieces.append(decoder.decode_segment(segnum, blocks))
    assert b"".join(pieces) == plaintext
    with pytest.raises(RuntimeError):
        decoder.check_block(0, 0, b"")
    with pytest.raises(CorruptShare):
        decoder.accept_hashes(0, b"", b"")


def _span(region: tuple[int, int]) -> tuple[int, int]:
    return region[0], region[0] + region[1]


@pytest.mark.parametrize("file_format,segment_size", [(MutableFormat.SDMF, None),
                                                      (MutableFormat.MDMF, 4)])
def test_every_byte_of_a_share_is_covered(file_format: MutableFormat,
                                          segment_size: int | None) -> None:
    """Exhaustively: a flip at any checked position of a small share is detected."""
    encoded = publish(bytes(range(10)), file_format, 2, 3, segment_size=segment_size)
    data = encoded.shares[1].data
    for position in _covered_positions(data):
        damaged = bytearray(data)
        damaged[position] ^= 0x40
        with pytest.raises(CorruptShare):
            verify_share(1, bytes(damaged), FIXED_KEYS.fingerprint, FIXED_KEYS.writekey)

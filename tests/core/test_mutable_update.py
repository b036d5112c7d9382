"""In-place MDMF updates (tahoe.mutable.update): only the touched segments change, and the
result equals a whole re-encode of the new contents with the same salts and keys."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tahoe.mutable.encoder import EncodedVersion, encode_mdmf, encode_sdmf
from tahoe.mutable.errors import CorruptShare
from tahoe.mutable.hashes import parse_chain
from tahoe.mutable.mdmf import SALT_SIZE, parse_header, parse_share
from tahoe.mutable.reader import decode_shares, verify_share
from tahoe.mutable.update import (UpdateNotInPlace, decode_old_segment, encode_update,
                                  old_leaf, old_tree_root, plan_update, splice_segment)
from tests.core.test_mutable_keys import FIXED_KEYS

K, N = 3, 10
SEGMENT = 999  # small segments: many of them in a few kilobytes
PSS = bytes(range(32))


def plaintext(length: int, seed: int = 0) -> bytes:
    """Deterministic bytes."""
    return bytes((7 * i + 3 + seed) % 256 for i in range(length))


def salt(n: int, generation: int) -> bytes:
    """A distinct 16-byte salt per segment and generation."""
    return bytes([generation, n % 256]) * 8


def old_version(length: int):  # type: ignore[no-untyped-def]
    """An MDMF version of ``length`` bytes, seqnum 4, salts of generation 1."""
    count = -(-length // SEGMENT)
    return encode_mdmf(plaintext(length), FIXED_KEYS, seqnum=4, needed=K, total=N,
                       salts=[salt(n, 1) for n in range(count)], pss_salt=PSS,
                       segment_size=SEGMENT)


def read(share: bytes, span: tuple[int, int]) -> bytes:
    """A server's read of a share."""
    return share[span[0]:span[0] + span[1]]


def update_in_memory(shares: list[bytes], offset: int, data: bytes,
                     block_sources: tuple[int, ...] = (0, 1, 2)):  # type: ignore[no-untyped-def]
    """What the shell does, over shares in memory: read, check, decode, splice, encode,
    write. Returns (plan, new shares, all bytes written)."""
    version = parse_header(shares[0]).version_info
    plan = plan_update(version, offset, len(data))
    trees = {}
    for shnum, share in enumerate(shares):
        nodes = {}
        for start, length in plan.tree_reads():
            run = read(share, (start, length))
            first = (start - plan.old_offsets.block_hash_tree) // 32
            for j in range(length // 32):
                nodes[first + j] = run[32 * j:32 * j + 32]
        chain = parse_chain(read(share, parse_header(share).share_hash_chain_range()))
        old_tree_root(plan, shnum, nodes, chain)
        trees[shnum] = nodes
    old_segments = {}
    for segnum in plan.old_segments_needed():
        entries = {n: read(shares[n], plan.block_read(segnum)) for n in block_sources}
        leaves = {n: old_leaf(plan, trees[n], segnum) for n in block_sources}
        old_segments[segnum] = decode_old_segment(plan, FIXED_KEYS.readkey, segnum, entries,
                                                  leaves)
    segments = [splice_segment(plan, n, old_segments.get(n, b""), data)
                for n in plan.changed_segments]
    salts = [salt(n, 2) for n in plan.changed_segments]
    updated = encode_update(plan, FIXED_KEYS, segments, salts, trees, PSS)
    new_shares, written = [], 0
    for shnum, share in enumerate(shares):
        buffer = bytearray(share)
        for start, piece in updated.writes[shnum]:
            if start + len(piece) > len(buffer):
                buffer.extend(bytes(start + len(piece) - len(buffer)))
            buffer[start:start + len(piece)] = piece
            written += len(piece)
        new_shares.append(bytes(buffer))
    return plan, updated, new_shares, written


def expected(length: int, offset: int, data: bytes, plan):  # type: ignore[no-untyped-def]
    """A whole re-encode of the new contents with the salts the update leaves in place."""
    old = plaintext(length)
    new = old[:offset] + data + old[offset + len(data):]
    count = -(-len(new) // SEGMENT)
    salts = [salt(n, 2) if n in plan.changed_segments else salt(n, 1) for n in range(count)]
    return new, encode_mdmf(new, FIXED_KEYS, seqnum=5, needed=K, total=N, salts=salts,
                            pss_salt=PSS, segment_size=SEGMENT)


CASES = {
    # name: (old length, offset, new bytes)
    "middle-segment": (10 * SEGMENT, 4 * SEGMENT + 100, b"x" * 100),
    "tail": (10 * SEGMENT - 500, 9 * SEGMENT + 20, b"t" * 50),
    "tail-grows-within-block": (10 * SEGMENT - 500, 10 * SEGMENT - 500, b"a"),
    "spanning-segments": (10 * SEGMENT, 2 * SEGMENT + 900, b"s" * (3 * SEGMENT)),
    "aligned-whole-segments": (10 * SEGMENT, 3 * SEGMENT, b"w" * (2 * SEGMENT)),
    "append-adds-segments": (10 * SEGMENT - 500, 10 * SEGMENT - 500, b"p" * (3 * SEGMENT)),
    "append-grows-tree": (8 * SEGMENT, 8 * SEGMENT, b"g" * (SEGMENT + 7)),
    "overlap-end-and-grow": (5 * SEGMENT + 10, 4 * SEGMENT + 500, b"o" * 2000),
    "first-byte": (3 * SEGMENT, 0, b"f"),
    "one-segment-file": (400, 100, b"q" * 20),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_update_equals_whole_reencode(name: str) -> None:
    """Every share after the update is byte-identical to a whole encode with the same salts."""
    length, offset, data = CASES[name]
    shares = [s.data for s in old_version(length).shares]
    plan, updated, new_shares, _ = update_in_memory(shares, offset, data)
    new, full = expected(length, offset, data, plan)
    assert updated.version == full.version
    for shnum in range(N):
        assert new_shares[shnum] == full.shares[shnum].data, f"share {shnum}"
        verify_share(shnum, new_shares[shnum], FIXED_KEYS.fingerprint)
    decoded = decode_shares(FIXED_KEYS.readkey, FIXED_KEYS.fingerprint,
                            {n: new_shares[n] for n in (3, 7, 9)})
    assert decoded.plaintext == new


def test_update_writes_only_the_touched_segments() -> None:
    """A 100-byte write into one segment of a 40-segment file writes one block per share,
    the tree path, chain, signature and header: a small fraction of the share."""
    length = 40 * SEGMENT
    shares = [s.data for s in old_version(length).shares]
    plan, updated, _, written = update_in_memory(shares, 17 * SEGMENT + 5, b"z" * 100)
    assert plan.changed_segments == range(17, 18)
    assert not plan.whole_tree
    assert plan.old_segments_needed() == (17,)
    block = SALT_SIZE + SEGMENT // K
    per_share = written / N
    assert per_share < block + 7 * 32 + 8 * 34 + 256 + 123 + 1
    for writes in updated.writes.values():
        blocks = [w for w in writes if w[0] >= plan.old_offsets.share_data
                  and w[0] < plan.old_offsets.block_hash_tree]
        assert [w[0] for w in blocks] == [plan.block_read(17)[0]]


def test_middle_update_reads_a_path_not_the_tree() -> None:
    """An update inside the file reads each share's path siblings, not its whole tree."""
    version = old_version(64 * SEGMENT).version
    plan = plan_update(version, 30 * SEGMENT, 10)
    assert len(plan.tree_nodes_needed()) == 7  # the leaf and its 6 siblings up to the root
    grow = plan_update(version, 64 * SEGMENT, 10)
    assert grow.whole_tree and len(grow.tree_nodes_needed()) == 64


def test_a_share_with_a_bad_tree_node_is_refused() -> None:
    """A stored path sibling that does not hash to the signed root is caught."""
    shares = [bytearray(s.data) for s in old_version(10 * SEGMENT).shares]
    version = parse_header(bytes(shares[0])).version_info
    plan = plan_update(version, 4 * SEGMENT, 10)
    node = plan.tree_nodes_needed()[0]
    position = plan.old_offsets.block_hash_tree + 32 * node
    shares[5][position] ^= 1
    with pytest.raises(CorruptShare):
        update_in_memory([bytes(s) for s in shares], 4 * SEGMENT, b"0123456789")


def test_a_bad_block_is_refused() -> None:
    """A block read for decoding that does not match its checked leaf is caught."""
    shares = [bytearray(s.data) for s in old_version(10 * SEGMENT).shares]
    version = parse_header(bytes(shares[0])).version_info
    plan = plan_update(version, 4 * SEGMENT + 7, 10)
    shares[1][plan.block_read(4)[0] + 40] ^= 1
    with pytest.raises(CorruptShare):
        update_in_memory([bytes(s) for s in shares], 4 * SEGMENT + 7, b"0123456789")


def test_sdmf_and_empty_versions_are_not_updated_in_place() -> None:
    """SDMF versions, empty files and offsets past the end need a whole publish."""
    sdmf = encode_sdmf(b"abc", FIXED_KEYS, seqnum=1, needed=K, total=N, iv=bytes(16),
                       pss_salt=PSS).version
    with pytest.raises(UpdateNotInPlace):
        plan_update(sdmf, 0, 1)
    empty = encode_mdmf(b"", FIXED_KEYS, seqnum=1, needed=K, total=N, salts=[],
                        pss_salt=PSS).version
    with pytest.raises(UpdateNotInPlace):
        plan_update(empty, 0, 1)
    version = old_version(1000).version
    with pytest.raises(UpdateNotInPlace):
        plan_update(version, 1001, 1)


def test_parsed_share_salts_unchanged_outside_the_update() -> None:
    """Untouched segments keep their salts and blocks; touched ones get the new salts."""
    shares = [s.data for s in old_version(6 * SEGMENT).shares]
    _, _, new_shares, _ = update_in_memory(shares, 2 * SEGMENT + 1, b"m" * 10)
    before, after = parse_share(shares[4]), parse_share(new_shares[4])
    for n in range(6):
        if n == 2:
            assert after.segments[n][0] == salt(2, 2)
        else:
            assert after.segments[n] == before.segments[n]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(length=st.integers(1, 9 * SEGMENT), where=st.floats(0, 1),
       size=st.integers(1, 3 * SEGMENT))
def test_any_update_equals_whole_reencode(length: int, where: float, size: int) -> None:
    """Any write at any offset up to the end equals a whole re-encode with the same salts."""
    offset = int(where * length)
    data = plaintext(size, seed=99)
    shares = [s.data for s in OLD_VERSIONS.setdefault(length, old_version(length)).shares]
    plan, _, new_shares, _ = update_in_memory(shares, offset, data)
    new, full = expected(length, offset, data, plan)
    assert new_shares == [s.data for s in full.shares]
    decoded = decode_shares(FIXED_KEYS.readkey, FIXED_KEYS.fingerprint,
                            {n: new_shares[n] for n in (0, 5, 8)})
    assert decoded.plaintext == new


#: Old versions by length, encoded once.
OLD_VERSIONS: dict[int, EncodedVersion] = {}

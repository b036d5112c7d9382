"""MDMF shares: layout, encoding, write vectors and decoding against mutable-mdmf-share.json."""
from __future__ import annotations

import hashlib
import itertools

import pytest

from tahoe.caps.mutable import MutableFormat
from tahoe.crypto.aes import aes_ctr
from tahoe.mutable import layout, mdmf
from tahoe.mutable.encoder import encode_mdmf, mdmf_segment_size, salts_needed
from tahoe.mutable.errors import BadEncodingParameters, LayoutInvalid
from tahoe.mutable.hashes import block_leaf
from tahoe.mutable.keys import data_key
from tahoe.mutable.reader import decode_shares, verify_share
from tahoe.mutable.servermap import ServerMap
from tahoe.mutable.slot_writes import NEW_SHARE_TEST, plan_publish, read_vector
from tests.core.test_mutable_keys import FIXED_KEYS
from tests.vectors import load

CASES = load("mutable-mdmf-share.json")["cases"]
IDS = ["1000-bytes", "two-segments", "empty"]
TRACE = load("mutable-rpc-trace.json")["traces"]


def plaintext_of(case: dict) -> bytes:
    """The vectors' plaintext: byte i is (7i + 3) mod 256."""
    return bytes((7 * i + 3) % 256 for i in range(case["inputs"]["plaintext_length"]))


def encode(case: dict):  # type: ignore[no-untyped-def]
    """Encode a case with its fixed salts and PSS salt."""
    inputs = case["inputs"]
    return encode_mdmf(plaintext_of(case), FIXED_KEYS, seqnum=inputs["seqnum"],
                       needed=inputs["k"], total=inputs["N"],
                       salts=[bytes.fromhex(s) for s in inputs["segment_salts_hex"]],
                       pss_salt=bytes.fromhex(inputs["pss_salt_hex"]))


ENCODED = [encode(case) for case in CASES]


@pytest.mark.parametrize("index", range(3), ids=IDS)
def test_every_share_is_byte_identical(index: int) -> None:
    """With the vector's salts every share equals Tahoe's (bytes or SHA-256)."""
    case, encoded = CASES[index], ENCODED[index]
    assert hashlib.sha256(plaintext_of(case)).hexdigest() == case["inputs"]["plaintext_sha256_hex"]
    if "all_shares_hex" in case:
        for shnum, share_hex in case["all_shares_hex"].items():
            assert encoded.shares[int(shnum)].data.hex() == share_hex
    else:
        for shnum, digest in case["all_shares_sha256_hex"].items():
            assert hashlib.sha256(encoded.shares[int(shnum)].data).hexdigest() == digest
    share0 = encoded.shares[0].data
    assert hashlib.sha256(share0).hexdigest() == case["share0"]["sha256_hex"]
    assert share0.hex() == case["share0"]["hex"]
    assert encoded.root_hash.hex() == case["root_hash_hex"]
    assert encoded.version.signed_prefix.hex() == case["signed_prefix_hex"]


@pytest.mark.parametrize("index", range(3), ids=IDS)
def test_intermediate_values(index: int) -> None:
    """Segment salts, data keys, block sizes and hashes, trees and signature match."""
    case = CASES[index]
    data = bytes.fromhex(case["share0"]["hex"])
    share = mdmf.parse_share(data)
    header = share.header
    assert header.segment_size == case["segment_size"] == mdmf_segment_size(3)
    assert len(share.segments) == case["num_segments"]
    plaintext = plaintext_of(case)
    for segment, (salt, block) in zip(case["segments"], share.segments):
        assert salt.hex() == segment["salt_hex"]
        key = data_key(salt, FIXED_KEYS.readkey)
        assert key.hex() == segment["data_key_hex"]
        start = segment["segnum"] * header.segment_size
        crypttext = aes_ctr(key, plaintext[start:start + segment["plaintext_length"]])
        assert hashlib.sha256(crypttext).hexdigest() == segment["ciphertext_sha256_hex"]
        assert len(block) == segment["block_length"]
        assert hashlib.sha256(block).hexdigest() == segment["share0_block_sha256_hex"]
        assert block_leaf(block, salt).hex() == segment["share0_block_hash_hex"]
    assert [h.hex() for h in share.block_hash_tree] == case["block_hash_tree_share0_hex"]
    assert share.signature.hex() == case["signature_hex"]
    FIXED_KEYS.verifying_key.verify(header.signed_prefix, share.signature)
    assert share.verification_key == FIXED_KEYS.verifying_key.der
    assert share.enc_privkey == FIXED_KEYS.encrypted_private_key
    leaves = [mdmf.parse_share(s.data).block_hash_tree[0] for s in ENCODED[index].shares]
    assert [leaf.hex() for leaf in leaves] == case["share_hash_tree_leaves_hex"]


@pytest.mark.parametrize("index", range(3), ids=IDS)
def test_share0_header_and_regions(index: int) -> None:
    """Share 0's header fields and regions (the zero-filled gap included) are the vector's."""
    case = CASES[index]
    data = bytes.fromhex(case["share0"]["hex"])
    header = layout.parse_header(data)
    assert isinstance(header, mdmf.MDMFHeader)
    fields = case["share0"]["header"]
    assert (1, header.seqnum, header.root_hash.hex(), header.needed, header.total,
            header.segment_size, header.data_length) == (
        fields["version"], fields["seqnum"], fields["root_hash"], fields["k"], fields["N"],
        fields["segsize"], fields["datalen"])
    names = ("o_enc_privkey", "o_share_hash_chain", "o_signature", "o_verification_key",
             "o_verification_key_end", "o_share_data", "o_block_hash_tree", "o_EOF")
    assert header.offsets.as_tuple() == tuple(fields[n] for n in names)
    assert header.pack() == data[:mdmf.HEADER_SIZE]
    key_end = header.offsets.verification_key_end
    regions = {"header": (0, mdmf.HEADER_SIZE), "enc_privkey": header.enc_privkey_range(),
               "share_hash_chain": header.share_hash_chain_range(),
               "signature": header.signature_range(),
               "verification_key": header.verification_key_range(),
               "padding_zero_filled": (key_end, header.offsets.share_data - key_end),
               "share_data": header.share_data_range(),
               "block_hash_tree": header.block_hash_tree_range()}
    for region in case["share0"]["regions"]:
        assert regions[region["name"]] == (region["offset"], region["length"])
    assert data[key_end:header.offsets.share_data] == bytes(header.offsets.share_data - key_end)
    assert header.checkstring == data[:41]


def test_write_vectors_follow_tahoes_order() -> None:
    """The two-segment create writes the same (offset, length) pieces as Tahoe's trace."""
    encoded = ENCODED[1]
    plan = plan_publish(encoded, ServerMap(), [f"server{i}" for i in range(10)])
    assert sorted(w.shnum for writes in plan.values() for w in writes) == list(range(10))
    for call in TRACE["6_create_mdmf_2seg"]["calls"]:
        for shnum, vectors in call["tw_vectors"].items():
            ours = encoded.shares[int(shnum)].write_vectors
            assert [(o, len(d)) for o, d in ours] == [(w["offset"], w["length"])
                                                     for w in vectors["write_vectors"]]
            assert [(t["offset"], t["length"]) for t in vectors["test_vectors"]] == [(0, 1)]
            assert vectors["new_length"] is None
        assert [tuple(r) for r in call["read_vector"]] == read_vector(MutableFormat.MDMF)
    for writes in plan.values():
        for write in writes:
            testv, writev, new_length = write.to_wire()
            assert testv == [NEW_SHARE_TEST] and new_length is None
            assert writev == list(encoded.shares[write.shnum].write_vectors)


@pytest.mark.parametrize("index", range(3), ids=IDS)
def test_decodes_from_k_shares(index: int) -> None:
    """Several choices of 3 shares decode to the plaintext; every share verifies fully."""
    shares = {s.shnum: s.data for s in ENCODED[index].shares}
    for chosen in itertools.islice(itertools.combinations(range(10), 3), 0, 120, 17):
        result = decode_shares(FIXED_KEYS.readkey, FIXED_KEYS.fingerprint,
                               {n: shares[n] for n in chosen})
        assert result.plaintext == plaintext_of(CASES[index])
    for shnum, data in shares.items():
        assert verify_share(shnum, data, FIXED_KEYS.fingerprint,
                            FIXED_KEYS.writekey).format is MutableFormat.MDMF


def test_small_segments_and_salt_count() -> None:
    """A caller-chosen segment size gives many segments; the salt count must match."""
    plaintext = bytes(range(256)) * 4
    assert salts_needed(MutableFormat.MDMF, len(plaintext), 3, 99) == 11
    assert salts_needed(MutableFormat.MDMF, 0, 3) == 0
    assert salts_needed(MutableFormat.SDMF, 0, 3) == 1
    salts = [bytes([i]) * 16 for i in range(11)]
    encoded = encode_mdmf(plaintext, FIXED_KEYS, seqnum=5, needed=3, total=5, salts=salts,
                          pss_salt=bytes(32), segment_size=99)
    shares = {s.shnum: s.data for s in encoded.shares}
    assert decode_shares(FIXED_KEYS.readkey, FIXED_KEYS.fingerprint, shares).plaintext == plaintext
    header = mdmf.parse_header(shares[0])
    assert header.block_range(10) == (2167 + 10 * (16 + 33), 16 + 12)  # 34 bytes left
    with pytest.raises(IndexError):
        header.block_range(11)
    for bad in (dict(salts=salts[:-1]), dict(salts=salts, segment_size=100),
                dict(salts=[b"x"] * 11)):
        kwargs = dict(salts=salts, segment_size=99) | bad
        with pytest.raises(BadEncodingParameters):
            encode_mdmf(plaintext, FIXED_KEYS, seqnum=5, needed=3, total=5,
                        pss_salt=bytes(32), **kwargs)  # type: ignore[arg-type]


def test_share_data_must_match_the_geometry() -> None:
    """Share data longer than the segments need is a layout error."""
    data = bytearray(ENCODED[0].shares[0].data)
    header = mdmf.parse_header(bytes(data))
    offsets = list(header.offsets.as_tuple())
    offsets[6] += 32
    offsets[7] += 32
    data[59:123] = mdmf.OFFSETS.pack(*offsets)
    with pytest.raises(LayoutInvalid):
        mdmf.parse_share(bytes(data) + bytes(32))

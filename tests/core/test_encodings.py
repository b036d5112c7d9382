"""base32, netstrings, SHA-256d, tagged hashes, keys and AES-CTR against the primitive vectors."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.crypto.aes import AESCTRStream, aes_ctr
from tahoe.immutable.keys import ConvergentKeyHasher, convergence_tag, convergent_key
from tahoe.immutable.params import SegmentGeometry
from tahoe.util import base32, hashutil
from tahoe.util.errors import BadBase32, BadNetstring
from tahoe.util.netstring import netstring, split_netstring
from tests.vectors import load, pattern_plaintext

PRIMITIVES = load("immutable-primitives.json")


@pytest.mark.parametrize("example", PRIMITIVES["base32"]["examples"], ids=lambda e: e["base32"])
def test_base32_examples(example: dict) -> None:
    """Encoding and strict decoding reproduce every base32 example."""
    data = bytes.fromhex(example["bytes_hex"])
    assert base32.b2a(data) == example["base32"]
    assert base32.a2b(example["base32"]) == data


@given(st.binary(max_size=200))
@settings(deadline=None)
def test_base32_round_trip(data: bytes) -> None:
    """Any bytes survive b2a then a2b, and the text has the predicted length."""
    text = base32.b2a(data)
    assert len(text) == base32.encoded_length(len(data))
    assert base32.a2b(text) == data


@pytest.mark.parametrize("bad", ["A", "aA", "a", "aaa", "aaaaaa", "ab", "a1", "a=", "ac"])
def test_base32_rejects_non_canonical(bad: str) -> None:
    """Upper case, foreign characters, impossible lengths and set trailing bits are refused."""
    with pytest.raises(BadBase32):
        base32.a2b(bad)


@pytest.mark.parametrize("case", PRIMITIVES["netstring"], ids=lambda c: c["netstring_ascii"][:20])
def test_netstring_examples(case: dict) -> None:
    """netstring() matches the vectors and split_netstring() reads them back."""
    data = bytes.fromhex(case["input_hex"])
    wrapped = netstring(data)
    assert wrapped.hex() == case["netstring_hex"]
    assert split_netstring(wrapped) == (data, len(wrapped))


@pytest.mark.parametrize("bad", [b"", b"3:ab,", b"2:ab;", b"x:ab,", b"2ab,", b"-1:,"])
def test_netstring_rejects_malformed(bad: bytes) -> None:
    """Truncated, unterminated or non-decimal netstrings raise BadNetstring."""
    with pytest.raises(BadNetstring):
        split_netstring(bad)


@pytest.mark.parametrize("case", PRIMITIVES["sha256d"], ids=lambda c: c["input_ascii"])
def test_sha256d(case: dict) -> None:
    """SHA-256d matches the vectors."""
    assert hashutil.sha256d(case["input_ascii"].encode()).hex() == case["sha256d_hex"]


@pytest.mark.parametrize("case", PRIMITIVES["tagged_hashes"], ids=lambda c: c["name"])
def test_every_tag(case: dict) -> None:
    """Each immutable tag is spelled as in Tahoe and its tagged and pair hashes match."""
    tag = hashutil.IMMUTABLE_TAGS.get(case["name"], case["tag_ascii"].encode())
    assert tag == case["tag_ascii"].encode()
    assert hashutil.tagged_hash(tag, b"test value").hex() == \
        case["tagged_hash_of_ascii_test_value_hex"]
    assert hashutil.tagged_pair_hash(tag, b"a", b"bc").hex() == \
        case["tagged_pair_hash_of_a_and_bc_hex"]
    assert netstring(tag) + b"test value" == case["hashed_bytes_ascii"].encode()


def test_all_tags_covered() -> None:
    """The vectors cover every tag we define, and we define every tag they list."""
    assert {c["tag_ascii"].encode() for c in PRIMITIVES["tagged_hashes"]} == \
        set(hashutil.IMMUTABLE_TAGS.values())


def test_single_purpose_hash_examples() -> None:
    """Block, segment, flat crypttext and UEB hashes match their examples."""
    p = PRIMITIVES
    assert hashutil.block_hash(p["block_hash_example"]["block_ascii"].encode()).hex() == \
        p["block_hash_example"]["hash_hex"]
    assert hashutil.crypttext_segment_hash(
        p["crypttext_segment_hash_example"]["segment_ascii"].encode()).hex() == \
        p["crypttext_segment_hash_example"]["hash_hex"]
    flat = hashutil.crypttext_hasher()
    flat.update(p["crypttext_hash_example"]["crypttext_ascii"].encode())
    assert flat.digest().hex() == p["crypttext_hash_example"]["hash_hex"]
    assert hashutil.uri_extension_hash(p["uri_extension_hash_example"]["ueb_ascii"].encode()
                                       ).hex() == p["uri_extension_hash_example"]["hash_hex"]


@pytest.mark.parametrize("case", PRIMITIVES["storage_index_from_key"], ids=lambda c: c["key_hex"])
def test_storage_index_from_key(case: dict) -> None:
    """The storage index is the truncated tagged hash of the key."""
    si = hashutil.storage_index_from_key(bytes.fromhex(case["key_hex"]))
    assert si.hex() == case["storage_index_hex"]
    assert base32.b2a(si) == case["storage_index_base32"]


@pytest.mark.parametrize("case", PRIMITIVES["convergent_keys"],
                         ids=lambda c: f"{c['plaintext_size']}-{c['segment_size']}")
def test_convergent_keys(case: dict) -> None:
    """The extended tag, the hashed prefix and the key match, fed whole or in pieces."""
    secret = bytes.fromhex(case["convergence_secret_hex"])
    tag = convergence_tag(secret, case["k"], case["n"], case["segment_size"])
    assert tag.hex() == case["tag_hex"]
    assert netstring(tag).hex() == case["hash_input_prefix_hex"]
    geometry = SegmentGeometry.from_segment_size(case["plaintext_size"], case["k"], case["n"],
                                                 case["segment_size"])
    if case["plaintext"].startswith("ascii "):
        plaintext = case["plaintext"].removeprefix("ascii ").encode()
    else:
        plaintext = pattern_plaintext(case["plaintext_size"])
    assert len(plaintext) == case["plaintext_size"]
    assert convergent_key(secret, geometry, plaintext).hex() == case["key_hex"]
    hasher = ConvergentKeyHasher(secret, geometry)
    for start in range(0, len(plaintext), 1000):
        hasher.update(plaintext[start:start + 1000])
    assert hasher.key().hex() == case["key_hex"]


def test_aes_ctr_vector() -> None:
    """AES-128-CTR from a zero counter block matches the vector."""
    case = PRIMITIVES["aes128_ctr"]
    assert case["initial_counter_block_hex"] == "00" * 16
    ciphertext = aes_ctr(bytes.fromhex(case["key_hex"]), pattern_plaintext(100))
    assert ciphertext.hex() == case["ciphertext_hex"]


@given(st.binary(min_size=16, max_size=16), st.binary(max_size=300), st.integers(0, 300))
@settings(deadline=None)
def test_aes_ctr_at_any_offset(key: bytes, data: bytes, offset: int) -> None:
    """Decrypting from a byte offset gives the same bytes as the whole stream's slice."""
    whole = aes_ctr(key, bytes(offset) + data)
    assert aes_ctr(key, data, offset) == whole[offset:]
    stream = AESCTRStream(key, offset)
    pieces = stream.process(data[:7]) + stream.process(data[7:])
    assert pieces == whole[offset:]


@given(st.sampled_from([16, 32]).flatmap(lambda n: st.binary(min_size=n, max_size=n)),
       st.binary(max_size=300), st.integers(0, 2**40))
@settings(deadline=None)
def test_aes_ctr_as_pycryptodome(key: bytes, data: bytes, offset: int) -> None:
    """AES-128 and AES-256 (mutable files) CTR at any offset, far ones included, give
    pycryptodome's bytes (the library the keystream came from before)."""
    from Crypto.Cipher import AES
    block, skip = divmod(offset, 16)
    theirs = AES.new(key, AES.MODE_CTR, nonce=b"", initial_value=block).encrypt(
        bytes(skip) + data)[skip:]
    assert aes_ctr(key, data, offset) == theirs

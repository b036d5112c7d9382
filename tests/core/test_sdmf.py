"""SDMF shares: layout, encoding and decoding against mutable-sdmf-share.json and -empty.json."""
from __future__ import annotations

import itertools

import pytest

from tahoe.crypto.aes import aes_ctr
from tahoe.mutable import layout, sdmf
from tahoe.mutable.encoder import encode_sdmf
from tahoe.mutable.errors import LayoutInvalid, ShareTruncated, UnknownShareVersion
from tahoe.mutable.hashes import block_hash_tree, block_leaf
from tahoe.mutable.keys import data_key
from tahoe.mutable.reader import check_header, decode_shares, verify_share
from tests.core.test_mutable_keys import FIXED_KEYS
from tests.vectors import load

CASES = {"51-bytes": load("mutable-sdmf-share.json"), "empty": load("mutable-sdmf-empty.json")}


def encode(case: dict):  # type: ignore[no-untyped-def]
    """Encode a vector's inputs with its fixed IV and PSS salt."""
    inputs = case["inputs"]
    return encode_sdmf(bytes.fromhex(inputs["plaintext_hex"]), FIXED_KEYS,
                       seqnum=inputs["seqnum"], needed=inputs["k"], total=inputs["N"],
                       iv=bytes.fromhex(inputs["IV_hex"]),
                       pss_salt=bytes.fromhex(inputs["pss_salt_hex"]))


@pytest.mark.parametrize("name", CASES)
def test_every_share_is_byte_identical(name: str) -> None:
    """With the vector's IV and PSS salt every share equals Tahoe's, byte for byte."""
    case = CASES[name]
    encoded = encode(case)
    assert len(encoded.shares) == len(case["all_shares_hex"])
    for shnum, share_hex in case["all_shares_hex"].items():
        share = encoded.shares[int(shnum)]
        assert share.shnum == int(shnum)
        assert share.data.hex() == share_hex
        assert share.write_vectors == ((0, share.data),)
    assert encoded.root_hash.hex() == case["intermediate"]["root_hash_hex"]
    assert encoded.version.signed_prefix.hex() == case["signed_prefix_hex"]


@pytest.mark.parametrize("name", CASES)
def test_intermediate_values(name: str) -> None:
    """Data key, ciphertext, blocks, trees, chains and signature agree with the vector."""
    case = CASES[name]
    inter = case["intermediate"]
    plaintext = bytes.fromhex(case["inputs"]["plaintext_hex"])
    key = data_key(bytes.fromhex(case["inputs"]["IV_hex"]), FIXED_KEYS.readkey)
    assert key.hex() == inter["data_key_hex"]
    assert aes_ctr(key, plaintext).hex() == inter["ciphertext_hex"]
    shares = {int(n): sdmf.parse_share(bytes.fromhex(h)) for n, h in case["all_shares_hex"].items()}
    for shnum, share in shares.items():
        assert share.block.hex() == inter["blocks_hex"][shnum]
        assert [h.hex() for h in share.block_hash_tree] == inter["block_hash_trees_hex"][shnum]
        expected = {e["index"]: e["hash_hex"] for e in inter["share_hash_chains"][str(shnum)]}
        assert {i: h.hex() for i, h in share.share_hash_chain.items()} == expected
        assert share.header.signed_prefix.hex() == case["signed_prefix_hex"]
        assert share.signature.hex() == case["signature_hex"]
        FIXED_KEYS.verifying_key.verify(share.header.signed_prefix, share.signature)
        assert share.enc_privkey == FIXED_KEYS.encrypted_private_key
    leaves = [block_hash_tree([block_leaf(s.block)] if plaintext else [])[0]
              for _, s in sorted(shares.items())]
    assert [leaf.hex() for leaf in leaves] == inter["share_hash_tree_leaves_hex"]
    assert [n.hex() for n in block_hash_tree(leaves)] == inter["share_hash_tree_all_nodes_hex"]
    assert inter["segment_size"] == shares[0].header.segment_size


@pytest.mark.parametrize("name", CASES)
def test_share0_header_and_regions(name: str) -> None:
    """Share 0's header fields and region offsets are the vector's."""
    case = CASES[name]
    share0 = case["share0"]
    data = bytes.fromhex(share0["hex"])
    header = layout.parse_header(data)
    assert isinstance(header, sdmf.SDMFHeader)
    fields = share0["header"]
    assert (0, header.seqnum, header.root_hash.hex(), header.iv.hex(), header.needed,
            header.total, header.segment_size, header.data_length) == (
        fields["version"], fields["seqnum"], fields["root_hash"], fields["IV"], fields["k"],
        fields["N"], fields["segsize"], fields["datalen"])
    offsets = header.offsets
    assert (offsets.signature, offsets.share_hash_chain, offsets.block_hash_tree,
            offsets.share_data, offsets.enc_privkey, offsets.eof) == tuple(
        fields[k] for k in ("o_signature", "o_share_hash_chain", "o_block_hash_tree",
                            "o_share_data", "o_enc_privkey", "o_EOF"))
    assert header.pack() == data[:sdmf.HEADER_SIZE]
    regions = {"header": (0, sdmf.HEADER_SIZE),
               "verification_key": header.verification_key_range(),
               "signature": header.signature_range(),
               "share_hash_chain": header.share_hash_chain_range(),
               "block_hash_tree": header.block_hash_tree_range(),
               "share_data": header.share_data_range(),
               "enc_privkey": header.enc_privkey_range()}
    for region in share0["regions"]:
        assert regions[region["name"]] == (region["offset"], region["length"])
        start = region["offset"]
        assert data[start:start + region["length"]].hex() == region["hex"]
    assert list(header.signature_range()) == [share0["signature_range"][0],
                                              share0["signature_range"][1] - share0["signature_range"][0]]
    assert header.offsets.eof == share0["total_length"] == len(data)
    assert header.checkstring == data[:57]


@pytest.mark.parametrize("name", CASES)
def test_decodes_from_any_k_shares(name: str) -> None:
    """Any 3 of the 10 vector shares give back the plaintext with the read cap's keys."""
    case = CASES[name]
    shares = {int(n): bytes.fromhex(h) for n, h in case["all_shares_hex"].items()}
    plaintext = bytes.fromhex(case["inputs"]["plaintext_hex"])
    for chosen in itertools.combinations(range(10), 3):
        result = decode_shares(FIXED_KEYS.readkey, FIXED_KEYS.fingerprint,
                               {n: shares[n] for n in chosen})
        assert result.plaintext == plaintext and result.used == chosen
    for shnum, data in shares.items():
        version = verify_share(shnum, data, FIXED_KEYS.fingerprint, FIXED_KEYS.writekey)
        assert version.seqnum == 1 and version.format.name == "SDMF"


def test_stale_bytes_after_eof_are_ignored() -> None:
    """A share followed by leftovers of a longer old version still reads and verifies."""
    case = CASES["51-bytes"]
    shares = {int(n): bytes.fromhex(h) + b"\xff" * 500 for n, h in case["all_shares_hex"].items()}
    result = decode_shares(FIXED_KEYS.readkey, FIXED_KEYS.fingerprint, shares)
    assert result.plaintext == bytes.fromhex(case["inputs"]["plaintext_hex"])
    verify_share(4, shares[4], FIXED_KEYS.fingerprint, FIXED_KEYS.writekey)


def test_header_errors() -> None:
    """Short data, another version byte or backwards offsets raise our layout errors."""
    data = bytes.fromhex(CASES["51-bytes"]["all_shares_hex"]["0"])
    with pytest.raises(ShareTruncated) as info:
        sdmf.parse_header(data[:100])
    assert info.value.needed == sdmf.HEADER_SIZE
    with pytest.raises(UnknownShareVersion):
        sdmf.parse_header(b"\x01" + data[1:])
    with pytest.raises(UnknownShareVersion):
        layout.parse_header(b"\x07" + data[1:])
    backwards = bytearray(data)
    backwards[79:83] = (100).to_bytes(4, "big")
    with pytest.raises(LayoutInvalid, match="share hash chain"):
        sdmf.parse_header(bytes(backwards))
    with pytest.raises(ShareTruncated):
        sdmf.parse_share(data[:-1])


def test_probe_of_the_first_bytes() -> None:
    """The servermap's probe: a header check needs the key and signature, then passes."""
    data = bytes.fromhex(CASES["51-bytes"]["all_shares_hex"]["3"])
    with pytest.raises(ShareTruncated) as info:
        check_header(3, data[:500], FIXED_KEYS.fingerprint)
    assert info.value.needed == 657
    checked = check_header(3, data[:657], FIXED_KEYS.fingerprint)
    assert checked.version.checkstring == data[:57]
    again = check_header(3, data, FIXED_KEYS.fingerprint, checked.verifying_key)
    assert again.version == checked.version


def test_pack_share_checks_the_offsets() -> None:
    """Regions whose lengths disagree with the header's offsets are refused."""
    share = sdmf.parse_share(bytes.fromhex(CASES["51-bytes"]["all_shares_hex"]["0"]))
    with pytest.raises(LayoutInvalid):
        sdmf.pack_share(share.header, share.verification_key, share.signature, b"",
                        b"".join(share.block_hash_tree), share.block, share.enc_privkey)

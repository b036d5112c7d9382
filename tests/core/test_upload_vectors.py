"""Every whole-file vector is rebuilt byte for byte: caps, trees, UEB, every share."""
from __future__ import annotations

import hashlib
from functools import cache

import pytest

from tahoe.crypto.aes import aes_ctr
from tahoe.crypto.lease_secrets import ClientLeaseSecrets
from tahoe.immutable.decoder import decode_bytes
from tahoe.immutable.encoder import EncodedTrailer, ImmutableEncoder, encode_bytes, iter_segments
from tahoe.immutable.keys import ConvergentKeyHasher, convergence_tag
from tahoe.immutable.layout import chain_length, parse_chain, parse_header
from tahoe.immutable.params import EncodingParameters
from tahoe.immutable.ueb import parse_fields
from tahoe.util import base32
from tahoe.util.netstring import netstring
from tests.vectors import pattern_plaintext, upload_cases

CASES = upload_cases()
CHK_CASES = [(name, case) for name, case in CASES if case["kind"] == "CHK"]
ids = [name for name, _ in CASES]
chk_ids = [name for name, _ in CHK_CASES]


def params_of(case: dict) -> EncodingParameters:
    """The encoding parameters a case was made with."""
    e = case["encoding"]
    return EncodingParameters(e["k"], e["happy"], e["n"], e["max_segment_size"])


@cache
def encoded(name: str) -> tuple[ImmutableEncoder, EncodedTrailer, list[bytes]]:
    """Encode a case with the streaming encoder; return it, its trailer and the full shares."""
    case = dict(CASES)[name]
    plaintext = pattern_plaintext(case["plaintext"]["size"])
    params = params_of(case)
    geometry = params.geometry(len(plaintext))
    hasher = ConvergentKeyHasher(bytes.fromhex(case["convergence_secret_hex"]), geometry)
    hasher.update(plaintext)
    encoder = ImmutableEncoder(hasher.key(), len(plaintext), params,
                               force_v2="forced-v2" in case["name"])
    shares = [bytearray(encoder.header) for _ in range(params.total)]
    for segment in iter_segments(plaintext, geometry):
        out = encoder.encode_segment(segment)
        for shnum, block in enumerate(out.blocks):
            assert len(shares[shnum]) == out.share_offset
            shares[shnum] += block
    trailer = encoder.finish()
    for shnum, share in enumerate(shares):
        assert len(share) == trailer.tail_offset
        share += trailer.tail(shnum)
    return encoder, trailer, [bytes(s) for s in shares]


@pytest.mark.parametrize("name,case", CASES, ids=ids)
def test_read_cap(name: str, case: dict) -> None:
    """The in-memory encoder gives the vector's read cap (LIT and CHK)."""
    plaintext = pattern_plaintext(case["plaintext"]["size"])
    assert hashlib.sha256(plaintext).hexdigest() == case["plaintext"]["sha256"]
    result = encode_bytes(plaintext, bytes.fromhex(case["convergence_secret_hex"]),
                          params_of(case), force_v2="forced-v2" in case["name"])
    assert result.cap.to_string() == case["read_cap"]
    if case["kind"] == "CHK":
        assert result.shares == encoded(name)[2]
    else:
        assert result.shares == []


@pytest.mark.parametrize("name,case", CHK_CASES, ids=chk_ids)
def test_keys_and_sizes(name: str, case: dict) -> None:
    """Key, storage index, convergence tag, verify cap and every size match."""
    encoder, trailer, shares = encoded(name)
    g = encoder.geometry
    assert encoder.key.hex() == case["key_hex"]
    assert base32.b2a(encoder.key) == case["key_base32"]
    assert encoder.storage_index.hex() == case["storage_index_hex"]
    assert base32.b2a(encoder.storage_index) == case["storage_index_base32"]
    tag = convergence_tag(bytes.fromhex(case["convergence_secret_hex"]), g.needed, g.total,
                          g.segment_size)
    assert tag.hex() == case["convergence_hash_tag_hex"]
    assert netstring(tag).hex() == case["convergence_hash_input_prefix_hex"]
    assert trailer.verify_cap.to_string() == case["verify_cap"]
    sizes = case["sizes"]
    assert (g.segment_size, g.num_segments, g.block_size, g.tail_size, g.tail_padded,
            g.tail_block_size, g.share_data_size) == (
        sizes["segment_size"], sizes["num_segments"], sizes["block_size"],
        sizes["tail_segment_size"], sizes["tail_segment_padded"], sizes["tail_block_size"],
        sizes["share_data_size"])
    assert encoder.share_length == sizes["share_length"]
    assert encoder.ueb_length == sizes["uri_extension_length"]
    assert chain_length(g.total) == sizes["num_share_hashes_per_share"]


@pytest.mark.parametrize("name,case", CHK_CASES, ids=chk_ids)
def test_ciphertext_trees_and_ueb(name: str, case: dict) -> None:
    """Ciphertext, segment hashes, all three trees and the UEB bytes and hash match."""
    encoder, trailer, _ = encoded(name)
    plaintext = pattern_plaintext(case["plaintext"]["size"])
    ciphertext = aes_ctr(encoder.key, plaintext)
    assert hashlib.sha256(ciphertext).hexdigest() == case["ciphertext"]["sha256"]
    assert ciphertext[:64].hex() == case["ciphertext"]["first_64_bytes_hex"]
    if "full_hex" in case["ciphertext"]:
        assert ciphertext.hex() == case["ciphertext"]["full_hex"]
    leaves = trailer.crypttext_tree[len(trailer.crypttext_tree) // 2:]
    assert [h.hex() for h in leaves[:encoder.geometry.num_segments]] == \
        case["crypttext_segment_hashes_hex"]
    assert [h.hex() for h in trailer.crypttext_tree] == case["crypttext_hash_tree_nodes_hex"]
    assert [h.hex() for h in trailer.share_tree] == case["share_hash_tree_nodes_hex"]
    assert [h.hex() for h in trailer.block_trees[0]] == case["block_hash_tree_nodes_hex_share0"]
    ueb = case["uri_extension"]
    assert trailer.ueb_bytes.hex() == ueb["serialized_hex"]
    assert trailer.ueb.hash().hex() == ueb["uri_extension_hash_hex"]
    assert base32.b2a(trailer.ueb.hash()) == ueb["uri_extension_hash_base32"]
    fields = parse_fields(trailer.ueb_bytes)
    expected = {k: (bytes.fromhex(v) if k.endswith("hash") else
                    v.encode() if isinstance(v, str) else v) for k, v in ueb["fields"].items()}
    assert fields == expected


@pytest.mark.parametrize("name,case", CHK_CASES, ids=chk_ids)
def test_every_share(name: str, case: dict) -> None:
    """Each share's length, SHA-256, header, chain, block hashes and bytes match."""
    _, _, shares = encoded(name)
    assert len(shares) == len(case["shares"])
    for shnum_text, expected in case["shares"].items():
        share = shares[int(shnum_text)]
        assert len(share) == expected["length"]
        assert hashlib.sha256(share).hexdigest() == expected["sha256"]
        header = parse_header(share)
        assert share[:header.header_size].hex() == expected["header_hex"]
        assert {name: getattr(header, name) for name in expected["header"]} == expected["header"]
        chain = parse_chain(share[header.share_hashes:header.uri_extension])
        assert [[i, h.hex()] for i, h in chain] == expected["share_hash_chain"]
        blocks_end = header.share_hashes
        block_nodes = share[header.block_hashes:blocks_end]
        leaves_start = len(block_nodes) // 64 * 32
        num_segments = len(expected["block_hashes_hex"])
        assert [block_nodes[leaves_start + 32 * i:leaves_start + 32 * (i + 1)].hex()
                for i in range(num_segments)] == expected["block_hashes_hex"]
        if "metadata_hex" in expected:
            assert share[header.plaintext_hash_tree:].hex() == expected["metadata_hex"]
        if "full_hex" in expected:
            assert share.hex() == expected["full_hex"]


@pytest.mark.parametrize("name,case", CHK_CASES, ids=chk_ids)
def test_lease_secrets_sent(name: str, case: dict) -> None:
    """The lease secrets the share-0 server received follow from the node's secret."""
    sent = case["lease_secrets_sent_with_share_0"]
    encoder, _, _ = encoded(name)
    client = ClientLeaseSecrets.from_lease_secret(bytes.fromhex(sent["lease_secret_hex"]))
    secrets = client.for_server(encoder.storage_index, bytes.fromhex(sent["server_lease_seed_hex"]))
    assert secrets.renew.hex() == sent["renew_secret_hex"]
    assert secrets.cancel.hex() == sent["cancel_secret_hex"]


@pytest.mark.parametrize("name,case", CHK_CASES, ids=chk_ids)
def test_vector_shares_decode(name: str, case: dict) -> None:
    """The last k shares of each vector decode back to the plaintext."""
    _, trailer, shares = encoded(name)
    k = trailer.read_cap.needed
    chosen = {shnum: shares[shnum] for shnum in range(len(shares))[-k:]}
    assert decode_bytes(trailer.read_cap, chosen) == pattern_plaintext(case["plaintext"]["size"])

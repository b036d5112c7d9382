"""The verifying decoder rebuilds files from any k shares and never returns wrong bytes."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tahoe.caps.immutable import CHKReadCap
from tahoe.immutable.decoder import ShareDecoder, decode_bytes, verify_share
from tahoe.immutable.encoder import ImmutableEncoder, encode_bytes
from tahoe.immutable.errors import BadEncodingParameters, NotEnoughShares
from tahoe.immutable.layout import pack_chain, parse_chain, parse_header
from tahoe.immutable.params import EncodingParameters
from tests.strategies import encoding_parameters

SECRET = bytes(range(32))
SLOW = settings(deadline=None, max_examples=60,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def encode(size: int, params: EncodingParameters, seed: int = 1) -> tuple[bytes, CHKReadCap,
                                                                         list[bytes]]:
    """Encode a deterministic pseudo-random plaintext of ``size`` bytes."""
    plaintext = bytes((i * 131 + seed * 7 + (i >> 8)) % 256 for i in range(size))
    result = encode_bytes(plaintext, SECRET, params)
    assert isinstance(result.cap, CHKReadCap)
    return plaintext, result.cap, result.shares


@given(encoding_parameters(), st.integers(56, 6000), st.data())
@SLOW
def test_round_trip_from_any_k(params: EncodingParameters, size: int, data: st.DataObject) -> None:
    """Any k shares rebuild the file, and every share passes the full verifier."""
    plaintext, cap, shares = encode(size, params)
    chosen = data.draw(st.lists(st.sampled_from(range(params.total)), min_size=params.needed,
                                max_size=params.needed, unique=True))
    assert decode_bytes(cap, {n: shares[n] for n in chosen}) == plaintext
    shnum = data.draw(st.sampled_from(range(params.total)))
    assert verify_share(cap, shnum, shares[shnum]) == []


@given(encoding_parameters(), st.integers(56, 6000), st.integers(0, 7000), st.integers(0, 7000))
@SLOW
def test_ranged_reads(params: EncodingParameters, size: int, offset: int, length: int) -> None:
    """A ranged read returns exactly that slice of the plaintext."""
    plaintext, cap, shares = encode(size, params)
    decoder = ShareDecoder(cap, dict(enumerate(shares)))
    assert b"".join(decoder.read(offset, length)) == plaintext[offset:offset + length]


@given(encoding_parameters(max_total=6), st.integers(56, 3000), st.data())
@SLOW
def test_any_flipped_byte_is_detected(params: EncodingParameters, size: int,
                                      data: st.DataObject) -> None:
    """Flipping any byte of any share is reported by the verifier and never yields wrong bytes."""
    plaintext, cap, shares = encode(size, params)
    shnum = data.draw(st.integers(0, params.total - 1))
    position = data.draw(st.integers(0, len(shares[shnum]) - 1))
    bit = data.draw(st.integers(0, 7))
    damaged = bytearray(shares[shnum])
    damaged[position] ^= 1 << bit
    assert verify_share(cap, shnum, bytes(damaged)) != []
    others = [n for n in range(params.total) if n != shnum]
    chosen = {shnum: bytes(damaged)}
    chosen.update({n: shares[n] for n in others[:params.needed - 1]})
    try:
        assert decode_bytes(cap, chosen) == plaintext
    except NotEnoughShares:
        pass
    if len(others) >= params.needed:
        chosen.update({n: shares[n] for n in others[:params.needed]})
        assert decode_bytes(cap, chosen) == plaintext


def test_corrupt_share_is_named_and_bypassed() -> None:
    """A share with a damaged block is reported and another share is used instead."""
    plaintext, cap, shares = encode(10_000, EncodingParameters(3, 7, 10, 4096))
    damaged = bytearray(shares[0])
    damaged[parse_header(shares[0]).data + 1366 + 10] ^= 0xFF
    decoder = ShareDecoder(cap, {0: bytes(damaged), 1: shares[1], 2: shares[2], 9: shares[9]})
    assert b"".join(decoder.read()) == plaintext
    assert set(decoder.corrupt) == {0}
    assert "segment 1" in decoder.corrupt[0]


def test_bad_block_with_only_k_shares_fails() -> None:
    """With exactly k shares and one bad block, the download fails rather than lie."""
    _, cap, shares = encode(3000, EncodingParameters(3, 7, 10, 1024))
    damaged = bytearray(shares[4])
    damaged[parse_header(shares[4]).data] ^= 1
    with pytest.raises(NotEnoughShares) as info:
        decode_bytes(cap, {4: bytes(damaged), 5: shares[5], 6: shares[6]})
    assert 4 in info.value.bad


def test_reversed_chain_is_accepted() -> None:
    """Readers accept share-hash-chain entries in any order."""
    plaintext, cap, shares = encode(1000, EncodingParameters(2, 2, 5, 131072))
    reordered = {}
    for shnum in (2, 3):
        header = parse_header(shares[shnum])
        chain = parse_chain(shares[shnum][header.share_hashes:header.uri_extension])
        reordered[shnum] = (shares[shnum][:header.share_hashes] + pack_chain(chain[::-1])
                            + shares[shnum][header.uri_extension:])
    assert decode_bytes(cap, reordered) == plaintext


def test_corrupt_uebs() -> None:
    """A share whose UEB is damaged is dropped; if every UEB is damaged the download fails."""
    plaintext, cap, shares = encode(500, EncodingParameters(3, 7, 10, 131072))

    def spoil(share: bytes) -> bytes:
        spoilt = bytearray(share)
        spoilt[-3] ^= 1
        return bytes(spoilt)

    decoder = ShareDecoder(cap, {0: spoil(shares[0]), 1: shares[1], 2: shares[2], 3: shares[3]})
    assert b"".join(decoder.read()) == plaintext
    assert "UEB" in decoder.corrupt[0]
    with pytest.raises(NotEnoughShares):
        decode_bytes(cap, {n: spoil(shares[n]) for n in range(10)})


def test_wrong_cap_never_decodes() -> None:
    """Shares of one file are all rejected under another file's cap."""
    _, cap_a, _ = encode(500, EncodingParameters(), seed=1)
    _, _, shares_b = encode(500, EncodingParameters(), seed=2)
    with pytest.raises(NotEnoughShares):
        decode_bytes(cap_a, dict(enumerate(shares_b)))


def test_v2_shares_round_trip() -> None:
    """Shares written with the 64-bit (v2) header decode like v1 ones."""
    plaintext = bytes(range(256)) * 20
    result = encode_bytes(plaintext, SECRET, EncodingParameters(3, 7, 10, 1000), force_v2=True)
    assert parse_header(result.shares[0]).version == 2
    assert decode_bytes(result.cap, {7: result.shares[7], 8: result.shares[8],
                                     9: result.shares[9]}) == plaintext


def test_encoder_refuses_wrong_segment_lengths() -> None:
    """The streaming encoder insists on each segment's exact length and count."""
    encoder = ImmutableEncoder(bytes(16), 100, EncodingParameters(3, 7, 10, 60))
    with pytest.raises(BadEncodingParameters):
        encoder.encode_segment(b"x" * 59)
    encoder.encode_segment(b"x" * 60)
    with pytest.raises(BadEncodingParameters):
        encoder.finish()
    encoder.encode_segment(b"x" * 40)
    with pytest.raises(BadEncodingParameters):
        encoder.encode_segment(b"x")


@given(st.lists(st.binary(min_size=0, max_size=500), min_size=1, max_size=8))
@settings(deadline=None)
def test_feed_in_any_pieces_equals_whole(pieces: list[bytes]) -> None:
    """Feeding plaintext in arbitrary pieces gives the same shares as segment-wise encoding."""
    plaintext = b"".join(pieces) + b"z" * 56
    params = EncodingParameters(3, 7, 10, 300)
    whole = encode_bytes(plaintext, SECRET, params)
    assert isinstance(whole.cap, CHKReadCap)
    encoder = ImmutableEncoder(whole.cap.key, len(plaintext), params)
    out = [bytearray(encoder.header) for _ in range(10)]
    for piece in pieces + [b"z" * 56]:
        for segment in encoder.feed(piece):
            for shnum, block in enumerate(segment.blocks):
                out[shnum] += block
    trailer = encoder.finish()
    assert [bytes(o) + trailer.tail(n) for n, o in enumerate(out)] == whole.shares

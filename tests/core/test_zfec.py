"""The segment codec reproduces zfec 1.6's Reed-Solomon vectors and decodes from any k."""
from __future__ import annotations

import hashlib
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.immutable.codec import SegmentCodec
from tahoe.immutable.errors import BadEncodingParameters
from tests.vectors import load

VECTORS = load("immutable-zfec.json")["vectors"]


def vector_pieces(case: dict) -> list[bytes]:
    """The vector's input pieces: piece p is ``(17p + 3i + 1) % 256`` for i < L."""
    length = case["piece_length"]
    return [bytes((17 * p + 3 * i + 1) % 256 for i in range(length)) for p in range(case["k"])]


@pytest.mark.parametrize("case", VECTORS, ids=lambda c: f"{c['k']}of{c['n']}")
def test_zfec_vectors(case: dict) -> None:
    """Encoding the vector's pieces gives its blocks; decoding the last k gives them back."""
    pieces = vector_pieces(case)
    if "pieces_hex" in case:
        assert [p.hex() for p in pieces] == case["pieces_hex"]
    codec = SegmentCodec(case["k"], case["n"])
    blocks = codec.encode(b"".join(pieces))
    if "blocks_hex" in case:
        assert [b.hex() for b in blocks] == case["blocks_hex"]
    else:
        assert hashlib.sha256(b"".join(blocks)).hexdigest() == case["blocks_sha256"]
        assert [b.hex() for b in blocks[case["k"]:]] == case["check_blocks_hex"]
    chosen = list(range(case["n"]))[-case["k"]:]
    assert codec.decode({i: blocks[i] for i in chosen}) == b"".join(pieces)


@pytest.mark.parametrize("case", [c for c in VECTORS if c["encoding_matrix_rows_k_to_n_minus_1"]],
                         ids=lambda c: f"{c['k']}of{c['n']}")
def test_coefficient_rows(case: dict) -> None:
    """Encoding unit pieces reads out the vector's coefficient rows (the Lagrange matrix)."""
    k, n = case["k"], case["n"]
    codec = SegmentCodec(k, n)
    columns = [codec.encode(b"".join(b"\x01" if p == i else b"\x00" for p in range(k)))
               for i in range(k)]
    rows = [[columns[i][j][0] for i in range(k)] for j in range(k, n)]
    assert rows == case["encoding_matrix_rows_k_to_n_minus_1"]


@given(st.integers(1, 12), st.integers(0, 12), st.integers(1, 50), st.data())
@settings(deadline=None)
def test_decode_from_any_k(k: int, extra: int, piece: int, data: st.DataObject) -> None:
    """Any k of the N blocks rebuild the segment."""
    n = min(256, k + extra)
    segment = data.draw(st.binary(min_size=k * piece, max_size=k * piece))
    codec = SegmentCodec(k, n)
    blocks = codec.encode(segment)
    chosen = data.draw(st.sampled_from(list(itertools.islice(itertools.combinations(range(n), k),
                                                             50))))
    assert codec.decode({i: blocks[i] for i in chosen}) == segment


def test_codec_refuses_bad_input() -> None:
    """Bad parameters, too few blocks and unequal blocks raise our error."""
    with pytest.raises(BadEncodingParameters):
        SegmentCodec(0, 3)
    with pytest.raises(BadEncodingParameters):
        SegmentCodec(4, 3)
    codec = SegmentCodec(2, 4)
    with pytest.raises(BadEncodingParameters):
        codec.encode(b"abc")
    with pytest.raises(BadEncodingParameters):
        codec.decode({0: b"ab"})
    with pytest.raises(BadEncodingParameters):
        codec.decode({0: b"ab", 3: b"abc"})

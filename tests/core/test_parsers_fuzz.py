"""Random garbage never crashes the share-layout and UEB parsers with anything but our errors."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.caps.immutable import CHKReadCap
from tahoe.immutable.decoder import ShareDecoder, verify_share
from tahoe.immutable.errors import ImmutableFormatError
from tahoe.immutable.layout import parse_chain, parse_hashes, parse_header
from tahoe.immutable.params import EncodingParameters
from tahoe.immutable.ueb import parse_fields
from tests.core.test_decoder import encode

_, CAP, SHARES = encode(3000, EncodingParameters(3, 7, 10, 1024))


@given(st.binary(max_size=200))
@settings(deadline=None)
def test_layout_parsers(garbage: bytes) -> None:
    """Header, chain and hash-list parsers raise only our format errors."""
    for parser in (parse_header, parse_chain, parse_hashes, parse_fields):
        try:
            parser(garbage)
        except ImmutableFormatError:
            pass


@given(st.binary(max_size=600))
@settings(deadline=None)
def test_ueb_parser_on_near_valid_input(tail: bytes) -> None:
    """UEB-like text with garbage appended raises only our errors."""
    try:
        parse_fields(b"codec_name:3:crs,size:2:56," + tail)
    except ImmutableFormatError:
        pass


@given(st.lists(st.tuples(st.integers(0, 12), st.binary(max_size=400)), max_size=5),
       st.integers(0, 2999))
@settings(deadline=None)
def test_decoder_on_garbage_shares(garbage: list[tuple[int, bytes]], offset: int) -> None:
    """Garbage shares mixed with good ones either decode correctly or fail with our error."""
    shares: dict[int, bytes] = {n: g for n, g in garbage}
    decoder = ShareDecoder(CAP, shares)
    try:
        b"".join(decoder.read(offset, 10))
    except ImmutableFormatError:
        pass
    for n, g in garbage:
        assert isinstance(verify_share(CAP, n, g), list)


@given(st.data())
@settings(deadline=None)
def test_garbage_spliced_into_a_real_share(data: st.DataObject) -> None:
    """A real share with a random region overwritten is never decoded into wrong bytes."""
    shnum = data.draw(st.integers(0, 9))
    share = bytearray(SHARES[shnum])
    start = data.draw(st.integers(0, len(share) - 1))
    junk = data.draw(st.binary(min_size=1, max_size=64))
    share[start:start + len(junk)] = junk
    others = {n: SHARES[n] for n in range(10) if n != shnum}
    chosen = {shnum: bytes(share), **dict(list(others.items())[:2])}
    try:
        out = b"".join(ShareDecoder(CAP, chosen).read())
    except ImmutableFormatError:
        return
    assert isinstance(CAP, CHKReadCap)
    assert out == b"".join(ShareDecoder(CAP, others).read())

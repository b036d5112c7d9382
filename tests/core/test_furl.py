"""Foolscap FURLs and tub ids parse, format and derive as Foolscap and Tahoe do."""
from __future__ import annotations

import ssl

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.util.errors import BadFURL, EncodingError
from tahoe.util.furl import (FURL, format_furl, is_valid_tubid, parse_furl, parse_hint,
                             tubid_from_bytes, tubid_from_certificate_der, tubid_to_bytes)
from tests.vectors import load

FOOLSCAP = load("storage-foolscap.json")
TUBID = "lwujyjtmhuvjr4xioqnvzr5f2mrdmpng"
SWISSNUM = "e2vgipj4zlpnzx3gsddqf77ir2ejhqlw"


def test_tubid_from_certificate() -> None:
    """The vector certificate's tub id is base32 of SHA-1 over its DER."""
    case = FOOLSCAP["tubid_from_certificate"]
    der = ssl.PEM_cert_to_DER_cert(case["certificate_pem"])
    assert tubid_from_certificate_der(der) == case["tubid"]


@pytest.mark.parametrize("case", FOOLSCAP["furl_parsing"], ids=lambda c: c["furl"][40:70])
def test_furl_parsing_vectors(case: dict) -> None:
    """Every FURL-parsing vector gives its tub id, hints and swissnum, and formats back."""
    furl = parse_furl(case["furl"])
    assert furl.tubid == case["tubid"]
    assert list(furl.hints) == case["hints"]
    assert furl.swissnum == case["swissnum"]
    assert furl.to_string() == case["furl"]
    assert parse_furl(case["furl"].encode()) == furl


def test_binary_tubid_is_the_lease_seed() -> None:
    """The binary tub id is the 20 base32-decoded bytes and converts back."""
    furl = parse_furl(f"pb://{TUBID}@tcp:127.0.0.1:1/{SWISSNUM}")
    assert len(furl.tubid_bytes) == 20
    assert furl.tubid_bytes == tubid_to_bytes(TUBID)
    assert tubid_from_bytes(furl.tubid_bytes) == TUBID


def test_hints() -> None:
    """Typed, legacy and IPv6 hints split into type, host and port."""
    assert parse_hint("tcp:example.org:3456") == parse_hint("tcp:example.org:3456")
    legacy = parse_hint("example.org:3456")
    assert (legacy.kind, legacy.host, legacy.port, legacy.is_legacy) == \
        ("tcp", "example.org", 3456, True)
    assert legacy.normalized() == "tcp:example.org:3456"
    typed = parse_hint("tcp:10.0.0.5:3456")
    assert (typed.host, typed.port, typed.is_legacy) == ("10.0.0.5", 3456, False)
    assert parse_hint("tcp:[::1]:3456").host == "[::1]"
    tor = parse_hint("tor:u33m4y7klhz3bypswqkozwetvabelhxt.onion:29212")
    assert (tor.kind, tor.host, tor.normalized()) == ("tor", None, tor.text)


@pytest.mark.parametrize("hint", ["", "tcp:", "tcp:host", "tcp:host:99999", "noport",
                                  "tcp:a:b:1", "a,b", "tcp:h/x:1"])
def test_bad_hints(hint: str) -> None:
    """Empty, typeless and malformed TCP hints are refused."""
    with pytest.raises(BadFURL):
        parse_hint(hint)


def test_tubid_extension_is_kept() -> None:
    """Characters after the 32nd of the tub-id field are kept, not counted."""
    text = f"pb://{TUBID}xyz@tcp:h:1/{SWISSNUM}"
    furl = parse_furl(text)
    assert (furl.tubid, furl.tubid_extension, furl.to_string()) == (TUBID, "xyz", text)


@pytest.mark.parametrize("text", [
    "", "pb://", f"pbu://{TUBID}@tcp:h:1/{SWISSNUM}", f"PB://{TUBID}@tcp:h:1/{SWISSNUM}",
    f"pb://{TUBID}tcp:h:1/{SWISSNUM}", f"pb://{TUBID}@tcp:h:1", f"pb://{TUBID}@tcp:h:1/",
    f"pb://{TUBID[:31]}@tcp:h:1/{SWISSNUM}", f"pb://{TUBID.upper()}@tcp:h:1/{SWISSNUM}",
    f"pb://{TUBID[:31]}1@tcp:h:1/{SWISSNUM}", f"pb://{TUBID}@tcp:h:1,/{SWISSNUM}",
    f"pb://{TUBID}@,tcp:h:1/{SWISSNUM}", f"pb://{TUBID}@tcp:h:1/{SWISSNUM}\n",
    f"pb://{TUBID}@tcp:h:1/swiss num", "pb://é@/x",
])
def test_malformed_furls(text: str) -> None:
    """Wrong scheme, missing parts, a bad tub id, empty hints or odd characters are refused."""
    with pytest.raises(BadFURL):
        parse_furl(text)


def test_tubid_validation() -> None:
    """A tub id is exactly 32 lower-case base32 characters."""
    assert is_valid_tubid(TUBID)
    for bad in (TUBID[:-1], TUBID + "a", TUBID.upper(), TUBID[:-1] + "0", b"x", None):
        assert not is_valid_tubid(bad)
    with pytest.raises(BadFURL):
        tubid_to_bytes(TUBID[:-1])
    with pytest.raises(BadFURL):
        tubid_from_bytes(bytes(19))


def test_construct_and_format() -> None:
    """A FURL value formats to the text its parts describe; bad parts are refused."""
    assert FURL(TUBID, [], SWISSNUM).to_string() == f"pb://{TUBID}@/{SWISSNUM}"
    assert format_furl(TUBID, ["tcp:a:1", "tcp:b:2"], "s") == f"pb://{TUBID}@tcp:a:1,tcp:b:2/s"
    with pytest.raises(BadFURL):
        FURL(TUBID, ["a,b"], SWISSNUM)
    with pytest.raises(BadFURL):
        FURL(TUBID, [], "")


@st.composite
def furls(draw: st.DrawFn) -> FURL:
    """Well-formed FURLs with random tub ids, hints and swissnums."""
    tubid = tubid_from_bytes(draw(st.binary(min_size=20, max_size=20)))
    host = st.from_regex(r"\A[a-z0-9.-]{1,20}\Z")
    hint = st.one_of(st.builds(lambda h, p: f"tcp:{h}:{p}", host, st.integers(0, 65535)),
                     st.builds(lambda h, p: f"{h}:{p}", host, st.integers(0, 65535)))
    swissnum = draw(st.from_regex(r"\A[a-z2-7]{1,40}\Z"))
    return FURL(tubid, draw(st.lists(hint, max_size=4)), swissnum)


@given(furl=furls())
@settings(deadline=None)
def test_furl_round_trip(furl: FURL) -> None:
    """Formatting then parsing a FURL gives back an equal value, with parseable hints."""
    assert parse_furl(furl.to_string()) == furl
    assert all(h.kind == "tcp" for h in furl.parsed_hints())


@given(garbage=st.one_of(st.text(max_size=120), st.binary(max_size=120),
                         st.text(max_size=80).map(lambda t: "pb://" + t)))
@settings(deadline=None)
def test_garbage_never_crashes_the_parser(garbage: str | bytes) -> None:
    """Random text raises only BadFURL, and whatever parses formats back to the same text."""
    try:
        furl = parse_furl(garbage)
    except BadFURL as e:
        assert isinstance(e, EncodingError)
        return
    text = garbage.decode() if isinstance(garbage, bytes) else garbage
    assert furl.to_string() == text

"""Immutable caps: parse and format as Tahoe 1.20 does, quirks included."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.caps.errors import CapError, MalformedCap, NotACap
from tahoe.caps.immutable import CHKReadCap, CHKVerifyCap, LiteralCap
from tahoe.caps.parse import parse_cap, parse_cap_lenient
from tahoe.caps.unknown import UnknownCap
from tests.strategies import immutable_caps
from tests.vectors import load

CAPS = load("immutable-caps.json")
CLASSES = {"CHKFileURI": CHKReadCap, "CHKFileVerifierURI": CHKVerifyCap}
KNOWN_PREFIXES = ("URI:CHK:", "URI:CHK-Verifier:", "URI:LIT:")


@pytest.mark.parametrize("case", CAPS["valid"], ids=lambda c: c.get("note", c["cap"])[:50])
def test_valid_caps(case: dict) -> None:
    """Valid caps parse to the right kind and fields and re-serialize canonically."""
    for parse in (parse_cap, parse_cap_lenient):
        cap = parse(case["cap"])
        assert isinstance(cap, CLASSES[case["class"]])
        assert cap.to_string() == case.get("reserialized", case["cap"].removeprefix("imm.")
                                           .removeprefix("ro."))
        if "key_hex" in case:
            assert cap.key.hex() == case["key_hex"]
        if "storage_index_hex" in case:
            assert cap.storage_index.hex() == case["storage_index_hex"]
        if "uri_extension_hash_hex" in case:
            assert cap.ueb_hash.hex() == case["uri_extension_hash_hex"]
        for name, attr in (("needed_shares", "needed"), ("total_shares", "total"),
                           ("size", "size")):
            if name in case:
                assert getattr(cap, attr) == case[name]
        if "verify_cap" in case:
            assert cap.verify_cap().to_string() == case["verify_cap"]


@pytest.mark.parametrize("case", CAPS["invalid"], ids=lambda c: c["why"])
def test_invalid_caps(case: dict) -> None:
    """Tahoe keeps invalid caps as unknown; our strict parser names the problem instead."""
    assert parse_cap_lenient(case["cap"]) == UnknownCap(case["cap"])
    if case["cap"].startswith(KNOWN_PREFIXES):
        with pytest.raises(MalformedCap) as info:
            parse_cap(case["cap"])
        assert info.value.problem
        assert info.value.kind in case["cap"]
    else:
        assert parse_cap(case["cap"]) == UnknownCap(case["cap"])


def test_malformed_cap_names_the_field() -> None:
    """The strict parser's message says which field is wrong."""
    good = CAPS["valid"][0]["cap"]
    with pytest.raises(MalformedCap, match="UEB hash"):
        parse_cap(good.replace("msca:", "mscb:"))
    with pytest.raises(MalformedCap, match="key"):
        parse_cap(good.replace("k45u:", "k45b:"))
    with pytest.raises(MalformedCap, match="size"):
        parse_cap(good[:-2] + "x6")
    with pytest.raises(MalformedCap, match="5 fields"):
        parse_cap(good + ":5")


@pytest.mark.parametrize("case", CAPS["lit"], ids=lambda c: c["cap"][:20])
def test_lit_caps(case: dict) -> None:
    """LIT caps carry their data in base32."""
    data = bytes.fromhex(case["data_hex"])
    assert LiteralCap(data).to_string() == case["cap"]
    assert parse_cap(case["cap"]) == LiteralCap(data)


def test_unknown_kinds_keep_their_text() -> None:
    """A cap of a kind we do not know keeps its exact text."""
    text = "URI:SOMETHING-NEW:abc:def"
    assert parse_cap(text).to_string() == text
    assert parse_cap(text.encode()) == UnknownCap(text)


def test_non_text_is_refused() -> None:
    """Non-ASCII bytes and non-strings raise NotACap."""
    with pytest.raises(NotACap):
        parse_cap(b"URI:\xff")
    with pytest.raises(NotACap):
        parse_cap(42)  # type: ignore[arg-type]


@given(immutable_caps(), st.sampled_from(["", "imm.", "ro."]))
@settings(deadline=None)
def test_caps_round_trip(cap: CHKReadCap | CHKVerifyCap | LiteralCap, prefix: str) -> None:
    """Formatting then parsing a cap gives back an equal value."""
    assert parse_cap(prefix + cap.to_string()) == cap


@given(st.one_of(st.text(max_size=200), st.binary(max_size=200),
                 st.builds(lambda p, t: p + t, st.sampled_from(KNOWN_PREFIXES),
                           st.text(alphabet="abcdefghijklmnopqrstuvwxyz234567:0123456789\n ",
                                   max_size=120))))
@settings(deadline=None)
def test_garbage_never_crashes_the_parser(garbage: str | bytes) -> None:
    """Random input yields a cap value or one of our errors, nothing else."""
    try:
        cap = parse_cap(garbage)
    except CapError:
        return
    assert isinstance(cap, (CHKReadCap, CHKVerifyCap, LiteralCap, UnknownCap))

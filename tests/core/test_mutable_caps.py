"""Mutable file caps and directory caps: parse, format and diminish as Tahoe 1.20 does."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.caps.dirnode import DirectoryCap
from tahoe.caps.errors import CapError, MalformedCap
from tahoe.caps.immutable import CHKReadCap, CHKVerifyCap, LiteralCap
from tahoe.caps.mutable import (MDMFReadCap, MDMFVerifyCap, MDMFWriteCap, MutableFormat,
                                SSKReadCap, SSKVerifyCap, SSKWriteCap)
from tahoe.caps.parse import KNOWN_PREFIXES, parse_cap, parse_cap_lenient
from tahoe.caps.unknown import UnknownCap
from tests.strategies import directory_caps, mutable_caps
from tests.vectors import load

KEYS = load("mutable-keys.json")
DIRCAPS = load("dirnode-caps.json")
CLASSES = {"sdmf_writecap": SSKWriteCap, "sdmf_readcap": SSKReadCap,
           "sdmf_verifycap": SSKVerifyCap, "mdmf_writecap": MDMFWriteCap,
           "mdmf_readcap": MDMFReadCap, "mdmf_verifycap": MDMFVerifyCap}
KEY_CASES = [KEYS["fixed_key"], KEYS["legacy_key_e17"]]
SSK = KEYS["fixed_key"]["caps"]["sdmf_writecap"]
MDMF = KEYS["fixed_key"]["caps"]["mdmf_writecap"]


@pytest.mark.parametrize("key", KEY_CASES, ids=["fixed", "legacy"])
def test_vector_caps(key: dict) -> None:
    """Every mutable and DIR2 cap of the vectors parses, re-serializes and diminishes right."""
    caps = key["caps"]
    for fmt in ("sdmf", "mdmf"):
        write, read, verify = (parse_cap(caps[f"{fmt}_{kind}"])
                               for kind in ("writecap", "readcap", "verifycap"))
        for name, cap in ((f"{fmt}_writecap", write), (f"{fmt}_readcap", read),
                          (f"{fmt}_verifycap", verify)):
            assert type(cap) is CLASSES[name] and cap.to_string() == caps[name]
            assert cap.storage_index.hex() == key["storage_index_hex"]
            assert cap.fingerprint.hex() == key["fingerprint_hex"]
            assert cap.format is (MutableFormat.SDMF if fmt == "sdmf" else MutableFormat.MDMF)
        assert write.writekey.hex() == key["writekey_hex"]
        assert write.readkey.hex() == read.readkey.hex() == key["readkey_hex"]
        assert write.readonly() == read and read.readonly() == read
        assert write.verify_cap() == read.verify_cap() == verify == verify.verify_cap()
        assert (write.is_mutable, read.is_mutable, verify.is_mutable) == (True, True, False)
        assert (write.is_readonly, read.is_readonly, verify.is_readonly) == (False, True, True)
        prefix = "dir2" if fmt == "sdmf" else "dir2_mdmf"
        dirs = [parse_cap(caps[f"{prefix}_{kind}"]) for kind in ("writecap", "readcap", "verifycap")]
        assert [d.file_cap for d in dirs] == [write, read, verify]
        assert dirs[0].readonly() == dirs[1] and dirs[0].verify_cap() == dirs[2]
        assert [d.to_string() for d in dirs] == [caps[f"{prefix}_{k}"]
                                                 for k in ("writecap", "readcap", "verifycap")]
        assert [d.is_mutable for d in dirs] == [True, True, False]
        assert [d.is_readonly for d in dirs] == [False, True, True]
        assert all(d.storage_index.hex() == key["storage_index_hex"] for d in dirs)


@pytest.mark.parametrize("group", ["sdmf", "mdmf", "chk", "lit"])
def test_directory_prefix_mapping(group: str) -> None:
    """A directory cap is the file cap with its prefix swapped, both ways."""
    pairs = DIRCAPS["prefixes"]
    for name, text in DIRCAPS[group].items():
        if not isinstance(text, str) or not text.startswith("URI:") or text.startswith("URI:DIR2"):
            continue
        file_cap = parse_cap(text)
        file_prefix = next(p for p in sorted(pairs, key=len, reverse=True) if text.startswith(p))
        dir_text = pairs[file_prefix] + text[len(file_prefix):]
        directory = parse_cap(dir_text)
        assert isinstance(directory, DirectoryCap) and directory.file_cap == file_cap
        assert DirectoryCap(file_cap).to_string() == dir_text


def test_immutable_directory_caps() -> None:
    """DIR2-CHK diminishes to DIR2-CHK-Verifier; DIR2-LIT has no verify cap or storage index."""
    chk = DIRCAPS["chk"]
    directory = parse_cap(chk["dir2_chk_cap"])
    assert isinstance(directory.file_cap, CHKReadCap)
    assert directory.verify_cap().to_string() == chk["dir2_chk_verifycap"]
    assert directory.readonly() == directory and directory.is_readonly
    assert not directory.is_mutable and directory.format is None
    assert directory.kind == "DIR2-CHK"
    from tahoe.util import base32
    assert base32.b2a(directory.storage_index) == chk["storage_index_b32"]
    lit = parse_cap(DIRCAPS["lit"]["dir2_lit_cap"])
    assert isinstance(lit.file_cap, LiteralCap)
    assert lit.verify_cap() is None and lit.storage_index is None
    empty = parse_cap("URI:DIR2-LIT:")
    assert empty == DirectoryCap(LiteralCap(b"")) and empty.to_string() == "URI:DIR2-LIT:"
    verifier = parse_cap(chk["dir2_chk_verifycap"])
    assert isinstance(verifier.file_cap, CHKVerifyCap) and verifier.is_verifier


def test_mdmf_extension_fields_are_dropped() -> None:
    """MDMF caps (and MDMF directories) accept extra fields and never write them."""
    for text in (MDMF, MDMF.replace("URI:MDMF:", "URI:DIR2-MDMF:"),
                 MDMF.replace("URI:MDMF:", "URI:MDMF-Verifier:")):
        with_hints = text + ":3:131073"
        assert parse_cap(with_hints) == parse_cap(text)
        assert parse_cap(with_hints).to_string() == text


def test_ssk_is_end_anchored() -> None:
    """An SSK cap allows one trailing newline and nothing else after the fingerprint."""
    assert parse_cap(SSK + "\n") == parse_cap(SSK)
    with pytest.raises(MalformedCap, match="2 fields"):
        parse_cap(SSK + ":3:131073")
    with pytest.raises(MalformedCap):
        parse_cap(SSK + " ")
    assert parse_cap_lenient(SSK + ":x") == UnknownCap(SSK + ":x")


def test_malformed_fields_are_named() -> None:
    """The strict parser says which field is wrong; the lenient one keeps the text."""
    writekey, fingerprint = SSK.split(":")[2:]
    cases = [
        (SSK.replace(writekey, writekey[:-1] + "b"), "writekey"),
        (SSK.replace(fingerprint, fingerprint[:-1] + "b"), "fingerprint"),
        (SSK.upper().replace("URI:SSK:", "URI:SSK:"), "writekey"),
        ("URI:SSK-RO:" + SSK[8:].replace(writekey, writekey[:10]), "readkey"),
        ("URI:MDMF-Verifier:abc", "2 fields"),
        ("URI:DIR2:" + SSK[8:].replace(fingerprint, "x" * 52), "fingerprint"),
    ]
    for text, field in cases:
        with pytest.raises(MalformedCap, match=field) as info:
            parse_cap(text)
        assert info.value.kind in text
        assert parse_cap_lenient(text) == UnknownCap(text)


def test_alleged_prefix_rules() -> None:
    """ro. refuses write caps; imm. refuses every mutable read or write cap; verifiers pass."""
    caps = KEYS["fixed_key"]["caps"]
    for name, text in caps.items():
        writeable = "writecap" in name
        verifier = "verifycap" in name
        for alleged, allowed in (("ro.", not writeable), ("imm.", verifier)):
            if allowed:
                assert parse_cap(alleged + text) == parse_cap(text)
            else:
                with pytest.raises(MalformedCap, match="context"):
                    parse_cap(alleged + text)
                assert parse_cap_lenient(alleged + text) == UnknownCap(alleged + text)
        if verifier:
            assert parse_cap(text, deep_immutable=True) == parse_cap(text)
        else:
            with pytest.raises(MalformedCap, match="immutable context"):
                parse_cap(text, deep_immutable=True)
    assert parse_cap("imm." + DIRCAPS["chk"]["dir2_chk_cap"]).kind == "DIR2-CHK"
    assert parse_cap("ro.x-unknown") == UnknownCap("ro.x-unknown")


def test_known_prefixes_cover_every_kind() -> None:
    """The parser knows the 3 immutable, 6 mutable and 9 directory prefixes."""
    assert len(KNOWN_PREFIXES) == 18


@given(st.one_of(mutable_caps(), directory_caps()))
@settings(deadline=None)
def test_caps_round_trip(cap: object) -> None:
    """Formatting then parsing any mutable or directory cap gives back an equal value."""
    text = cap.to_string()  # type: ignore[attr-defined]
    assert parse_cap(text) == cap
    assert parse_cap_lenient(text.encode("ascii")) == cap
    readonly = cap.readonly()  # type: ignore[attr-defined]
    assert readonly.is_readonly and parse_cap("ro." + readonly.to_string()) == readonly
    verify = cap.verify_cap()  # type: ignore[attr-defined]
    if verify is not None:
        assert parse_cap(verify.to_string()) == verify
        assert verify.storage_index == cap.storage_index  # type: ignore[attr-defined]


@given(st.one_of(st.text(max_size=200), st.binary(max_size=200),
                 st.builds(lambda p, t: p + t,
                           st.sampled_from([a + p for a in ("", "ro.", "imm.")
                                            for p in KNOWN_PREFIXES]),
                           st.text(alphabet="abcdefghijklmnopqrstuvwxyz234567:0123456789\n ",
                                   max_size=140))))
@settings(deadline=None)
def test_garbage_never_crashes_the_parser(garbage: str | bytes) -> None:
    """Random input yields a cap value or one of our errors, nothing else."""
    for deep in (False, True):
        try:
            parse_cap(garbage, deep_immutable=deep)
        except CapError:
            pass
        try:
            parse_cap_lenient(garbage, deep_immutable=deep)
        except CapError:
            assert not isinstance(garbage, str) or not garbage.isascii()

"""Directory plaintext: entries, writecap encryption, unknown caps, immutable directories."""
from __future__ import annotations

import hashlib
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.caps.dirnode import DirectoryCap
from tahoe.caps.immutable import LiteralCap
from tahoe.dirnode.children import ChildKind, ChildNode, child_from_caps, readonly_child
from tahoe.dirnode.errors import (BadChildCap, CorruptDirectory, DirnodeError,
                                  MustBeDeepImmutableError, MustBeReadonlyError,
                                  MustNotBeUnknownRWError)
from tahoe.dirnode.packing import (WRITECAP_TAG, Entry, decrypt_rwcapdata, encrypt_rw_uri,
                                   pack_children, pack_entry, pack_new_directory,
                                   unpack_children, unpack_directory)
from tahoe.util.hashutil import tagged_pair_hash
from tahoe.util.netstring import netstring
from tests.strategies import child_names, directory_caps, immutable_caps, json_metadata, \
    mutable_caps
from tests.vectors import load

MUTABLE = load("dirnode-mutable.json")
IMMUTABLE = load("dirnode-immutable.json")
KEYS = load("mutable-keys.json")
WRITEKEY = bytes.fromhex(MUTABLE["directory"]["writekey_hex"])
CHK = "URI:CHK:aebagbafaydqqcikbmga2dqpca:cwdtsnqvmhnzqpi6nxrzcz6zua4cpdz5un4y6quup46ooh5gyoya:3:10:1234"
SSK = KEYS["fixed_key"]["caps"]["sdmf_writecap"]
SSK_RO = KEYS["fixed_key"]["caps"]["sdmf_readcap"]


def _mutable_table() -> dict[str, tuple[ChildNode, dict]]:
    return {child["name_as_given"]: (child_from_caps(child["writecap"], child["readcap"]),
                                     child["metadata_stored"])
            for child in MUTABLE["children_input"]}


def test_writecap_encryption_vector() -> None:
    """Salt, key, ciphertext and MAC of each entry's rwcapdata are the vector's."""
    for entry in MUTABLE["entries"]:
        rwcap = entry["rwcap"]
        rw_uri = rwcap["rw_uri_plaintext"].encode()
        data = encrypt_rw_uri(WRITEKEY, rw_uri)
        assert data.hex() == entry["rwcapdata_hex"]
        salt, crypttext, mac = data[:16], data[16:-32], data[-32:]
        assert (salt.hex(), crypttext.hex(), mac.hex()) == (
            rwcap["salt_hex"], rwcap["ciphertext_hex"], rwcap["mac_hex"])
        assert tagged_pair_hash(WRITECAP_TAG, salt, WRITEKEY, 16).hex() == rwcap["key_hex"]
        assert decrypt_rwcapdata(WRITEKEY, data) == rw_uri


def test_mutable_directory_plaintext() -> None:
    """Two children (one named in NFD) pack to the vector's entries and plaintext."""
    table = _mutable_table()
    nfd = MUTABLE["children_input"][0]
    assert nfd["name_as_given"].encode().hex() == nfd["name_as_given_utf8_hex"]
    for entry in MUTABLE["entries"]:
        child, metadata = table[entry["name"]] if entry["name"] in table else \
            table[unicodedata.normalize("NFD", entry["name"])]
        assert pack_entry(entry["name"], child, metadata, WRITEKEY).hex() == entry["entry_hex"]
        assert child.read_uri.decode() == entry["ro_uri"]
    plaintext = pack_new_directory(table, WRITEKEY)
    assert plaintext.hex() == MUTABLE["plaintext_hex"]
    assert len(plaintext) == MUTABLE["plaintext_length"]


@pytest.mark.parametrize("holder,writekey", [("unpacked_by_writecap_holder", WRITEKEY),
                                             ("unpacked_by_readcap_holder", None)])
def test_what_each_holder_sees(holder: str, writekey: bytes | None) -> None:
    """Write-cap holders see the children's write caps; read-cap holders only read caps."""
    children = unpack_children(bytes.fromhex(MUTABLE["plaintext_hex"]), writekey)
    expected = MUTABLE[holder]
    assert set(children) == set(expected)
    for name, view in expected.items():
        entry = children[name]
        assert (entry.child.write_uri or b"").decode() == view["node_rw_uri"]
        assert entry.child.read_uri.decode() == view["node_ro_uri"]
        assert entry.metadata == view["metadata"]
    assert pack_children(children, WRITEKEY).hex() == MUTABLE["plaintext_hex"]


def test_immutable_directory_plaintext() -> None:
    """Deep-immutable packing of LIT, CHK, DIR2-LIT and an imm. unknown cap matches."""
    table = {name: (child_from_caps(spec["cap"]), spec["metadata"])
             for name, spec in IMMUTABLE["children_input"].items()}
    plaintext = pack_new_directory(table, None, deep_immutable=True)
    assert plaintext.hex() == IMMUTABLE["plaintext_hex"]
    children = unpack_children(plaintext, None, mutable=False)
    stored = {n: e.child.read_uri.decode().removeprefix("imm.") for n, e in children.items()}
    assert {e["name"]: e["ro_uri"] for e in IMMUTABLE["entries"]} == stored
    for entry in IMMUTABLE["entries"]:
        assert children[entry["name"]].raw.hex() == entry["entry_hex"]
    assert children["future"].child.read_uri == b"imm.x-tahoe-crazy-immutable-cap"
    assert children["empty-dir"].child.kind is ChildKind.DIRECTORY
    assert pack_children(children, None, deep_immutable=True) == plaintext


def test_literal_immutable_directory() -> None:
    """A small immutable directory becomes a URI:DIR2-LIT: cap holding its plaintext."""
    example = IMMUTABLE["lit_example"]
    table = {name: (child_from_caps(spec["cap"]), spec["metadata"])
             for name, spec in example["children_input"].items()}
    plaintext = pack_new_directory(table, None, deep_immutable=True)
    assert plaintext.hex() == example["plaintext_hex"]
    assert DirectoryCap(LiteralCap(plaintext)).to_string() == example["dir2_lit_cap"]
    assert DirectoryCap(LiteralCap(b"")).to_string() == example["empty_immutable_directory_cap"]
    assert unpack_children(b"", None, mutable=False) == {}


def test_mutable_child_refused_in_immutable_directory() -> None:
    """Packing a mutable child deep-immutably raises MustBeDeepImmutableError."""
    with pytest.raises(MustBeDeepImmutableError):
        pack_new_directory({"m": (child_from_caps(SSK), {})}, None, deep_immutable=True)
    with pytest.raises(MustBeDeepImmutableError):
        pack_new_directory({"m": (child_from_caps(None, SSK_RO), {})}, None, deep_immutable=True)


def test_unknown_cap_rules() -> None:
    """The §9 rules for caps of unknown kinds, in mutable and immutable directories."""
    def view(rw: str | None, ro: str | None, deep: bool = False) -> object:
        child = child_from_caps(rw, ro, deep_immutable=deep, name="n")
        if child.error is not None:
            return type(child.error)
        return (child.write_uri, child.read_uri)

    assert view("x-new", None) is MustNotBeUnknownRWError
    assert view("ro.x-new", None) == (None, b"ro.x-new")
    assert view("imm.x-new", None) == (None, b"imm.x-new")
    assert view(None, "x-new") == (None, b"ro.x-new")
    assert view("x-w", "x-r") == (b"x-w", b"ro.x-r")
    assert view("x-w", "imm.x-r") is MustBeDeepImmutableError
    assert view("x-w", None, True) is MustNotBeUnknownRWError
    assert view("x-w", "x-r", True) is MustBeDeepImmutableError
    assert view("imm.x", None, True) == (None, b"imm.x")
    assert view(None, "x", True) == (None, b"imm.x")
    assert view(None, "ro.x", True) == (None, b"imm.x")
    assert view("ro." + SSK, None) is MustBeReadonlyError
    assert view(None, SSK_RO, True) is MustBeDeepImmutableError
    assert view(None, "URI:CHK:nonsense") is BadChildCap
    assert view(None, "x-\u00e9") == (None, "ro.x-\u00e9".encode())
    assert view(None, "URI:CHK:\u00e9") is BadChildCap
    verifier = SSK.replace("URI:SSK:", "URI:SSK-Verifier:").replace(
        SSK.split(":")[2], KEYS["fixed_key"]["storage_index_b32"])
    assert view(verifier, None) is MustNotBeUnknownRWError
    assert view(None, verifier) == (None, ("ro." + verifier).encode())
    assert child_from_caps(None, None) == ChildNode(ChildKind.UNKNOWN, None, None)


def test_known_caps_are_canonical() -> None:
    """A known child's caps are re-derived from the strongest cap given."""
    child = child_from_caps(SSK + "\n", "something else entirely")
    assert (child.write_uri, child.read_uri) == (SSK.encode(), SSK_RO.encode())
    assert child.kind is ChildKind.FILE and child.mutable and not child.is_readonly
    mdmf = KEYS["fixed_key"]["caps"]["dir2_mdmf_writecap"]
    child = child_from_caps(mdmf + ":3:131073")
    assert child.write_uri == mdmf.encode() and child.is_directory
    assert readonly_child(child).write_uri is None and readonly_child(child).is_directory
    assert child_from_caps("ro." + SSK_RO).read_uri == SSK_RO.encode()
    assert readonly_child(child_from_caps("x-w", "x-r")) == child_from_caps(None, "x-r")


def test_ro_prefix_stripped_imm_kept_in_mutable_directories() -> None:
    """A mutable directory stores ro_uri without ro. but keeps an imm. prefix."""
    children = {"a": Entry(child_from_caps("x-w", "ro.x-r"), {}),
                "b": Entry(child_from_caps("imm.x-i"), {})}
    data = pack_children(children, WRITEKEY)
    assert netstring(b"ro.x-r") not in data and netstring(b"x-r") in data
    assert netstring(b"imm.x-i") in data
    again = unpack_children(data, WRITEKEY)
    assert again["a"].child == children["a"].child and again["b"].child == children["b"].child


def test_unchanged_entries_are_re_emitted_verbatim() -> None:
    """Entries as another writer wrote them (odd JSON, trailing bytes) survive a repack."""
    odd = netstring(b"odd") + netstring(CHK.encode() + b"  ") + netstring(b"") + \
        netstring(b'{"k":1,  "tahoe":{}}') + b"trailing junk"
    data = netstring(odd)
    children = unpack_children(data, WRITEKEY)
    assert children["odd"].child.read_uri == CHK.encode()
    assert children["odd"].metadata == {"k": 1, "tahoe": {}}
    children["new"] = Entry(child_from_caps(SSK), {})
    packed = pack_children(children, WRITEKEY)
    assert packed.endswith(netstring(odd)) and not packed.startswith(netstring(odd))
    assert set(unpack_children(packed, WRITEKEY)) == {"new", "odd"}


def test_corrupt_directories() -> None:
    """Broken netstrings, bad UTF-8, non-object JSON and rwcaps in immutable dirs are refused."""
    good = netstring(b"a") + netstring(CHK.encode()) + netstring(b"") + netstring(b"{}")
    cases = [
        (b"5:abc", True), (netstring(b"only"), True),
        (netstring(netstring(b"\xff") + good[4:]), True),
        (netstring(good.replace(b"2:{},", b"2:[],")), True),
        (netstring(good.replace(b"2:{},", b"2:{x,")), True),
        (netstring(good.replace(b"0:,", b"3:abc,")), False),
    ]
    for data, mutable in cases:
        with pytest.raises(CorruptDirectory):
            unpack_children(data, WRITEKEY if mutable else None, mutable=mutable)


def test_unusable_entries_are_skipped() -> None:
    """Entries with malformed caps, or mutable ones in an immutable directory, are left out."""
    bad = netstring(b"bad") + netstring(b"URI:CHK:nonsense") + netstring(b"") + netstring(b"{}")
    mut = netstring(b"mut") + netstring(SSK_RO.encode()) + netstring(b"") + netstring(b"{}")
    result = unpack_directory(netstring(bad) + netstring(mut), None, mutable=False)
    assert result.children == {}
    assert [name for name, _ in result.skipped] == ["bad", "mut"]
    assert set(unpack_children(netstring(bad) + netstring(mut), None)) == {"mut"}


def test_entries_parsed_before_are_reused_and_only_those() -> None:
    """With ``known``, a second read parses only the entries that changed: the others
    are the same objects as before; the map then holds this version's entries only,
    skipped ones included, and the result equals a parse without it."""
    table = {name: Entry(child, metadata) for name, (child, metadata) in _mutable_table().items()}
    first = pack_children(table, WRITEKEY)
    known: dict = {}
    before = unpack_children(first, WRITEKEY, known=known)
    assert before == unpack_children(first, WRITEKEY) and len(known) == len(before)
    renamed = dict(before)
    dropped = sorted(renamed)[0]
    del renamed[dropped]
    renamed["added"] = Entry(child_from_caps(CHK), {"k": 2})
    bad = netstring(b"bad") + netstring(b"URI:CHK:nonsense") + netstring(b"") + netstring(b"{}")
    second = pack_children(renamed, WRITEKEY) + netstring(bad)
    after = unpack_directory(second, WRITEKEY, known=known)
    assert after.children == unpack_children(second, WRITEKEY)
    assert [name for name, _ in after.skipped] == ["bad"]
    for name, entry in after.children.items():
        assert (entry is before.get(name)) == (name != "added")
    assert len(known) == len(after.children) + 1
    assert all(found is not before[dropped] for _, found in known.values())
    again = unpack_directory(second, WRITEKEY, known=known)
    assert again.skipped == after.skipped and all(
        again.children[name] is entry for name, entry in after.children.items())


_CAPS = st.one_of(mutable_caps(), immutable_caps(), directory_caps()).map(lambda c: c.to_string())
_CHILD_CAPS = st.one_of(
    st.tuples(_CAPS, st.none()),
    st.tuples(st.none(), _CAPS),
    st.tuples(st.text("abcxyz-", min_size=1, max_size=8).map(lambda t: "x-" + t),
              st.text("abcxyz-", min_size=1, max_size=8).map(lambda t: "ro.x-" + t)),
)


@given(st.dictionaries(child_names(), st.tuples(_CHILD_CAPS, json_metadata()), max_size=6))
@settings(deadline=None)
def test_pack_unpack_round_trip(table: dict) -> None:
    """Packing then unpacking gives the same children and metadata; read-only views lose rw."""
    children = {}
    for name, ((rw, ro), metadata) in table.items():
        child = child_from_caps(rw, ro, name=name)
        if child.error is None and not (child.is_unknown and child.read_uri is None):
            children[unicodedata.normalize("NFC", name)] = Entry(child, metadata)
    data = pack_children(children, WRITEKEY)
    again = unpack_children(data, WRITEKEY)
    assert again == children
    readonly = unpack_children(data, None)
    for name, entry in readonly.items():
        assert entry.child.write_uri is None or entry.child.is_unknown
        assert entry.child.read_uri == children[name].child.read_uri or entry.child.is_unknown
    assert pack_children(again, WRITEKEY) == data


@given(st.one_of(st.binary(max_size=300), st.builds(
    lambda a, b, pos: a[:pos] + b + a[pos:], st.just(bytes.fromhex(MUTABLE["plaintext_hex"])),
    st.binary(max_size=40), st.integers(0, 600))))
@settings(deadline=None)
def test_garbage_never_crashes_unpacking(garbage: bytes) -> None:
    """Random or spliced plaintext unpacks or raises a DirnodeError, nothing else."""
    for writekey in (WRITEKEY, None):
        for mutable in (True, False):
            try:
                unpack_children(garbage, writekey if mutable else None, mutable=mutable)
            except DirnodeError:
                pass


def test_mac_is_not_standard_hmac() -> None:
    """The MAC pads nothing: SHA256(key^5c || SHA256(key^36 || salt || ct))."""
    data = encrypt_rw_uri(WRITEKEY, b"URI:SSK:x")
    salt, crypttext, mac = data[:16], data[16:-32], data[-32:]
    key = tagged_pair_hash(WRITECAP_TAG, salt, WRITEKEY, 16)
    inner = hashlib.sha256(bytes(b ^ 0x36 for b in key) + salt + crypttext).digest()
    assert mac == hashlib.sha256(bytes(b ^ 0x5C for b in key) + inner).digest()

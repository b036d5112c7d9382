"""Directory operations on child tables, replayed byte for byte against dirnode-ops.json."""
from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.dirnode import ops
from tahoe.dirnode.children import child_from_caps
from tahoe.dirnode.errors import (BadMetadata, ChildOfWrongTypeError, ExistingChildError,
                                  MustNotBeUnknownRWError, NoSuchChildError)
from tahoe.dirnode.metadata import update_metadata
from tahoe.dirnode.packing import Entry, normalize_name, pack_children, unpack_children
from tests.strategies import child_names, json_metadata
from tests.vectors import load

OPS = load("dirnode-ops.json")
MUTABLE = load("dirnode-mutable.json")
KEYS = load("mutable-keys.json")
WRITEKEY = bytes.fromhex(OPS["writekey_hex"])
STEPS = OPS["steps"]
CHK = MUTABLE["children_input"][0]["writecap"]
CHK2 = STEPS[2]["entries"][0]["ro_uri"]
DIR2 = MUTABLE["children_input"][1]["writecap"]
DIR2_RO = MUTABLE["children_input"][1]["readcap"]
NOTES_RO = STEPS[5]["entries"][2]["ro_uri"]
SSK = KEYS["fixed_key"]["caps"]["sdmf_writecap"]
T = 1700000000.0

#: The operations of the vector, in order, as functions of (children, clock).
OPERATIONS = [
    lambda c, t: ops.add_child(c, "cafe\u0301.txt", child_from_caps(CHK, CHK), now=t),
    lambda c, t: ops.add_child(c, "subdir", child_from_caps(DIR2, DIR2_RO),
                               {"mtime": 1699999999.5}, now=t),
    lambda c, t: ops.add_child(c, "caf\u00e9.txt", child_from_caps(CHK2, CHK2), now=t),
    lambda c, t: ops.set_metadata(c, "subdir", {"comment": "hello \u2713"}, now=t),
    lambda c, t: ops.add_child(c, "future", child_from_caps(b"x-tahoe-crazy-writecap",
                                                            b"ro.x-tahoe-crazy-readcap"), now=t),
    lambda c, t: ops.add_child(c, "notes", child_from_caps(None, NOTES_RO), now=t),
    lambda c, t: ops.delete_child(c, "caf\u00e9.txt")[0],
]


def test_vector_steps_byte_for_byte() -> None:
    """Each read-modify-write step of the vector gives exactly Tahoe's plaintext."""
    data = bytes.fromhex(OPS["initial_plaintext_hex"])
    for step, operation in zip(STEPS, OPERATIONS, strict=True):
        before = unpack_children(data, WRITEKEY)
        snapshot = copy.deepcopy({n: e.metadata for n, e in before.items()})
        data = pack_children(operation(before, step["clock"]), WRITEKEY)
        assert data.hex() == step["plaintext_hex"], step["operation"]
        assert {n: e.metadata for n, e in before.items()} == snapshot  # input untouched
        for entry in step["entries"]:
            assert entry["entry_hex"] in data.hex()


def _table() -> dict[str, Entry]:
    return unpack_children(bytes.fromhex(STEPS[5]["plaintext_hex"]), WRITEKEY)


def test_overwrite_modes() -> None:
    """overwrite=False refuses any existing name; "only-files" refuses directories only."""
    table = _table()
    child = child_from_caps(CHK)
    with pytest.raises(ExistingChildError):
        ops.add_child(table, "notes", child, now=T, overwrite=False)
    with pytest.raises(ExistingChildError, match="directory"):
        ops.add_child(table, "subdir", child, now=T, overwrite="only-files")
    replaced = ops.add_child(table, "notes", child, now=T, overwrite="only-files")
    assert replaced["notes"].child == child
    assert replaced["notes"].metadata["tahoe"]["linkcrtime"] == \
        table["notes"].metadata["tahoe"]["linkcrtime"]
    assert ops.add_child(table, "fresh", child, now=T, overwrite=False)["fresh"].raw is None


def test_delete_rules() -> None:
    """Missing names fail the first time only; kind checks spare unknown children."""
    table = _table()
    with pytest.raises(NoSuchChildError):
        ops.delete_child(table, "nothing")
    assert ops.delete_child(table, "nothing", first_time=False) == (None, None)
    assert ops.delete_child(table, "nothing", must_exist=False) == (None, None)
    with pytest.raises(ChildOfWrongTypeError):
        ops.delete_child(table, "notes", must_be_directory=True)
    with pytest.raises(ChildOfWrongTypeError):
        ops.delete_child(table, "subdir", must_be_file=True)
    new, old = ops.delete_child(table, "future", must_be_file=True)
    assert old is table["future"] and "future" not in new and "future" in table


def test_set_metadata_rules() -> None:
    """Caller keys replace the old ones; tahoe is kept; a missing name is an error."""
    table = _table()
    with pytest.raises(NoSuchChildError):
        ops.set_metadata(table, "nothing", {}, now=T)
    with pytest.raises(BadMetadata):
        ops.set_metadata(table, "notes", ["not", "a", "dict"], now=T)  # type: ignore[arg-type]
    new = ops.set_metadata(table, "notes", {"tahoe": {"linkcrtime": 0}, "x": 1}, now=T)
    assert new["notes"].metadata == {"x": 1, "tahoe": {"linkcrtime": 1700000500.0625,
                                                       "linkmotime": T}}


def test_no_write_drops_the_write_cap() -> None:
    """Metadata no-write: true stores the child read-only."""
    table = ops.add_child({}, "f", child_from_caps(SSK), {"no-write": True}, now=T)
    assert table["f"].child.write_uri is None
    assert table["f"].child.read_uri == child_from_caps(SSK).read_uri
    dirs = ops.set_metadata(ops.add_child({}, "d", child_from_caps(DIR2), now=T), "d",
                            {"no-write": True}, now=T)
    assert dirs["d"].child.write_uri is None and dirs["d"].child.is_directory


def test_rename_gets_fresh_link_times() -> None:
    """A rename keeps the child and caller keys, with new link times; same name is a no-op."""
    table = _table()
    renamed = ops.rename_child(table, "subdir", "sub2", now=T)
    assert "subdir" not in renamed and renamed["sub2"].child == table["subdir"].child
    assert renamed["sub2"].metadata == {"comment": "hello \u2713",
                                        "tahoe": {"linkcrtime": T, "linkmotime": T}}
    assert ops.rename_child(table, "notes", "notes", now=T) == table
    assert ops.rename_child(table, "missing", "missing", now=T) == table
    with pytest.raises(NoSuchChildError):
        ops.rename_child(table, "missing", "other", now=T)
    with pytest.raises(ExistingChildError):
        ops.rename_child(table, "notes", "subdir", now=T, overwrite=False)


def test_unusable_children_are_refused() -> None:
    """An unknown write cap without a read cap cannot be linked."""
    with pytest.raises(MustNotBeUnknownRWError):
        ops.add_child({}, "x", child_from_caps("x-unknown-writecap"), now=T)


def test_metadata_rules() -> None:
    """linkcrtime comes from a legacy ctime when present; tahoe keeps its place."""
    legacy = {"ctime": 1234.5, "mtime": 1.0}
    assert update_metadata(legacy, None, T) == {"ctime": 1234.5, "mtime": 1.0,
                                                "tahoe": {"linkcrtime": 1234.5, "linkmotime": T}}
    assert update_metadata(legacy, {"a": 1}, T) == {"a": 1, "tahoe": {"linkcrtime": 1234.5,
                                                                     "linkmotime": T}}
    old = {"tahoe": {"linkmotime": 5.0}, "z": 0}
    result = update_metadata(old, None, T)
    assert list(result) == ["tahoe", "z"] and list(result["tahoe"]) == ["linkmotime", "linkcrtime"]
    assert old == {"tahoe": {"linkmotime": 5.0}, "z": 0}
    assert update_metadata({"tahoe": 7}, None, T)["tahoe"] == {"linkcrtime": T, "linkmotime": T}


@given(st.dictionaries(child_names(), json_metadata(), max_size=5), child_names(),
       json_metadata(), st.floats(0, 2e9))
@settings(deadline=None)
def test_add_is_idempotent(existing: dict, name: str, metadata: dict, now: float) -> None:
    """Adding a link to contents that already include it gives the same table."""
    child = child_from_caps(CHK)
    table = {normalize_name(n): Entry(child_from_caps(SSK), m) for n, m in existing.items()}
    once = ops.add_child(table, name, child, metadata, now=now)
    twice = ops.add_child(unpack_children(pack_children(once, WRITEKEY), WRITEKEY), name, child,
                          metadata, now=now)
    assert twice == once
    assert pack_children(twice, WRITEKEY) == pack_children(once, WRITEKEY)

"""Storage index to on-disk path mapping, and the prefix list crawlers walk."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.storage import paths
from tahoe.util import base32
from tests.vectors import load

PATHS = load("storage-paths.json")


@pytest.mark.parametrize("row", PATHS["rows"], ids=lambda r: r["storage_index_base32"])
def test_paths_match_tahoe(row: dict) -> None:
    """Base32, prefix, share directory and share path equal Tahoe's; the incoming file is
    named by the same storage index and share number."""
    si = bytes.fromhex(row["storage_index_hex"])
    assert paths.storage_index_to_b32(si) == row["storage_index_base32"]
    assert paths.prefix_of(row["storage_index_base32"]) == row["prefix"]
    assert "storage/" + paths.share_dir(si) == row["share_dir"]
    assert "storage/" + paths.share_path(si, 3) == row["share_path_shnum_3"]
    # Ours is flat (docs/formats/storage-containers.md); Tahoe's has the prefix and SI dirs.
    tahoe_prefix, tahoe_si, tahoe_shnum = row["incoming_path_shnum_3"].split("/")[-3:]
    assert (tahoe_prefix, tahoe_shnum) == (paths.prefix_of(tahoe_si), "3")
    assert paths.incoming_path(si, 3) == f"shares/incoming/{tahoe_si}.3"


def test_path_parts_join_to_text() -> None:
    """The tuple forms join with '/' to the text forms."""
    si = bytes.fromhex(PATHS["rows"][3]["storage_index_hex"])
    assert paths.as_text(paths.share_path_parts(si, 7)) == paths.share_path(si, 7)
    assert paths.as_text(paths.incoming_path_parts(si, 7)) == paths.incoming_path(si, 7)
    assert paths.share_dir_parts(si) == ("shares", "hd", "hdis5iaveku6lnlaiccydyid7q")


def test_all_prefixes() -> None:
    """There are 1024 prefixes in Tahoe's sorted order."""
    prefixes = paths.all_prefixes()
    assert len(prefixes) == PATHS["all_prefixes_count"] == len(set(prefixes))
    assert prefixes[:5] == PATHS["all_prefixes_first_5"]
    assert prefixes[-5:] == PATHS["all_prefixes_last_5"]


@pytest.mark.parametrize("name,expected", [("0", 0), ("7", 7), ("255", 255), ("007", 7),
                                           ("x", None), ("1a", None), ("", None),
                                           ("\u00b2", None), ("-1", None), ("1\n", None)])
def test_share_names(name: str, expected: int | None) -> None:
    """Only names made entirely of ASCII digits are shares."""
    assert paths.share_number_of(name) == expected


@settings(max_examples=500)
@given(st.binary(min_size=0, max_size=20))
def test_storage_index_base32_is_tahoes(storage_index: bytes) -> None:
    """The base32 of a storage index (made 10 bits at a time for 16 bytes) is Tahoe's b2a,
    and paths join it as their parts do."""
    assert paths.storage_index_to_b32(storage_index) == base32.b2a(storage_index)
    if len(storage_index) == 16:
        assert paths.share_path(storage_index, 9) == paths.as_text(
            paths.share_path_parts(storage_index, 9))

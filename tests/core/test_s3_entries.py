"""How the S3 gateway reads a directory's entries: sorted for listings, one found by name."""
from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.s3.objects import find_entry, sorted_entries
from tahoe.util.netstring import netstring

CHK = b"URI:CHK:aebagbafaydqqcikbmga2dqpca:cwdtsnqvmhnzqpi6nxrzcz6zua4cpdz5un4y6quup46ooh5gyoya:3:10:1000"
DIR = b"URI:DIR2-RO:aebagbafaydqqcikbmga2dqpca:cwdtsnqvmhnzqpi6nxrzcz6zua4cpdz5un4y6quup46ooh5gyoya"
OTHER = b"x-unknown:cap"
_NAMES = st.sampled_from(["a", "b", "a-b", "a0", "caf\u00e9", "cafe\u0301", "\u00e9t\u00e9", "z"])


def _entry(name: str, cap: bytes, tag: int) -> bytes:
    return netstring(netstring(name.encode()) + netstring(cap) + netstring(b"")
                     + netstring(b'{"n": %d}' % tag))


@given(st.lists(st.tuples(_NAMES, st.sampled_from([CHK, DIR, OTHER])), max_size=12),
       _NAMES)
@settings(deadline=None)
def test_one_entry_found_by_name_is_the_sorted_listings(entries: list, wanted: str) -> None:
    """For any directory (names stored NFC or not, a file and a directory of one name,
    children of other kinds, names repeated), the one pass finds what the sorted
    listing finds."""
    data = b"".join(_entry(name, cap, n) for n, (name, cap) in enumerate(entries))
    name = unicodedata.normalize("NFC", wanted)
    assert find_entry(data, name) == sorted_entries(data).find(name)

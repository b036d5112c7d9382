"""In-place MDMF updates between Tahoe 1.20 and us, on Tahoe 1.20's grid: an 8 MB MDMF file
updated in place by our client reads back right through Tahoe's, and one Tahoe updates in
place (a write in the middle and an append that adds segments) reads back right through ours.
"""
from __future__ import annotations

import os
import struct
import urllib.parse
from pathlib import Path

import pytest

from tahoe.caps.parse import parse_cap
from tahoe.mutable.mdmf import parse_share
from tahoe.storage.paths import share_dir
from tests.support import webapi
from tests.support.grid import ClientFactory, Gateway, Grid

pytestmark = pytest.mark.interop

EIGHT_MB = 8 * 1000 * 1000


def create_mdmf(gateway: Gateway, data: bytes) -> str:
    """``PUT /uri?format=MDMF`` through ``gateway``; the write cap."""
    url = urllib.parse.urljoin(gateway.url, "/uri?format=MDMF")
    return webapi._request("PUT", url, data=data, timeout=300).decode("ascii").strip()


def put_at(gateway: Gateway, cap: str, offset: int, data: bytes) -> None:
    """``PUT /uri/$CAP?offset=N`` through ``gateway``."""
    url = urllib.parse.urljoin(gateway.url, f"/uri/{urllib.parse.quote(cap, safe='')}"
                                            f"?offset={offset}")
    webapi._request("PUT", url, data=data, timeout=300)


def size_of(gateway: Gateway, cap: str) -> int:
    """The file's size as ``t=json`` reports it."""
    url = urllib.parse.urljoin(gateway.url, f"/uri/{urllib.parse.quote(cap, safe='')}?t=json")
    return int(webapi.get_json(url)[1]["size"])


#: Where a mutable container's share data starts, and where its length is (Tahoe's layout).
CONTAINER_DATA_OFFSET = 468
CONTAINER_DATA_LENGTH = struct.Struct(">Q")
CONTAINER_DATA_LENGTH_AT = 84


def segments_held(grid: Grid, cap: str) -> dict[tuple[int, int], tuple[bytes, bytes]]:
    """(share number, segment) -> (salt, block), from the share files of Tahoe's servers."""
    storage_index = parse_cap(cap).storage_index  # type: ignore[union-attr]
    found = {}
    for node in grid.storage_nodes:
        directory = Path(node.node.basedir) / "storage" / share_dir(storage_index)
        for path in directory.iterdir() if directory.is_dir() else ():
            raw = path.read_bytes()
            (length,) = CONTAINER_DATA_LENGTH.unpack_from(raw, CONTAINER_DATA_LENGTH_AT)
            share = parse_share(raw[CONTAINER_DATA_OFFSET:CONTAINER_DATA_OFFSET + length])
            for segnum, entry in enumerate(share.segments):
                found[(int(path.name), segnum)] = entry
    return found


@pytest.fixture(scope="module")
def gateways(tahoe_grid: Grid, tahoe_client: ClientFactory,
             our_client_on_tahoe_grid: Gateway) -> tuple[Gateway, Gateway]:
    """(Tahoe 1.20's client, ours), both on Tahoe's grid."""
    return tahoe_client(tahoe_grid.introducer_furl), our_client_on_tahoe_grid


def test_our_update_in_place_reads_back_through_tahoe(tahoe_grid: Grid,
                                                      gateways: tuple[Gateway, Gateway]) -> None:
    """Tahoe makes an 8 MB MDMF file; our client writes 100 bytes at 4,000,000 (only
    segment 30 of each share changes, under a new salt) and appends 150 kB (new segments,
    a bigger block hash tree); Tahoe reads what we wrote."""
    theirs, ours = gateways
    data = os.urandom(EIGHT_MB)
    cap = create_mdmf(theirs, data)
    patch, extra = os.urandom(100), os.urandom(150_000)
    before = segments_held(tahoe_grid, cap)
    put_at(ours, cap, 4_000_000, patch)
    after = segments_held(tahoe_grid, cap)
    assert len(before) == 3 * 62 and after.keys() == before.keys()
    changed = {key for key in before if before[key] != after[key]}
    assert changed == {(shnum, 30) for shnum in range(3)}
    assert all(before[key][0] != after[key][0] for key in changed)
    expected = data[:4_000_000] + patch + data[4_000_100:]
    assert webapi.download(theirs.url, cap, timeout=300) == expected
    put_at(ours, cap, len(expected), extra)
    expected += extra
    assert size_of(theirs, cap) == len(expected)
    assert webapi.download(theirs.url, cap, timeout=300) == expected
    assert webapi.download(ours.url, cap, timeout=300) == expected


def test_tahoe_update_in_place_reads_back_through_ours(gateways: tuple[Gateway, Gateway]) -> None:
    """Our client makes an 8 MB MDMF file; Tahoe writes across a segment boundary and
    appends; our client reads what Tahoe wrote, then updates it in place for Tahoe again."""
    theirs, ours = gateways
    data = os.urandom(EIGHT_MB)
    cap = create_mdmf(ours, data)
    patch = os.urandom(1000)
    offset = 131072 * 30 - 500  # spans segments 29 and 30
    put_at(theirs, cap, offset, patch)
    expected = data[:offset] + patch + data[offset + 1000:]
    assert webapi.download(ours.url, cap, timeout=300) == expected
    extra = os.urandom(200_000)
    put_at(theirs, cap, len(expected), extra)
    expected += extra
    assert webapi.download(ours.url, cap, timeout=300) == expected
    again = os.urandom(64)
    put_at(ours, cap, 10, again)
    expected = expected[:10] + again + expected[74:]
    assert webapi.download(theirs.url, cap, timeout=300) == expected

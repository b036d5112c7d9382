"""Our client on a Tahoe 1.20 grid, and Tahoe 1.20's client on ours: same caps, same bytes."""
from __future__ import annotations

import os
import random

import pytest

from tests.support.grid import ClientFactory, Gateway, Grid

pytestmark = pytest.mark.interop

SIZES = [1_000, 3_000_000]


@pytest.mark.parametrize("size", SIZES)
def test_our_client_on_tahoe_grid(size: int, tahoe_grid: Grid, tahoe_client: ClientFactory,
                                  our_client_on_tahoe_grid: Gateway) -> None:
    """Our upload to Tahoe's servers gives Tahoe's cap, and both clients read it back."""
    data = os.urandom(size)
    theirs = tahoe_client(tahoe_grid.introducer_furl)
    cap = our_client_on_tahoe_grid.upload(data)
    assert cap.startswith("URI:CHK:")
    assert theirs.upload(data) == cap
    assert our_client_on_tahoe_grid.download(cap) == data
    assert theirs.download(cap) == data


@pytest.mark.parametrize("size", SIZES)
def test_tahoe_reads_what_our_client_uploaded_to_our_grid(size: int, our_grid: Grid,
                                                          tahoe_client: ClientFactory) -> None:
    """A Tahoe 1.20 client downloads, intact, a file our client put on our grid."""
    data = os.urandom(size)
    theirs = tahoe_client(our_grid.introducer_furl)
    ours = our_grid.storage_nodes[0]
    cap = ours.upload(data)
    assert theirs.download(cap) == data
    assert ours.download(cap) == data


def test_our_client_reads_a_large_file_back_from_tahoe_servers(
        our_client_on_tahoe_grid: Gateway) -> None:
    """20 MB up and back down through our client on Tahoe's servers. Our client pipelined
    its block reads, and Tahoe's web server dropped the connection when a pipelined answer
    started while the one before it filled its send buffer (``NotPaused`` in its log): the
    download came back short, every time at this size."""
    data = random.Random(f"{__name__}-large").randbytes(20_000_000)
    cap = our_client_on_tahoe_grid.upload(data)
    assert our_client_on_tahoe_grid.download(cap) == data

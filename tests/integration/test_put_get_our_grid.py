"""``tahoe put`` and ``tahoe get`` through our own gateway, on a grid made by ``tahoe grid``."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.integration.grid_support import grid_cleanup, tahoe

__all__ = ["grid_cleanup"]


@pytest.mark.parametrize("size", [1000, 5 * 1024 * 1024], ids=["1kB", "5MB"])
def test_put_get_round_trip(tmp_path: Path, grid_cleanup: list[Path], size: int) -> None:
    """A file put from a file and from stdin gives one cap, and get returns its bytes."""
    grid_dir = tmp_path / "grid"
    grid_cleanup.append(grid_dir)
    started = tahoe("grid", "start", grid_dir, "--storage-nodes=3")
    assert started.returncode == 0, started.stderr.decode()
    client = grid_dir / "client"
    data = random.Random(f"{__name__}-{size}").randbytes(size)
    (tmp_path / "in").write_bytes(data)

    from_file = tahoe("-d", client, "put", tmp_path / "in")
    assert from_file.returncode == 0, from_file.stderr.decode()
    cap = from_file.stdout.decode().strip()
    assert cap.startswith("URI:CHK:") and cap.endswith(f":2:3:{size}")
    assert from_file.stderr == b"200 OK\n"
    from_stdin = tahoe("-d", client, "put", input=data)
    assert from_stdin.stdout.decode().strip() == cap

    got = tahoe("-d", client, "get", cap, tmp_path / "out")
    assert got.returncode == 0, got.stderr.decode()
    assert (tmp_path / "out").read_bytes() == data
    assert tahoe("-d", client, "get", cap).stdout == data

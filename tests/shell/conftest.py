"""Shell-test fixtures: every storage server a test made has its share index in step at the end."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.shell.storage_support import SERVERS, assert_index_in_step


@pytest.fixture(autouse=True)
def index_in_step_after_each_test() -> Iterator[None]:
    """Whatever a test did to a server's shares (every storage call, in every order the
    tests try), its index says the same as its files afterwards."""
    SERVERS.clear()
    yield
    try:
        latest = {server.index.storage_dir: server for server in SERVERS}  # one per directory
        for server in latest.values():
            if not server.index.closed and server.index.storage_dir.exists():
                assert_index_in_step(server)
    finally:
        for server in SERVERS:
            server.close()
        SERVERS.clear()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A storage directory (not made yet: the server makes it)."""
    return tmp_path / "storage"

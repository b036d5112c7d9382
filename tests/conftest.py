"""Fixtures shared by every test directory."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.processes import ProcessSet


@pytest.fixture
def processes() -> Iterator[ProcessSet]:
    """Processes a test starts; all stopped by PID when it ends."""
    with ProcessSet() as process_set:
        yield process_set

"""Fixtures shared by every test directory, and the reliability table written at the end."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import ProcessSet
from tests.support.reliability import DOC_ENV, LEDGER_ENV, read_ledger, render_table, update_doc


@pytest.fixture
def processes() -> Iterator[ProcessSet]:
    """Processes a test starts; all stopped by PID when it ends."""
    with ProcessSet() as process_set:
        yield process_set


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With ``$TAHOE_RELIABILITY_LEDGER`` and ``$TAHOE_RELIABILITY_DOC`` set (``make
    test-faults``), regenerate the table of that document from the ledger."""
    ledger, doc = os.environ.get(LEDGER_ENV), os.environ.get(DOC_ENV)
    if ledger and doc and not hasattr(session.config, "workerinput"):
        update_doc(Path(doc), render_table(read_ledger(Path(ledger))))

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


# The modules that take longest (seconds of one serial run on this project's CI machine,
# 2026-11-27), longest first. ``make test`` runs the suite in two processes with
# ``--dist loadfile --no-loadscope-reorder``: the modules are handed out in collection
# order, so these go first and the short ones fill in behind them, instead of a long one
# starting last and running alone at the end.
LONGEST_MODULES = (
    "tests/integration/test_bench_smoke.py",  # 151 s
    "tests/interop/test_cli_dirs_against_tahoe.py",  # 146 s
    "tests/integration/test_grid_command.py",  # 39 s
    "tests/integration/test_web_ui.py",  # 36 s
    "tests/integration/test_grid_fault_schedules.py",  # 36 s
    "tests/interop/test_cli_against_tahoe.py",  # 35 s
    "tests/integration/test_munin.py",  # 35 s
    "tests/integration/test_node_processes.py",  # 31 s
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the tests of :data:`LONGEST_MODULES` first, in that order (a stable sort:
    everything else keeps its order)."""
    rank = {module: place for place, module in enumerate(LONGEST_MODULES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With ``$TAHOE_RELIABILITY_LEDGER`` and ``$TAHOE_RELIABILITY_DOC`` set (``make
    test-faults``), regenerate the table of that document from the ledger."""
    ledger, doc = os.environ.get(LEDGER_ENV), os.environ.get(DOC_ENV)
    if ledger and doc and not hasattr(session.config, "workerinput"):
        update_doc(Path(doc), render_table(read_ledger(Path(ledger))))

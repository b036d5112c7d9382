"""The reliability ledger and the table of docs/reliability.md it becomes."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import reliability
from tests.support.reliability import (LEDGER_ENV, TABLE_END, TABLE_START, fault_run,
                                       read_ledger, record_fuzz, record_limit, render_table,
                                       update_doc)

DOC = Path(__file__).parents[2] / "docs" / "reliability.md"


def test_runs_are_recorded_passed_or_failed(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that raises is a failed row, its bytes and recovery still counted."""
    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv(LEDGER_ENV, str(ledger))
    with fault_run("crash") as run:
        run.checked(b"x" * 10)
        run.recovered(2.5)
    with pytest.raises(ValueError), fault_run("crash") as run:
        run.checked(5)
        raise ValueError("lost a share")
    record_fuzz("caps", 3)
    record_fuzz("caps")
    record_limit("depth", "none")
    table = render_table(read_ledger(ledger))
    assert "| fault | crash | 2 | 1 | 1 | 15 | 2.50 | | |" in table
    assert "| fuzz | caps | | | | | | 4 | |" in table
    assert "| limit | depth | | | | | | | none |" in table


def test_nothing_is_written_without_a_ledger(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """In a plain ``make test`` (no ledger named) recording is a no-op."""
    monkeypatch.delenv(LEDGER_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    record_fuzz("caps")
    assert list(tmp_path.iterdir()) == []
    assert read_ledger(tmp_path / "absent.jsonl") == []


def test_the_doc_table_is_replaced_between_its_markers(tmp_path: Path) -> None:
    """Only the generated part of the page changes; the page has both markers."""
    text = DOC.read_text()
    assert TABLE_START in text and TABLE_END in text
    copy = tmp_path / "reliability.md"
    copy.write_text(text)
    update_doc(copy, "| new |\n")
    updated = copy.read_text()
    assert updated.split(TABLE_START)[0] == text.split(TABLE_START)[0]
    assert updated.split(TABLE_END)[1] == text.split(TABLE_END)[1]
    assert "| new |" in updated


def test_make_test_faults_multiplies_the_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """``$TAHOE_FAULT_RUNS`` scales every schedule; unset, the bounded counts stay."""
    monkeypatch.delenv(reliability.RUNS_ENV, raising=False)
    assert reliability.seeds(2, base=10) == [10, 11]
    monkeypatch.setenv(reliability.RUNS_ENV, "3")
    assert reliability.runs(2) == 6

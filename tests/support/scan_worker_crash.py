"""A scanning process that dies at a chosen point of a collection:
``python tests/support/scan_worker_crash.py CRASH_POINT``.

Started by ``tests/shell/test_share_index_crashes.py`` in place of
``python -m tahoe.storage.scan_worker`` (``ScanProcesses(command=...)``). It
arms one crash point of :mod:`tests.support.storage_crash` (the process ends
with ``os._exit`` there, as a SIGKILL would) or ``after-first-delete`` (a
share deleted, the node not told), then serves the node as the real worker does.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tahoe.storage import collector, scan_worker  # noqa: E402
from tests.support.storage_crash import CRASH_POINTS, _die  # noqa: E402


def _after_first_delete() -> None:
    original = collector._delete

    def crashing(*args: Any) -> Any:
        outcome = original(*args)
        if outcome.action == "deleted":
            _die()
        return outcome
    collector._delete = crashing  # type: ignore[assignment]


POINTS = {**CRASH_POINTS, "after-first-delete": _after_first_delete}

if __name__ == "__main__":
    POINTS[sys.argv[1]]()
    scan_worker.main()

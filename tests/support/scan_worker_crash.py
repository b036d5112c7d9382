"""A scanning process that dies at a chosen point of a collection:
``python tests/support/scan_worker_crash.py CRASH_POINT``.

Started by ``tests/shell/test_share_index_crashes.py`` in place of
``python -m tahoe.storage.scan_worker`` (``ScanProcesses(command=...)``). It
arms one crash point of :data:`tests.support.storage_crash.CRASH_POINTS` (the
process ends with ``os._exit`` there, as a SIGKILL would), then serves the
node as the real worker does.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tahoe.storage import scan_worker  # noqa: E402
from tests.support.storage_crash import CRASH_POINTS  # noqa: E402

if __name__ == "__main__":
    CRASH_POINTS[sys.argv[1]]()
    scan_worker.main()

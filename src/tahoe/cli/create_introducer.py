"""``tahoe create-introducer``: create an introducer node directory.

NODEDIR is required (or ``-C``/``-d``); there is no ``--webport``, so
``web.port`` is empty; ``--listen/--hostname/--port/--location`` set up the tub
as for ``create-node``. Only the ``[node]`` section is written
(``reference/frontends.md`` §1.2). The first ``tahoe run`` creates
``private/introducer.furl``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TextIO

from .create_node import run_create


def run(argv: list[str], stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> int:
    """``tahoe create-introducer [options] NODEDIR``: 0 on success, 1 on a usage
    error, 255 if the directory is not empty."""
    return run_create("create-introducer", argv, stdout, stderr, env)

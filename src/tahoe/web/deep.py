"""``POST $DIRCAP[/PATH]?t=stream-manifest`` and ``?t=stream-deep-check`` (``frontends.md`` §3.8).

A stream of JSON lines, one per object of the tree (Tahoe's walk and fields,
:mod:`tahoe.client.deep`), then ``{"type": "stats", "stats": …}``. The
deep-check adds each object's ``check-results`` (``add-lease=true`` renews
the client's leases on everything: the way to keep a whole tree alive on
servers that expire leases). Checks run up to :data:`CHECKS_IN_FLIGHT` at
a time while the lines keep the walk's order. A directory that cannot be
read ends the stream with an ``ERROR:`` line and a traceback, as Tahoe does;
a client that goes away stops the walk.
"""
from __future__ import annotations

import json
import traceback
from collections import deque
from typing import Any

from twisted.internet.defer import CancelledError, Deferred, ensureDeferred
from twisted.web.server import Request

from ..client.deep import Unit, walk
from ..client.repairer import check_unit
from ..dirnode.children import ChildNode
from .common import WebError, boolean_arg
from .traversal import Gateway

__all__ = ["STREAMS", "post_stream"]

STREAMS = ("stream-manifest", "stream-deep-check")
CHECKS_IN_FLIGHT = 8


def _write(request: Request, data: dict[str, Any]) -> None:
    if not request.finished:
        request.write(json.dumps(data, ensure_ascii=True).encode("ascii") + b"\n")


async def post_stream(gateway: Gateway, request: Request, child: ChildNode, t: str) -> None:
    """Walk the directory ``child`` and stream its manifest or deep-check."""
    if not child.is_directory:
        raise WebError(f"t={t} needs a directory")
    add_lease = boolean_arg(request, "add-lease", False)
    verify = boolean_arg(request, "verify", False)
    repair = boolean_arg(request, "repair", False)
    results_key = "check-and-repair-results" if repair else "check-results"
    pending: deque[tuple[dict[str, Any], Deferred | None]] = deque()

    async def check(unit: Unit) -> dict[str, Any]:
        return await check_unit(gateway.client, unit, add_lease=add_lease, verify=verify,
                                repair=repair)

    async def flush(keep: int) -> None:
        while len(pending) > keep:
            line, result = pending.popleft()
            if result is not None:
                line[results_key] = await result
            _write(request, line)

    async def visit(unit: Unit) -> None:
        result = ensureDeferred(check(unit)) if t == "stream-deep-check" else None
        pending.append((dict(unit.line), result))
        await flush(CHECKS_IN_FLIGHT - 1 if result is not None else 0)

    request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
    try:
        stats = await walk(gateway.open, child, visit)
        await flush(0)
    except CancelledError:
        raise  # the client went away
    except Exception as error:  # noqa: BLE001 - any failure ends the stream with its report
        await _drain(pending)
        if not request.finished:
            request.write(f"ERROR: {type(error).__name__}({error!r})\n".encode("utf-8", "replace"))
            request.write(traceback.format_exc().encode("utf-8", "replace"))
        return
    _write(request, {"type": "stats", "stats": stats})


async def _drain(pending: deque[tuple[dict[str, Any], Deferred | None]]) -> None:
    """Let checks already started finish (their lines are dropped after an error)."""
    for _, result in pending:
        if result is not None:
            try:
                await result
            except Exception:  # noqa: BLE001 - already failing; nothing to report
                pass

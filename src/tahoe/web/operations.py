"""Slow operations behind handles: ``t=start-*`` on a directory and ``/operations/H``.

``reference/frontends.md`` §3.3 ("Operation handles"): the client picks the
handle; ``POST $DIRCAP?t=start-manifest|start-deep-size|start-deep-stats|
start-deep-check&ophandle=H`` starts the walk (:mod:`tahoe.client.deep`) in
the background and redirects (302) to ``/operations/H``, which shows the
progress and, once finished, the results in Tahoe's formats (``output=html``,
``text`` or ``json``). ``POST /operations/H?t=cancel`` stops it and releases
the handle; ``retain-for=`` sets the remaining lifetime,
``release-after-complete=true`` releases a finished handle once shown.
A handle lives while its operation runs, then max(4 days, run time) until
first collected, then 1 day. Deep-check results of one object are at
``/operations/H/<storage index>``.
"""
from __future__ import annotations

import html
import json
from typing import Any
from urllib.parse import urlsplit

from twisted.internet.defer import CancelledError, Deferred, ensureDeferred
from twisted.python import log
from twisted.python.failure import Failure
from twisted.web import resource
from twisted.web.server import Request

from ..caps.dirnode import DirectoryCap
from ..client.deep import Unit, walk
from ..client.deep_stats import DeepStats
from ..client.repairer import check_unit
from ..dirnode.children import ChildNode
from ..util import base32
from .common import WebError, arg, boolean_arg, redirect, render_async
from .headers import wants_html
from .ophtml import deep_check_page, deep_size_page, deep_stats_page, manifest_page
from .traversal import Gateway

__all__ = ["OperationsResource", "Operations", "STARTS", "start_operation"]

STARTS = {"start-manifest": "manifest", "start-deep-size": "deep-size",
          "start-deep-stats": "deep-stats", "start-deep-check": "deep-check"}
DAY = 24 * 60 * 60.0
UNCOLLECTED = 4 * DAY
COLLECTED = DAY


class Operation:
    """One walk and what it has found so far."""

    def __init__(self, kind: str, root: ChildNode, started: float) -> None:
        self.kind = kind
        assert isinstance(root.cap, DirectoryCap)
        si = root.cap.storage_index
        self.origin = base32.b2a(si) if si else ""
        self.started = started
        self.finished_at: float | None = None
        self.stats = DeepStats()
        self.manifest: list[list[Any]] = []
        self.verifycaps: set[str] = set()
        self.storage_indexes: set[str] = set()
        self.checked = self.healthy = self.unhealthy = self.unrecoverable = 0
        self.corrupt: list[list[Any]] = []
        self.unhealthy_files: list[list[Any]] = []
        self.by_si: dict[str, dict[str, Any]] = {}
        self.repair = False
        self.repairs = {"attempted": 0, "successful": 0}
        self.post_healthy = self.post_unhealthy = 0
        self.remaining_corrupt: list[list[Any]] = []
        self.error: str | None = None
        self.task: Deferred | None = None
        self.expires_at: float | None = None  # None while running
        self.retain_for: float | None = None

    @property
    def finished(self) -> bool:
        return self.finished_at is not None

    def record(self, unit: Unit, results: dict[str, Any] | None) -> None:
        """Add one walked object (and, for a deep-check, its check results)."""
        line = unit.line
        self.manifest.append([line["path"], line["cap"]])
        if line["verifycap"]:
            self.verifycaps.add(line["verifycap"])
        if line["storage-index"]:
            self.storage_indexes.add(line["storage-index"])
        if results is None or not results.get("storage-index"):
            return  # nothing checked, or a LIT object (not counted, as in Tahoe)
        if "pre-repair-results" in results:
            self._record_repair(line["path"], results)
            return
        details = results["results"]
        self.checked += 1
        if details["healthy"]:
            self.healthy += 1
        else:
            self.unhealthy += 1
            self.unhealthy_files.append([line["path"], results])
        if not details["recoverable"]:
            self.unrecoverable += 1
        self.corrupt.extend(details.get("list-corrupt-shares", []))
        self.by_si[results["storage-index"]] = results


    def _record_repair(self, path: list[str], results: dict[str, Any]) -> None:
        pre, post = results["pre-repair-results"], results["post-repair-results"]
        self.checked += 1
        if pre["results"]["healthy"]:
            self.healthy += 1
        else:
            self.unhealthy += 1
            self.unhealthy_files.append([path, pre])
        if post["results"]["healthy"]:
            self.post_healthy += 1
        else:
            self.post_unhealthy += 1
        if results["repair-attempted"]:
            self.repairs["attempted"] += 1
            self.repairs["successful"] += bool(results["repair-successful"])
        self.corrupt.extend(pre["results"].get("list-corrupt-shares", []))
        self.remaining_corrupt.extend(post["results"].get("list-corrupt-shares", []))
        self.by_si[results["storage-index"]] = results


class Operations:
    """The handles of one gateway."""

    def __init__(self, clock: Any) -> None:
        self.clock = clock
        self._ops: dict[str, Operation] = {}

    def _sweep(self) -> None:
        now = self.clock.seconds()
        for handle in [h for h, op in self._ops.items()
                       if op.expires_at is not None and op.expires_at <= now]:
            del self._ops[handle]

    def add(self, handle: str, op: Operation, retain_for: float | None) -> None:
        self._sweep()
        if handle in self._ops:
            raise WebError(f"operation handle '{handle}' is already in use")
        self._ops[handle] = op
        op.retain_for = retain_for

    def get(self, handle: str) -> Operation:
        self._sweep()
        op = self._ops.get(handle)
        if op is None:
            raise WebError(f"unknown/expired handle '{html.escape(handle)}'", 404)
        return op

    def release(self, handle: str) -> None:
        self._ops.pop(handle, None)

    def finished(self, op: Operation) -> None:
        now = self.clock.seconds()
        op.finished_at = now
        retain = op.retain_for
        op.expires_at = now + (retain if retain is not None
                               else max(UNCOLLECTED, now - op.started))


async def _run(gateway: Gateway, op: Operation, root: ChildNode, add_lease: bool,
               verify: bool) -> None:
    async def visit(unit: Unit) -> None:
        results = None
        if op.kind == "deep-check":
            results = await check_unit(gateway.client, unit, add_lease=add_lease,
                                       verify=verify, repair=op.repair)
        op.record(unit, results)

    await walk(gateway.open, root, visit, op.stats)


def start_operation(gateway: Gateway, operations: Operations, request: Request,
                    child: ChildNode, t: str) -> bytes:
    """Start a ``t=start-*`` walk of the directory ``child``; the redirect to its handle."""
    handle = arg(request, "ophandle")
    if not handle:
        raise WebError("slow operation requires ophandle=")
    if not child.is_directory:
        raise WebError(f"t={t} needs a directory")
    retain = arg(request, "retain-for")
    op = Operation(STARTS[t], child, operations.clock.seconds())
    op.repair = boolean_arg(request, "repair", False)
    operations.add(handle, op, float(retain) if retain else None)
    task = ensureDeferred(_run(gateway, op, child, boolean_arg(request, "add-lease", False),
                               boolean_arg(request, "verify", False)))
    op.task = task

    def ended(result: Any) -> None:
        if isinstance(result, Failure) and not result.check(CancelledError):
            op.error = f"{type(result.value).__name__}: {result.value}"
            log.err(result, f"operation {op.kind} failed")
        operations.finished(op)
    task.addBoth(ended)
    output = arg(request, "output")
    here = urlsplit(request.prePathURL().decode("utf-8", "replace"))
    location = (f"{here.scheme}://{here.netloc}/operations/{handle}"
                + (f"?output={output}" if output else ""))  # absolute, as Tahoe's
    return redirect(request, location)


# -- rendering


def _deep_check_json(op: Operation) -> dict[str, Any]:
    if op.repair:
        return {"finished": op.finished, "root-storage-index": op.origin,
                "count-objects-checked": op.checked,
                "count-objects-healthy-pre-repair": op.healthy,
                "count-objects-unhealthy-pre-repair": op.unhealthy,
                "count-objects-healthy-post-repair": op.post_healthy,
                "count-objects-unhealthy-post-repair": op.post_unhealthy,
                "count-repairs-attempted": op.repairs["attempted"],
                "count-repairs-successful": op.repairs["successful"],
                "count-repairs-unsuccessful": op.repairs["attempted"] - op.repairs["successful"],
                "count-corrupt-shares-pre-repair": len(op.corrupt),
                # Tahoe 1.20 repeats the pre-repair count here
                "count-corrupt-shares-post-repair": len(op.corrupt),
                "list-corrupt-shares": op.corrupt,
                "list-remaining-corrupt-shares": op.remaining_corrupt,
                "list-unhealthy-files": op.unhealthy_files, "stats": op.stats.results()}
    return {"finished": op.finished, "root-storage-index": op.origin,
            "count-objects-checked": op.checked, "count-objects-healthy": op.healthy,
            "count-objects-unhealthy": op.unhealthy, "count-corrupt-shares": len(op.corrupt),
            "list-corrupt-shares": op.corrupt, "list-unhealthy-files": op.unhealthy_files,
            "stats": op.stats.results()}


def _size(op: Operation) -> int:
    stats = op.stats.results()
    return (stats.get("size-immutable-files", 0) + stats.get("size-mutable-files", 0)
            + stats.get("size-directories", 0))


def render_operation(op: Operation, output: str, *, browser: bool = False, handle: str = "",
                     now: float = 0.0) -> tuple[bytes, bytes]:
    """(content type, body) of an operation's status page in format ``output``.

    :param browser: the client is a browser (:func:`~tahoe.web.headers.wants_html`):
        deep-stats and deep-size then get a page too where API clients get
        Tahoe's JSON and text (:mod:`tahoe.web.ophtml`).
    :param handle: the operation's handle (the page links to itself).
    :param now: the time, for the elapsed time of a running operation.
    """
    text_plain = b"text/plain; charset=utf-8"
    page_type = b"text/html; charset=utf-8"
    if op.kind == "deep-stats":
        if browser and output == "html":
            return page_type, deep_stats_page(op, handle, now)
        return text_plain, (json.dumps({**op.stats.results(), "finished": op.finished},
                                       indent=1) + "\n").encode()
    if op.kind == "deep-size":
        if output == "json":
            return text_plain, json.dumps({"finished": op.finished,
                                           "size": op.stats.results()}).encode()
        if browser and output == "html":
            return page_type, deep_size_page(op, handle, now)
        lines = f"finished: {'yes' if op.finished else 'no'}\n"
        return text_plain, (lines + (f"size: {_size(op)}\n" if op.finished else "")).encode()
    if op.kind == "manifest":
        if output == "json":
            status: dict[str, Any] = {"stats": op.stats.results(), "finished": op.finished,
                                      "origin": op.origin}
            if op.finished:
                status.update({"manifest": op.manifest, "verifycaps": sorted(op.verifycaps),
                               "storage-index": sorted(op.storage_indexes)})
            return text_plain, json.dumps(status, indent=1).encode()
        if output == "text":
            lines = [f"finished: {'yes' if op.finished else 'no'}"]
            lines += [f"{'/'.join(path)} {cap}" for path, cap in op.manifest]
            return text_plain, ("\n".join(lines) + "\n").encode()
        return page_type, manifest_page(op, handle, now)
    if output == "json":
        return text_plain, (json.dumps(_deep_check_json(op), indent=1) + "\n").encode()
    return page_type, deep_check_page(op, handle, now)


class OperationResource(resource.Resource):
    """``/operations/H`` and ``/operations/H/<SI>``."""

    isLeaf = True

    def __init__(self, operations: Operations, handle: str) -> None:
        super().__init__()
        self._operations = operations
        self._handle = handle

    def render_GET(self, request: Request) -> Any:  # noqa: N802 (Twisted)
        return render_async(request, self._get)

    def render_POST(self, request: Request) -> Any:  # noqa: N802 (Twisted)
        return render_async(request, self._post)

    async def _get(self, request: Request) -> bytes:
        op = self._operations.get(self._handle)
        output = (arg(request, "output") or "html").lower()
        if request.postpath and request.postpath[0]:
            return self._details(request, op, request.postpath[0].decode("ascii", "replace"),
                                 output)
        content_type, body = render_operation(op, output, browser=wants_html(request),
                                              handle=self._handle,
                                              now=self._operations.clock.seconds())
        retain = arg(request, "retain-for")
        now = self._operations.clock.seconds()
        if retain:
            op.expires_at = now + float(retain)
        elif op.finished:
            op.expires_at = min(op.expires_at or now + COLLECTED, now + COLLECTED)
        if op.finished and boolean_arg(request, "release-after-complete", False):
            self._operations.release(self._handle)
        request.setHeader(b"Content-Type", content_type)
        return body

    def _details(self, request: Request, op: Operation, si: str, output: str) -> bytes:
        results = op.by_si.get(si)
        if results is None:
            raise WebError(f"No detailed results for SI {html.escape(si)}", 404)
        request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
        return (json.dumps(results, indent=1) + "\n").encode()

    async def _post(self, request: Request) -> bytes:
        if (arg(request, "t") or "") != "cancel":
            raise WebError("POST to an operation handle needs t=cancel")
        op = self._operations.get(self._handle)
        if op.task is not None and not op.finished:
            op.task.cancel()
        self._operations.release(self._handle)
        content_type, body = render_operation(op, (arg(request, "output") or "html").lower(),
                                              browser=wants_html(request), handle=self._handle,
                                              now=self._operations.clock.seconds())
        request.setHeader(b"Content-Type", content_type)
        return body


class OperationsResource(resource.Resource):
    """``/operations``: one child per handle."""

    def __init__(self, operations: Operations) -> None:
        super().__init__()
        self._operations = operations

    def getChild(self, path: bytes, request: Request) -> resource.Resource:  # noqa: N802
        return OperationResource(self._operations, path.decode("utf-8", "replace"))

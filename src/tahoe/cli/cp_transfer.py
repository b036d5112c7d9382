"""The moving part of ``tahoe cp``: uploads, downloads, links and directories, concurrently.

Requests (``reference/frontends.md`` §3.3, §3.5):

* a local file, or a mutable grid file (copied as a new immutable file):
  ``PUT /uri`` with the bytes, giving a cap; an immutable grid file is linked
  by its cap, with no transfer (Tahoe 1.20 downloads and re-uploads it, a
  known bug, its ticket 3719); an existing *mutable* file of the same name in
  the target directory is overwritten in place (``PUT <dir>/<name>``);
* a new grid directory is made once all its children have caps, in one
  ``POST /uri?t=mkdir-with-children`` (children JSON);
* an existing grid directory gets all its new links in one
  ``POST <dircap>?t=set_children``;
* into a local directory, grid files are fetched with ``GET /uri/<readcap>``
  (``--caps-only``: the read cap is written instead), local files copied.

Everything runs on a :class:`~tahoe.cli.workers.TaskPool`, a bounded number of
requests in flight; a directory starts as soon as its last child is done.
Tahoe 1.20 makes one request at a time.  Standard library only.
"""
from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable
from typing import Any

from .aliases import quote_output
from .cp_plan import DirPlan, children_json, directory_link, file_link, walk
from .cp_sources import FileSource, Target
from .errors import CLIError, HTTPStatusError, LocalFileError
from .gateway import Gateway
from .localio import Body, body_from_path, replacing, spool_stream
from .remote import ERROR_BODY_LIMIT, call_ok, get_json, object_path
from .workers import TaskPool

__all__ = ["GridCopy", "LocalCopy", "copy_file_to_file"]

Progress = Callable[[str], None]
_UNSAFE_NAMES = ("", ".", "..")


class _ResponseReader(io.RawIOBase):
    """A download as a readable stream (for spooling it into an upload body)."""

    def __init__(self, chunks: Any) -> None:
        self._chunks = chunks
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        raise io.UnsupportedOperation("not a file")

    def read(self, size: int = -1) -> bytes:  # type: ignore[override]
        while not self._buffer:
            piece = next(self._chunks, b"")
            if not piece:
                return b""
            self._buffer = piece
        if size < 0 or size >= len(self._buffer):
            piece, self._buffer = self._buffer, b""
        else:
            piece, self._buffer = self._buffer[:size], self._buffer[size:]
        return piece


def _download_body(gateway: Gateway, source: FileSource) -> Body:
    """A grid file's contents, spooled (memory, then a temporary file) to be uploaded again."""
    context = "Error during GET"
    with gateway.request("GET", object_path(source.readcap or ""), context=context) as response:
        if response.status != 200:
            raise HTTPStatusError(context, response.status, response.reason,
                                  response.read(ERROR_BODY_LIMIT))
        return spool_stream(_ResponseReader(response.chunks()))  # type: ignore[arg-type]


def _source_body(gateway: Gateway, source: FileSource) -> Body:
    if source.local_path is not None:
        return body_from_path(source.local_path)
    return _download_body(gateway, source)


def _write_local(gateway: Gateway, source: FileSource, path: str, caps_only: bool) -> None:
    """Write ``source``'s contents (or read cap, with ``caps_only``) to the local ``path``,
    whole or not at all (:func:`~.localio.replacing`)."""
    try:
        if source.local_path is not None:
            if os.path.exists(path) and os.path.samefile(source.local_path, path):
                raise CLIError(f"Error: {quote_output(path)} would be copied onto itself")
            with open(source.local_path, "rb") as reader, replacing(path) as writer:
                while piece := reader.read(1024 * 1024):
                    writer.write(piece)
        elif caps_only:
            with replacing(path) as writer:
                writer.write((source.readcap or "").encode("utf-8"))
        else:
            context = "Error during GET"
            with gateway.request("GET", object_path(source.readcap or ""),
                                 context=context) as response:
                if response.status != 200:
                    raise HTTPStatusError(context, response.status, response.reason,
                                          response.read(ERROR_BODY_LIMIT))
                with replacing(path) as writer:
                    for piece in response.chunks():
                        writer.write(piece)
    except OSError as e:
        raise LocalFileError(f"Error: cannot write {quote_output(path)}: {e.strerror or e}"
                             ) from None


def _put_cap(gateway: Gateway, relative: str, body: Body) -> str:
    data = call_ok(gateway, "PUT", relative, body=body, context="Error during PUT")
    return data.decode("utf-8", "replace").strip()


def copy_file_to_file(gateway: Gateway, source: FileSource, target: Target,
                      caps_only: bool) -> None:
    """Copy one file onto a file target (existing or missing, local or grid)."""
    if target.local_path is not None:
        _write_local(gateway, source, target.local_path, caps_only)
        return
    assert target.relative is not None
    overwrite_mutable = target.kind == "file" and target.mutable
    if source.local_path is None and not source.mutable and not overwrite_mutable:
        _put_cap(gateway, target.relative + "?t=uri", Body.from_bytes(source.bestcap.encode()))
    else:
        _put_cap(gateway, target.relative, _source_body(gateway, source))


class _Copy:
    """What the grid and local copies share: the pool, counters and progress lines."""

    def __init__(self, gateway: Gateway, pool: TaskPool, progress: Progress,
                 caps_only: bool) -> None:
        self.gateway = gateway
        self.pool = pool
        self.progress = progress
        self.caps_only = caps_only
        self._lock = threading.Lock()
        self._files_done = self._files_total = 0
        self._directories_done = self._directories_total = 0

    def _start(self, plans: list[DirPlan]) -> None:
        self._files_total = sum(len(plan.files) for plan in plans)
        self._directories_total = len(plans)
        self.progress(f"starting copy, {self._files_total} files,"
                      f" {self._directories_total} directories")

    def _file_done(self) -> None:
        with self._lock:
            self._files_done += 1
            message = (f"{self._files_done}/{self._files_total} files,"
                       f" {self._directories_done}/{self._directories_total} directories")
        self.progress(message)

    def _directory_done(self) -> None:
        with self._lock:
            self._directories_done += 1
            message = f"{self._directories_done}/{self._directories_total} directories"
        self.progress(message)


class GridCopy(_Copy):
    """Copy sources into a grid directory tree."""

    def open_subdirectory(self, parent: DirPlan, name: str) -> DirPlan:
        """The plan of ``parent``'s subdirectory ``name``: existing, or new."""
        if not parent.existing:
            return DirPlan(name, parent, existing=False)
        entry = (parent.children or {}).get(name)
        if entry is None or entry[0] not in ("dirnode", "filenode"):
            return DirPlan(name, parent, existing=False)
        path = quote_output("/".join(filter(None, (parent.display_path(), name))))
        if entry[0] != "dirnode":
            raise CLIError(f"cannot copy directory into a file ({path} is a file)")
        writecap = entry[1].get("rw_uri")
        if not writecap:
            raise CLIError(f"Error: cannot copy into the read-only directory {path}")
        parsed = get_json(self.gateway, object_path(writecap),
                          "Error examining target directory")
        return DirPlan(name, parent, existing=True, writecap=writecap,
                       children=dict(parsed[1].get("children", {})))

    def run(self, root: DirPlan) -> None:
        """Make every new directory, copy or link every file, and wait for the end."""
        if root.writecap is None:
            raise CLIError("Error: the target directory is read-only")
        plans = list(walk(root))
        self._start(plans)
        for plan in plans:
            plan.pending = len(plan.files) + sum(not child.existing
                                                 for child in plan.subdirectories.values())
        ready = [plan for plan in plans if plan.pending == 0]
        for plan in plans:
            for name, source in plan.files.items():
                self.pool.submit(lambda p=plan, n=name, s=source: self._copy_file(p, n, s))
        for plan in ready:
            self._finish(plan)
        self.pool.wait()

    def _copy_file(self, plan: DirPlan, name: str, source: FileSource) -> None:
        existing = (plan.children or {}).get(name) if plan.existing else None
        link: list[Any] | None
        if existing and existing[0] == "filenode" and existing[1].get("mutable"):
            assert plan.writecap is not None
            _put_cap(self.gateway, object_path(plan.writecap, name),
                     _source_body(self.gateway, source))
            link = None  # overwritten in place: the link stays as it is
        elif source.local_path is None and not source.mutable:
            link = file_link(source.bestcap)
        else:
            link = file_link(_put_cap(self.gateway, "uri", _source_body(self.gateway, source)))
        self._file_done()
        self._child_done(plan, name, link)

    def _child_done(self, plan: DirPlan, name: str, link: list[Any] | None) -> None:
        with self._lock:
            if link is not None:
                plan.links[name] = link
            plan.pending -= 1
            ready = plan.pending == 0
        if ready:
            self._finish(plan)

    def _finish(self, plan: DirPlan) -> None:
        if not plan.existing:
            self.pool.submit(lambda: self._make_directory(plan))
        elif plan.links:
            self.pool.submit(lambda: self._set_children(plan))
        else:
            self._directory_done()

    def _make_directory(self, plan: DirPlan) -> None:
        data = call_ok(self.gateway, "POST", "uri?t=mkdir-with-children",
                       body=children_json(plan.links), context="Error during mkdir")
        plan.cap = data.decode("utf-8", "replace").strip()
        self._directory_done()
        assert plan.parent is not None
        self._child_done(plan.parent, plan.name, directory_link(plan.cap))

    def _set_children(self, plan: DirPlan) -> None:
        assert plan.writecap is not None
        call_ok(self.gateway, "POST", object_path(plan.writecap) + "?t=set_children",
                body=children_json(plan.links), context="Error during POST")
        self._directory_done()


class LocalCopy(_Copy):
    """Copy sources into a local directory tree."""

    def open_subdirectory(self, parent: DirPlan, name: str) -> DirPlan:
        """The plan of ``parent``'s subdirectory ``name`` (made by :meth:`run` if missing)."""
        assert parent.local_path is not None
        path = os.path.join(parent.local_path, _safe_name(name))
        if os.path.isdir(path):
            return DirPlan(name, parent, existing=True, local_path=path)
        if os.path.lexists(path):
            raise CLIError(f"cannot copy directory into a file ({quote_output(path)} is a file)")
        return DirPlan(name, parent, existing=False, local_path=path)

    def run(self, root: DirPlan) -> None:
        """Make the missing directories, then fetch or copy every file concurrently."""
        plans = list(walk(root))
        self._start(plans)
        for plan in plans:
            if not plan.existing:
                assert plan.local_path is not None
                try:
                    os.makedirs(plan.local_path, exist_ok=True)
                except OSError as e:
                    raise LocalFileError(f"Error: cannot make {quote_output(plan.local_path)}:"
                                         f" {e.strerror or e}") from None
        for plan in plans:
            for name, source in plan.files.items():
                path = os.path.join(plan.local_path or "", _safe_name(name))
                self.pool.submit(lambda s=source, p=path: self._copy_file(s, p))
        self.pool.wait()
        for _ in plans:
            self._directory_done()

    def _copy_file(self, source: FileSource, path: str) -> None:
        _write_local(self.gateway, source, path, self.caps_only)
        self._file_done()


def _safe_name(name: str) -> str:
    """``name`` if it is usable as one local file name (no ``/``, not ``.``/``..``)."""
    if name in _UNSAFE_NAMES or "/" in name or "\0" in name or (os.sep != "/" and os.sep in name):
        raise CLIError(f"Error: refusing to write a local file named {quote_output(name)}")
    return name

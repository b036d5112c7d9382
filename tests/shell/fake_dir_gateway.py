"""An in-memory web gateway with directories, for testing the ``tahoe`` directory commands.

A standard-library ``ThreadingHTTPServer`` on 127.0.0.1 in a thread, speaking
the subset of the web API (``reference/frontends.md`` §3.3-3.5) that ``mkdir``,
``ls``, ``cp``, ``mv``, ``ln`` and ``unlink`` use: unlinked uploads and
directories, ``t=json``, ``t=uri``, ``t=mkdir``, ``t=mkdir-with-children``,
``t=set_children``, file contents and ``DELETE``.  Every request is recorded;
the number of uploads in flight at once is measured, and ``hold_uploads``
makes each upload wait (with a deadline) until that many are in flight, so
a test can prove that uploads overlap without sleeping.
"""
from __future__ import annotations

import base64
import hashlib
import itertools
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tahoe.cli.dircaps import readonly_dircap

HOLD_DEADLINE = 10.0


def b32(data: bytes) -> str:
    """Tahoe's base32: lower case, no padding."""
    return base64.b32encode(data).decode().rstrip("=").lower()


class Request:
    """One recorded request: method, decoded path segments after ``/uri/``, query, body."""

    def __init__(self, method: str, raw_path: str, body: bytes) -> None:
        self.method = method
        self.raw_path = raw_path
        parsed = urllib.parse.urlsplit(raw_path)
        self.path = parsed.path
        self.query = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
        self.body = body

    @property
    def t(self) -> str:
        """The ``t=`` argument ("" when absent)."""
        return self.query.get("t", "")

    def __repr__(self) -> str:
        return f"<{self.method} {self.raw_path}>"


class Reply(Exception):
    """Answer with this status and text."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


class FakeDirGateway:
    """The fake gateway's state: files, directories (name -> [cap, metadata]) and the log."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.files: dict[str, bytes] = {}
        self.directories: dict[str, dict[str, list[Any]]] = {}
        self.readonly: dict[str, str] = {}  # read cap -> write cap
        self.now = 1_700_000_000.0
        self.lock = threading.RLock()
        self.counter = itertools.count(1)
        self.in_flight = {"upload": 0, "download": 0}
        self.max_in_flight = {"upload": 0, "download": 0}
        self.hold = {"upload": 0, "download": 0}
        self.fail_bodies: set[bytes] = set()
        self.transfers_changed = threading.Condition(self.lock)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = Request(self.command, self.path, body)
                with fake.lock:
                    fake.requests.append(request)
                try:
                    status, data = 200, fake.answer(request)
                except Reply as reply:
                    status, data = reply.status, reply.text.encode()
                if isinstance(data, tuple):
                    status, data = data
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

            do_GET = do_PUT = do_POST = do_DELETE = _handle  # noqa: N815

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # the default 5 drops connections under concurrent load

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,),
                                       daemon=True)

    # ------------------------------------------------------------ objects

    def new_directory(self, children: dict[str, list[Any]] | None = None) -> str:
        """Make a directory; return its write cap."""
        with self.lock:
            number = next(self.counter)
            seed = hashlib.sha256(b"dir%d" % number).digest()
            cap = f"URI:DIR2:{b32(seed[:16])}:{b32(hashlib.sha256(seed).digest())}"
            self.directories[cap] = dict(children or {})
            self.readonly[readonly_dircap(cap)] = cap
            return cap

    def new_file(self, data: bytes, mutable: bool = False) -> str:
        """Store a file; return its cap (LIT up to 55 bytes, CHK, or SSK if mutable)."""
        digest = hashlib.sha256(data).digest()
        if mutable:
            seed = hashlib.sha256(b"ssk%d" % next(self.counter)).digest()
            cap = f"URI:SSK:{b32(seed[:16])}:{b32(seed)}"
        elif len(data) <= 55:
            cap = "URI:LIT:" + b32(data)
        else:
            cap = f"URI:CHK:{b32(digest[:16])}:{b32(digest)}:2:3:{len(data)}"
        with self.lock:
            self.files[cap] = data
            if mutable:
                self.readonly[cap.replace("URI:SSK:", "URI:SSK-RO:")] = cap
        return cap

    def link(self, dircap: str, name: str, cap: str, created: float | None = None) -> None:
        """Link ``cap`` as ``name`` in the directory."""
        with self.lock:
            old = self.directories[dircap].get(name)
            crtime = old[1]["tahoe"]["linkcrtime"] if old else (created or self.now)
            metadata = {"tahoe": {"linkcrtime": crtime, "linkmotime": self.now}}
            self.directories[dircap][name] = [cap, metadata]

    def describe(self, cap: str, metadata: dict[str, Any] | None = None,
                 with_children: bool = True) -> list[Any]:
        """The ``t=json`` description of ``cap``."""
        writecap = self.readonly.get(cap, cap)
        data: dict[str, Any] = {}
        if writecap in self.directories:
            data["ro_uri"] = readonly_dircap(writecap)
            if writecap == cap:
                data["rw_uri"] = cap
            data["mutable"] = True
            if with_children:
                data["children"] = {name: self.describe(child, meta, False)
                                    for name, (child, meta) in
                                    self.directories[writecap].items()}
            kind = "dirnode"
        elif cap in self.files:
            mutable = cap.startswith("URI:SSK:")
            data.update(mutable=mutable, format="SDMF" if mutable else "CHK")
            if mutable:
                data.update(rw_uri=cap, ro_uri=cap.replace("URI:SSK:", "URI:SSK-RO:"))
            else:
                data.update(ro_uri=cap, size=len(self.files[cap]))
            kind = "filenode"
        else:
            data["ro_uri"] = cap
            kind = "unknown"
        if metadata is not None:
            data["metadata"] = metadata
        return [kind, data]

    # ------------------------------------------------------------ requests

    def _walk(self, segments: list[str], create: bool = False) -> str:
        cap = self.readonly.get(segments[0], segments[0])
        if cap.startswith("URI:DIR2") and cap not in self.directories:
            raise Reply(410, "UnrecoverableFileError: no recoverable versions")
        for name in segments[1:]:
            if cap not in self.directories:
                raise Reply(400, "Files have no children")
            entry = self.directories[cap].get(name)
            if entry is None:
                if not create:
                    raise Reply(404, f"No such child: {name}")
                self.link(cap, name, self.new_directory())
                entry = self.directories[cap][name]
            cap = self.readonly.get(entry[0], entry[0])
        return cap

    def _transfer_started(self, kind: str) -> None:
        """Count a transfer in; hold it (with a deadline) until ``hold[kind]`` were in flight."""
        with self.transfers_changed:
            self.in_flight[kind] += 1
            self.max_in_flight[kind] = max(self.max_in_flight[kind], self.in_flight[kind])
            self.transfers_changed.notify_all()
            self.transfers_changed.wait_for(
                lambda: self.max_in_flight[kind] >= self.hold[kind], timeout=HOLD_DEADLINE)

    def _transfer_ended(self, kind: str) -> None:
        with self.transfers_changed:
            self.in_flight[kind] -= 1

    def _upload(self, request: Request) -> str:
        self._transfer_started("upload")
        try:
            if request.body in self.fail_bodies:
                raise Reply(500, "Internal Server Error: upload failed")
            mutable = request.query.get("mutable") == "true" or "format" in request.query
            return self.new_file(request.body, mutable=mutable)
        finally:
            self._transfer_ended("upload")

    def _download(self, cap: str) -> bytes:
        self._transfer_started("download")
        try:
            with self.lock:
                return self.files[cap]
        finally:
            self._transfer_ended("download")

    def answer(self, request: Request) -> bytes | tuple[int, bytes]:
        """The response body for ``request`` (raises :class:`Reply` for errors)."""
        segments = [urllib.parse.unquote(s) for s in request.path.split("/")[2:]]
        method, t = request.method, request.t
        if request.path == "/uri" and method == "PUT":
            return self._upload(request).encode()
        if request.path == "/uri" and method == "POST" and t == "mkdir":
            return self.new_directory().encode()
        if request.path == "/uri" and method == "POST" and t == "mkdir-with-children":
            children = json.loads(request.body or b"{}")
            cap = self.new_directory()
            for name, (_, props) in children.items():
                self.link(cap, name, props.get("rw_uri") or props["ro_uri"])
            return cap.encode()
        if not request.path.startswith("/uri/") or not segments or not segments[0]:
            raise Reply(400, "bad request")
        if segments[-1] == "":
            segments = segments[:-1]
        if method == "GET" and t == "" and len(segments) == 1:
            cap = self.readonly.get(segments[0], segments[0])
            if cap in self.files:
                return self._download(cap)
        with self.lock:
            if method == "GET":
                cap = self._walk(segments)
                if t == "json":
                    metadata = None
                    if len(segments) > 1:
                        parent = self._walk(segments[:-1])
                        metadata = self.directories[parent][segments[-1]][1]
                    return (json.dumps(self.describe(cap, metadata), indent=1) + "\n").encode()
                if cap in self.files:
                    return self.files[cap]
                raise Reply(400, "not a file")
            if method == "POST" and t == "mkdir":
                return self._walk(segments, create=True).encode()
            if method == "POST" and t in ("set_children", "set-children"):
                cap = self._walk(segments)
                for name, (_, props) in json.loads(request.body).items():
                    self.link(cap, name, props.get("rw_uri") or props["ro_uri"])
                return b"Okay so I did it."
            if len(segments) < 2:
                raise Reply(500, "cannot change an object without a parent")
            parent = self._walk(segments[:-1], create=(method == "PUT"))
            name = segments[-1]
            existing = self.directories[parent].get(name)
            if method == "DELETE":
                if existing is None:
                    raise Reply(404, f"No such child: {name}")
                del self.directories[parent][name]
                return existing[0].encode()
            if method == "PUT" and t == "uri":
                replace = request.query.get("replace", "true")
                if existing and (replace == "false" or (replace == "only-files" and
                                                        existing[0] in self.directories)):
                    raise Reply(409, "There was already a child by that name, and you asked"
                                " me to not replace it.")
                self.link(parent, name, request.body.decode())
                return request.body
            if method == "PUT" and t == "":
                if existing and existing[0].startswith("URI:SSK:"):
                    self.files[existing[0]] = request.body
                    return existing[0].encode()
                cap = self.new_file(request.body)
                self.link(parent, name, cap)
                return (200 if existing else 201), cap.encode()
        raise Reply(400, f"unsupported {method} t={t}")

    def children(self, dircap: str) -> dict[str, str]:
        """name -> cap of a directory's children."""
        return {name: entry[0] for name, entry in self.directories[dircap].items()}

    def requests_with(self, method: str, t: str | None = None) -> list[Request]:
        """The recorded requests with this method (and ``t=``)."""
        return [r for r in self.requests if r.method == method and (t is None or r.t == t)]

"""``/uri/$CAP[/a/b/c]``: every request on an object named by a cap and a path.

Facts: ``reference/frontends.md`` §3.1, §3.3, §3.4, §3.10, §3.11 and §8.
One leaf resource takes the whole path and, per method, walks only as far
as it must:

* ``GET``/``HEAD``: read each directory on the path, then serve what the
  last name links (directory listing or JSON, file contents, unknown node).
* ``PUT`` of a file: walk (creating) to the parent only; upload; link with
  one change (:mod:`tahoe.web.linking`). ``t=uri`` likewise; ``t=mkdir``
  creates what is missing.
* ``POST``: walk (creating intermediate directories except for ``t=delete``,
  ``rename``, ``rename-form`` and ``check``), then :mod:`tahoe.web.dirpost`
  for directories or the file operations here; ``when_done=`` redirects.
* ``DELETE``: one change of the parent.
"""
from __future__ import annotations

import json
import os
from typing import Any

from twisted.web import resource
from twisted.web.server import Request

from ..caps.dirnode import DirectoryCap
from ..caps.immutable import CHKReadCap, LiteralCap
from ..client.uploadable import BytesUploadable
from ..dirnode.children import ChildNode
from ..dirnode.errors import ExistingChildError
from ..util import base32
from .common import (ChildNotFound, WebError, status_for, arg, body_uploadable, boolean_arg,
                     mkdir_format, raw_arg, redirect, render_async, replace_arg,
                     requested_format)
from .dirhtml import directory_page, rename_form
from .infohtml import directory_info_page, unknown_info_page
from .check import post_check
from .deep import STREAMS, post_stream
from .operations import STARTS, start_operation
from .dirpost import creation_children, post_directory, request_body, unlink
from .filenode import ImmutableFileResource
from .json_nodes import directory_json, dumps, unknown_json
from .linking import link_cap, upload_and_link
from .mutablefile import (MUTABLE_FILE_CAPS, READONLY_PUT, MutableFileView, mutable_sizes,
                          offset_arg, private_key_arg, write_contents)
from .traversal import (Gateway, Target, creates_intermediate, ensure_subdirectory, path_names,
                        resolve, root_child, walk_directories)

MKDIR_KINDS = ("mkdir", "mkdir-with-children", "mkdir-immutable")


def new_handle() -> str:
    """A fresh operation handle for a deep form: 26 random base32 characters, as the CLI's."""
    return base32.b2a(os.urandom(16))[:26]


def _cap_text(child: ChildNode) -> bytes:
    return child.write_uri or child.read_uri or b""


class CapResource(resource.Resource):
    """Everything under ``/uri/<cap>``: the cap and the (decoded) path segments after it."""

    isLeaf = True

    def __init__(self, gateway: Gateway, cap_text: str, rest: list[str]) -> None:
        super().__init__()
        self._gateway = gateway
        self._cap_text = cap_text
        self._rest = rest

    def render(self, request: Request) -> Any:
        """Every method goes through :meth:`handle`."""
        return render_async(request, self.handle)

    async def handle(self, request: Request) -> bytes | None:
        """Dispatch on the method."""
        names = path_names(self._rest)
        root = root_child(self._cap_text)
        t = (arg(request, "t", "") or "").strip()
        method = request.method
        if method in (b"GET", b"HEAD"):
            target = await resolve(self._gateway, root, names, create=False)
            if target.child is None:
                raise ChildNotFound(target.name or "")
            return await self._read(request, target, t, names)
        if method == b"DELETE":
            return await self._delete(request, root, names)
        if method == b"PUT":
            return await self._put(request, root, names, t)
        if method == b"POST":
            body = await self._post(request, root, names, t)
            when_done = arg(request, "when_done")
            if when_done:
                return redirect(request, when_done)
            return body
        raise WebError(f"method {method.decode('latin-1')} is not allowed here", 405)

    # -- reading

    async def _read(self, request: Request, target: Target, t: str,
                    names: list[str]) -> bytes | None:
        child = target.child
        assert child is not None
        if child.is_directory:
            assert isinstance(child.cap, DirectoryCap)
            return await self._read_directory(request, child.cap, t, names)
        if child.is_file and isinstance(child.cap, (CHKReadCap, LiteralCap)):
            view = ImmutableFileResource(self._gateway.client, child.cap, target.name,
                                         target.metadata)
            return await view.serve(request)
        if child.is_file and isinstance(child.cap, MUTABLE_FILE_CAPS):
            return await MutableFileView(self._gateway, child.cap, target.name,
                                         target.metadata).serve(request)
        if t == "json":
            immutable = target.parent is not None and not target.parent.is_mutable
            request.setHeader(b"Content-Type", b"text/plain")
            return dumps(unknown_json(child, target.metadata, immutable))
        if t == "info":
            request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
            return unknown_info_page(_cap_text(child).decode("utf-8", "replace"))
        raise WebError(f"GET unknown URI type: can only do t=info and t=json, not t={t}.\n"
                       f"Using a webapi server that supports a later version of Tahoe may help.")

    async def _read_directory(self, request: Request, cap: DirectoryCap, t: str,
                              names: list[str]) -> bytes:
        if not cap.is_mutable and t in ("", "json", "uri", "readonly-uri") \
                and cap.storage_index is not None:
            tag = f"DIR:{base32.b2a(cap.storage_index)}-{t}".encode("ascii")
            request.setHeader(b"ETag", tag)
            if request.getHeader(b"if-none-match") in (tag, b'"' + tag + b'"'):
                request.setResponseCode(304)
                return b""
        node = self._gateway.open(cap)
        if t == "":
            request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
            return await self._listing(request, cap, names)
        if t == "json":
            request.setHeader(b"Content-Type", b"text/plain")
            try:
                children = await node.list()
            except Exception as error:  # as Tahoe: the status, and the message as JSON
                status, message = status_for(error)
                request.setResponseCode(status)
                return json.dumps({"error": message}).encode("utf-8")
            return dumps(directory_json(cap, children))
        if t in ("uri", "readonly-uri"):
            request.setHeader(b"Content-Type", b"text/plain")
            shown = cap if t == "uri" else cap.readonly()
            return shown.to_string().encode("ascii")
        if t == "info":
            request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
            return directory_info_page(cap, here=request.path.decode("utf-8", "replace"),
                                       new_handle=new_handle)
        if t == "rename-form":
            request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
            return rename_form(cap, arg(request, "name", "") or "")
        raise WebError(f"GET directory: bad t={t}")

    async def _listing(self, request: Request, cap: DirectoryCap, names: list[str]) -> bytes:
        """The listing page, with the sizes of mutable files and the requested order."""
        try:
            children = await self._gateway.open(cap).list()
        except Exception as error:  # the page shows why it cannot list
            return directory_page(cap, None, status_for(error)[1])
        mutable = {name: entry.child.cap for name, entry in children.items()
                   if entry.child.is_file and isinstance(entry.child.cap, MUTABLE_FILE_CAPS)}
        sizes = await mutable_sizes(self._gateway, mutable) if mutable else {}
        return directory_page(cap, children, root=self._cap_text.strip(), names=names,
                              sizes=sizes, sort=arg(request, "sort", "name") or "name",
                              descending=(arg(request, "order") or "") == "desc")

    # -- DELETE

    async def _delete(self, request: Request, root: ChildNode, names: list[str]) -> bytes:
        if not names:
            raise WebError("DELETE needs a path below a directory (a cap has no parent)")
        parent = await walk_directories(self._gateway, root, names[:-1], create=False,
                                        next_name=names[-1])
        removed = await unlink(parent, names[-1])
        request.setHeader(b"Content-Type", b"text/plain")
        return b"" if removed is None else _cap_text(removed.child)

    # -- PUT

    async def _put(self, request: Request, root: ChildNode, names: list[str],
                   t: str) -> bytes:
        request.setHeader(b"Content-Type", b"text/plain")
        if t == "mkdir":
            return await self._put_mkdir(request, root, names)
        if t == "uri":
            if not names:
                raise WebError("PUT t=uri needs a path below a directory")
            replace = replace_arg(request)
            parent = await walk_directories(self._gateway, root, names[:-1], create=True,
                                            next_name=names[-1])
            cap = request_body(request).decode("utf-8", "replace").strip()
            return (await link_cap(parent, names[-1], cap, replace)).encode("utf-8")
        if t:
            raise WebError(f"PUT to a file: bad t={t}")
        if not names:
            return await self._put_to_cap(request, root)
        return await self._put_file(request, root, names)

    async def _put_mkdir(self, request: Request, root: ChildNode, names: list[str]) -> bytes:
        if not names:
            if root.is_directory:
                return _cap_text(root)
            raise WebError("PUT to a file: bad t=mkdir")
        parent = await walk_directories(self._gateway, root, names[:-1], create=True,
                                        next_name=names[-1])
        entry = (await parent.list()).get(names[-1])
        if entry is None:
            fmt = mkdir_format(request)
            cap = await ensure_subdirectory(self._gateway, parent, names[-1], fmt)
            return cap.to_string().encode("ascii")
        if entry.child.is_directory:
            return _cap_text(entry.child)
        raise WebError("PUT to a file: bad t=mkdir")

    async def _put_to_cap(self, request: Request, root: ChildNode) -> bytes:
        if root.is_file and isinstance(root.cap, MUTABLE_FILE_CAPS):
            offset = offset_arg(request)
            return (await write_contents(self._gateway, root.cap, request_body(request),
                                         offset)).encode("ascii")
        if root.is_directory:
            raise WebError("PUT to a directory")
        raise WebError("PUT to an immutable file needs a parent directory to replace it in")

    async def _put_file(self, request: Request, root: ChildNode, names: list[str]) -> bytes:
        replace = replace_arg(request)
        offset = offset_arg(request)
        fmt = requested_format(request)
        name = names[-1]
        if offset is None and not request.getHeader(b"content-range"):
            parent = await walk_directories(self._gateway, root, names[:-1], create=True,
                                            next_name=name)
            cap, created = await upload_and_link(
                self._gateway, parent, name, body_uploadable(request),
                lambda: request_body(request), fmt, replace, key=private_key_arg(request))
            request.setResponseCode(201 if created else 200)
            return cap.encode("ascii")
        target = await resolve(self._gateway, root, names, create=True)
        child = target.child
        if child is None:
            if request.getHeader(b"content-range"):
                raise WebError("Content-Range in PUT not yet supported", 501)
        elif child.is_directory:
            raise WebError("PUT to a directory")
        elif not replace:
            raise ExistingChildError("child already exists")
        elif child.is_file and child.mutable:
            if not isinstance(child.cap, MUTABLE_FILE_CAPS) or child.write_uri is None:
                raise WebError(READONLY_PUT)
            return (await write_contents(self._gateway, child.cap, request_body(request),
                                         offset)).encode("ascii")
        elif offset is not None:
            raise WebError("PUT to a file: append operation invoked on an immutable cap")
        assert target.parent is not None
        cap, created = await upload_and_link(
            self._gateway, target.parent, name, body_uploadable(request),
            lambda: request_body(request), fmt, replace, key=private_key_arg(request))
        request.setResponseCode(201 if created else 200)
        return cap.encode("ascii")

    # -- POST

    async def _post(self, request: Request, root: ChildNode, names: list[str],
                    t: str) -> bytes | None:
        request.setHeader(b"Content-Type", b"text/plain")
        if t in MKDIR_KINDS and names:
            parent = await walk_directories(self._gateway, root, names[:-1], create=True,
                                            next_name=names[-1])
            entry = (await parent.list()).get(names[-1])
            if entry is None:
                kids = creation_children(request) if t != "mkdir" else {}
                cap = await ensure_subdirectory(
                    self._gateway, parent, names[-1],
                    None if t == "mkdir-immutable" else mkdir_format(request), kids,
                    immutable=t == "mkdir-immutable")
                target = Target(root_child(cap.to_string()), parent, names[-1])
            else:
                target = Target(entry.child, parent, names[-1], entry.metadata)
        else:
            target = await resolve(self._gateway, root, names,
                                   create=creates_intermediate(b"POST", t))
        child = target.child
        if child is None:
            raise ChildNotFound(target.name or "")
        if t == "check":
            return await post_check(self._gateway, request, child.cap)
        if t in STREAMS:
            await post_stream(self._gateway, request, child, t)
            return None
        if t in STARTS:
            return start_operation(self._gateway, self._gateway.operations, request, child, t)
        if child.is_directory:
            assert isinstance(child.cap, DirectoryCap)
            return await post_directory(self._gateway, request, self._gateway.open(child.cap),
                                        t)
        if child.is_file:
            return await self._post_file(request, target, t)
        raise WebError(f"POST to an unknown object: bad t={t}")

    async def _post_file(self, request: Request, target: Target, t: str) -> bytes:
        child = target.child
        assert child is not None
        if t != "upload":
            raise WebError(f"POST to file: bad t={t}")
        contents = raw_arg(request, "file")
        if contents is None:
            raise WebError("t=upload needs a multipart form field 'file'")
        if child.mutable and isinstance(child.cap, MUTABLE_FILE_CAPS):
            return (await write_contents(self._gateway, child.cap, contents)).encode("ascii")
        replace = boolean_arg(request, "replace", True)
        if not replace:
            raise ExistingChildError("child already exists")
        if target.parent is None or target.name is None:
            raise WebError("POST t=upload to an immutable file needs a parent directory")
        cap, _ = await upload_and_link(
            self._gateway, target.parent, target.name, BytesUploadable(contents),
            lambda: contents, requested_format(request), replace, key=private_key_arg(request))
        return cap.encode("ascii")

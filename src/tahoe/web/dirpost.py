"""``POST`` to a directory: mkdir, upload, link, unlink, rename, relink, set_children.

Facts: ``reference/frontends.md`` §3.3 ("Writing files and links",
"Directories"), §3.5 (children JSON) and §8 (``replace=`` not
``overwrite=`` for ``set_children``; ``mkdir&name=X`` replaces an existing
X). Every change is one read-modify-write of the directory, queued and
coalesced with the others by :class:`~tahoe.client.dirnode.DirectoryNode`;
a rename within one directory is a single change, a relink to another
directory adds the link there before it removes it here.
"""
from __future__ import annotations

from typing import Any

from twisted.web.server import Request

from ..caps.dirnode import DirectoryCap
from ..caps.errors import CapError
from ..caps.parse import parse_cap
from ..client.dirnode import DirectoryNode
from ..client.uploadable import BytesUploadable
from ..dirnode.children import ChildNode, child_from_caps
from ..dirnode.errors import NoSuchChildError
from ..dirnode.ops import add_child, delete_child, rename_child, set_children
from ..dirnode.packing import Entry, normalize_name
from .common import (ChildNotFound, WebError, arg, boolean_arg, mkdir_format,
                     multipart_filename, raw_arg, replace_arg, requested_format)
from .json_nodes import ChildrenJSONError, parse_children_json
from .linking import link_cap, upload_and_link
from .mutablefile import private_key_arg
from .traversal import Gateway, path_names, require_writable, resolve, root_child

Children = dict[str, Entry]


def request_body(request: Request) -> bytes:
    """The whole request body."""
    request.content.seek(0)
    data: bytes = request.content.read()
    request.content.seek(0)
    return data


def children_from_body(request: Request, *, default_metadata: bool
                       ) -> dict[str, tuple[ChildNode, dict[str, Any] | None]]:
    """The children JSON of the body as (child, metadata) pairs, caps interpreted as Tahoe does.

    :param default_metadata: give ``{}`` to children without metadata (creation);
        otherwise None (``set_children`` then keeps an existing link's metadata).
    :raises WebError: 400 when the body is not children JSON.
    """
    try:
        given = parse_children_json(request_body(request))
    except ChildrenJSONError as error:
        raise WebError(str(error)) from None
    children: dict[str, tuple[ChildNode, dict[str, Any] | None]] = {}
    for name, spec in given.items():
        metadata = spec.metadata if spec.metadata is not None or not default_metadata else {}
        children[name] = (child_from_caps(spec.rw_uri, spec.ro_uri, name=name), metadata)
    return children


def creation_children(request: Request) -> dict[str, tuple[ChildNode, dict[str, Any]]]:
    """Children for a new directory (every child checked; metadata as given, ``{}`` by default)."""
    children = children_from_body(request, default_metadata=True)
    for child, _ in children.values():
        child.raise_error()
    return {name: (child, metadata or {}) for name, (child, metadata) in children.items()}


def _name_arg(request: Request, key: str) -> str | None:
    value = arg(request, key)
    return None if value is None else normalize_name(value)


async def post_directory(gateway: Gateway, request: Request, node: DirectoryNode,
                         t: str) -> bytes:
    """Perform ``POST …?t=…`` on a directory; return the response body (before when_done)."""
    if t == "mkdir":
        return await _mkdir(gateway, request, node, "mkdir")
    if t in ("mkdir-with-children", "mkdir-immutable"):
        return await _mkdir(gateway, request, node, t)
    if t == "upload":
        return await _upload(gateway, request, node)
    if t == "uri":
        return await _set_uri(request, node)
    if t in ("unlink", "delete"):
        name = _name_arg(request, "name") or ""
        await unlink(node, name)
        return b"thing unlinked"
    if t == "rename":
        if arg(request, "to_dir") is not None:
            raise WebError("to_dir= is not valid for rename")
        if arg(request, "to_name") is None:
            raise WebError("to_name= is required for rename")
        return await _relink(gateway, request, node)
    if t == "relink":
        return await _relink(gateway, request, node)
    if t in ("set_children", "set-children"):
        return await _set_children(request, node)
    raise WebError(f"POST to a directory with bad t={t}")


async def _mkdir(gateway: Gateway, request: Request, node: DirectoryNode, t: str) -> bytes:
    name = _name_arg(request, "name")
    if not name:
        return node.cap.to_string().encode("ascii")
    require_writable(node)
    if t == "mkdir":
        replace = boolean_arg(request, "replace", True)
        kids: dict[str, tuple[ChildNode, dict[str, Any]]] = {}
    else:
        replace = False
        kids = creation_children(request)
    if t == "mkdir-immutable":
        cap = await gateway.client.directories.create_immutable(kids)
    else:
        cap = await gateway.client.directories.create(kids, mkdir_format(request)
                                                      or gateway.mutable_format)
    child = child_from_caps(cap.to_string())

    def change(children: Children, first_time: bool) -> tuple[Children | None, Any]:
        return add_child(children, name, child, None, now=node.now(), overwrite=replace), None

    await node.change(change)
    return cap.to_string().encode("ascii")


async def _upload(gateway: Gateway, request: Request, node: DirectoryNode) -> bytes:
    contents = raw_arg(request, "file")
    if contents is None:
        raise WebError("t=upload needs a multipart form field 'file'")
    given = arg(request, "name") or multipart_filename(request, "file")
    name = (given or "").strip()
    if not name:
        raise WebError("upload requires a name")
    if "/" in name:
        raise WebError("name= may not contain a slash")
    cap, _ = await upload_and_link(
        gateway, node, normalize_name(name), BytesUploadable(contents), lambda: contents,
        requested_format(request), boolean_arg(request, "replace", True), keep_mutable=True,
        key=private_key_arg(request))
    return cap.encode("ascii")


async def _set_uri(request: Request, node: DirectoryNode) -> bytes:
    cap = arg(request, "uri")
    if not cap:
        raise WebError("set-uri requires a uri")
    name = _name_arg(request, "name")
    if not name:
        raise WebError("set-uri requires a name")
    await link_cap(node, name, cap.strip(), replace_arg(request))
    return cap.encode("utf-8")


async def unlink(node: DirectoryNode, name: str) -> Entry | None:
    """Remove the link ``name``; return the removed entry (None if a retry found it gone).

    :raises ChildNotFound: (404) when there is no such child.
    """
    require_writable(node)

    def change(children: Children, first_time: bool) -> tuple[Children | None, Any]:
        try:
            return delete_child(children, name, first_time=first_time)
        except NoSuchChildError:
            raise ChildNotFound(name) from None

    removed: Entry | None = await node.change(change)
    return removed


async def _target_directory(gateway: Gateway, node: DirectoryNode,
                            to_dir: str | None) -> DirectoryNode:
    if to_dir is None or to_dir.strip() == node.cap.to_string():
        return node
    cap_text, _, rest = to_dir.strip().partition("/")
    try:
        cap = parse_cap(cap_text)
    except CapError:
        raise WebError("to_dir is not a directory") from None
    if not isinstance(cap, DirectoryCap):
        raise WebError("to_dir is not a directory")
    target = await resolve(gateway, root_child(cap_text), path_names(rest.split("/")) if rest
                           else [], create=False)
    if target.child is None:
        raise ChildNotFound(target.name or "")
    if not target.child.is_directory:
        raise WebError("to_dir is not a directory")
    assert isinstance(target.child.cap, DirectoryCap)
    return gateway.open(target.child.cap)


async def _relink(gateway: Gateway, request: Request, node: DirectoryNode) -> bytes:
    replace = replace_arg(request)
    from_given = arg(request, "from_name")
    if from_given is None:
        raise WebError("from_name= is required")
    from_name = normalize_name(from_given.strip())
    to_given = arg(request, "to_name")
    to_name = normalize_name(to_given.strip()) if to_given is not None else from_name
    if "/" in from_name:
        raise WebError("from_name= may not contain a slash")
    if "/" in to_name:
        raise WebError("to_name= may not contain a slash")
    destination = await _target_directory(gateway, node, arg(request, "to_dir"))
    require_writable(node)
    require_writable(destination)
    if destination.cap == node.cap:
        if from_name == to_name:
            return b"thing moved"

        def rename(children: Children, first_time: bool) -> tuple[Children | None, Any]:
            if from_name not in children and not first_time and to_name in children:
                return None, None  # an earlier attempt did it
            try:
                return rename_child(children, from_name, to_name, now=node.now(),
                                    overwrite=replace), None
            except NoSuchChildError:
                raise ChildNotFound(from_name) from None

        await node.change(rename)
        return b"thing moved"
    entry = (await node.list()).get(from_name)
    if entry is None:
        raise ChildNotFound(from_name)

    def add(children: Children, first_time: bool) -> tuple[Children | None, Any]:
        return add_child(children, to_name, entry.child, entry.metadata, now=destination.now(),
                         overwrite=replace), None

    await destination.change(add)
    await unlink(node, from_name)
    return b"thing moved"


async def _set_children(request: Request, node: DirectoryNode) -> bytes:
    replace = replace_arg(request)
    entries = children_from_body(request, default_metadata=False)
    require_writable(node)

    def change(children: Children, first_time: bool) -> tuple[Children | None, Any]:
        return set_children(children, entries, now=node.now(), overwrite=replace), None

    await node.change(change)
    return b"Okay so I did it."

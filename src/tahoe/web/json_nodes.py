"""Pure builders and parsers of the web API's JSON for nodes (``reference/frontends.md`` §3.4-3.5).

* ``t=json`` of a file, a directory (with its children) and an unknown
  node: ``[NODETYPE, DATA]`` with the keys Tahoe 1.20 writes, in its order;
* the children JSON of ``t=mkdir-with-children``, ``t=mkdir-immutable`` and
  ``t=set_children``: name -> ``[TYPE, PROPDICT]`` where only ``rw_uri``,
  ``ro_uri`` and ``metadata`` count.

No I/O: callers pass caps, children and sizes in.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from ..caps.dirnode import DirectoryCap
from ..caps.immutable import CHKReadCap, LiteralCap
from ..caps.mutable import MDMFReadCap, MDMFWriteCap, MutableFormat, SSKReadCap, SSKWriteCap
from ..dirnode.children import ChildKind, ChildNode
from ..dirnode.packing import Entry

FileCap = CHKReadCap | LiteralCap | SSKWriteCap | SSKReadCap | MDMFWriteCap | MDMFReadCap
_MUTABLE_FILE_CAPS = (SSKWriteCap, SSKReadCap, MDMFWriteCap, MDMFReadCap)
_WRITE_CAPS = (SSKWriteCap, MDMFWriteCap)
_IMM = "imm."


class ChildrenJSONError(ValueError):
    """A children JSON body is not a JSON object of ``name: [TYPE, PROPDICT]``."""


@frozen
class GivenChild:
    """One child of a children JSON body, as given (caps not yet interpreted).

    :ivar metadata: the ``metadata`` object, or None when absent.
    """

    rw_uri: str | None
    ro_uri: str | None
    metadata: dict[str, Any] | None


def file_format(cap: FileCap) -> str:
    """``"CHK"`` (LIT files too), ``"SDMF"`` or ``"MDMF"``."""
    if isinstance(cap, _MUTABLE_FILE_CAPS):
        return "MDMF" if cap.format is MutableFormat.MDMF else "SDMF"
    return "CHK"


def file_properties(cap: FileCap, size: int | None) -> dict[str, Any]:
    """``mutable``, ``format`` and (when known) ``size`` of a file."""
    mutable = isinstance(cap, _MUTABLE_FILE_CAPS)
    data: dict[str, Any] = {"mutable": mutable, "format": file_format(cap)}
    if size is None and not mutable:
        size = cap.size  # type: ignore[union-attr]
    if size is not None:
        data["size"] = size
    return data


def file_json(cap: FileCap, size: int | None = None,
              metadata: Mapping[str, Any] | None = None) -> list[Any]:
    """``["filenode", {...}]`` for a file addressed by cap or by path.

    :param size: the size of a mutable file once its servermap is known (an
        immutable file's size comes from its cap).
    :param metadata: the link's metadata when reached through a directory.
    """
    data = file_properties(cap, size)
    data["ro_uri"] = cap.readonly().to_string() if isinstance(cap, _WRITE_CAPS) \
        else cap.to_string()
    if isinstance(cap, _WRITE_CAPS):
        data["rw_uri"] = cap.to_string()
    verify = cap.verify_cap()
    if verify is not None:
        data["verify_uri"] = verify.to_string()
    if metadata is not None:
        data["metadata"] = dict(metadata)
    return ["filenode", data]


def _text(cap: bytes | None) -> str | None:
    return None if not cap else cap.decode("utf-8", "replace")


def child_json(child: ChildNode, metadata: Mapping[str, Any]) -> list[Any]:
    """One entry of a directory's ``children``: type-specific keys, metadata, caps."""
    if child.kind is ChildKind.FILE:
        kind, data = "filenode", file_properties(child.cap, None)  # type: ignore[arg-type]
    elif child.kind is ChildKind.DIRECTORY:
        kind, data = "dirnode", {"mutable": bool(child.mutable)}
    else:
        kind, data = "unknown", {}
    data["metadata"] = dict(metadata)
    rw_uri, ro_uri = _text(child.write_uri), _text(child.read_uri)
    if rw_uri:
        data["rw_uri"] = rw_uri
    if ro_uri:
        data["ro_uri"] = ro_uri
    verify = child.cap.verify_cap() if child.cap is not None and not child.is_unknown else None
    if verify is not None:
        data["verify_uri"] = verify.to_string()
    return [kind, data]


def directory_json(cap: DirectoryCap, children: Mapping[str, Entry]) -> list[Any]:
    """``["dirnode", {...}]``: children, the directory's caps and ``mutable`` (no ``format``)."""
    contents: dict[str, Any] = {
        "children": {name: child_json(entry.child, entry.metadata)
                     for name, entry in sorted(children.items())},
        "ro_uri": cap.readonly().to_string(),
    }
    if not cap.is_readonly:
        contents["rw_uri"] = cap.to_string()
    verify = cap.verify_cap()
    if verify is not None:
        contents["verify_uri"] = verify.to_string()
    contents["mutable"] = cap.is_mutable
    return ["dirnode", contents]


def unknown_json(child: ChildNode, metadata: Mapping[str, Any] | None,
                 parent_immutable: bool) -> list[Any]:
    """``["unknown", {...}]``: caps as kept; ``mutable`` true with a write cap, false when
    known to be immutable, absent otherwise."""
    data: dict[str, Any] = {}
    rw_uri, ro_uri = _text(child.write_uri), _text(child.read_uri)
    if ro_uri:
        data["ro_uri"] = ro_uri
    if rw_uri:
        data["rw_uri"] = rw_uri
        data["mutable"] = True
    elif parent_immutable or (child.error is None and (not ro_uri or ro_uri.startswith(_IMM))):
        data["mutable"] = False
    if metadata is not None:
        data["metadata"] = dict(metadata)
    return ["unknown", data]


def _optional_text(value: Any, what: str, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ChildrenJSONError(f"{what} of child {name!r} must be a string")
    return value


def parse_children_json(body: bytes) -> dict[str, GivenChild]:
    """The children of a children JSON body (an empty body means none).

    :raises ChildrenJSONError: when the body is not UTF-8 JSON of that shape.
    """
    if not body.strip():
        return {}
    try:
        document = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ChildrenJSONError(f"children JSON cannot be parsed: {error}") from None
    if not isinstance(document, dict):
        raise ChildrenJSONError("children JSON must be an object of name: [TYPE, PROPDICT]")
    children: dict[str, GivenChild] = {}
    for name, value in document.items():
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], dict)):
            raise ChildrenJSONError(f"child {name!r} must be given as [TYPE, PROPDICT]")
        properties = value[1]
        metadata = properties.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise ChildrenJSONError(f"metadata of child {name!r} must be a JSON object")
        children[name] = GivenChild(_optional_text(properties.get("rw_uri"), "rw_uri", name),
                                    _optional_text(properties.get("ro_uri"), "ro_uri", name),
                                    metadata)
    return children


def dumps(document: Any) -> bytes:
    """A JSON body as Tahoe writes it: indented by one space, newline-terminated, UTF-8."""
    return (json.dumps(document, indent=1) + "\n").encode("utf-8")

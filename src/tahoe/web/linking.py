"""Putting a file (or a cap) under a name in a directory: ``PUT …/NAME``, ``t=upload``, ``t=uri``.

Facts: ``reference/frontends.md`` §3.3 "Writing files and links". A new
immutable file is uploaded first (the uploader returns once every share
is acknowledged) and then linked by **one** change of the directory, which
looks at what is linked under the name at that moment:

* nothing: link it (``PUT`` answers 201);
* an immutable file or an unknown object: replace the link (200), or
  refuse with 409 when ``replace`` forbids it;
* a writable mutable file: leave the link and overwrite that file in place
  (200), as Tahoe does; the file just uploaded is then not used;
* a read-only mutable file or a directory: 400.

The directory is therefore not read before the upload: a small ``PUT``
costs the upload's two round trips plus one read-modify-write (servermap
update and test-and-set write). Mutable formats look at the existing child
first, since an existing writable mutable file must be overwritten rather
than replaced.
"""
from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from ..caps.mutable import MDMFWriteCap, SSKWriteCap
from ..client.dirnode import DirectoryNode
from ..client.uploadable import Uploadable
from ..crypto.rsa import SigningKey
from ..dirnode.children import ChildNode, child_from_caps
from ..dirnode.errors import ExistingChildError
from ..dirnode.ops import add_child
from ..dirnode.packing import Entry
from .common import Replace, WebError
from .mutablefile import READONLY_PUT, create_mutable, write_contents
from .traversal import Gateway, require_writable

Children = dict[str, Entry]


class Outcome(enum.Enum):
    """What one link change found under the name, and so did."""

    CREATED = "created"
    REPLACED = "replaced"
    OVERWRITE = "overwrite"
    READONLY_MUTABLE = "read-only mutable file"
    DIRECTORY = "directory"


def is_writable_mutable_file(child: ChildNode) -> bool:
    """A mutable file we hold the write cap of."""
    return child.is_file and bool(child.mutable) and isinstance(child.cap,
                                                                (SSKWriteCap, MDMFWriteCap))


def _existing_outcome(existing: Entry, replace: Replace, keep_mutable: bool) -> Outcome | None:
    """What to do when ``existing`` is linked under the name (None: replace the link)."""
    old = existing.child
    if old.is_directory:
        return Outcome.DIRECTORY
    if is_writable_mutable_file(old):
        if not replace and not keep_mutable:
            raise ExistingChildError("child already exists")
        return Outcome.OVERWRITE
    if not replace:
        raise ExistingChildError("child already exists")
    if old.is_file and old.mutable:
        return Outcome.READONLY_MUTABLE
    return None


def link_change(name: str, child: ChildNode, replace: Replace, now: Callable[[], float],
                keep_mutable: bool = False
                ) -> Callable[[Children, bool], tuple[Children | None, Any]]:
    """The directory change that links a newly uploaded file as ``name`` (see module doc)."""
    def change(children: Children, first_time: bool) -> tuple[Children | None, Any]:
        existing = children.get(name)
        if existing is None:
            return add_child(children, name, child, None, now=now(), overwrite=replace), \
                (Outcome.CREATED, None)
        outcome = _existing_outcome(existing, replace, keep_mutable)
        if outcome is not None:
            return None, (outcome, existing.child.cap)
        return add_child(children, name, child, None, now=now(), overwrite=replace), \
            (Outcome.REPLACED, None)
    return change


def _refuse(outcome: Outcome) -> None:
    if outcome is Outcome.READONLY_MUTABLE:
        raise WebError(READONLY_PUT)
    if outcome is Outcome.DIRECTORY:
        raise WebError("PUT to a directory")


async def upload_and_link(gateway: Gateway, parent: DirectoryNode, name: str,
                          source: Uploadable, read_all: Callable[[], bytes], fmt: str,
                          replace: Replace, *, keep_mutable: bool = False,
                          key: SigningKey | None = None) -> tuple[str, bool]:
    """Store a file under ``name``: new immutable or mutable file, or overwrite a mutable one.

    :param source: the contents as an upload source (immutable files).
    :param read_all: the contents as bytes (mutable files).
    :param fmt: ``"CHK"``, ``"SDMF"`` or ``"MDMF"`` for a new file.
    :param keep_mutable: overwrite an existing writable mutable file even when
        ``replace`` is false (``POST t=upload`` does; ``PUT`` answers 409).
    :returns: (the cap now linked or overwritten, whether the name is new).
    """
    require_writable(parent)
    if fmt != "CHK":
        return await _mutable_and_link(gateway, parent, name, read_all, fmt, replace,
                                       keep_mutable, key)
    result = await gateway.client.upload(source)
    cap_text = result.cap.to_string()
    outcome, existing = await parent.change(
        link_change(name, child_from_caps(cap_text), replace, parent.now, keep_mutable))
    _refuse(outcome)
    if outcome is Outcome.OVERWRITE:
        return await write_contents(gateway, existing, read_all()), False
    return cap_text, outcome is Outcome.CREATED


async def _mutable_and_link(gateway: Gateway, parent: DirectoryNode, name: str,
                            read_all: Callable[[], bytes], fmt: str, replace: Replace,
                            keep_mutable: bool, key: SigningKey | None) -> tuple[str, bool]:
    existing = (await parent.list()).get(name)
    if existing is not None:
        outcome = _existing_outcome(existing, replace, keep_mutable)
        if outcome is not None:
            _refuse(outcome)
            return await write_contents(gateway, existing.child.cap,  # type: ignore[arg-type]
                                        read_all()), False
    cap = await create_mutable(gateway, read_all(), fmt, key)
    child = child_from_caps(cap.to_string())

    def change(children: Children, first_time: bool) -> tuple[Children | None, Any]:
        return add_child(children, name, child, None, now=parent.now(), overwrite=replace), \
            name not in children

    created: bool = await parent.change(change)
    return cap.to_string(), created


async def link_cap(parent: DirectoryNode, name: str, cap_text: str, replace: Replace) -> str:
    """Link a cap given by the client (``t=uri``); return the child's cap as stored.

    :raises ChildCapError: (400) for an unknown cap without ``ro.``/``imm.``, and the like.
    :raises ExistingChildError: (409) when ``replace`` forbids replacing.
    """
    require_writable(parent)
    child = child_from_caps(cap_text, None, name=name)
    child.raise_error()

    def change(children: Children, first_time: bool) -> tuple[Children | None, Any]:
        return add_child(children, name, child, None, now=parent.now(), overwrite=replace), None

    await parent.change(change)
    return (child.write_uri or child.read_uri or b"").decode("utf-8", "replace")

"""Mutable files (SDMF, MDMF) in the gateway: read, describe, overwrite, update at an offset.

Facts: ``reference/frontends.md`` §3.3 ("Reading", "Writing files and
links": ``PUT /uri/$MUTABLE_WRITECAP`` with ``offset=``, ``POST …?t=upload``),
§3.4 (``t=json``: ``mutable: true``, ``format``, ``size``, ``rw_uri`` with
write authority) and §3.10.

Contents are read whole (a servermap update and a retrieve); a range is cut
from them. An update at ``offset`` of an MDMF file rewrites only the segments
it touches (:meth:`tahoe.client.mutable.MutableFileNode.update`,
``docs/formats/mdmf-update.md``); an SDMF file gets a whole new version (the
old contents with the new bytes written over them from ``offset``).
"""
from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

from twisted.internet import defer

from ..caps.mutable import MDMFReadCap, MDMFWriteCap, MutableFormat, SSKReadCap, SSKWriteCap
from ..crypto.rsa import RSAError, SigningKey
from ..mutable.errors import UnrecoverableFile
from .common import WebError, arg
from .filenode import content_type_for, select_range
from .headers import set_file_content_policy
from .infohtml import file_info_page
from .json_nodes import dumps, file_json
from .traversal import Gateway

MutableFileCap = SSKWriteCap | SSKReadCap | MDMFWriteCap | MDMFReadCap
WRITE_CAPS = (SSKWriteCap, MDMFWriteCap)
MUTABLE_FILE_CAPS = (SSKWriteCap, SSKReadCap, MDMFWriteCap, MDMFReadCap)
READONLY_PUT = "PUT to a mutable file: replace or update requested with read-only cap"
#: A directory listing asks the sizes of this many mutable files at most…
SIZES_LIMIT = 100
#: …and waits this many seconds for them.
SIZES_TIMEOUT = 10.0


def offset_arg(request: Any) -> int | None:
    """``offset=`` (None when absent).

    :raises WebError: 400 for a non-integer or negative offset.
    """
    text = arg(request, "offset")
    if text is None:
        return None
    try:
        offset = int(text)
    except ValueError:
        raise WebError(f"invalid offset= argument: {text!r}") from None
    if offset < 0:
        raise WebError("PUT to a mutable file: Invalid offset")
    return offset


def private_key_arg(request: Any) -> SigningKey | None:
    """``private-key=``: a DER RSA private key, URL-safe base64 (None when absent).

    :raises WebError: 400 when it cannot be decoded or is not an RSA private key.
    """
    text = arg(request, "private-key")
    if not text:
        return None
    try:
        der = base64.urlsafe_b64decode(text.strip() + "=" * (-len(text.strip()) % 4))
        return SigningKey.from_der(der)
    except (binascii.Error, ValueError, RSAError) as error:
        raise WebError(f"invalid private-key= argument: {error}") from None


def spliced(old: bytes, data: bytes, offset: int) -> bytes:
    """``old`` with ``data`` written over it from ``offset`` (appended when at or past the end)."""
    return old[:offset] + data + old[offset + len(data):]


async def mutable_sizes(gateway: Gateway, caps: Mapping[str, MutableFileCap],
                        timeout: float = SIZES_TIMEOUT) -> dict[str, int | None]:
    """The sizes of several mutable files at once (one servermap update each, in parallel).

    A file whose size is not known within ``timeout`` seconds, or that is
    unrecoverable, is None; at most :data:`SIZES_LIMIT` files are asked.
    """
    names = sorted(caps)[:SIZES_LIMIT]

    async def size_of(cap: MutableFileCap) -> int | None:
        try:
            return await gateway.client.mutable.open(cap).size()
        except Exception:  # noqa: BLE001 (any failure leaves the size unknown)
            return None

    found: dict[str, int | None] = {}

    def record(name: str) -> Callable[[int | None], None]:
        def store(size: int | None) -> None:
            found[name] = size
        return store

    waits = [defer.ensureDeferred(size_of(caps[name])).addCallback(record(name)) for name in names]
    everything = defer.DeferredList(waits)
    everything.addTimeout(timeout, gateway.client.clock)
    try:
        await everything
    except (defer.CancelledError, defer.TimeoutError):
        pass  # the sizes not found in time stay unknown
    return {name: found.get(name) for name in names}


async def create_mutable(gateway: Gateway, data: bytes, fmt: str,
                         key: SigningKey | None = None) -> MutableFileCap:
    """Publish a new mutable file of format ``"SDMF"`` or ``"MDMF"``; return its write cap."""
    file_format = MutableFormat.MDMF if fmt == "MDMF" else MutableFormat.SDMF
    cap: MutableFileCap = await gateway.client.mutable.create(data, file_format,
                                                              signing_key=key)
    return cap


async def write_contents(gateway: Gateway, cap: MutableFileCap, data: bytes,
                         offset: int | None = None) -> str:
    """Overwrite a mutable file (or update it at ``offset``); return its cap.

    :raises WebError: 400 for a read-only cap.
    """
    if not isinstance(cap, WRITE_CAPS):
        raise WebError(READONLY_PUT)
    node = gateway.client.mutable.open(cap)
    if offset is None:
        await node.overwrite(data)
    else:
        await node.update(offset, data)
    return cap.to_string()


class MutableFileView:
    """GET and HEAD of one mutable file, addressed by cap or reached through a directory."""

    def __init__(self, gateway: Gateway, cap: MutableFileCap, name: str | None = None,
                 metadata: dict[str, Any] | None = None) -> None:
        self._gateway = gateway
        self._cap = cap
        self._name = name
        self._metadata = metadata

    async def serve(self, request: Any) -> bytes | None:
        """Contents (with Range), or ``t=json``/``uri``/``readonly-uri``/``info``."""
        t = (arg(request, "t", "") or "").strip()
        if request.method == b"HEAD":
            if t:
                raise WebError(f"HEAD file: bad t={t}")
            return await self._contents(request)
        if t == "":
            return await self._contents(request)
        if t == "json":
            return await self._json(request)
        if t == "uri":
            request.setHeader(b"Content-Type", b"text/plain")
            return self._cap.to_string().encode("ascii")
        if t == "readonly-uri":
            request.setHeader(b"Content-Type", b"text/plain")
            return self._cap.readonly().to_string().encode("ascii")
        if t == "info":
            request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
            return file_info_page(self._cap, here=request.path.decode("utf-8", "replace"),
                                  name=self._name, size=await self._size())
        raise WebError(f"GET file: bad t={t}")

    async def _read(self) -> bytes:
        return await self._gateway.client.mutable.open(self._cap).read()

    async def _size(self) -> int | None:
        """The size of the current version (None when none is recoverable)."""
        try:
            return await self._gateway.client.mutable.open(self._cap).size()
        except UnrecoverableFile:
            return None

    async def _json(self, request: Any) -> bytes:
        size = await self._size()
        request.setHeader(b"Content-Type", b"text/plain")
        return dumps(file_json(self._cap, size, self._metadata))

    async def _contents(self, request: Any) -> bytes | None:
        data = await self._read()
        size = len(data)
        filename = arg(request, "filename") or self._name or "unknown"
        request.setHeader(b"Content-Type", content_type_for(filename))
        set_file_content_policy(request, content_type_for(filename))
        request.setHeader(b"Accept-Ranges", b"bytes")
        if (arg(request, "save", "") or "").lower() in ("true", "t", "1", "on"):
            request.setHeader(b"Content-Disposition",
                              b'attachment; filename="' + filename.encode("utf-8") + b'"')
        first, length = select_range(request, size)
        data = data[first:first + length]
        if request.method == b"HEAD":
            request.setHeader(b"Content-Length", b"%d" % len(data))
            return None
        return data

"""Objects as directory entries: the S3 metadata an entry keeps, and what it tells.

An object's S3 metadata lives in its directory entry's metadata under
``"s3"``::

    {"etag": "hex md5 (or md5-of-md5s-N)", "size": n, "last-modified": epoch float,
     "content-type": "...", "meta": {"name": "value", ...},       # x-amz-meta-*
     "checksums": {"CRC32": "base64", ...},
     "cache-control" / "content-disposition" / "content-encoding" /
     "content-language" / "expires": "..."}

beside Tahoe's own ``tahoe`` link times. A folder marker (a key ending in
``/``, empty body) is the directory itself, its entry's ``"s3"`` holding
``"folder": true``. A file linked by another tool has no ``"s3"`` (or one
whose size no longer matches: replaced since): its size comes from its cap,
its last modification from the link times, and its ETag is derived from its
read cap (not an MD5). Pure.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from attrs import field, frozen

from ..caps.immutable import CHKReadCap, LiteralCap
from ..dirnode.children import ChildNode
from ..dirnode.packing import Entry

__all__ = ["ObjectInfo", "S3_KEY", "STORED_HEADERS", "EMPTY_MD5", "object_info", "describe",
           "size_from_cap", "is_folder_marker", "quoted_etag"]

#: The key of a directory entry's metadata that holds the object's S3 metadata.
S3_KEY = "s3"
#: Response headers stored with an object at PUT and sent back at GET.
STORED_HEADERS = ("cache-control", "content-disposition", "content-encoding",
                  "content-language", "expires")
#: An ETag given to an empty folder marker: the MD5 of no bytes.
EMPTY_MD5 = hashlib.md5(b"").hexdigest()


@frozen
class ObjectInfo:
    """What HEAD says about an object.

    :ivar etag: without quotes.
    :ivar last_modified: seconds since the epoch.
    :ivar child: the linked node (None for a folder marker).
    """

    key: str
    size: int
    etag: str
    last_modified: float
    content_type: str
    meta: dict[str, str] = field(factory=dict)
    checksums: dict[str, str] = field(factory=dict)
    headers: dict[str, str] = field(factory=dict)
    child: ChildNode | None = None
    folder: bool = False
    size_known: bool = True


def _link_time(metadata: Mapping[str, Any]) -> float:
    tahoe = metadata.get("tahoe")
    if isinstance(tahoe, dict):
        for name in ("linkmotime", "linkcrtime"):
            value = tahoe.get(name)
            if isinstance(value, (int, float)):
                return float(value)
    return 0.0


def _derived_etag(read_uri: bytes) -> str:
    """An ETag for a file stored by another tool (its MD5 is unknown): a hash of its read
    cap, stable while the same file is linked. Not reversible to the cap."""
    return hashlib.sha256(b"tahoe-s3-etag:" + read_uri).hexdigest()[:32]


def object_info(key: str, entry: Entry, folder: bool = False) -> ObjectInfo:
    """The :class:`ObjectInfo` of a directory entry (a file, or a folder marker's directory)."""
    cap = entry.child.cap
    size = cap.size if isinstance(cap, (CHKReadCap, LiteralCap)) else None
    return describe(key, entry.metadata, entry.child.read_uri or b"", size, folder,
                    entry.child)


def describe(key: str, metadata: Mapping[str, Any], read_uri: bytes, size: int | None,
             folder: bool = False, child: ChildNode | None = None) -> ObjectInfo:
    """The :class:`ObjectInfo` of an entry's metadata and read cap.

    :param size: the file's size if its cap tells (an immutable file), else None.
    :param child: the linked node, for reading (None in listings).
    """
    s3 = metadata.get(S3_KEY)
    s3 = s3 if isinstance(s3, dict) else {}
    size_known = True
    if folder:
        size = 0
    elif size is None:
        if isinstance(s3.get("size"), int):
            size = s3["size"]
        else:
            size, size_known = 0, False  # a mutable file: known only by reading it
    modified = s3.get("last-modified")
    etag = s3.get("etag")
    if not isinstance(etag, str) or s3.get("size") != size:
        # no S3 metadata, or the file was replaced by another tool since
        etag = EMPTY_MD5 if folder else _derived_etag(read_uri)
    meta = s3.get("meta")
    checksums = s3.get("checksums")
    return ObjectInfo(
        key=key, size=size, etag=etag,
        last_modified=float(modified) if isinstance(modified, (int, float))
        else _link_time(metadata),
        content_type=str(s3.get("content-type") or ("application/x-directory" if folder
                                                     else "binary/octet-stream")),
        meta={str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) else {},
        checksums={str(k): str(v) for k, v in checksums.items()}
        if isinstance(checksums, dict) else {},
        headers={name: str(s3[name]) for name in STORED_HEADERS if isinstance(s3.get(name), str)},
        child=None if folder else child, folder=folder, size_known=size_known)


def size_from_cap(read_cap: bytes) -> int | None:
    """The size an immutable file's read cap (as a directory stores it) tells, without
    parsing the rest of it; None for other caps.

    ``URI:CHK:key:hash:k:N:SIZE`` ends with the size; ``URI:LIT:DATA`` holds the data in
    unpadded base32 (5 bits a character).
    """
    if read_cap.startswith(b"URI:CHK:"):
        tail = read_cap.rsplit(b":", 1)[1]
        return int(tail) if tail.isdigit() else None
    if read_cap.startswith(b"URI:LIT:"):
        return (len(read_cap) - len(b"URI:LIT:")) * 5 // 8
    return None


def is_folder_marker(entry: Entry) -> bool:
    """Whether a directory entry is a folder marker (a directory PUT as ``key/``)."""
    s3 = entry.metadata.get(S3_KEY)
    return entry.child.is_directory and isinstance(s3, dict) and s3.get("folder") is True


def quoted_etag(etag: str) -> str:
    """An ETag as headers and XML carry it: in double quotes."""
    return f'"{etag}"'

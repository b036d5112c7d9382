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
read cap (not an MD5).

For speed, a directory read for a listing or a look-up is first split into
"light" entries (:func:`sorted_entries`: name, read cap and metadata JSON,
nothing parsed, sorted in listing order); an entry is parsed whole only when
it is used. Pure.
"""
from __future__ import annotations

import bisect
import hashlib
import json
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any

from attrs import field, frozen

from ..caps.immutable import CHKReadCap, LiteralCap
from ..dirnode.children import ChildNode, child_from_caps
from ..dirnode.errors import CorruptDirectory
from ..dirnode.packing import Entry
from ..util.errors import BadNetstring
from ..util.netstring import split_netstring
from .xmlio import ListItem

__all__ = ["ObjectInfo", "S3_KEY", "STORED_HEADERS", "EMPTY_MD5", "object_info", "describe",
           "size_from_cap", "is_folder_marker", "quoted_etag", "Light", "SortedDirectory",
           "sorted_entries", "full_entry", "light_item", "light_is_folder"]

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


def _listed(metadata: Mapping[str, Any], s3: Mapping[str, Any], read_uri: bytes,
            size: int | None, folder: bool) -> tuple[int, bool, str, float]:
    """An entry's size, whether it is known, ETag and time of last change, as a listing
    shows them (``s3``: its S3 metadata, or empty)."""
    size_known = True
    if folder:
        size = 0
    elif size is None:
        if isinstance(s3.get("size"), int):
            size = s3["size"]
        else:
            size, size_known = 0, False  # a mutable file: known only by reading it
    assert size is not None
    etag = s3.get("etag")
    if not isinstance(etag, str) or s3.get("size") != size:
        # no S3 metadata, or the file was replaced by another tool since
        etag = EMPTY_MD5 if folder else _derived_etag(read_uri)
    modified = s3.get("last-modified")
    return (size, size_known, etag,
            float(modified) if isinstance(modified, (int, float)) else _link_time(metadata))


def describe(key: str, metadata: Mapping[str, Any], read_uri: bytes, size: int | None,
             folder: bool = False, child: ChildNode | None = None) -> ObjectInfo:
    """The :class:`ObjectInfo` of an entry's metadata and read cap.

    :param size: the file's size if its cap tells (an immutable file), else None.
    :param child: the linked node, for reading (None in listings).
    """
    s3 = metadata.get(S3_KEY)
    s3 = s3 if isinstance(s3, dict) else {}
    size, size_known, etag, modified = _listed(metadata, s3, read_uri, size, folder)
    meta = s3.get("meta")
    checksums = s3.get("checksums")
    return ObjectInfo(
        key=key, size=size, etag=etag, last_modified=modified,
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


#: Read-cap prefixes of directories and files as a directory stores them.
_DIRECTORY_CAPS = (b"URI:DIR2-RO:", b"URI:DIR2-CHK:", b"URI:DIR2-LIT:", b"URI:DIR2-MDMF-RO:",
                   b"URI:DIR2:", b"URI:DIR2-MDMF:")
_FILE_CAPS = (b"URI:CHK:", b"URI:LIT:", b"URI:SSK-RO:", b"URI:MDMF-RO:")

#: One directory entry as a listing first sees it:
#: (sort name, name, is a directory, read cap, metadata JSON).
Light = tuple[str, str, bool, bytes, bytes]


@frozen
class SortedDirectory:
    """A directory's files and subdirectories in listing order.

    :ivar entries: light entries, sorted.
    :ivar names: their sort names, in the same order (for bisection).
    """

    entries: list[Light]
    names: list[str]

    def after(self, start: str, base: str) -> list[Light]:
        """The entries of the directory ``base`` that may hold keys after ``start``: from
        the last one sorting at or before it (a directory that may hold it) on."""
        if not start.startswith(base):
            return self.entries
        at = bisect.bisect_right(self.names, start[len(base):])
        return self.entries[max(0, at - 1):]

    def find(self, name: str) -> Light | None:
        """The entry named ``name`` (a file or a directory), or None."""
        for sort_name in (name, name + "/"):
            at = bisect.bisect_left(self.names, sort_name)
            if at < len(self.names) and self.names[at] == sort_name:
                return self.entries[at]
        return None


def _light(entry: bytes, name_bytes: bytes, inner: int) -> Light | None:
    """An entry as a listing sees it (its name already split off, up to ``inner``); None
    for a child that is neither a file nor a directory."""
    read_cap, inner = split_netstring(entry, inner)
    _, inner = split_netstring(entry, inner)  # the encrypted write cap
    metadata, _ = split_netstring(entry, inner)
    read_cap = read_cap.rstrip(b" ")
    if read_cap.startswith(_DIRECTORY_CAPS):
        directory = True
    elif read_cap.startswith(_FILE_CAPS):
        directory = False
    else:
        return None
    name = unicodedata.normalize("NFC", name_bytes.decode("utf-8"))
    return (name + "/" if directory else name, name, directory, read_cap, metadata)


def _raw_entries(data: bytes) -> Iterator[tuple[bytes, bytes, int]]:
    """Each entry of a directory's contents, its name, and where the rest of it starts."""
    position = 0
    while position < len(data):
        entry, position = split_netstring(data, position)
        name_bytes, inner = split_netstring(entry, 0)
        yield entry, name_bytes, inner


def _lights(data: bytes, name: str | None = None) -> list[Light]:
    """The files and subdirectories of a directory's contents (only those called ``name``
    when given, the others not parsed), in the contents' order.

    :raises CorruptDirectory: for broken netstrings or names that are not UTF-8.
    """
    wanted = None if name is None else name.encode("utf-8")
    found = []
    try:
        for entry, name_bytes, inner in _raw_entries(data):
            if wanted is not None and name_bytes != wanted and (
                    name_bytes.isascii() or unicodedata.normalize(
                        "NFC", name_bytes.decode("utf-8")) != name):
                continue
            light = _light(entry, name_bytes, inner)
            if light is not None:
                found.append(light)
    except (BadNetstring, UnicodeDecodeError) as error:
        raise CorruptDirectory(f"directory entry: {error}") from None
    return found


def sorted_entries(data: bytes) -> SortedDirectory:
    """A directory's files and subdirectories in listing order, caps and metadata unparsed
    (children of other kinds are left out).

    :raises CorruptDirectory: for broken netstrings or names that are not UTF-8.
    """
    entries = sorted(_lights(data))
    return SortedDirectory(entries, [entry[0] for entry in entries])


def find_entry(data: bytes, name: str) -> Light | None:
    """The entry ``name`` (NFC) of a directory's contents, the one
    :meth:`SortedDirectory.find` would give, found by one pass that parses only the
    entries of that name (a GET's lookup: no sort of the whole directory).

    :raises CorruptDirectory: for broken netstrings or names that are not UTF-8.
    """
    found = _lights(data, name)
    return min(found) if found else None  # a file sorts before a directory of its name


def full_entry(light: Light) -> Entry:
    """The whole entry of a light one (its read cap and metadata parsed)."""
    _, name, _, read_cap, metadata_json = light
    try:
        metadata = json.loads(metadata_json)
    except ValueError:
        metadata = {}
    return Entry(child_from_caps(None, read_cap, name=name),
                 metadata if isinstance(metadata, dict) else {})


def light_item(key: str, light: Light, folder: bool) -> ListItem:
    """What a listing says of an object (its size, ETag and time, as :func:`describe` finds
    them), from its metadata and the text of its cap, without the rest of an
    :class:`ObjectInfo`."""
    try:
        metadata = json.loads(light[4])
    except ValueError:
        metadata = {}
    if not isinstance(metadata, dict):
        metadata = {}
    s3 = metadata.get(S3_KEY)
    size, _, etag, modified = _listed(metadata, s3 if isinstance(s3, dict) else {}, light[3],
                                      size_from_cap(light[3]), folder)
    return ListItem(key=key, size=size, etag=quoted_etag(etag), last_modified=modified)


def light_is_folder(light: Light) -> bool:
    """Whether a light entry is a folder marker (its metadata parsed only if it may be)."""
    if not light[2] or S3_KEY.encode() not in light[4]:
        return False
    s3 = full_entry(light).metadata.get(S3_KEY)
    return isinstance(s3, dict) and s3.get("folder") is True

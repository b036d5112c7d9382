"""A directory's plaintext: the packed child table (``reference/mutable-dirnodes.md`` §8, §9, §10.1).

::

    plaintext = netstring(entry) ... (sorted by NFC name; b"" when empty)
    entry     = netstring(name UTF-8) netstring(ro_uri) netstring(rwcapdata)
                netstring(metadata JSON)
    rwcapdata = salt(16) || AES-CTR(key, rw_uri) || mac(32)     (mutable directories)
              = b""                                             (immutable directories)
    salt      = tagged_hash(SALT_TAG, rw_uri)[:16]
    key       = tagged_pair_hash(WRITECAP_TAG, salt, writekey)[:16]
    mac       = SHA256(key^0x5c.. || SHA256(key^0x36.. || salt || ciphertext))

Unchanged entries are re-emitted byte for byte as they were read
(:attr:`Entry.raw`); only new or changed ones are serialized afresh.

See ``docs/formats/dirnodes.md``.
"""
from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Mapping
from typing import Any

from attrs import field, frozen

from ..crypto.aes import aes_ctr
from ..util.errors import BadNetstring
from ..util.hashutil import tagged_hash, tagged_pair_hash
from ..util.netstring import netstring, split_netstring
from .children import ChildNode, child_from_caps
from .errors import BadMetadata, CorruptDirectory, MustBeDeepImmutableError

SALT_TAG = b"allmydata_dirnode_child_rwcap_to_salt_v1"
WRITECAP_TAG = b"allmydata_mutable_writekey_and_salt_to_dirnode_child_capkey_v1"
SALT_SIZE = 16
MAC_SIZE = 32
_EMPTY_NETSTRING = netstring(b"")
_IMM = b"imm."
_RO = b"ro."


@frozen
class Entry:
    """One child link: the child, its metadata, and the bytes it was read from.

    :ivar metadata: a JSON object (insertion order is kept when packed);
        treat it as read-only, operations copy it.
    :ivar raw: the inner entry bytes as read, re-emitted while the entry is
        unchanged; None for new or changed entries.
    """

    child: ChildNode
    metadata: dict[str, Any]
    raw: bytes | None = field(default=None, eq=False)


@frozen
class UnpackedDirectory:
    """What :func:`unpack_directory` found.

    :ivar children: NFC name -> entry.
    :ivar skipped: (name, reason) of entries left out, as Tahoe does, because
        their caps are unusable (or mutable, in an immutable directory).
    """

    children: dict[str, Entry]
    skipped: tuple[tuple[str, str], ...]


def normalize_name(name: str) -> str:
    """Names are Unicode NFC, when written, read and looked up."""
    return unicodedata.normalize("NFC", name)


def _mac(key: bytes, salt: bytes, crypttext: bytes) -> bytes:
    inner = hashlib.sha256(bytes(b ^ 0x36 for b in key) + salt + crypttext).digest()
    return hashlib.sha256(bytes(b ^ 0x5C for b in key) + inner).digest()


def encrypt_rw_uri(writekey: bytes, rw_uri: bytes) -> bytes:
    """Encrypt a child's write cap (``b""`` for none) under the directory's writekey.

    Deterministic: the salt is a hash of the write cap itself.
    """
    salt = tagged_hash(SALT_TAG, rw_uri, SALT_SIZE)
    key = tagged_pair_hash(WRITECAP_TAG, salt, writekey, 16)
    crypttext = aes_ctr(key, rw_uri)
    return salt + crypttext + _mac(key, salt, crypttext)


def decrypt_rwcapdata(writekey: bytes, rwcapdata: bytes) -> bytes:
    """Decrypt a child's rwcapdata (the MAC is not checked, as in Tahoe >= 1.3)."""
    salt = rwcapdata[:SALT_SIZE]
    crypttext = rwcapdata[SALT_SIZE:-MAC_SIZE]
    key = tagged_pair_hash(WRITECAP_TAG, salt, writekey, 16)
    return aes_ctr(key, crypttext)


def strip_prefix_for_ro(ro_uri: bytes, deep_immutable: bool) -> bytes:
    """The ro_uri as stored: ``ro.`` always stripped, ``imm.`` only in immutable directories."""
    if ro_uri.startswith(_IMM):
        return ro_uri[len(_IMM):] if deep_immutable else ro_uri
    if ro_uri.startswith(_RO):
        return ro_uri[len(_RO):]
    return ro_uri


def _metadata_json(name: str, metadata: Mapping[str, Any]) -> bytes:
    try:
        return json.dumps(metadata).encode("utf-8")
    except (TypeError, ValueError) as error:
        raise BadMetadata(f"metadata of {name!r} is not JSON: {error}") from None


def pack_entry(name: str, child: ChildNode, metadata: Mapping[str, Any],
               writekey: bytes | None, deep_immutable: bool = False) -> bytes:
    """Serialize one entry (the inner bytes, before the outer netstring).

    :param writekey: the directory's writekey; None for immutable directories.
    :raises ChildCapError: when the child is unusable, or mutable in an immutable directory.
    :raises BadMetadata: when the metadata cannot be written as JSON.
    """
    child.raise_error()
    if deep_immutable and not child.is_allowed_in_immutable_directory():
        raise MustBeDeepImmutableError("child is not allowed in an immutable directory", name)
    try:
        name_bytes = name.encode("utf-8")
    except UnicodeEncodeError:
        raise BadMetadata(f"child name {name!r} cannot be encoded as UTF-8") from None
    rwcapdata = (_EMPTY_NETSTRING if writekey is None
                 else netstring(encrypt_rw_uri(writekey, child.write_uri or b"")))
    return b"".join((netstring(name_bytes),
                     netstring(strip_prefix_for_ro(child.read_uri or b"", deep_immutable)),
                     rwcapdata, netstring(_metadata_json(name, metadata))))


def pack_children(children: Mapping[str, Entry], writekey: bytes | None, *,
                  deep_immutable: bool = False) -> bytes:
    """Serialize a child table (names already NFC) as a directory's plaintext.

    Entries with :attr:`Entry.raw` are re-emitted as read; the others are
    packed afresh. Every child is still checked.

    :raises ChildCapError: for an unusable child, or a mutable one when ``deep_immutable``.
    """
    parts = []
    for name in sorted(children):
        entry = children[name]
        entry.child.raise_error()
        if deep_immutable and not entry.child.is_allowed_in_immutable_directory():
            raise MustBeDeepImmutableError("child is not allowed in an immutable directory", name)
        packed = entry.raw or pack_entry(name, entry.child, entry.metadata, writekey,
                                         deep_immutable)
        parts.append(netstring(packed))
    return b"".join(parts)


def pack_new_directory(children: Mapping[str, tuple[ChildNode, Mapping[str, Any]]],
                       writekey: bytes | None, *, deep_immutable: bool = False) -> bytes:
    """The plaintext of a directory created with initial children (mkdir, immutable dirs).

    Names are NFC-normalized; metadata is stored exactly as given (no
    ``tahoe`` timestamps). Immutable directories pass ``writekey=None`` and
    ``deep_immutable=True``; the result is then uploaded as a CHK or LIT file.
    """
    table = {normalize_name(name): Entry(child, dict(metadata))
             for name, (child, metadata) in children.items()}
    return pack_children(table, writekey, deep_immutable=deep_immutable)


def _split(data: bytes, position: int, what: str) -> tuple[bytes, int]:
    try:
        return split_netstring(data, position)
    except BadNetstring as error:
        raise CorruptDirectory(f"{what}: {error}") from None


def _parse_entry(entry: bytes, writekey: bytes | None, mutable: bool
                 ) -> tuple[str, Entry | str]:
    """One entry's NFC name, and its :class:`Entry` or why it is skipped."""
    fields = []
    inner = 0
    for what in ("name", "ro_uri", "rwcapdata", "metadata"):
        value, inner = _split(entry, inner, what)
        fields.append(value)
    name_bytes, ro_uri, rwcapdata, metadata_json = fields
    if not mutable and rwcapdata:
        raise CorruptDirectory("an entry of an immutable directory has a write cap")
    try:
        name = normalize_name(name_bytes.decode("utf-8"))
    except UnicodeDecodeError:
        raise CorruptDirectory(f"child name is not UTF-8: {name_bytes[:40]!r}") from None
    rw_uri = decrypt_rwcapdata(writekey, rwcapdata) if writekey is not None else b""
    child = child_from_caps(rw_uri.rstrip(b" ") or None, ro_uri.rstrip(b" ") or None,
                            deep_immutable=not mutable, name=name)
    if child.error is not None:
        return name, str(child.error)
    if not mutable and not child.is_allowed_in_immutable_directory():
        return name, "mutable cap in an immutable directory"
    try:
        metadata = json.loads(metadata_json)
    except (ValueError, RecursionError) as error:
        raise CorruptDirectory(f"metadata of {name!r} is not JSON: {error}") from None
    if not isinstance(metadata, dict):
        raise CorruptDirectory(f"metadata of {name!r} is not a JSON object")
    return name, Entry(child, metadata, raw=entry)


#: What :func:`unpack_directory` parsed, by entry bytes: (name, entry or skip reason).
ParsedEntries = dict[bytes, tuple[str, "Entry | str"]]


def unpack_directory(data: bytes, writekey: bytes | None, *, mutable: bool = True,
                     known: ParsedEntries | None = None) -> UnpackedDirectory:
    """Parse a directory's plaintext.

    :param writekey: the directory's writekey to decrypt write caps; None
        for a read-only view (children then carry only their read caps).
    :param mutable: False for immutable directories (DIR2-CHK, DIR2-LIT).
    :param known: the entries of an earlier parse with the same ``writekey`` and
        ``mutable``, by their bytes: an entry found there is not parsed again (a
        directory changed in place is read before each change, and most of its
        entries are as they were; parsing one costs a key derivation, AES, cap
        parsing and JSON). Replaced by this parse's entries, so it holds no more
        than one version's. Entries are shared between parses: treat them as
        read-only, as :class:`Entry` asks.
    :raises CorruptDirectory: for broken netstrings, non-UTF-8 names,
        metadata that is not a JSON object, or rwcapdata in an immutable directory.
    """
    children: dict[str, Entry] = {}
    skipped: list[tuple[str, str]] = []
    parsed_now: ParsedEntries = {}
    position = 0
    while position < len(data):
        entry, position = _split(data, position, "directory entry")
        parsed = known.get(entry) if known is not None else None
        if parsed is None:
            parsed = _parse_entry(entry, writekey, mutable)
        if known is not None:
            parsed_now[entry] = parsed
        name, found = parsed
        if isinstance(found, str):
            skipped.append((name, found))
        else:
            children[name] = found
    if known is not None:
        known.clear()
        known.update(parsed_now)
    return UnpackedDirectory(children, tuple(skipped))


def unpack_children(data: bytes, writekey: bytes | None, *, mutable: bool = True,
                    known: ParsedEntries | None = None) -> dict[str, Entry]:
    """The child table of a directory's plaintext (see :func:`unpack_directory`)."""
    return unpack_directory(data, writekey, mutable=mutable, known=known).children

"""The messages of the HTTPS storage protocol: headers, CBOR bodies, ranges.

Follows ``docs/formats/http-storage.md``. Pure: bytes in, frozen values out
(and back), for both the server (``storage.http_api``) and the client
(``client.storage_https``). Every decoder checks the shape Tahoe-LAFS 1.20's
schemas require and raises :class:`MessageError` (a ``ValueError``) on
anything else; the server answers those with 400.

Bodies are CBOR; a semantic set is CBOR tag 258 (``cbor2`` maps it to and
from Python sets), byte strings are CBOR byte strings.
"""
from __future__ import annotations

import base64
import binascii
import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import cbor2
from attrs import frozen

CBOR = "application/cbor"
_CBOR_BYTES = CBOR.encode("ascii")
OCTET_STREAM = "application/octet-stream"
STORAGE_V1 = b"http://allmydata.org/tahoe/protocols/storage/v1"
#: The version keys an HTTP server sends (the Foolscap ones minus four flags that
#: the HTTP protocol implies, which a client adds back).
VERSION_KEYS = (b"maximum-immutable-share-size", b"maximum-mutable-share-size",
                b"available-space")
IMPLIED_FLAGS = (b"tolerates-immutable-read-overrun",
                 b"delete-mutable-shares-with-zero-length-writev",
                 b"fills-holes-with-zero-bytes", b"prevents-read-past-end-of-share-data")

#: CBOR's largest unsigned integer plus one.
UINT_LIMIT = 2 ** 64
MAX_SHARE_NUMBERS = 256
MAX_TEST_VECTORS = 30
MAX_READ_VECTORS = 30
#: A corruption report's reason, in UTF-8 bytes.
REASON_SIZE = (1, 32765)
LEASE_SECRET_SIZE = 32
AUTH_SCHEME = b"Tahoe-LAFS"


class MessageError(ValueError):
    """A header or body does not have the shape the protocol requires."""


class Secret(enum.Enum):
    """The kinds of secret sent in ``X-Tahoe-Authorization`` headers."""

    LEASE_RENEW = "lease-renew-secret"
    LEASE_CANCEL = "lease-cancel-secret"
    UPLOAD = "upload-secret"
    WRITE_ENABLER = "write-enabler"

    #: Members are singletons: hashed by identity, in C (``Enum``'s hash is a Python call,
    #: and every request's secrets are looked up and compared as sets of these).
    __hash__ = object.__hash__


_SECRET_BY_NAME = {s.value.encode("ascii"): s for s in Secret}


# ---------------------------------------------------------------- headers

def authorization(swissnum: bytes) -> bytes:
    """The ``Authorization`` value for a storage service: ``Tahoe-LAFS <base64 swissnum>``."""
    return AUTH_SCHEME + b" " + base64.b64encode(swissnum)


def secret_header(kind: Secret, value: bytes) -> bytes:
    """One ``X-Tahoe-Authorization`` value: ``<kind> <base64 value>``."""
    return kind.value.encode("ascii") + b" " + base64.b64encode(value)


def parse_secrets(values: Sequence[bytes], required: frozenset[Secret]) -> dict[Secret, bytes]:
    """The secrets of a request's ``X-Tahoe-Authorization`` headers.

    As Tahoe 1.20: each value is ``<kind> <base64>``; the kinds sent must be
    exactly ``required``; no secret may decode to nothing, and lease secrets
    are 32 bytes.

    :raises MessageError: otherwise.
    """
    secrets: dict[Secret, bytes] = {}
    for value in values:
        name, sep, encoded = value.strip().partition(b" ")
        kind = _SECRET_BY_NAME.get(name)
        if not sep or kind is None:
            raise MessageError(f"bad X-Tahoe-Authorization header: {value[:60]!r}")
        try:
            secret = binascii.a2b_base64(encoded)  # (what b64decode does, less two calls)
        except (binascii.Error, ValueError):
            raise MessageError(f"the {kind.value} is not base64") from None
        if not secret:
            raise MessageError(f"failed to decode the {kind.value}")
        if kind in (Secret.LEASE_RENEW, Secret.LEASE_CANCEL) and \
                len(secret) != LEASE_SECRET_SIZE:
            raise MessageError("lease secrets must be 32 bytes long")
        secrets[kind] = secret
    if secrets.keys() != required:
        expected = ", ".join(sorted(s.value for s in required)) or "none"
        raise MessageError(f"expected X-Tahoe-Authorization secrets: {expected}; got "
                           f"{', '.join(sorted(s.value for s in secrets)) or 'none'}")
    return secrets


def media_type(value: bytes | None) -> str | None:
    """The media type of a ``Content-Type`` value, lower-cased, without parameters."""
    if value is None:
        return None
    kind = value.split(b";", 1)[0].strip().lower()
    return kind.decode("latin-1") or None


def accepts_cbor(values: Sequence[bytes]) -> bool:
    """Whether an ``Accept`` header allows a CBOR answer, as Tahoe 1.20 decides it.

    No header means CBOR. Otherwise the first header's best entry (highest
    quality, first among equals) must be ``application/cbor`` exactly.
    """
    if not values or values[0] == _CBOR_BYTES:  # (what every client of ours sends)
        return True
    best, best_quality = None, -1.0
    for entry in values[0].split(b","):
        parts = entry.strip().split(b";")
        quality = 1.0
        for parameter in parts[1:]:
            key, _, number = parameter.strip().partition(b"=")
            if key.strip().lower() == b"q":
                try:
                    quality = float(number)
                except ValueError:
                    quality = 0.0
        if parts[0] and quality > best_quality:
            best, best_quality = parts[0].strip().lower(), quality
    return best == _CBOR_BYTES and best_quality > 0


# ---------------------------------------------------------------- ranges

_RANGE = re.compile(rb"\A\s*bytes\s*=\s*(\d{1,20})\s*-\s*(\d{1,20})\s*\Z")
_CONTENT_RANGE = re.compile(rb"\A\s*bytes\s+(\d{1,20})-(\d{1,20})/(\d{1,20}|\*)\s*\Z")


def parse_range(value: bytes) -> tuple[int, int]:
    """A ``Range`` value the protocol allows: one closed ``bytes=FIRST-LAST`` range.

    :returns: ``(start, stop)``, half-open.
    :raises MessageError: for several ranges, open or suffix ranges, other
        units, or ``LAST < FIRST`` (the server answers 416).
    """
    match = _RANGE.match(value)
    if match is None:
        raise MessageError(f"unsupported Range: {value[:60]!r}")
    first, last = int(match.group(1)), int(match.group(2))
    if last < first:
        raise MessageError(f"backwards Range: {value[:60]!r}")
    return first, last + 1


def format_range(start: int, stop: int) -> bytes:
    """The ``Range`` value for the half-open ``[start, stop)`` (``stop > start``)."""
    return b"bytes=%d-%d" % (start, stop - 1)


def parse_content_range(value: bytes) -> tuple[int, int, int | None]:
    """A ``Content-Range`` value: ``bytes FIRST-LAST/TOTAL`` (TOTAL may be ``*``).

    :returns: ``(start, stop, total)``, half-open, ``total`` None for ``*``.
    :raises MessageError: if malformed or backwards.
    """
    match = _CONTENT_RANGE.match(value)
    if match is None:
        raise MessageError(f"malformed Content-Range: {value[:60]!r}")
    first, last = int(match.group(1)), int(match.group(2))
    total = None if match.group(3) == b"*" else int(match.group(3))
    if last < first or (total is not None and last >= total):
        raise MessageError(f"impossible Content-Range: {value[:60]!r}")
    return first, last + 1, total


def format_content_range(start: int, stop: int, total: int | None) -> bytes:
    """The ``Content-Range`` value of the half-open ``[start, stop)``."""
    return b"bytes %d-%d/%s" % (start, stop - 1, b"*" if total is None else b"%d" % total)


# ---------------------------------------------------------------- CBOR

def encode(value: Any) -> bytes:
    """CBOR bytes of a value (Python sets become tag 258)."""
    return cbor2.dumps(value)


def decode(body: bytes) -> Any:
    """The value of a CBOR body.

    :raises MessageError: if it is not CBOR.
    """
    try:
        return cbor2.loads(body)
    except Exception as error:  # cbor2 raises several kinds; none may escape as a crash
        raise MessageError(f"not valid CBOR: {error}") from None


def _uint(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < UINT_LIMIT:
        raise MessageError(f"{what} must be an unsigned integer")
    return value


def _bytes(value: object, what: str) -> bytes:
    if not isinstance(value, bytes):
        raise MessageError(f"{what} must be a byte string")
    return value


def _map(value: object, keys: Iterable[str], what: str) -> Mapping[Any, Any]:
    wanted = set(keys)
    if not isinstance(value, dict) or set(value) != wanted:
        raise MessageError(f"{what} must be a map with exactly the keys {sorted(wanted)}")
    return value


def _list(value: object, what: str, most: int | None = None) -> list[Any]:
    if not isinstance(value, list) or (most is not None and len(value) > most):
        limit = "" if most is None else f" of at most {most} items"
        raise MessageError(f"{what} must be an array{limit}")
    return value


def _uint_set(value: object, what: str) -> frozenset[int]:
    if not isinstance(value, (set, frozenset)) or len(value) > MAX_SHARE_NUMBERS:
        raise MessageError(f"{what} must be a set (CBOR tag 258) of at most "
                           f"{MAX_SHARE_NUMBERS} unsigned integers")
    return frozenset(_uint(n, what) for n in value)


# ---------------------------------------------------------------- request bodies

@frozen
class AllocateRequest:
    """``POST /storage/v1/immutable/:si``: the shares wanted and their size."""

    share_numbers: frozenset[int]
    allocated_size: int

    def to_cbor(self) -> bytes:
        """The request body."""
        return encode({"share-numbers": set(self.share_numbers),
                       "allocated-size": self.allocated_size})

    @classmethod
    def from_cbor(cls, body: bytes) -> "AllocateRequest":
        """:raises MessageError: unless ``{share-numbers: set of uint, allocated-size: uint}``."""
        message = _map(decode(body), ("share-numbers", "allocated-size"), "the allocate request")
        return cls(_uint_set(message["share-numbers"], "share-numbers"),
                   _uint(message["allocated-size"], "allocated-size"))


@frozen
class CorruptionReport:
    """``POST …/:shnum/corrupt``: why the client thinks the share is corrupt."""

    reason: str

    def to_cbor(self) -> bytes:
        """The request body."""
        return encode({"reason": self.reason})

    @classmethod
    def from_cbor(cls, body: bytes) -> "CorruptionReport":
        """:raises MessageError: unless ``{reason: text of 1..32765 UTF-8 bytes}``."""
        reason = _map(decode(body), ("reason",), "the corruption report")["reason"]
        if not isinstance(reason, str) or \
                not REASON_SIZE[0] <= len(reason.encode("utf-8", "surrogatepass")) <= REASON_SIZE[1]:
            raise MessageError("reason must be text of 1 to 32765 bytes")
        return cls(reason)


@frozen
class TestVector:
    """Compare ``size`` bytes at ``offset`` with ``specimen`` (always ``eq``)."""

    __test__ = False  # not a pytest test class

    offset: int
    size: int
    specimen: bytes


@frozen
class WriteVector:
    """Write ``data`` at ``offset``."""

    offset: int
    data: bytes


@frozen
class ReadVector:
    """Read ``size`` bytes at ``offset``."""

    offset: int
    size: int


@frozen
class ShareVectors:
    """The tests and writes for one share, and its new length (None: unchanged)."""

    tests: tuple[TestVector, ...]
    writes: tuple[WriteVector, ...]
    new_length: int | None

    def to_foolscap(self) -> tuple[list[tuple[int, int, bytes, bytes]], list[tuple[int, bytes]],
                                   int | None]:
        """The ``(testv, datav, new_length)`` triple of the Foolscap interface."""
        return ([(t.offset, t.size, b"eq", t.specimen) for t in self.tests],
                [(w.offset, w.data) for w in self.writes], self.new_length)


@frozen
class ReadTestWrite:
    """``POST /storage/v1/mutable/:si/read-test-write``."""

    vectors: Mapping[int, ShareVectors]
    reads: tuple[ReadVector, ...]

    @classmethod
    def from_foolscap(cls, tw_vectors: Mapping[int, tuple[Sequence[Any], Sequence[Any], Any]],
                      r_vector: Sequence[tuple[int, int]]) -> "ReadTestWrite":
        """From the Foolscap arguments (test operators must be ``b"eq"``).

        :raises MessageError: for another operator.
        """
        vectors = {}
        for shnum, (tests, writes, new_length) in tw_vectors.items():
            checked = []
            for offset, size, operator, specimen in tests:
                if operator != b"eq":
                    raise MessageError(f"only the eq test exists over HTTP, not {operator!r}")
                checked.append(TestVector(offset, size, specimen))
            vectors[shnum] = ShareVectors(tuple(checked),
                                          tuple(WriteVector(o, d) for o, d in writes), new_length)
        return cls(vectors, tuple(ReadVector(o, s) for o, s in r_vector))

    def to_cbor(self) -> bytes:
        """The request body."""
        return encode({
            "test-write-vectors": {
                shnum: {"test": [{"offset": t.offset, "size": t.size, "specimen": t.specimen}
                                 for t in share.tests],
                        "write": [{"offset": w.offset, "data": w.data} for w in share.writes],
                        "new-length": share.new_length}
                for shnum, share in self.vectors.items()},
            "read-vector": [{"offset": r.offset, "size": r.size} for r in self.reads],
        })

    @classmethod
    def from_cbor(cls, body: bytes) -> "ReadTestWrite":
        """:raises MessageError: unless the body has Tahoe 1.20's read-test-write shape."""
        message = _map(decode(body), ("test-write-vectors", "read-vector"),
                       "the read-test-write request")
        table = message["test-write-vectors"]
        if not isinstance(table, dict) or len(table) > MAX_SHARE_NUMBERS:
            raise MessageError("test-write-vectors must be a map of at most 256 shares")
        vectors = {}
        for shnum, entry in table.items():
            entry = _map(entry, ("test", "write", "new-length"), "a share's vectors")
            tests = tuple(TestVector(_uint(t["offset"], "offset"), _uint(t["size"], "size"),
                                     _bytes(t["specimen"], "specimen"))
                          for t in (_map(t, ("offset", "size", "specimen"), "a test vector")
                                    for t in _list(entry["test"], "test", MAX_TEST_VECTORS)))
            writes = tuple(WriteVector(_uint(w["offset"], "offset"), _bytes(w["data"], "data"))
                           for w in (_map(w, ("offset", "data"), "a write vector")
                                     for w in _list(entry["write"], "write")))
            new_length = entry["new-length"]
            vectors[_uint(shnum, "a share number")] = ShareVectors(
                tests, writes, None if new_length is None else _uint(new_length, "new-length"))
        reads = tuple(ReadVector(_uint(r["offset"], "offset"), _uint(r["size"], "size"))
                      for r in (_map(r, ("offset", "size"), "a read vector")
                                for r in _list(message["read-vector"], "read-vector",
                                               MAX_READ_VECTORS)))
        return cls(vectors, reads)


# ---------------------------------------------------------------- response bodies

def encode_version(version: Mapping[bytes, Any]) -> bytes:
    """The ``/storage/v1/version`` answer: the v1 keys of :data:`VERSION_KEYS` only."""
    v1 = version[STORAGE_V1]
    return encode({STORAGE_V1: {key: v1[key] for key in VERSION_KEYS},
                   b"application-version": version[b"application-version"]})


def decode_version(body: bytes) -> dict[bytes, Any]:
    """A version answer, with the flags the HTTP protocol implies added (as Tahoe's client does).

    :raises MessageError: unless it has the three v1 numbers and a bytes application version.
    """
    message = decode(body)
    if not isinstance(message, dict) or not isinstance(message.get(STORAGE_V1), dict) or \
            not isinstance(message.get(b"application-version"), bytes):
        raise MessageError("the version answer lacks the v1 map or the application version")
    v1 = dict(message[STORAGE_V1])
    for key in VERSION_KEYS:
        _uint(v1.get(key), key.decode("ascii"))
    v1.update({flag: True for flag in IMPLIED_FLAGS})
    return {**message, STORAGE_V1: v1}


def encode_allocation(already_have: Iterable[int], allocated: Iterable[int]) -> bytes:
    """The allocate answer: ``{already-have: set, allocated: set}``."""
    return encode({"already-have": set(already_have), "allocated": set(allocated)})


def decode_allocation(body: bytes) -> tuple[frozenset[int], frozenset[int]]:
    """``(already_have, allocated)`` of an allocate answer.

    :raises MessageError: if malformed.
    """
    message = _map(decode(body), ("already-have", "allocated"), "the allocate answer")
    return (_uint_set(message["already-have"], "already-have"),
            _uint_set(message["allocated"], "allocated"))


def encode_required(ranges: Iterable[tuple[int, int]]) -> bytes:
    """A write's answer: ``{required: [{begin, end}, …]}`` (half-open ranges still missing)."""
    return encode({"required": [{"begin": begin, "end": end} for begin, end in ranges]})


def decode_required(body: bytes) -> list[tuple[int, int]]:
    """The ranges a write's answer says are still missing.

    :raises MessageError: if malformed.
    """
    message = _map(decode(body), ("required",), "the write answer")
    return [(_uint(r["begin"], "begin"), _uint(r["end"], "end"))
            for r in (_map(r, ("begin", "end"), "a range")
                      for r in _list(message["required"], "required"))]


def encode_share_numbers(share_numbers: Iterable[int]) -> bytes:
    """A list-shares answer: a set of share numbers."""
    return encode(set(share_numbers))


def decode_share_numbers(body: bytes) -> frozenset[int]:
    """:raises MessageError: unless the body is a set (tag 258) of at most 256 uints."""
    return _uint_set(decode(body), "the share numbers")


def encode_read_test_write_result(success: bool, reads: Mapping[int, Sequence[bytes]]) -> bytes:
    """The read-test-write answer: ``{success: bool, data: {shnum: [bytes, …]}}``."""
    return encode({"success": success, "data": {n: list(r) for n, r in reads.items()}})


def decode_read_test_write_result(body: bytes) -> tuple[bool, dict[int, list[bytes]]]:
    """``(success, reads)`` of a read-test-write answer.

    :raises MessageError: if malformed.
    """
    message = _map(decode(body), ("success", "data"), "the read-test-write answer")
    if not isinstance(message["success"], bool) or not isinstance(message["data"], dict):
        raise MessageError("success must be a bool and data a map")
    return message["success"], {
        _uint(shnum, "a share number"): [_bytes(piece, "read data")
                                         for piece in _list(pieces, "read data")]
        for shnum, pieces in message["data"].items()}

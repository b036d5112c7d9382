"""Digests of request bodies: ``Content-MD5``, ``x-amz-checksum-*`` and the ETag.

S3 clients may send, in headers or in an ``aws-chunked`` trailer, the MD5 of a
body (``Content-MD5``, base64 of 16 bytes) and one additional checksum
(``x-amz-checksum-crc32``, ``-crc32c``, ``-sha1``, ``-sha256``; base64 of the
big-endian digest). The gateway computes them while the body streams
(:class:`BodyDigests`), checks what was sent (:func:`verify`), keeps the
checksum with the object and returns it. An object's ETag is the hex MD5 of
its body; a multipart object's is the MD5 of its parts' binary MD5s followed by
``-N`` (:func:`multipart_etag`), and its checksum is likewise the checksum of
the parts' checksums (:func:`composite_checksum`). Facts from the S3 user
guide, "Checking object integrity".

CRC32 comes from ``zlib``, CRC32C from the ``crc32c`` package, SHA-1 and
SHA-256 from ``hashlib``. CRC64NVME has no maintained Python package here and
is refused (``NotImplemented``) rather than accepted unchecked. Pure.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import zlib
from collections.abc import Iterable, Mapping
from typing import Protocol

import crc32c

from .errors import S3Error

__all__ = ["ALGORITHMS", "BodyDigests", "requested_algorithms", "verify",
           "verify_payload_hash", "multipart_etag", "composite_checksum", "header_name"]

#: The checksum algorithms the gateway computes, as S3 names them.
ALGORITHMS = ("CRC32", "CRC32C", "SHA1", "SHA256")
_KNOWN_BUT_UNSUPPORTED = ("CRC64NVME",)
_DIGEST_SIZES = {"CRC32": 4, "CRC32C": 4, "SHA1": 20, "SHA256": 32}
_PREFIX = "x-amz-checksum-"


class _Hash(Protocol):
    def update(self, data: bytes) -> None: ...
    def digest(self) -> bytes: ...


class _CRC:
    """A running CRC with the hashlib interface (big-endian 4-byte digest)."""

    def __init__(self, castagnoli: bool) -> None:
        self._castagnoli = castagnoli
        self._value = 0

    def update(self, data: bytes) -> None:
        if self._castagnoli:
            self._value = crc32c.crc32c(data, self._value)
        else:
            self._value = zlib.crc32(data, self._value)

    def digest(self) -> bytes:
        return self._value.to_bytes(4, "big")


def _new_hash(algorithm: str) -> _Hash:
    if algorithm == "CRC32":
        return _CRC(castagnoli=False)
    if algorithm == "CRC32C":
        return _CRC(castagnoli=True)
    if algorithm == "SHA1":
        return hashlib.sha1()
    return hashlib.sha256()


def header_name(algorithm: str) -> str:
    """``x-amz-checksum-crc32`` for ``CRC32``, and so on."""
    return _PREFIX + algorithm.lower()


def _algorithm(name: str, source: str) -> str:
    algorithm = name.strip().upper()
    if algorithm in ALGORITHMS:
        return algorithm
    if algorithm in _KNOWN_BUT_UNSUPPORTED:
        raise S3Error("NotImplemented", f"This gateway does not compute {algorithm}"
                      " checksums; use CRC32, CRC32C, SHA1 or SHA256.")
    raise S3Error("InvalidRequest", f"Value for {source} header is invalid.")


class BodyDigests:
    """The digests of one body, updated as its bytes stream past.

    :param algorithms: S3 checksum names to compute (``"CRC32"``, ...).
    :param md5: compute the MD5 (the ETag; almost always wanted).
    :param sha256: compute the SHA-256 (to check a signed payload hash).
    """

    def __init__(self, algorithms: Iterable[str], md5: bool = True,
                 sha256: bool = False) -> None:
        self._md5 = hashlib.md5() if md5 else None
        self._sha256 = hashlib.sha256() if sha256 else None
        self._checksums = {_algorithm(a, "x-amz-checksum-algorithm"): None
                           for a in algorithms}
        self._hashes: dict[str, _Hash] = {a: _new_hash(a) for a in self._checksums}
        #: Bytes seen so far.
        self.size = 0

    @property
    def algorithms(self) -> tuple[str, ...]:
        """The checksum algorithms computed."""
        return tuple(self._hashes)

    def update(self, data: bytes) -> None:
        """Account for the next bytes of the body."""
        self.size += len(data)
        if self._md5 is not None:
            self._md5.update(data)
        if self._sha256 is not None:
            self._sha256.update(data)
        for running in self._hashes.values():
            running.update(data)

    def md5_hex(self) -> str:
        """The hex MD5 (an ETag without its quotes)."""
        assert self._md5 is not None, "MD5 was not requested"
        return self._md5.hexdigest()

    def md5_b64(self) -> str:
        """The MD5 in base64, as ``Content-MD5`` carries it."""
        assert self._md5 is not None, "MD5 was not requested"
        return base64.b64encode(self._md5.digest()).decode("ascii")

    def sha256_hex(self) -> str:
        """The hex SHA-256, as a signed ``x-amz-content-sha256`` carries it."""
        assert self._sha256 is not None, "SHA-256 was not requested"
        return self._sha256.hexdigest()

    def checksum_b64(self, algorithm: str) -> str:
        """The named checksum in base64, as ``x-amz-checksum-*`` carries it."""
        return base64.b64encode(self._hashes[algorithm.upper()].digest()).decode("ascii")

    def checksums(self) -> dict[str, str]:
        """Every computed checksum: S3 name -> base64 (what the store keeps)."""
        return {algorithm: self.checksum_b64(algorithm) for algorithm in self._hashes}


def requested_algorithms(headers: Mapping[str, str]) -> tuple[str, ...]:
    """The checksum algorithms a request asks the gateway to compute.

    From ``x-amz-checksum-ALG`` headers, ``x-amz-sdk-checksum-algorithm`` and
    ``x-amz-trailer`` (the checksum that will arrive after the body), each once,
    in that order. ``x-amz-checksum-type`` and ``x-amz-checksum-algorithm``
    (CreateMultipartUpload) are read by the caller.

    :raises S3Error: ``InvalidRequest`` for an unknown algorithm, ``NotImplemented``
        for CRC64NVME.
    """
    found: list[str] = []
    for name in headers:
        if name.startswith(_PREFIX) and name not in ("x-amz-checksum-type",
                                                     "x-amz-checksum-algorithm",
                                                     "x-amz-checksum-mode"):
            found.append(_algorithm(name[len(_PREFIX):], name))
    if "x-amz-sdk-checksum-algorithm" in headers:
        found.append(_algorithm(headers["x-amz-sdk-checksum-algorithm"],
                                "x-amz-sdk-checksum-algorithm"))
    for trailer in headers.get("x-amz-trailer", "").split(","):
        trailer = trailer.strip().lower()
        if trailer.startswith(_PREFIX):
            found.append(_algorithm(trailer[len(_PREFIX):], "x-amz-trailer"))
        elif trailer:
            raise S3Error("InvalidRequest", "The value specified in the x-amz-trailer"
                          " header is not supported")
    return tuple(dict.fromkeys(found))


def _decode(value: str, size: int, code: str, message: str) -> bytes:
    try:
        raw = base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != size:
        raise S3Error(code, message)
    return raw


def verify(given: Mapping[str, str], digests: BodyDigests) -> None:
    """Check the digests a client sent (headers or trailers) against the body's.

    :param given: lower-case names -> values; ``content-md5`` and
        ``x-amz-checksum-*`` are checked, anything else is ignored.
    :raises S3Error: ``InvalidDigest`` if Content-MD5 is not base64 of 16 bytes,
        ``BadDigest`` if it or a checksum does not match, ``InvalidRequest`` if a
        checksum value is not base64 of the algorithm's size.
    """
    if "content-md5" in given:
        sent = _decode(given["content-md5"], 16, "InvalidDigest",
                       "The Content-MD5 you specified is not valid.")
        if base64.b64encode(sent).decode("ascii") != digests.md5_b64():
            raise S3Error("BadDigest")
    for algorithm in ALGORITHMS:
        name = header_name(algorithm)
        if name not in given:
            continue
        sent = _decode(given[name], _DIGEST_SIZES[algorithm], "InvalidRequest",
                       f"Value for {name} header is invalid.")
        if algorithm not in digests.algorithms:
            raise S3Error("InvalidRequest", f"The {name} sent was not announced by"
                          " x-amz-sdk-checksum-algorithm or x-amz-trailer.")
        if base64.b64encode(sent).decode("ascii") != digests.checksum_b64(algorithm):
            raise S3Error("BadDigest", f"The {algorithm} you specified did not match the"
                          " calculated checksum.")


def verify_payload_hash(payload_hash: str, digests: BodyDigests) -> None:
    """Check a hex ``x-amz-content-sha256`` against the body (other values pass).

    :raises S3Error: ``XAmzContentSHA256Mismatch`` naming both hashes.
    """
    if payload_hash.startswith(("UNSIGNED-", "STREAMING-")):
        return
    computed = digests.sha256_hex()
    if computed != payload_hash:
        raise S3Error("XAmzContentSHA256Mismatch", ClientComputedContentSHA256=payload_hash,
                      S3ComputedContentSHA256=computed)


def multipart_etag(part_md5_hex: Iterable[str]) -> str:
    """S3's ETag of a multipart object: hex MD5 of the parts' binary MD5s, ``-N``."""
    parts = [bytes.fromhex(md5) for md5 in part_md5_hex]
    return f"{hashlib.md5(b''.join(parts)).hexdigest()}-{len(parts)}"


def composite_checksum(algorithm: str, part_checksums_b64: Iterable[str]) -> str:
    """S3's composite checksum of a multipart object: over the parts' raw checksums, ``-N``.

    :raises S3Error: ``InvalidRequest`` if a part checksum is not base64 of the right size.
    """
    algorithm = _algorithm(algorithm, "x-amz-checksum-algorithm")
    running = _new_hash(algorithm)
    count = 0
    for value in part_checksums_b64:
        running.update(_decode(value, _DIGEST_SIZES[algorithm], "InvalidRequest",
                               f"A part's {algorithm} checksum is invalid."))
        count += 1
    return f"{base64.b64encode(running.digest()).decode('ascii')}-{count}"

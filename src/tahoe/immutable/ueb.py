"""The URI extension block (UEB): serialize, parse, hash, check (``reference/immutable.md`` §6)."""
from __future__ import annotations

import re

from attrs import frozen

from ..util.hashutil import HASH_SIZE, uri_extension_hash
from ..util.netstring import netstring
from .errors import BadUEB, UEBHashMismatch
from .params import SegmentGeometry

_KEY = re.compile(rb"\A[a-zA-Z_\-]+\Z")
_INT_FIELDS = frozenset({b"size", b"segment_size", b"num_segments", b"needed_shares", b"total_shares"})
_DIGITS = re.compile(rb"\A[0-9]+\Z")
#: Tahoe's share reader refuses a UEB this long or longer.
MAX_UEB_SIZE = 2000


@frozen
class URIExtension:
    """The eleven fields Tahoe 1.20 writes, with hashes as 32 raw bytes."""

    codec_name: bytes
    codec_params: bytes
    crypttext_hash: bytes
    crypttext_root_hash: bytes
    needed_shares: int
    num_segments: int
    segment_size: int
    share_root_hash: bytes
    size: int
    tail_codec_params: bytes
    total_shares: int

    @classmethod
    def for_file(cls, geometry: SegmentGeometry, crypttext_hash: bytes,
                 crypttext_root_hash: bytes, share_root_hash: bytes) -> "URIExtension":
        """The UEB an uploader writes for a file of this geometry and these hashes."""
        k, n = geometry.needed, geometry.total
        return cls(
            codec_name=b"crs",
            codec_params=b"%d-%d-%d" % (geometry.segment_size, k, n),
            crypttext_hash=crypttext_hash,
            crypttext_root_hash=crypttext_root_hash,
            needed_shares=k,
            num_segments=geometry.num_segments,
            segment_size=geometry.segment_size,
            share_root_hash=share_root_hash,
            size=geometry.size,
            tail_codec_params=b"%d-%d-%d" % (geometry.tail_padded, k, n),
            total_shares=n,
        )

    def to_bytes(self) -> bytes:
        """Serialize: keys in ascending order, each ``key ":" netstring(value)``."""
        fields = {
            b"codec_name": self.codec_name,
            b"codec_params": self.codec_params,
            b"crypttext_hash": self.crypttext_hash,
            b"crypttext_root_hash": self.crypttext_root_hash,
            b"needed_shares": b"%d" % self.needed_shares,
            b"num_segments": b"%d" % self.num_segments,
            b"segment_size": b"%d" % self.segment_size,
            b"share_root_hash": self.share_root_hash,
            b"size": b"%d" % self.size,
            b"tail_codec_params": self.tail_codec_params,
            b"total_shares": b"%d" % self.total_shares,
        }
        return b"".join(key + b":" + netstring(fields[key]) for key in sorted(fields))

    def hash(self) -> bytes:
        """The UEB hash carried in the cap."""
        return uri_extension_hash(self.to_bytes())


def serialized_length(geometry: SegmentGeometry) -> int:
    """Length of the UEB for this geometry, known before any hash is computed."""
    zero = b"\x00" * HASH_SIZE
    return len(URIExtension.for_file(geometry, zero, zero, zero).to_bytes())


def parse_fields(data: bytes) -> dict[str, bytes | int]:
    """Parse a UEB into a dict of every field present (integers converted).

    :raises BadUEB: on any syntax error, a duplicate key or a non-decimal integer.
    """
    fields: dict[str, bytes | int] = {}
    pos = 0
    end = len(data)
    while pos < end:
        colon = data.find(b":", pos)
        if colon < 0:
            raise BadUEB("UEB field has no ':' after its key")
        key = data[pos:colon]
        if not _KEY.match(key):
            raise BadUEB(f"bad UEB key {key[:40]!r}")
        colon2 = data.find(b":", colon + 1, colon + 22)
        if colon2 < 0:
            raise BadUEB(f"UEB field {key!r} has no length")
        digits = data[colon + 1:colon2]
        if not _DIGITS.match(digits):
            raise BadUEB(f"UEB field {key!r} has a bad length")
        length = int(digits)
        value_end = colon2 + 1 + length
        if value_end >= end or data[value_end:value_end + 1] != b",":
            raise BadUEB(f"UEB field {key!r} is truncated or unterminated")
        value = data[colon2 + 1:value_end]
        name = key.decode("ascii")
        if name in fields:
            raise BadUEB(f"UEB field {name!r} appears twice")
        if key in _INT_FIELDS:
            if not _DIGITS.match(value):
                raise BadUEB(f"UEB field {name!r} is not a decimal integer")
            fields[name] = int(value)
        else:
            fields[name] = value
        pos = value_end + 1
    return fields


@frozen
class TrustedUEB:
    """The UEB fields a downloader relies on, after the UEB matched the cap's hash."""

    segment_size: int
    crypttext_root_hash: bytes
    share_root_hash: bytes
    fields: dict

    def geometry(self, size: int, needed: int, total: int) -> SegmentGeometry:
        """The file's geometry: size and k from the cap, segment size from the UEB.

        :raises BadUEB: when the segment size is not a positive multiple of k.
        """
        if self.segment_size < 1 or self.segment_size % needed:
            raise BadUEB(f"UEB segment_size {self.segment_size} is not a multiple of k={needed}")
        return SegmentGeometry.from_segment_size(size, needed, total, self.segment_size)


def check_ueb(data: bytes, expected_hash: bytes) -> TrustedUEB:
    """Check a UEB against the hash from the cap and extract the required fields.

    :raises BadUEB: if the hash differs (:class:`UEBHashMismatch`), the UEB does
        not parse, or a required field is missing or malformed.
    """
    if uri_extension_hash(data) != expected_hash:
        raise UEBHashMismatch("URI extension block does not match the cap's UEB hash")
    fields = parse_fields(data)
    try:
        segment_size = fields["segment_size"]
        crypttext_root_hash = fields["crypttext_root_hash"]
        share_root_hash = fields["share_root_hash"]
    except KeyError as missing:
        raise BadUEB(f"UEB lacks required field {missing.args[0]}") from None
    if not isinstance(segment_size, int):
        raise BadUEB("UEB segment_size is not an integer")
    for name, value in (("crypttext_root_hash", crypttext_root_hash),
                        ("share_root_hash", share_root_hash)):
        if not isinstance(value, bytes) or len(value) != HASH_SIZE:
            raise BadUEB(f"UEB {name} is not {HASH_SIZE} bytes")
    return TrustedUEB(segment_size, crypttext_root_hash, share_root_hash, fields)  # type: ignore[arg-type]


def consistency_problems(ueb: TrustedUEB, geometry: SegmentGeometry) -> list[str]:
    """The verifier's extra checks of the optional fields (reference §6.3).

    :returns: a description of each field that disagrees; empty when consistent.
    """
    fields = ueb.fields
    expected: dict[str, bytes | int] = {
        "codec_name": b"crs",
        "codec_params": b"%d-%d-%d" % (geometry.segment_size, geometry.needed, geometry.total),
        "tail_codec_params": b"%d-%d-%d" % (geometry.tail_padded, geometry.needed, geometry.total),
        "num_segments": geometry.num_segments,
        "size": geometry.size,
        "needed_shares": geometry.needed,
        "total_shares": geometry.total,
    }
    problems = [f"{name} is {fields[name]!r}, expected {value!r}"
                for name, value in expected.items() if name in fields and fields[name] != value]
    flat = fields.get("crypttext_hash")
    if flat is not None and (not isinstance(flat, bytes) or len(flat) != HASH_SIZE):
        problems.append("crypttext_hash is not 32 bytes")
    return problems

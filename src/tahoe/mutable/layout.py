"""Either share format, chosen by a share's first byte (``reference/mutable-dirnodes.md`` §4, §4.4 step 1).

Both header classes answer the same questions (regions as (offset, length),
``version_info``, ``checkstring``, ``signed_prefix``), so readers need not
care which format a share is in: under either cap prefix a reader accepts
either format.

See ``docs/formats/mutable-files.md``.
"""
from __future__ import annotations

from typing import Union

from . import mdmf, sdmf
from .errors import ShareTruncated, UnknownShareVersion

ShareHeader = Union[sdmf.SDMFHeader, mdmf.MDMFHeader]
Share = Union[sdmf.SDMFShare, mdmf.MDMFShare]

#: How many bytes the servermap update reads first (Tahoe: 4000; 1000 in check mode).
PROBE_SIZE = 4000
#: The largest header of either format.
MAX_HEADER_SIZE = max(sdmf.HEADER_SIZE, mdmf.HEADER_SIZE)


def share_version(data: bytes) -> int:
    """The share's format byte: 0 (SDMF) or 1 (MDMF).

    :raises ShareTruncated: for empty data.
    :raises UnknownShareVersion: for any other value.
    """
    if not data:
        raise ShareTruncated("a share needs at least its version byte", 1)
    if data[0] not in (sdmf.VERSION, mdmf.VERSION):
        raise UnknownShareVersion(f"unknown mutable share version {data[0]}")
    return data[0]


def parse_header(data: bytes) -> ShareHeader:
    """Parse the header of a share of either format.

    :raises LayoutInvalid: (or a subclass) when the header is short or malformed.
    """
    if share_version(data) == sdmf.VERSION:
        return sdmf.parse_header(data)
    return mdmf.parse_header(data)


def parse_share(data: bytes) -> Share:
    """Split a whole share of either format into its fields.

    :raises LayoutInvalid: (or a subclass) when it is malformed or truncated.
    """
    if share_version(data) == sdmf.VERSION:
        return sdmf.parse_share(data)
    return mdmf.parse_share(data)


def signature_needs(header: ShareHeader) -> int:
    """Bytes from the start of the share needed to check its key and signature."""
    key_start, key_length = header.verification_key_range()
    sig_start, sig_length = header.signature_range()
    return max(key_start + key_length, sig_start + sig_length)


def private_key_range(header: ShareHeader) -> tuple[int, int]:
    """(offset, length) of the encrypted private key: what a writer reads to get the key."""
    return header.enc_privkey_range()

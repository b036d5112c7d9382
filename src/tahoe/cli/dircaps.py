"""Directory caps as the alias commands need them (pure: text in, text out; standard library).

Facts from ``reference/mutable-dirnodes.md`` §1 (key chain) and §3 (cap strings):

* ``URI:DIR2:<writekey>:<fingerprint>`` and ``URI:DIR2-MDMF:…`` are write caps;
  their read caps ``URI:DIR2-RO:`` / ``URI:DIR2-MDMF-RO:`` carry
  ``readkey = tagged_hash("allmydata_mutable_writekey_to_readkey_v1", writekey)[:16]``
  and the same fingerprint;
* ``URI:DIR2-CHK:`` and ``URI:DIR2-LIT:`` (immutable) are their own read caps;
* keys are 16 bytes (26 base32 characters), fingerprints 32 bytes (52);
  MDMF caps may carry extra ``:``-separated fields, which are kept;
* a cap found in a directory may carry an ``ro.`` (read-only) or ``imm.``
  (immutable) prefix; Tahoe drops it when the cap underneath agrees.

``add-alias`` checks its argument with :func:`normalize_dircap`; ``list-aliases``
shows :func:`readonly_dircap`.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import re

__all__ = ["WRITEKEY_TO_READKEY_TAG", "normalize_dircap", "readonly_dircap"]

WRITEKEY_TO_READKEY_TAG = b"allmydata_mutable_writekey_to_readkey_v1"

_KEY = r"[a-z2-7]{26}"
_HASH = r"[a-z2-7]{52}"
_MUTABLE = re.compile(
    rf"URI:(DIR2|DIR2-RO|DIR2-MDMF|DIR2-MDMF-RO):({_KEY}):({_HASH})((?::[^:]*)*)")
_CHK = re.compile(rf"URI:DIR2-CHK:{_KEY}:{_HASH}:[0-9]+:[0-9]+:[0-9]+")
_LIT = re.compile(r"URI:DIR2-LIT:[a-z2-7]*")
_READ_ONLY_OF = {"DIR2": "DIR2-RO", "DIR2-MDMF": "DIR2-MDMF-RO"}


def _b32decode(text: str) -> bytes:
    padded = text.upper() + "=" * (-len(text) % 8)
    return base64.b32decode(padded)


def _b32encode(data: bytes) -> str:
    return base64.b32encode(data).decode("ascii").rstrip("=").lower()


def _tagged_hash(tag: bytes, value: bytes) -> bytes:
    """SHA-256d of ``netstring(tag) || value``."""
    inner = hashlib.sha256(b"%d:%s," % (len(tag), tag) + value).digest()
    return hashlib.sha256(inner).digest()


def normalize_dircap(text: str) -> str | None:
    """The directory cap ``text`` as Tahoe writes it, or None if it is not a directory cap.

    An ``ro.`` prefix is dropped from a read-only cap and ``imm.`` from an
    immutable one; with any other combination the cap is refused.
    """
    cap = text.strip()
    immutable_only = read_only = False
    if cap.startswith("imm."):
        cap, immutable_only, read_only = cap[4:], True, True
    elif cap.startswith("ro."):
        cap, read_only = cap[3:], True
    if _CHK.fullmatch(cap) or _LIT.fullmatch(cap):
        return cap
    match = _MUTABLE.fullmatch(cap)
    if match is None or immutable_only or (read_only and match[1] in _READ_ONLY_OF):
        return None
    if match[4] and not match[1].startswith("DIR2-MDMF"):
        return None
    return cap


def readonly_dircap(cap: str) -> str:
    """The read cap of the directory cap ``cap`` (itself when it is already read-only).

    A string that is not a directory write cap is returned unchanged.
    """
    match = _MUTABLE.fullmatch(cap)
    if match is None or match[1] not in _READ_ONLY_OF:
        return cap
    try:
        writekey = _b32decode(match[2])
    except (binascii.Error, ValueError):
        return cap
    readkey = _tagged_hash(WRITEKEY_TO_READKEY_TAG, writekey)[:16]
    return f"URI:{_READ_ONLY_OF[match[1]]}:{_b32encode(readkey)}:{match[3]}{match[4]}"

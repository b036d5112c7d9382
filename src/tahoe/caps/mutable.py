"""Mutable file caps: URI:SSK, URI:SSK-RO, URI:SSK-Verifier and their MDMF twins.

Follows ``reference/mutable-dirnodes.md`` §3.1 (see
``docs/formats/mutable-files.md``). Parsing is as strict as Tahoe 1.20:
lower-case canonical base32, and for SSK nothing after the fingerprint but
one optional newline. MDMF caps may carry extra ``:``-separated fields after
the fingerprint (hints written by early MDMF code); they are accepted and
dropped, so ``to_string`` never writes them.

Diminishing needs no network: a write cap's writekey gives the readkey, the
readkey gives the storage index, and the fingerprint is carried along.
"""
from __future__ import annotations

import enum
import re
from typing import ClassVar

from attrs import field, frozen

from ..util import base32
from ..util.hashutil import tagged_hash
from .errors import MalformedCap

#: Tags of the key chain (reference §2.2); repeated in :mod:`tahoe.mutable.keys`.
READKEY_TAG = b"allmydata_mutable_writekey_to_readkey_v1"
STORAGE_INDEX_TAG = b"allmydata_mutable_readkey_to_storage_index_v1"

SSK_PREFIX = "URI:SSK:"
SSK_RO_PREFIX = "URI:SSK-RO:"
SSK_VERIFIER_PREFIX = "URI:SSK-Verifier:"
MDMF_PREFIX = "URI:MDMF:"
MDMF_RO_PREFIX = "URI:MDMF-RO:"
MDMF_VERIFIER_PREFIX = "URI:MDMF-Verifier:"

_B128 = r"[a-z2-7]{25}[aeimquy4]"
_B256 = r"[a-z2-7]{51}[aq]"


class MutableFormat(enum.Enum):
    """The share format a mutable cap asks writers to use."""

    SDMF = 0
    MDMF = 1


def readkey_from_writekey(writekey: bytes) -> bytes:
    """The 16-byte readkey of a mutable file, from its 16-byte writekey."""
    return tagged_hash(READKEY_TAG, writekey, 16)


def storage_index_from_readkey(readkey: bytes) -> bytes:
    """The 16-byte storage index of a mutable file, from its readkey."""
    return tagged_hash(STORAGE_INDEX_TAG, readkey, 16)


def _exact(length: int):  # type: ignore[no-untyped-def]
    def check(instance: object, attribute: object, value: bytes) -> None:
        if not isinstance(value, bytes) or len(value) != length:
            raise ValueError(f"{getattr(attribute, 'name', '?')} must be {length} bytes")
    return check


class _MutableCap:
    """Behaviour shared by the six mutable file caps (fields come from subclasses)."""

    PREFIX: ClassVar[str]
    FORMAT: ClassVar[MutableFormat]
    fingerprint: bytes

    def _first_field(self) -> bytes:
        raise NotImplementedError

    def to_string(self) -> str:
        """The cap's text form (never with MDMF extension fields)."""
        return f"{self.PREFIX}{base32.b2a(self._first_field())}:{base32.b2a(self.fingerprint)}"

    @property
    def format(self) -> MutableFormat:
        """SDMF or MDMF: the share format new versions are written in."""
        return self.FORMAT

    @property
    def is_mutable(self) -> bool:
        """Read and write caps name a mutable file; verify caps report False, as in Tahoe."""
        return True


@frozen
class _WriteCap(_MutableCap):
    writekey: bytes = field(validator=_exact(16))
    fingerprint: bytes = field(validator=_exact(32))

    def _first_field(self) -> bytes:
        return self.writekey

    @property
    def readkey(self) -> bytes:
        """The readkey derived from the writekey."""
        return readkey_from_writekey(self.writekey)

    @property
    def storage_index(self) -> bytes:
        """The 16-byte storage index."""
        return storage_index_from_readkey(self.readkey)

    @property
    def is_readonly(self) -> bool:
        """A write cap is not read-only."""
        return False


@frozen
class _ReadCap(_MutableCap):
    readkey: bytes = field(validator=_exact(16))
    fingerprint: bytes = field(validator=_exact(32))

    def _first_field(self) -> bytes:
        return self.readkey

    @property
    def storage_index(self) -> bytes:
        """The 16-byte storage index."""
        return storage_index_from_readkey(self.readkey)

    @property
    def is_readonly(self) -> bool:
        """A read cap is read-only."""
        return True


@frozen
class _VerifyCap(_MutableCap):
    storage_index: bytes = field(validator=_exact(16))
    fingerprint: bytes = field(validator=_exact(32))

    def _first_field(self) -> bytes:
        return self.storage_index

    @property
    def is_readonly(self) -> bool:
        """A verify cap is read-only."""
        return True

    @property
    def is_mutable(self) -> bool:
        """Tahoe reports verify caps as not mutable (they cannot read or write)."""
        return False


@frozen
class SSKVerifyCap(_VerifyCap):
    """``URI:SSK-Verifier:<SI>:<fingerprint>``: finds and checks an SDMF file's shares."""

    PREFIX = SSK_VERIFIER_PREFIX
    FORMAT = MutableFormat.SDMF

    def readonly(self) -> "SSKVerifyCap":
        """A verify cap cannot be diminished further."""
        return self

    def verify_cap(self) -> "SSKVerifyCap":
        """A verify cap is its own verify cap."""
        return self


@frozen
class SSKReadCap(_ReadCap):
    """``URI:SSK-RO:<readkey>:<fingerprint>``: reads an SDMF mutable file."""

    PREFIX = SSK_RO_PREFIX
    FORMAT = MutableFormat.SDMF

    def readonly(self) -> "SSKReadCap":
        """A read cap is already read-only."""
        return self

    def verify_cap(self) -> SSKVerifyCap:
        """The verify cap of the same file."""
        return SSKVerifyCap(self.storage_index, self.fingerprint)


@frozen
class SSKWriteCap(_WriteCap):
    """``URI:SSK:<writekey>:<fingerprint>``: reads and writes an SDMF mutable file."""

    PREFIX = SSK_PREFIX
    FORMAT = MutableFormat.SDMF

    def readonly(self) -> SSKReadCap:
        """The read cap of the same file."""
        return SSKReadCap(self.readkey, self.fingerprint)

    def verify_cap(self) -> SSKVerifyCap:
        """The verify cap of the same file."""
        return SSKVerifyCap(self.storage_index, self.fingerprint)


@frozen
class MDMFVerifyCap(_VerifyCap):
    """``URI:MDMF-Verifier:<SI>:<fingerprint>``: finds and checks an MDMF file's shares."""

    PREFIX = MDMF_VERIFIER_PREFIX
    FORMAT = MutableFormat.MDMF

    def readonly(self) -> "MDMFVerifyCap":
        """A verify cap cannot be diminished further."""
        return self

    def verify_cap(self) -> "MDMFVerifyCap":
        """A verify cap is its own verify cap."""
        return self


@frozen
class MDMFReadCap(_ReadCap):
    """``URI:MDMF-RO:<readkey>:<fingerprint>``: reads an MDMF mutable file."""

    PREFIX = MDMF_RO_PREFIX
    FORMAT = MutableFormat.MDMF

    def readonly(self) -> "MDMFReadCap":
        """A read cap is already read-only."""
        return self

    def verify_cap(self) -> MDMFVerifyCap:
        """The verify cap of the same file."""
        return MDMFVerifyCap(self.storage_index, self.fingerprint)


@frozen
class MDMFWriteCap(_WriteCap):
    """``URI:MDMF:<writekey>:<fingerprint>``: reads and writes an MDMF mutable file."""

    PREFIX = MDMF_PREFIX
    FORMAT = MutableFormat.MDMF

    def readonly(self) -> MDMFReadCap:
        """The read cap of the same file."""
        return MDMFReadCap(self.readkey, self.fingerprint)

    def verify_cap(self) -> MDMFVerifyCap:
        """The verify cap of the same file."""
        return MDMFVerifyCap(self.storage_index, self.fingerprint)


MutableWriteCap = SSKWriteCap | MDMFWriteCap
MutableReadCap = SSKReadCap | MDMFReadCap
MutableVerifyCap = SSKVerifyCap | MDMFVerifyCap
MutableCap = MutableWriteCap | MutableReadCap | MutableVerifyCap

_FIRST_FIELD = {SSKWriteCap: "writekey", SSKReadCap: "readkey", SSKVerifyCap: "storage index",
                MDMFWriteCap: "writekey", MDMFReadCap: "readkey", MDMFVerifyCap: "storage index"}


def _pattern(cls: type, extensions: bool) -> re.Pattern[str]:
    tail = r"(?::|\n?\Z)" if extensions else r"\n?\Z"
    return re.compile(rf"\A{re.escape(cls.PREFIX)}({_B128}):({_B256}){tail}")  # type: ignore[attr-defined]


_PATTERNS = {cls: _pattern(cls, cls.FORMAT is MutableFormat.MDMF) for cls in _FIRST_FIELD}


def _why(cls: type, text: str) -> str:
    prefix: str = cls.PREFIX  # type: ignore[attr-defined]
    parts = text[len(prefix):].rstrip("\n").split(":")
    mdmf = cls.FORMAT is MutableFormat.MDMF  # type: ignore[attr-defined]
    if len(parts) < 2 or (len(parts) > 2 and not mdmf):
        return f"expected 2 fields after {prefix}, found {len(parts)}"
    first, fingerprint = parts[:2]
    if not re.fullmatch(_B128, first):
        return (f"{_FIRST_FIELD[cls]} must be 26 base32 characters "
                "(lower case, last one of aeimquy4)")
    if not re.fullmatch(_B256, fingerprint):
        return "fingerprint must be 52 base32 characters (lower case, last one a or q)"
    return "unexpected characters"


def parse_mutable(cls: type, text: str) -> MutableCap:
    """Parse ``text`` as a cap of class ``cls`` (one of the six mutable cap classes).

    :raises MalformedCap: naming the field that is wrong.
    """
    match = _PATTERNS[cls].match(text)
    if not match:
        raise MalformedCap(cls.PREFIX[:-1], _why(cls, text), text)  # type: ignore[attr-defined]
    first, fingerprint = match.groups()
    return cls(base32.a2b(first), base32.a2b(fingerprint))  # type: ignore[no-any-return]


#: Each mutable prefix and its class.
MUTABLE_CLASSES: dict[str, type] = {cls.PREFIX: cls for cls in _FIRST_FIELD}  # type: ignore[attr-defined]

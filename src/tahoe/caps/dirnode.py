"""Directory caps: a file cap whose ``URI:<KIND>:`` prefix is swapped for a ``URI:DIR2…:`` one.

Follows ``reference/mutable-dirnodes.md`` §3.2 (see ``docs/formats/dirnodes.md``).
Nine kinds: DIR2 / DIR2-RO / DIR2-Verifier over SDMF caps, DIR2-MDMF /
-RO / -Verifier over MDMF caps, DIR2-CHK / DIR2-CHK-Verifier over CHK caps,
and DIR2-LIT over a LIT cap (no verify cap, no storage index). Everything
after the prefix is the inner file cap's text, so parsing swaps the prefix
back and uses the file cap's parser, quirks included.
"""
from __future__ import annotations

from collections.abc import Callable

from attrs import field, frozen

from .errors import MalformedCap
from .immutable import (CHK_PREFIX, CHK_VERIFIER_PREFIX, LIT_PREFIX, CHKReadCap, CHKVerifyCap,
                        LiteralCap, parse_chk, parse_chk_verifier, parse_lit)
from .mutable import (MDMF_PREFIX, MDMF_RO_PREFIX, MDMF_VERIFIER_PREFIX, SSK_PREFIX,
                      SSK_RO_PREFIX, SSK_VERIFIER_PREFIX, MDMFReadCap, MDMFVerifyCap,
                      MDMFWriteCap, MutableCap, MutableFormat, SSKReadCap, SSKVerifyCap,
                      SSKWriteCap, parse_mutable)

FileCap = MutableCap | CHKReadCap | CHKVerifyCap | LiteralCap

#: Inner file cap class -> (file cap prefix, directory cap prefix).
_PREFIXES: dict[type, tuple[str, str]] = {
    SSKWriteCap: (SSK_PREFIX, "URI:DIR2:"),
    SSKReadCap: (SSK_RO_PREFIX, "URI:DIR2-RO:"),
    SSKVerifyCap: (SSK_VERIFIER_PREFIX, "URI:DIR2-Verifier:"),
    MDMFWriteCap: (MDMF_PREFIX, "URI:DIR2-MDMF:"),
    MDMFReadCap: (MDMF_RO_PREFIX, "URI:DIR2-MDMF-RO:"),
    MDMFVerifyCap: (MDMF_VERIFIER_PREFIX, "URI:DIR2-MDMF-Verifier:"),
    CHKReadCap: (CHK_PREFIX, "URI:DIR2-CHK:"),
    CHKVerifyCap: (CHK_VERIFIER_PREFIX, "URI:DIR2-CHK-Verifier:"),
    LiteralCap: (LIT_PREFIX, "URI:DIR2-LIT:"),
}
#: Directory cap prefix -> (file cap prefix, parser of the file cap).
_FILE_PARSERS: dict[str, tuple[str, Callable[[str], FileCap]]] = {
    "URI:DIR2:": (SSK_PREFIX, lambda t: parse_mutable(SSKWriteCap, t)),
    "URI:DIR2-RO:": (SSK_RO_PREFIX, lambda t: parse_mutable(SSKReadCap, t)),
    "URI:DIR2-Verifier:": (SSK_VERIFIER_PREFIX, lambda t: parse_mutable(SSKVerifyCap, t)),
    "URI:DIR2-MDMF:": (MDMF_PREFIX, lambda t: parse_mutable(MDMFWriteCap, t)),
    "URI:DIR2-MDMF-RO:": (MDMF_RO_PREFIX, lambda t: parse_mutable(MDMFReadCap, t)),
    "URI:DIR2-MDMF-Verifier:": (MDMF_VERIFIER_PREFIX, lambda t: parse_mutable(MDMFVerifyCap, t)),
    "URI:DIR2-CHK:": (CHK_PREFIX, parse_chk),
    "URI:DIR2-CHK-Verifier:": (CHK_VERIFIER_PREFIX, parse_chk_verifier),
    "URI:DIR2-LIT:": (LIT_PREFIX, parse_lit),
}
DIRECTORY_PREFIXES = tuple(_FILE_PARSERS)
_IMMUTABLE = (CHKReadCap, CHKVerifyCap, LiteralCap)
_VERIFIERS = (SSKVerifyCap, MDMFVerifyCap, CHKVerifyCap)


def _inner_kind(instance: object, attribute: object, value: object) -> None:
    if type(value) not in _PREFIXES:
        raise TypeError(f"a directory cap cannot wrap a {type(value).__name__}")


@frozen
class DirectoryCap:
    """A directory cap of any of the nine kinds, holding the file cap it wraps.

    :ivar file_cap: the cap of the file holding the directory's contents.
    """

    file_cap: FileCap = field(validator=_inner_kind)

    @property
    def prefix(self) -> str:
        """The directory prefix, e.g. ``"URI:DIR2-RO:"``."""
        return _PREFIXES[type(self.file_cap)][1]

    @property
    def kind(self) -> str:
        """The kind, e.g. ``"DIR2-MDMF-RO"``."""
        return self.prefix[4:-1]

    def to_string(self) -> str:
        """The cap's text form."""
        file_prefix, dir_prefix = _PREFIXES[type(self.file_cap)]
        return dir_prefix + self.file_cap.to_string()[len(file_prefix):]

    @property
    def storage_index(self) -> bytes | None:
        """The inner file's storage index; None for DIR2-LIT."""
        if isinstance(self.file_cap, LiteralCap):
            return None
        return self.file_cap.storage_index

    @property
    def is_mutable(self) -> bool:
        """True for DIR2 and DIR2-MDMF read and write caps (verify caps report False)."""
        return not isinstance(self.file_cap, _IMMUTABLE + _VERIFIERS)

    @property
    def is_readonly(self) -> bool:
        """False only for the DIR2 and DIR2-MDMF write caps."""
        return not isinstance(self.file_cap, (SSKWriteCap, MDMFWriteCap))

    @property
    def is_verifier(self) -> bool:
        """True for the three directory verify caps."""
        return isinstance(self.file_cap, _VERIFIERS)

    @property
    def format(self) -> MutableFormat | None:
        """SDMF or MDMF for mutable directories; None for immutable ones."""
        if isinstance(self.file_cap, _IMMUTABLE):
            return None
        return self.file_cap.format  # type: ignore[union-attr]

    def readonly(self) -> "DirectoryCap":
        """The read-only cap of the same directory (itself if already read-only)."""
        inner = self.file_cap
        if isinstance(inner, _IMMUTABLE):
            return self
        return DirectoryCap(inner.readonly())  # type: ignore[union-attr]

    def verify_cap(self) -> "DirectoryCap | None":
        """The verify cap of the same directory; None for DIR2-LIT."""
        inner = self.file_cap.verify_cap()
        return None if inner is None else DirectoryCap(inner)


def parse_directory(text: str) -> DirectoryCap:
    """Parse any ``URI:DIR2…:`` cap.

    :raises MalformedCap: naming the kind and the inner field that is wrong.
    :raises ValueError: if ``text`` has no directory prefix (a programming error).
    """
    for dir_prefix in sorted(_FILE_PARSERS, key=len, reverse=True):
        if text.startswith(dir_prefix):
            break
    else:
        raise ValueError(f"not a directory cap: {text[:40]!r}")
    file_prefix, parser = _FILE_PARSERS[dir_prefix]
    try:
        inner = parser(file_prefix + text[len(dir_prefix):])
    except MalformedCap as error:
        raise MalformedCap(dir_prefix[:-1], error.problem, text) from None
    return DirectoryCap(inner)

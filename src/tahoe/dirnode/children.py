"""What a directory knows about a child: its caps, its kind, and the rules for unknown caps.

``reference/mutable-dirnodes.md`` §3.3 and §9. A child is built from a
(write cap, read cap) pair as Tahoe 1.20's node maker does:

* the stronger cap (write cap if given, else read cap) decides; a known
  file or directory cap gives a known child whose caps are re-derived from
  it (canonical text; the other cap given is ignored);
* anything else (an unknown kind, a verify cap, a malformed cap) gives an
  *unknown* child, kept verbatim under the rules of §9: a lone unknown
  write cap needs an ``ro.`` or ``imm.`` prefix (it is then taken as the
  read cap), the read cap gets ``ro.`` (mutable directory) or ``imm.``
  (immutable directory) added in memory, and a cap that breaks its prefix's
  or the context's constraint makes the child unusable (``error`` is set).

See ``docs/formats/dirnodes.md``.
"""
from __future__ import annotations

import enum

from attrs import field, frozen

from ..caps.dirnode import DirectoryCap
from ..caps.errors import MalformedCap
from ..caps.immutable import CHKReadCap, LiteralCap
from ..caps.mutable import MDMFReadCap, MDMFWriteCap, SSKReadCap, SSKWriteCap
from ..caps.parse import (ALLEGED_IMMUTABLE_PREFIX, ALLEGED_READONLY_PREFIX, Cap,
                          constraint_problem, known_prefix, parse_cap, split_alleged_prefix)
from .errors import (BadChildCap, ChildCapError, MustBeDeepImmutableError, MustBeReadonlyError,
                     MustNotBeUnknownRWError)

_IMM = ALLEGED_IMMUTABLE_PREFIX.encode("ascii")
_RO = ALLEGED_READONLY_PREFIX.encode("ascii")


class ChildKind(enum.Enum):
    """What a child is, as far as its cap tells."""

    FILE = "file"
    DIRECTORY = "directory"
    UNKNOWN = "unknown"


@frozen
class ChildNode:
    """A directory's child, described by its caps.

    :ivar write_uri: what is stored encrypted in the rw slot (None: nothing).
    :ivar read_uri: the read-only cap (for unknown caps with its ``ro.``/``imm.``).
    :ivar cap: the parsed cap of a known child, None for unknown ones.
    :ivar mutable: whether a known child is mutable; None when unknown.
    :ivar error: why an unknown child is unusable, or None.
    """

    kind: ChildKind
    write_uri: bytes | None
    read_uri: bytes | None
    cap: Cap | None = None
    mutable: bool | None = None
    error: ChildCapError | None = field(default=None, eq=False)

    @property
    def is_unknown(self) -> bool:
        """True for caps of kinds we cannot interpret (and for unusable ones)."""
        return self.kind is ChildKind.UNKNOWN

    @property
    def is_directory(self) -> bool:
        """True for a known directory."""
        return self.kind is ChildKind.DIRECTORY

    @property
    def is_file(self) -> bool:
        """True for a known file (immutable or mutable)."""
        return self.kind is ChildKind.FILE

    @property
    def is_readonly(self) -> bool:
        """A known child without a write cap (undefined for unknown children, as in Tahoe)."""
        if self.is_unknown:
            raise TypeError("an unknown child may be read-only or not")
        return self.write_uri is None

    def is_allowed_in_immutable_directory(self) -> bool:
        """Known immutable children, and unknown ones with only a read cap and no error."""
        if self.is_unknown:
            return self.error is None and self.write_uri is None
        return not self.mutable

    def raise_error(self) -> None:
        """Raise the error recorded for an unusable child, if any.

        :raises ChildCapError: (a subclass) when the child's caps are unusable.
        """
        if self.error is not None:
            raise self.error


def _as_bytes(cap: str | bytes | None) -> bytes | None:
    if cap is None:
        return None
    if isinstance(cap, str):
        return cap.encode("utf-8")
    return cap


def _classify(cap: bytes, deep_immutable: bool, name: str | None
              ) -> tuple[Cap | None, ChildCapError | None]:
    """Tahoe's ``uri.from_string``: a known cap, or (None, error or None) for unknown."""
    text = cap.decode("latin-1")
    alleged, body = split_alleged_prefix(text)
    prefix = known_prefix(body)
    if prefix is None:
        return None, None
    problem = constraint_problem(body, alleged, deep_immutable)
    if problem is not None:
        immutable = deep_immutable or alleged == ALLEGED_IMMUTABLE_PREFIX
        error_class = MustBeDeepImmutableError if immutable else MustBeReadonlyError
        return None, error_class(f"{prefix[:-1]} {problem}", name)
    if not cap.isascii():
        return None, BadChildCap(f"{prefix[:-1]} cap is not ASCII", name)
    try:
        return parse_cap(body), None
    except MalformedCap as error:
        return None, BadChildCap(str(error), name)


def _known(cap: Cap) -> ChildNode | None:
    """The child of a single known cap, or None for kinds that are not nodes (verify caps)."""
    if isinstance(cap, (CHKReadCap, LiteralCap)):
        return ChildNode(ChildKind.FILE, None, cap.to_string().encode("ascii"), cap, False)
    if isinstance(cap, (SSKWriteCap, MDMFWriteCap)):
        return ChildNode(ChildKind.FILE, cap.to_string().encode("ascii"),
                         cap.readonly().to_string().encode("ascii"), cap, True)
    if isinstance(cap, (SSKReadCap, MDMFReadCap)):
        return ChildNode(ChildKind.FILE, None, cap.to_string().encode("ascii"), cap, True)
    if isinstance(cap, DirectoryCap) and not cap.is_verifier:
        write = None if cap.is_readonly else cap.to_string().encode("ascii")
        return ChildNode(ChildKind.DIRECTORY, write, cap.readonly().to_string().encode("ascii"),
                         cap, cap.is_mutable)
    return None


def _unusable(error: ChildCapError) -> ChildNode:
    return ChildNode(ChildKind.UNKNOWN, None, None, error=error)


def _unknown(rw: bytes | None, ro: bytes | None, deep_immutable: bool,
             name: str | None) -> ChildNode:
    """Tahoe's ``UnknownNode``: keep unknown caps, enforcing the prefix rules of §9."""
    if rw:
        if deep_immutable:
            if not rw.startswith(_IMM) or ro:
                if not ro:
                    return _unusable(MustNotBeUnknownRWError(
                        "cannot attach an unknown write cap as an immutable child", name))
                return _unusable(MustBeDeepImmutableError(
                    "cannot attach an unknown write cap as an immutable child", name))
        if not ro:
            if not rw.startswith((_RO, _IMM)):
                return _unusable(MustNotBeUnknownRWError(
                    "cannot attach an unknown write cap without a read cap or ro./imm. prefix",
                    name))
            rw, ro = None, rw
        elif ro.startswith(_IMM):
            return _unusable(MustBeDeepImmutableError(
                "an entry with a write cap cannot have an imm. read cap", name))
    if ro:
        cap, error = _classify(ro, deep_immutable, name)
        if cap is None and error is not None:
            return _unusable(error)
    if deep_immutable:
        read = None
        if ro:
            if ro.startswith(_IMM):
                read = ro
            elif ro.startswith(_RO):
                read = _IMM + ro[len(_RO):]
            else:
                read = _IMM + ro
        return ChildNode(ChildKind.UNKNOWN, None, read)
    read = None
    if ro:
        read = ro if ro.startswith((_RO, _IMM)) else _RO + ro
    return ChildNode(ChildKind.UNKNOWN, rw, read)


def child_from_caps(write_uri: str | bytes | None, read_uri: str | bytes | None = None, *,
                    deep_immutable: bool = False, name: str | None = None) -> ChildNode:
    """Build a child from the caps given to ``set_uri`` or read from a directory entry.

    :param deep_immutable: the child is for (or read from) an immutable directory.
    :param name: the child's name, for error messages only.
    :returns: a child; check :meth:`ChildNode.raise_error` before storing it.
    """
    rw = _as_bytes(write_uri) or None
    ro = _as_bytes(read_uri) or None
    strongest = rw or ro
    if strongest is None:
        return ChildNode(ChildKind.UNKNOWN, None, None)
    cap, _ = _classify(strongest, deep_immutable, name)
    if cap is not None:
        known = _known(cap)
        if known is not None:
            return known
    return _unknown(rw, ro, deep_immutable, name)


def readonly_child(child: ChildNode, name: str | None = None) -> ChildNode:
    """The child without its write cap (metadata ``no-write``): built from its read cap alone."""
    if not child.is_unknown and child.is_readonly:
        return child
    return child_from_caps(None, child.read_uri, name=name)

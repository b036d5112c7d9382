"""Errors of the directory format and of directory operations."""
from __future__ import annotations


class DirnodeError(ValueError):
    """Root of every directory error."""


class CorruptDirectory(DirnodeError):
    """A directory's plaintext cannot be unpacked (netstrings, UTF-8, JSON, rwcapdata)."""


class NoSuchChildError(DirnodeError):
    """The directory has no child of that name."""


class ExistingChildError(DirnodeError):
    """A child of that name exists and may not be replaced."""


class ChildOfWrongTypeError(DirnodeError):
    """The child is a file where a directory was required, or the reverse."""


class NotWriteableError(DirnodeError):
    """The operation needs the directory's write cap (its writekey)."""


class NotMutableError(DirnodeError):
    """Immutable directories cannot be changed."""


class ChildCapError(DirnodeError):
    """Root of the errors about a child's caps (Tahoe's CapConstraintError family).

    :ivar name: the child's name, when known.
    """

    def __init__(self, message: str, name: str | None = None) -> None:
        super().__init__(message if name is None else f"{message} (child {name!r})")
        self.name = name


class BadChildCap(ChildCapError):
    """A child cap of a known kind is malformed."""


class MustBeDeepImmutableError(ChildCapError):
    """A mutable (or unknown writeable) child was given for an immutable directory."""


class MustBeReadonlyError(ChildCapError):
    """A write cap was given where only a read-only cap is allowed (``ro.`` prefix)."""


class MustNotBeUnknownRWError(ChildCapError):
    """An unknown cap was given only as a write cap, with no read cap and no ro./imm. prefix."""


class BadMetadata(DirnodeError):
    """Metadata (or a name) given for a child cannot be stored: not a JSON object, or not UTF-8."""

"""Caps of kinds this node does not understand, kept verbatim."""
from __future__ import annotations

from attrs import field, frozen
from attrs.validators import instance_of


@frozen
class UnknownCap:
    """A cap string we cannot interpret; directories carry it unchanged.

    :ivar text: the original string, exactly as received.
    """

    text: str = field(validator=instance_of(str))

    def to_string(self) -> str:
        """The original text, unchanged."""
        return self.text

    def verify_cap(self) -> None:
        """Nothing is known about what an unknown cap refers to."""
        return None

    @property
    def is_mutable(self) -> bool | None:
        """Unknown: the cap's kind is not understood."""
        return None

"""Turn any cap string into a cap value, dispatching on its prefix.

``parse_cap`` is strict: a malformed cap of a known kind raises
:class:`MalformedCap`. ``parse_cap_lenient`` behaves like Tahoe 1.20's
``uri.from_string``: anything that does not parse becomes an
:class:`UnknownCap` that keeps its text.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Union

from .errors import MalformedCap, NotACap
from .immutable import (CHK_PREFIX, CHK_VERIFIER_PREFIX, LIT_PREFIX, CHKReadCap,
                        CHKVerifyCap, LiteralCap, parse_chk, parse_chk_verifier, parse_lit)
from .unknown import UnknownCap

Cap = Union[CHKReadCap, CHKVerifyCap, LiteralCap, UnknownCap]

#: Prefixes that say a cap is expected to be immutable or read-only; stripped.
ALLEGED_PREFIXES = ("imm.", "ro.")

# Longest prefix first, so that URI:CHK-Verifier: is not taken for URI:CHK:.
_PARSERS: list[tuple[str, Callable[[str], Any]]] = sorted(
    [(CHK_PREFIX, parse_chk), (CHK_VERIFIER_PREFIX, parse_chk_verifier), (LIT_PREFIX, parse_lit)],
    key=lambda item: -len(item[0]),
)


def _as_text(cap: str | bytes) -> str:
    if isinstance(cap, bytes):
        try:
            return cap.decode("ascii")
        except UnicodeDecodeError:
            raise NotACap("a cap must be ASCII text") from None
    if not isinstance(cap, str):
        raise NotACap(f"a cap must be text, not {type(cap).__name__}")
    return cap


def parse_cap(cap: str | bytes) -> Cap:
    """Parse a cap string strictly.

    :returns: a cap value, or :class:`UnknownCap` for a kind we do not know.
    :raises MalformedCap: when a known kind is malformed.
    :raises NotACap: when the value is not ASCII text.
    """
    text = _as_text(cap)
    body = text
    for prefix in ALLEGED_PREFIXES:
        if body.startswith(prefix):
            body = body[len(prefix):]
            break
    for prefix, parser in _PARSERS:
        if body.startswith(prefix):
            return parser(body)  # type: ignore[no-any-return]
    return UnknownCap(text)


def parse_cap_lenient(cap: str | bytes) -> Cap:
    """Parse as Tahoe 1.20 does: whatever fails to parse is kept as an :class:`UnknownCap`.

    :raises NotACap: when the value is not ASCII text.
    """
    try:
        return parse_cap(cap)
    except MalformedCap:
        return UnknownCap(_as_text(cap))

"""Turn any cap string into a cap value, dispatching on its prefix.

``parse_cap`` is strict: a malformed cap of a known kind raises
:class:`MalformedCap`. ``parse_cap_lenient`` behaves like Tahoe 1.20's
``uri.from_string``: anything that does not parse becomes an
:class:`UnknownCap` that keeps its text.

A cap may carry an ``imm.`` ("alleged immutable") or ``ro.`` ("alleged
read-only") prefix (``reference/mutable-dirnodes.md`` §3.3). The prefix is
stripped and the cap must then live up to it: under ``ro.`` a write cap
(``URI:SSK:``, ``URI:MDMF:``, ``URI:DIR2:``, ``URI:DIR2-MDMF:``) is refused,
under ``imm.`` (or in a deep-immutable context such as an immutable
directory) every mutable read or write cap is refused as well. Verify caps
satisfy both claims, as in Tahoe. Caps of unknown kinds are kept whatever
their prefix.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Union

from .dirnode import DIRECTORY_PREFIXES, DirectoryCap, parse_directory
from .errors import MalformedCap, NotACap
from .immutable import (CHK_PREFIX, CHK_VERIFIER_PREFIX, LIT_PREFIX, CHKReadCap,
                        CHKVerifyCap, LiteralCap, parse_chk, parse_chk_verifier, parse_lit)
from .mutable import (MUTABLE_CLASSES, MDMFReadCap, MDMFVerifyCap, MDMFWriteCap, SSKReadCap,
                      SSKVerifyCap, SSKWriteCap, parse_mutable)
from .unknown import UnknownCap

Cap = Union[CHKReadCap, CHKVerifyCap, LiteralCap, SSKWriteCap, SSKReadCap, SSKVerifyCap,
            MDMFWriteCap, MDMFReadCap, MDMFVerifyCap, DirectoryCap, UnknownCap]

ALLEGED_IMMUTABLE_PREFIX = "imm."
ALLEGED_READONLY_PREFIX = "ro."
#: Prefixes that say a cap is expected to be immutable or read-only; stripped.
ALLEGED_PREFIXES = (ALLEGED_IMMUTABLE_PREFIX, ALLEGED_READONLY_PREFIX)


def _mutable_parser(cls: type) -> Callable[[str], Any]:
    return lambda text: parse_mutable(cls, text)


# Longest prefix first, so that URI:CHK-Verifier: is not taken for URI:CHK:.
_PARSERS: list[tuple[str, Callable[[str], Any]]] = sorted(
    [(CHK_PREFIX, parse_chk), (CHK_VERIFIER_PREFIX, parse_chk_verifier), (LIT_PREFIX, parse_lit),
     *((prefix, _mutable_parser(cls)) for prefix, cls in MUTABLE_CLASSES.items()),
     *((prefix, parse_directory) for prefix in DIRECTORY_PREFIXES)],
    key=lambda item: -len(item[0]),
)
_PARSER_BY_PREFIX = dict(_PARSERS)
#: Every cap prefix this module understands.
KNOWN_PREFIXES = tuple(prefix for prefix, _ in _PARSERS)

_WRITE_PREFIXES = ("URI:SSK:", "URI:MDMF:", "URI:DIR2:", "URI:DIR2-MDMF:")
_MUTABLE_READ_PREFIXES = ("URI:SSK-RO:", "URI:MDMF-RO:", "URI:DIR2-RO:", "URI:DIR2-MDMF-RO:")


def _as_text(cap: str | bytes) -> str:
    if isinstance(cap, bytes):
        try:
            return cap.decode("ascii")
        except UnicodeDecodeError:
            raise NotACap("a cap must be ASCII text") from None
    if not isinstance(cap, str):
        raise NotACap(f"a cap must be text, not {type(cap).__name__}")
    return cap


def split_alleged_prefix(text: str) -> tuple[str, str]:
    """Split off a leading ``imm.`` or ``ro.``; returns (prefix or "", rest)."""
    for prefix in ALLEGED_PREFIXES:
        if text.startswith(prefix):
            return prefix, text[len(prefix):]
    return "", text


def known_prefix(body: str) -> str | None:
    """The known cap prefix ``body`` starts with, or None for an unknown kind."""
    for prefix, _ in _PARSERS:
        if body.startswith(prefix):
            return prefix
    return None


def constraint_problem(body: str, alleged: str, deep_immutable: bool = False) -> str | None:
    """Why a cap of this kind may not appear under ``alleged`` (or in an immutable context).

    :param body: the cap text without its ``imm.``/``ro.`` prefix.
    :returns: a description of the broken constraint, or None when it is allowed.
    """
    immutable = deep_immutable or alleged == ALLEGED_IMMUTABLE_PREFIX
    readonly = immutable or alleged == ALLEGED_READONLY_PREFIX
    if readonly and body.startswith(_WRITE_PREFIXES):
        where = "an immutable" if immutable else "a read-only (ro.)"
        return f"a write cap cannot be used in {where} context"
    if immutable and body.startswith(_MUTABLE_READ_PREFIXES):
        return "a read cap of a mutable object cannot be used in an immutable context"
    return None


def parse_cap(cap: str | bytes, *, deep_immutable: bool = False) -> Cap:
    """Parse a cap string strictly.

    :param deep_immutable: parse for an immutable context (an immutable
        directory), where only immutable caps are allowed.
    :returns: a cap value, or :class:`UnknownCap` (with the full original
        text) for a kind we do not know.
    :raises MalformedCap: when a known kind is malformed, or breaks the
        constraint of its ``ro.``/``imm.`` prefix or of the context.
    :raises NotACap: when the value is not ASCII text.
    """
    text = _as_text(cap)
    alleged, body = split_alleged_prefix(text)
    prefix = known_prefix(body)
    if prefix is None:
        return UnknownCap(text)
    problem = constraint_problem(body, alleged, deep_immutable)
    if problem is not None:
        raise MalformedCap(prefix[:-1], problem, text)
    return _PARSER_BY_PREFIX[prefix](body)  # type: ignore[no-any-return]


def parse_cap_lenient(cap: str | bytes, *, deep_immutable: bool = False) -> Cap:
    """Parse as Tahoe 1.20 does: whatever fails to parse is kept as an :class:`UnknownCap`.

    :raises NotACap: when the value is not ASCII text.
    """
    try:
        return parse_cap(cap, deep_immutable=deep_immutable)
    except MalformedCap:
        return UnknownCap(_as_text(cap))

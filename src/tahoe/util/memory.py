"""Giving memory back to the system after large transfers (glibc's allocator).

A node's worker threads (hashing, encoding, the bulk HTTPS connections) each
get a malloc arena of their own by default, up to eight per core, and an
arena keeps the pages of what was freed in it. After a few hundred MB went
through a client, its RSS stayed 40 MiB over what it was fresh, most of it
free memory in those arenas. So:

* :func:`limit_malloc_arenas` caps the arenas at :data:`MALLOC_ARENAS` (what
  ``MALLOC_ARENA_MAX=2`` does), at the start of ``tahoe run`` before any
  thread: two 300 MB uploads went as fast, and left the client 16 MiB smaller;
* :func:`after_large_transfer` (an upload or a read of at least
  :data:`LARGE_TRANSFER` bytes) has the free memory at the top of the heaps
  and arenas handed back (``malloc_trim``) once :data:`TRIM_DELAY` s have
  passed without another one: 13 MiB more.

Elsewhere than on glibc both are no-ops.
"""
from __future__ import annotations

import ctypes
import weakref
from typing import Any

__all__ = ["LARGE_TRANSFER", "MALLOC_ARENAS", "TRIM_DELAY", "after_large_transfer",
           "limit_malloc_arenas", "release_free_memory"]

#: The most malloc arenas a node's threads share.
MALLOC_ARENAS = 2
#: Bytes of one upload or read from which free memory is handed back after it.
LARGE_TRANSFER = 16 * 1024 * 1024
#: Seconds after the last large transfer at which that is done.
TRIM_DELAY = 2.0
#: glibc's ``mallopt`` parameter for the number of arenas.
_M_ARENA_MAX = -8

_libc: Any = None
#: clock -> the trim scheduled on it (one per reactor)
_pending: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def _glibc() -> Any:
    """The C library when it is glibc (it has ``malloc_trim``), else None."""
    global _libc
    if _libc is None:
        _libc = False
        try:  # the process's own symbols, the C library's among them (no search for it)
            library = ctypes.CDLL(None)
            library.malloc_trim  # noqa: B018 (glibc's alone)
            library.mallopt  # noqa: B018
        except (OSError, AttributeError):
            pass
        else:
            _libc = library
    return _libc or None


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Let all threads share at most ``arenas`` malloc arenas (call before threads
    start); whether it was done."""
    libc = _glibc()
    return bool(libc is not None and libc.mallopt(_M_ARENA_MAX, arenas) == 1)


def release_free_memory() -> bool:
    """Hand the free pages of every heap and arena back to the system now; whether
    there was a way to."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def after_large_transfer(clock: Any, size: int) -> None:
    """Note an upload or read of ``size`` bytes that ended: from :data:`LARGE_TRANSFER`
    up, free memory is handed back :data:`TRIM_DELAY` s after the last such one (a trim
    already scheduled on ``clock`` is pushed back, not doubled)."""
    if size < LARGE_TRANSFER:
        return
    pending = _pending.get(clock)
    if pending is not None and pending.active():
        pending.reset(TRIM_DELAY)
        return
    _pending[clock] = clock.callLater(TRIM_DELAY, _trim)


def _trim() -> None:
    release_free_memory()

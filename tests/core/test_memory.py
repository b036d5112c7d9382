"""``util.memory``: free memory handed back after large transfers, malloc arenas capped."""
from __future__ import annotations

import platform

import pytest
from twisted.internet.task import Clock

from tahoe.util import memory

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")


@glibc
def test_on_glibc_both_calls_take_effect() -> None:
    """mallopt accepts the arena cap and malloc_trim runs."""
    assert memory.limit_malloc_arenas() is True
    assert memory.release_free_memory() is True


def test_a_trim_follows_the_last_large_transfer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small transfers schedule nothing; large ones close together give one trim,
    TRIM_DELAY s after the last; a later one schedules another."""
    trims: list[float] = []
    clock = Clock()
    monkeypatch.setattr(memory, "release_free_memory", lambda: trims.append(clock.seconds()))
    memory.after_large_transfer(clock, memory.LARGE_TRANSFER - 1)
    assert clock.getDelayedCalls() == []
    memory.after_large_transfer(clock, memory.LARGE_TRANSFER)
    clock.advance(1.0)
    memory.after_large_transfer(clock, 10 * memory.LARGE_TRANSFER)
    assert len(clock.getDelayedCalls()) == 1
    clock.advance(memory.TRIM_DELAY - 0.01)
    assert trims == []
    clock.advance(0.02)
    assert trims == [pytest.approx(1.0 + memory.TRIM_DELAY, abs=0.02)]
    memory.after_large_transfer(clock, memory.LARGE_TRANSFER)
    clock.advance(memory.TRIM_DELAY)
    assert len(trims) == 2

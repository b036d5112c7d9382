"""System-level faults for the reliability suite: a small filesystem that fills up.

Needs root (``mount``); :func:`require_root` skips a test otherwise.  Every
mount is undone in a ``finally``, by its path only.
"""
from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["fill", "require_root", "tmpfs"]


def require_root(*programs: str) -> None:
    """Skip the calling test unless we are root and ``programs`` are installed."""
    if os.geteuid() != 0:
        pytest.skip("needs root (mount, ip netns)")
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (misc/ci/install-system-packages.sh)")


@contextlib.contextmanager
def tmpfs(path: Path, size: int) -> Iterator[Path]:
    """Mount a tmpfs of ``size`` bytes on ``path`` (created if missing) for the block."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "t13-tmpfs",
                    str(path)], check=True, capture_output=True, timeout=30)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30)


def fill(filler: Path, leave: int = 0, chunk: int = 64 * 1024) -> int:
    """Write ``filler`` until the filesystem has at most ``leave`` bytes free (or is full).

    :returns: the bytes written.
    """
    written = 0
    with open(filler, "ab") as out:
        while True:
            stats = os.statvfs(filler)
            free = stats.f_bavail * stats.f_frsize
            if free <= leave:
                break
            try:
                out.write(b"\0" * min(chunk, max(free - leave, 1)))
                out.flush()
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise
                break
            written += min(chunk, max(free - leave, 1))
    return written

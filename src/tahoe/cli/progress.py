"""A progress bar on stderr for long ``put`` and ``get`` transfers.

Shown only when stderr is a terminal and the transfer is at least
:data:`THRESHOLD` bytes (for a download of unknown length, once that many
bytes have arrived).  A small built-in bar, the same on every installation
(``tqdm``, which magic-wormhole brings along, is not used).  Standard library only.
"""
from __future__ import annotations

import os
import time
from typing import Any, Protocol, TextIO

__all__ = ["THRESHOLD", "Progress", "progress_bar", "format_bytes"]

#: Transfers smaller than this get no bar.
THRESHOLD = 4 * 1024 * 1024
#: Seconds between two redraws of the built-in bar.
REDRAW_INTERVAL = 0.1
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


class Progress(Protocol):
    """What ``put`` and ``get`` tell a bar: bytes done, and the end."""

    def update(self, count: int) -> None:
        """``count`` more bytes have been transferred."""

    def close(self) -> None:
        """The transfer is over (the bar stays on screen, followed by a newline)."""


def format_bytes(count: float) -> str:
    """``count`` bytes in binary units with one decimal: ``5.0 MiB``."""
    for unit in _UNITS:
        if abs(count) < 1024 or unit == _UNITS[-1]:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


class _NoProgress:
    def update(self, count: int) -> None:
        pass

    def close(self) -> None:
        pass


NO_PROGRESS = _NoProgress()


class TextBar:
    """The built-in bar: ``put  42% |#####.....| 84.0/200.0 MiB  95.3 MiB/s  ETA 0:01``.

    :param stream: the terminal to draw on.
    :param total: bytes expected, or None when unknown (no percentage then).
    :param clock: seconds (monotonic); injectable for tests.
    """

    def __init__(self, stream: TextIO, total: int | None, description: str,
                 clock: Any = time.monotonic, width: int | None = None,
                 started: float | None = None) -> None:
        self._stream = stream
        self._total = total
        self._description = description
        self._clock = clock
        self._started = clock() if started is None else started
        self._last_draw = float("-inf")
        self.done = 0
        self._width = width or _terminal_width(stream)
        encoding = (getattr(stream, "encoding", None) or "ascii").lower().replace("-", "")
        self._fill, self._empty = ("█", "░") if encoding == "utf8" else ("#", ".")

    def update(self, count: int) -> None:
        """Count ``count`` more bytes; redraw at most every :data:`REDRAW_INTERVAL` seconds."""
        self.done += count
        now = self._clock()
        if now - self._last_draw >= REDRAW_INTERVAL:
            self._last_draw = now
            self._draw(now)

    def close(self) -> None:
        """Draw the final state and end the line."""
        self._draw(self._clock())
        self._stream.write("\n")
        self._stream.flush()

    def render(self, now: float) -> str:
        """The bar's text at time ``now`` (without the carriage return)."""
        elapsed = max(now - self._started, 1e-9)
        rate = self.done / elapsed
        amount = (f"{format_bytes(self.done)}" if self._total is None
                  else f"{format_bytes(self.done)}/{format_bytes(self._total)}")
        tail = f" {amount}  {format_bytes(rate)}/s"
        if self._total:
            fraction = min(1.0, self.done / self._total)
            if rate > 0 and self.done < self._total:
                seconds = int((self._total - self.done) / rate)
                tail += f"  ETA {seconds // 60}:{seconds % 60:02d}"
            head = f"{self._description} {fraction * 100:3.0f}% |"
            room = max(10, self._width - len(head) - len(tail) - 2)
            filled = int(room * fraction)
            return f"{head}{self._fill * filled}{self._empty * (room - filled)}|{tail}"
        return f"{self._description}:{tail}"

    def _draw(self, now: float) -> None:
        text = self.render(now)[: self._width - 1]
        self._stream.write("\r" + text.ljust(self._width - 1))
        self._stream.flush()


class _LazyBar:
    """For a transfer of unknown length: shows a bar once :data:`THRESHOLD` bytes are done."""

    def __init__(self, stream: TextIO, description: str) -> None:
        self._stream = stream
        self._description = description
        self._done = 0
        self._bar: Progress | None = None
        self._started = time.monotonic()

    def update(self, count: int) -> None:
        self._done += count
        if self._bar is None and self._done >= THRESHOLD:
            self._bar = _make_bar(self._stream, None, self._description, self._started)
            self._bar.update(self._done)
        elif self._bar is not None:
            self._bar.update(count)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _terminal_width(stream: TextIO) -> int:
    try:
        return max(40, os.get_terminal_size(stream.fileno()).columns)
    except (AttributeError, ValueError, OSError):
        return 80


def _make_bar(stream: TextIO, total: int | None, description: str,
              started: float | None = None) -> Progress:
    return TextBar(stream, total, description, started=started)


def progress_bar(stream: TextIO, total: int | None, description: str) -> Progress:
    """A bar on ``stream`` for a transfer of ``total`` bytes (None: unknown).

    Returns a bar that draws nothing when ``stream`` is not a terminal or
    ``total`` is below :data:`THRESHOLD`. (Callers that want to skip importing
    this module for non-terminals use :func:`tahoe.cli.localio.maybe_progress_bar`.)
    """
    if not _is_terminal(stream) or (total is not None and total < THRESHOLD):
        return NO_PROGRESS
    if total is None:
        return _LazyBar(stream, description)
    return _make_bar(stream, total, description)

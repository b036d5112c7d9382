"""The node's log, written out by a thread of its own.

``tahoe run`` logs to its standard output, which is often a file on the same
disk as the shares. Twisted writes each log line on the thread that logs it,
the reactor's; a ``write`` to a file can wait for the disk (Linux holds back
writers while too much of a device's data is waiting to be written, as during
garbage collection), and every request waits with it: the web gateway logs
each request. :class:`BackgroundWriter` takes the lines instead and a thread
writes them, in order, a batch at a time.

Lines waiting are bounded (:attr:`BackgroundWriter.limit`): past it, the
logging thread waits as it did before. :meth:`BackgroundWriter.close` writes
out what waits; lines logged after it are written at once.
"""
from __future__ import annotations

import queue
import threading
from typing import TextIO

#: What a queue holds to say "no more lines" to the writing thread.
_END = None


class BackgroundWriter:
    """A text stream for a log observer: ``write`` hands the text to a thread that writes
    it to ``stream`` (and flushes) a batch at a time; see the module docstring.

    :param stream: where the lines go.
    :param limit: lines that may wait before ``write`` waits too.
    """

    def __init__(self, stream: TextIO, limit: int = 10000) -> None:
        self.stream = stream
        self.limit = limit
        self._waiting: queue.Queue[str | None] = queue.Queue(maxsize=limit)
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._write_out, name="log writer",
                                        daemon=True)
        self._thread.start()

    def write(self, text: str) -> None:
        """Hand ``text`` over (written at once once closed)."""
        with self._lock:
            if not self._closed:
                self._waiting.put(text)
                return
        self._write(text)

    def flush(self) -> None:
        """Nothing to do: the writing thread flushes after every batch."""

    def close(self, timeout: float = 10.0) -> None:
        """Write out what waits (for up to ``timeout`` seconds), then stop the thread.
        Once only (later calls do nothing)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._waiting.put(_END)
        self._thread.join(timeout)

    def _write_out(self) -> None:
        waiting = self._waiting
        while True:
            batch = [waiting.get()]
            while batch[-1] is not _END:
                try:
                    batch.append(waiting.get_nowait())
                except queue.Empty:
                    break
            ended = batch[-1] is _END
            self._write("".join(text for text in batch if text is not _END))
            if ended:
                return

    def _write(self, text: str) -> None:
        if not text:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass  # a closed or broken output: the log has nowhere to go

"""Follow the gateway's own upload on ``/status`` while ``tahoe put`` waits for its cap.

``tahoe put`` sends the file to the gateway quickly (to a spool on the node's
disk); the slow part comes after: hashing it for the convergent key, then
encoding and pushing shares to the storage servers, and only then does the
gateway answer with the cap. A bar of the bytes sent to the gateway would sit
at 100 % through all of that, so once the body is sent a second bar follows
the upload itself: a thread polls ``GET /status?t=json`` and reads the
progress of the active upload of that size (Tahoe's ``progress-hash``,
``progress-ciphertext`` and ``progress-encode-push``, averaged as ``tahoe
status`` does; Tahoe 1.20's gateway gives them too). If the gateway lists no
such upload, or cannot be asked, the bar just stays where it is.

Imported only when a bar is shown. Standard library only.
"""
from __future__ import annotations

import json
import threading
from typing import Any, TextIO

from .errors import CLIError
from .gateway import Gateway
from .progress import Progress, progress_bar

__all__ = ["UploadWatch", "upload_fraction"]

#: Seconds between two polls of ``/status``.
POLL_INTERVAL = 0.25
_PHASES = ("progress-hash", "progress-ciphertext", "progress-encode-push")


def upload_fraction(status: Any, size: int) -> float | None:
    """How far the newest active upload of ``size`` bytes got (0.0-1.0), from a
    ``/status?t=json`` document; None when it lists none."""
    for op in status.get("active", []) if isinstance(status, dict) else []:
        if isinstance(op, dict) and op.get("type") == "upload" and op.get("total-size") == size:
            try:
                return min(1.0, max(0.0, sum(float(op[key]) for key in _PHASES) / 3))
            except (KeyError, TypeError, ValueError):
                return None
    return None


class UploadWatch:
    """A thread that moves ``bar`` as the gateway's upload of ``size`` bytes progresses.

    :param gateway: the gateway the file was sent to.
    :param size: the file's size in bytes (to recognize its upload).
    :param bar: a bar of ``size`` bytes.
    """

    def __init__(self, gateway: Gateway, size: int, bar: Progress,
                 interval: float = POLL_INTERVAL) -> None:
        self._gateway = gateway
        self._size = size
        self._bar = bar
        self._interval = interval
        self._shown = 0
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="upload-watch", daemon=True)

    def start(self) -> None:
        """Begin polling."""
        self._thread.start()

    def stop(self, finished: bool) -> None:
        """Stop polling; fill the bar when the upload ``finished``, then close it."""
        self._stopped.set()
        self._thread.join(timeout=5 * self._interval + 1)
        if finished:
            self._bar.update(self._size - self._shown)
            self._shown = self._size
        self._bar.close()

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            try:
                with self._gateway.request("GET", "status?t=json") as response:
                    if response.status != 200:
                        return
                    status = json.loads(response.read())
            except (CLIError, OSError, ValueError):
                return
            fraction = upload_fraction(status, self._size)
            if fraction is None or self._stopped.is_set():
                continue
            done = int(fraction * self._size)
            if done > self._shown:
                self._bar.update(done - self._shown)
                self._shown = done


def watch_upload(gateway: Gateway, size: int, stream: TextIO) -> UploadWatch:
    """Start an :class:`UploadWatch` with a bar named ``upload`` on ``stream``."""
    watch = UploadWatch(gateway, size, progress_bar(stream, size, "upload"))
    watch.start()
    return watch

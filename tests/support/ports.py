"""Free TCP ports on 127.0.0.1 for node configurations in tests.

Tahoe rejects ``tub.port = 0``, so every port a test writes into a
``tahoe.cfg`` must be chosen in advance.  A port is *reserved* by binding a
socket to ``127.0.0.1:port`` (which fails if anything, on any interface,
listens there) and *released* by closing it before the node binds it.

Ports are taken from below the kernel's ephemeral range (Linux
``ip_local_port_range``, usually 32768-60999) so that the kernel cannot hand
the same number to someone else's ``bind(0)`` or outgoing connection between
our release and the node's bind: every Tahoe node binds its log Tub with
``bind(0)``, and a client connects out to every server.  A port is never handed
out twice by one allocator, so two nodes of one session never collide. Under
pytest-xdist each worker process has an allocator of its own, so each takes
its ports from its own slice of the range (``PYTEST_XDIST_WORKER`` ``gwN`` of
``PYTEST_XDIST_WORKER_COUNT``): two workers picking the same free number, each
to bind it a moment later, made one node fail with "address already in use".
"""
from __future__ import annotations

import errno
import os
import random
import socket
import threading
from collections.abc import Mapping
from pathlib import Path

__all__ = ["PortAllocator", "free_port"]

# Where ports are looked for when the ephemeral range cannot be read or leaves
# too little room below it.
_FALLBACK_RANGE = (20000, 32767)
_LOWEST_PORT = 10000


def _ephemeral_range() -> tuple[int, int] | None:
    """The kernel's ephemeral port range ``(low, high)``, or None if unknown."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return None


def _candidate_range() -> tuple[int, int]:
    """Inclusive range of port numbers outside the ephemeral range."""
    ephemeral = _ephemeral_range()
    if ephemeral is None:
        return _FALLBACK_RANGE
    low, high = ephemeral
    if low - _LOWEST_PORT >= 2000:
        return _LOWEST_PORT, low - 1
    if 65535 - high >= 2000:
        return high + 1, 65535
    return _FALLBACK_RANGE


def _worker_slice(low: int, high: int, env: Mapping[str, str] = os.environ) -> tuple[int, int]:
    """The part of ``low..high`` this pytest-xdist worker takes its ports from (all of it
    outside xdist)."""
    worker, count = env.get("PYTEST_XDIST_WORKER", ""), env.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not (worker.startswith("gw") and worker[2:].isdigit() and count.isdigit()):
        return low, high
    index, workers = int(worker[2:]), int(count)
    if not 0 <= index < workers:
        return low, high
    size = (high - low + 1) // workers
    return low + index * size, low + (index + 1) * size - 1


def _can_bind(port: int) -> bool:
    """Whether ``127.0.0.1:port`` can be bound right now (reserve, then release)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as e:
            if e.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


class PortAllocator:
    """Hands out free 127.0.0.1 TCP ports, each at most once.

    :param seed: seeds the choice of candidates; the default (the process id)
        makes concurrent pytest processes start from different numbers.
    """

    def __init__(self, seed: int | None = None) -> None:
        self._random = random.Random(os.getpid() if seed is None else seed)
        self._low, self._high = _worker_slice(*_candidate_range())
        self._handed_out: set[int] = set()
        self._lock = threading.Lock()  # free_port() may be called from helper threads

    def free_port(self) -> int:
        """A TCP port that was free on 127.0.0.1 a moment ago and was never returned before.

        :raises RuntimeError: if no free port is found after many tries.
        """
        with self._lock:
            for _ in range(1000):
                port = self._random.randint(self._low, self._high)
                if port in self._handed_out:
                    continue
                if _can_bind(port):
                    self._handed_out.add(port)
                    return port
        raise RuntimeError(f"no free TCP port found in {self._low}-{self._high}")


# One allocator per test process: the port space is per machine, so the set of
# ports already handed out is naturally process-wide.
_ALLOCATOR = PortAllocator()


def free_port() -> int:
    """A free TCP port on 127.0.0.1, never the same twice in one test process.

    :raises RuntimeError: if no free port can be found.
    """
    return _ALLOCATOR.free_port()

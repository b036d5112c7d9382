"""TCP settings shared by every protocol of the node (Foolscap and HTTPS, both sides)."""
from __future__ import annotations

from typing import Any


def set_no_delay(transport: Any) -> None:
    """Turn Nagle's algorithm off on the TCP connection under ``transport``.

    ``transport`` may be the TCP transport itself or a wrapper around it (TLS):
    the first one in the chain that can, does. Without it a small request
    answered by a small reply waits for the peer's delayed ACK (40 ms on Linux).
    """
    while transport is not None:
        setter = getattr(transport, "setTcpNoDelay", None)
        if setter is not None:
            try:
                setter(True)
            except OSError:
                pass
            return
        transport = getattr(transport, "transport", None)

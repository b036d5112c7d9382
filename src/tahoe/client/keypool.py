"""RSA-2048 keys for new mutable files and directories, made ahead of need.

A key takes OpenSSL 40-50 ms to generate; the pool keeps a few ready, made
in a worker thread, so that a ``mkdir`` does not wait for one. Its own
module: the gateway starts it (``ClientServices.expect_use``) without loading
the mutable-file code.
"""
from __future__ import annotations

from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread
from twisted.python import log
from twisted.python.failure import Failure

from ..crypto.rsa import SigningKey, generate_signing_key


class KeyPool:
    """A few RSA-2048 keys generated ahead of need, in a worker thread."""

    def __init__(self, size: int = 2) -> None:
        self._size = size
        self._ready: list[SigningKey] = []
        self._filling = 0
        self._waiters: list[Deferred] = []

    def start(self) -> None:
        """Begin filling the pool."""
        self._refill()

    def _refill(self) -> None:
        while len(self._ready) + self._filling < self._size + len(self._waiters):
            self._filling += 1
            d = deferToThread(generate_signing_key)
            d.addCallbacks(self._made, self._failed)

    def _made(self, key: SigningKey) -> None:
        self._filling -= 1
        if self._waiters:
            self._waiters.pop(0).callback(key)
        else:
            self._ready.append(key)

    def _failed(self, failure: Failure) -> None:
        self._filling -= 1
        log.err(failure, "RSA key generation failed")
        if self._waiters:
            self._waiters.pop(0).errback(failure)

    async def get(self) -> SigningKey:
        """A fresh key (at once when one is ready)."""
        if self._ready:
            key = self._ready.pop(0)
            self._refill()
            return key
        d: Deferred = Deferred()
        self._waiters.append(d)
        self._refill()
        key: SigningKey = await d
        self._refill()
        return key

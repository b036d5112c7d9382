"""The pipelined immutable upload: one round trip plus transfer time over HTTPS.

1. The convergent key needs a pass over the plaintext; encoding is a second
   pass. For sources above :data:`INLINE_LIMIT` both run in a worker thread
   (zfec, AES and SHA-256 release the GIL), overlapping with sending.
2. The shares are pushed by :class:`~tahoe.client.share_push.SharePush`:
   allocations to every server at once, the share data pipelined behind
   them (one round trip over HTTPS), refused shares moved to spare servers.
3. **Busy servers.** A server holding a share of this storage index in
   ``incoming/`` (another upload of the same file, through another gateway)
   answers neither "already have" nor "allocated" for it, as Tahoe's servers
   do. When the shares placed fall short of happiness and some server refused
   shares that way, the upload waits (backing off, at most
   :data:`BUSY_WAIT_LIMIT` in all) and asks again, without pipelining data:
   once the other upload ended its shares are "already have"; if it was
   abandoned, its incoming shares are gone and the allocation succeeds. Only
   when happiness truly cannot be reached does it fail, naming the busy
   servers.
4. **Identical uploads through one gateway** are coalesced: once an upload's
   convergent key is known, if an upload of the same key and parameters is
   in flight here, it waits for that one and answers with its cap (holding
   no bytes of its own meanwhile). If that upload fails for lack of
   happiness, so does the waiting one; if it fails otherwise, one of the
   waiting uploads goes ahead itself.

Facts: ``reference/storage-protocol.md`` §8, ``reference/immutable.md`` §7.5, §11.
"""
from __future__ import annotations

import time
from typing import Any

from attrs import evolve, frozen
from twisted.internet.defer import Deferred
from twisted.internet.task import deferLater
from twisted.internet.threads import deferToThread
from twisted.python import log
from twisted.python.failure import Failure

from ..caps.immutable import CHKReadCap, CHKVerifyCap, LiteralCap
from ..crypto.lease_secrets import ClientLeaseSecrets
from ..immutable.encoder import ImmutableEncoder
from ..immutable.keys import ConvergentKeyHasher
from ..immutable.params import LIT_SIZE_THRESHOLD, EncodingParameters, SegmentGeometry
from ..immutable.ueb import URIExtension
from ..util.memory import after_large_transfer
from .broker import StorageBroker
from .errors import UploadUnhappinessError
from .share_push import INLINE_LIMIT, SharePush, UploadProgress, no_progress
from .uploadable import Uploadable

__all__ = ["BUSY_WAIT_LIMIT", "HASH_CHUNK", "INLINE_LIMIT", "CiphertextUploadResult",
           "UploadProgress", "UploadResult", "Uploader"]

#: Chunk size of the convergent-key pass.
HASH_CHUNK = 4 * 1024 * 1024
#: How long, in all, an upload waits for servers busy with another upload of the same file.
BUSY_WAIT_LIMIT = 120.0
#: The waits between asking busy servers again: doubling from the first to the last.
BUSY_FIRST_DELAY = 0.2
BUSY_MAX_DELAY = 2.0

@frozen
class UploadResult:
    """What an upload did: the cap, where the shares are, and how long it took."""

    cap: CHKReadCap | LiteralCap
    storage_index: bytes | None
    sharemap: dict[int, frozenset[str]]
    happiness: int
    timings: dict[str, float]


@frozen
class CiphertextUploadResult:
    """What an upload from ciphertext did: the verify cap, the UEB, where the shares are."""

    verify_cap: CHKVerifyCap
    ueb: URIExtension
    sharemap: dict[int, frozenset[str]]
    happiness: int
    pushed_shares: int
    preexisting_shares: int
    timings: dict[str, float]


class Uploader:
    """Uploads immutable files to the servers the broker knows.

    :param broker: the connected storage servers.
    :param lease_secrets: the client's lease secrets (``private/secret``).
    :param convergence: the convergence secret (``private/convergence``).
    :param params: k, happy, N and the maximum segment size.
    :param clock: the reactor (for the allocation timeout).
    """

    def __init__(self, broker: StorageBroker, lease_secrets: ClientLeaseSecrets,
                 convergence: bytes, params: EncodingParameters, clock: Any) -> None:
        self._broker = broker
        self._secrets = lease_secrets
        self._convergence = convergence
        self._params = params
        self._clock = clock
        #: (key, k, happy, N, segment size) -> what waits for the upload of that file here.
        self._in_flight: dict[tuple[bytes, int, int, int, int], list[Deferred]] = {}
        #: Times an upload waited for another one (coalesced here, or busy servers).
        self.coalesced = 0
        self.busy_retries = 0

    async def upload(self, source: Uploadable, params: EncodingParameters | None = None,
                     key: bytes | None = None,
                     progress: UploadProgress = no_progress) -> UploadResult:
        """Upload ``source`` and return its cap.

        :param key: the AES key to use instead of the convergent one (a repair
            re-encodes a file with the key of its cap; with the file's own k, N
            and segment size that gives the very same shares, and servers that
            hold one already answer ``alreadygot``, so only missing shares move).
        :param progress: told how far the hashing and the pushing got.
        :raises UploadUnhappinessError: if too few servers took shares.
        """
        size = source.size
        if size <= LIT_SIZE_THRESHOLD:
            return UploadResult(LiteralCap(source.read(0, size)), None, {}, 0, {"total": 0.0})
        try:
            return await self._upload(source, params or self._params, key, progress)
        finally:
            after_large_transfer(self._clock, size)

    async def _upload(self, source: Uploadable, params: EncodingParameters, key: bytes | None,
                      progress: UploadProgress) -> UploadResult:
        started = time.monotonic()
        size = source.size
        geometry = params.geometry(size)
        convergent = key is None
        if key is None:
            known = getattr(source, "known_key", None)
            key = known.key if known is not None and known.fits(geometry) \
                else await self._convergent_key(source, geometry, progress)
        progress("hash", 1.0)
        hashed = time.monotonic()
        if not convergent:
            return await self._push(key, source, params, progress, started, hashed)
        ident = (key, params.needed, params.happy, params.total, params.max_segment_size)
        while ident in self._in_flight:
            # The same file is on its way through this gateway: its cap is ours.
            waiter: Deferred = Deferred()
            self._in_flight[ident].append(waiter)
            self.coalesced += 1
            try:
                shared: UploadResult = await waiter
            except UploadUnhappinessError:
                raise
            except Exception:  # that upload went away otherwise: one of us goes ahead
                continue
            progress("push", 1.0)
            return evolve(shared, timings={"hash": hashed - started,
                                           "push": time.monotonic() - hashed,
                                           "total": time.monotonic() - started})
        waiting = self._in_flight[ident] = []
        try:
            result = await self._push(key, source, params, progress, started, hashed)
        except BaseException as error:
            del self._in_flight[ident]
            for d in waiting:
                d.errback(Failure(error))
            raise
        del self._in_flight[ident]
        for d in waiting:
            d.callback(result)
        return result

    async def _push(self, key: bytes, source: Uploadable, params: EncodingParameters,
                    progress: UploadProgress, started: float, hashed: float) -> UploadResult:
        """Encode and place the shares; while servers are busy with the same file (and
        happiness is short for that alone), wait and ask them again."""
        encoder = ImmutableEncoder(key, source.size, params)
        deadline = self._clock.seconds() + BUSY_WAIT_LIMIT
        delay = BUSY_FIRST_DELAY
        known_cap: CHKReadCap | None = None
        while True:
            upload = SharePush(self._broker, self._secrets, encoder, source, params, self._clock, progress,
                             known_cap=known_cap)
            try:
                result = await upload.run()
                break
            except UploadUnhappinessError as error:
                busy = await upload.busy_servers()
                if not busy:
                    raise
                if self._clock.seconds() + delay > deadline:
                    raise UploadUnhappinessError(
                        f"{error}; after {BUSY_WAIT_LIMIT:.0f} s these servers were still "
                        f"busy with another upload of the same file: {', '.join(busy)}",
                        error.placed_servers, error.happiness, error.happy) from None
                log.msg(f"upload {encoder.storage_index.hex()[:8]}: servers busy with the "
                        f"same file ({', '.join(busy)}); asking again in {delay:.1f} s")
            self.busy_retries += 1
            await deferLater(self._clock, delay, lambda: None)
            delay = min(delay * 2, BUSY_MAX_DELAY)
            # Ask again, encoding only if some server then takes a share: most will be there.
            known_cap = upload.read_cap or known_cap
            encoder = ImmutableEncoder(key, source.size, params)
        timings = {"hash": hashed - started, "push": time.monotonic() - hashed,
                   "total": time.monotonic() - started}
        assert result[0] is not None
        return UploadResult(result[0], encoder.storage_index, result[1], result[2], timings)

    async def upload_ciphertext(self, source: Uploadable, storage_index: bytes,
                                params: EncodingParameters) -> "CiphertextUploadResult":
        """Encode and place a file given as ciphertext (an upload helper's job: it has no
        key, only the client's storage index and encoding parameters).

        :raises UploadUnhappinessError: if too few servers took shares.
        """
        started = time.monotonic()
        encoder = ImmutableEncoder(None, source.size, params, storage_index=storage_index)
        upload = SharePush(self._broker, self._secrets, encoder, source, params, self._clock)
        _, sharemap, happiness = await upload.run()
        assert upload.trailer is not None
        pushed = sum(len(push.closed) for push in upload.pushes.values() if not push.failed)
        already = sum(len(push.already) for push in upload.pushes.values() if not push.failed)
        return CiphertextUploadResult(upload.trailer.verify_cap, upload.trailer.ueb, sharemap,
                                      happiness, pushed, already,
                                      {"total": time.monotonic() - started})

    def key_hasher(self, size: int) -> ConvergentKeyHasher:
        """A hasher of the convergent key of a file of ``size`` bytes at this uploader's
        parameters, for a caller that hashes the plaintext as it arrives; its
        :meth:`~.ConvergentKeyHasher.known` goes in the source's ``known_key``."""
        return ConvergentKeyHasher(self._convergence, self._params.geometry(size))

    async def _convergent_key(self, source: Uploadable, geometry: SegmentGeometry,
                              progress: UploadProgress) -> bytes:
        def hash_all() -> bytes:
            hasher = ConvergentKeyHasher(self._convergence, geometry)
            for offset in range(0, source.size, HASH_CHUNK):
                hasher.update(source.read(offset, HASH_CHUNK))
                progress("hash", min(1.0, (offset + HASH_CHUNK) / source.size))
            return hasher.key()
        if source.size <= INLINE_LIMIT:
            return hash_all()
        key: bytes = await deferToThread(hash_all)
        return key

"""The client's file operations, as the gateway and other frontends use them.

Each service (uploader, downloader, checker, mutable files, directories) is
built, and its code imported, when it is first used: a storage node that is
never used as a gateway loads none of it (``docs/performance.md``, memory).
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..crypto.lease_secrets import ClientLeaseSecrets
from ..immutable.params import EncodingParameters
from .history import OperationHistory

if TYPE_CHECKING:
    from ..caps.immutable import CHKReadCap
    from ..stats.registry import Statistics
    from .broker import StorageBroker
    from .checker import Checker
    from .dirnode import DirectoryClient
    from .downloader import Downloader, FileDownload
    from .keypool import KeyPool
    from .mutable import MutableClient
    from .uploadable import Uploadable
    from .uploader import Uploader, UploadResult


#: Seconds from the gateway's first POST or PUT to the key pool's first key.
KEYPOOL_DELAY = 2.0

class ClientServices:
    """Uploads and downloads through one broker.

    :param lease_secret: the bytes of ``private/secret``.
    :param convergence: the bytes of ``private/convergence``.
    :param stats: where uploads and downloads are counted and timed.
    """

    def __init__(self, broker: StorageBroker, lease_secret: bytes, convergence: bytes,
                 params: EncodingParameters, clock: Any, stats: Statistics | None = None) -> None:
        self.broker = broker
        self.params = params
        self.clock = clock
        self.history = OperationHistory()
        self.stats = stats
        self.convergence = convergence
        self.lease_secrets = ClientLeaseSecrets.from_lease_secret(lease_secret)
        self._keys_expected = False
        #: The upload helper (see :meth:`use_helper`), and how often it could not be reached.
        self.helper_tub: Any = None
        self.helper_furl: str | None = None
        self.helper_fallbacks = 0

    @cached_property
    def uploader(self) -> Uploader:
        """Immutable uploads (built at the first)."""
        from .uploader import Uploader
        return Uploader(self.broker, self.lease_secrets, self.convergence, self.params,
                        self.clock)

    @cached_property
    def downloader(self) -> Downloader:
        """Immutable downloads (built at the first)."""
        from .downloader import Downloader
        return Downloader(self.broker, self.stats)

    @cached_property
    def checker(self) -> Checker:
        """``t=check`` and lease renewal (built at the first)."""
        from .checker import Checker
        return Checker(self.broker, self.lease_secrets)

    @cached_property
    def keypool(self) -> KeyPool:
        """RSA keys for new mutable files (see :meth:`expect_use`)."""
        from .keypool import KeyPool
        return KeyPool()

    @cached_property
    def mutable(self) -> MutableClient:
        """Mutable files (built at the first use)."""
        from .mutable import MutableClient
        return MutableClient(self.broker, self.lease_secrets, self.params.needed,
                             self.params.total, self.clock, self.keypool, history=self.history,
                             stats=self.stats)

    @cached_property
    def directories(self) -> DirectoryClient:
        """Directories (built at the first use)."""
        from .dirnode import DirectoryClient
        return DirectoryClient(self.mutable, self)

    def expect_use(self) -> None:
        """Someone uses this client (its gateway's first POST or PUT): begin pre-generating
        RSA keys for new mutable files, :data:`KEYPOOL_DELAY` seconds later. Not at the
        node's start: a node that only stores shares would spend a few hundred
        milliseconds of CPU on keys it never uses; and not at once: the first uploads
        would share the two cores with the key generation and the mutable-file code's
        import (together 0.3 s of CPU). A new mutable file without a key ready waits for
        one."""
        if not self._keys_expected:
            self._keys_expected = True
            self.clock.callLater(KEYPOOL_DELAY, lambda: self.keypool.start())

    def warm_up(self) -> None:
        """Build the upload and download paths now (importing their code), so that the
        first upload costs what the hundredth does: for a node whose job is to be a
        gateway (one without storage), shortly after it started."""
        self.uploader, self.downloader  # noqa: B018 (built for their side effect)
        from ..immutable import encoder, decoder  # noqa: F401

    async def upload(self, source: Uploadable) -> UploadResult:
        """Upload an immutable file (LIT when small), recording it in :attr:`history`
        with its hashing and pushing progress."""
        with self.history.record("upload", None, source.size, self.clock) as op:
            def progress(phase: str, fraction: float) -> None:
                if phase == "hash":
                    op.hash_progress = fraction
                else:
                    op.progress = fraction
            result = await self._upload(source, progress)
            op.storage_index = result.storage_index
        return result

    def use_helper(self, tub: Any, furl: str) -> None:
        """Send CHK uploads through the upload helper at ``furl`` (``[client] helper.furl``),
        reached from ``tub``; uploads go directly to the servers when it is unreachable."""
        self.helper_tub, self.helper_furl = tub, furl

    async def _upload_through_helper(self, source: Uploadable) -> UploadResult | None:
        """The upload through the helper, or None when there is none or it is unreachable."""
        from ..immutable.params import LIT_SIZE_THRESHOLD
        if self.helper_furl is None or source.size <= LIT_SIZE_THRESHOLD:
            return None
        from twisted.python import log

        from ..helper.assisted import HelperUnreachable, connect, upload_through_helper
        try:
            helper = await connect(self.helper_tub, self.helper_furl, self.clock)
            return await upload_through_helper(helper, source, self.convergence, self.params)
        except HelperUnreachable as error:
            log.msg(f"upload helper unreachable, uploading directly: {error}")
            self.helper_fallbacks += 1
            return None

    async def _upload(self, source: Uploadable, progress: Any) -> UploadResult:
        assisted = await self._upload_through_helper(source)
        if assisted is not None:
            if self.stats is not None:
                self.stats.count("uploader.files_uploaded")
                self.stats.count("uploader.bytes_uploaded", source.size)
            progress("hash", 1.0)
            progress("push", 1.0)
            return assisted
        if self.stats is None:
            return await self.uploader.upload(source, progress=progress)
        # statistics (reference/frontends.md §5): counted at the start, LIT included;
        # our own latency and speed samples only for CHK uploads that succeed
        self.stats.count("uploader.files_uploaded")
        self.stats.count("uploader.bytes_uploaded", source.size)
        timer = self.stats.timer()
        result = await self.uploader.upload(source, progress=progress)
        if result.storage_index is not None:
            timer.done("uploader.latencies.upload", "uploader.rates.upload", source.size)
        return result

    def download(self, cap: CHKReadCap) -> "RecordedDownload":
        """A (lazy) download of an immutable file; each read is recorded in :attr:`history`."""
        return RecordedDownload(self.downloader.open(cap), self)


class RecordedDownload:
    """A :class:`FileDownload` whose reads appear on the status page."""

    def __init__(self, download: FileDownload, services: ClientServices) -> None:
        self.download = download
        self._services = services

    async def read(self, offset: int = 0, length: int | None = None) -> AsyncIterator[bytes]:
        """As :meth:`FileDownload.read`."""
        cap = self.download.cap
        end = cap.size if length is None else min(cap.size, offset + max(0, length))
        history, clock = self._services.history, self._services.clock
        op = history.start("download", cap.storage_index, max(0, end - offset), clock.seconds())
        done = 0
        try:
            async for chunk in self.download.read(offset, length):
                done += len(chunk)
                op.progress = done / op.size if op.size else 1.0
                yield chunk
        except GeneratorExit:
            history.finish(op, clock.seconds(), "cancelled")
            raise
        except BaseException as error:
            history.finish(op, clock.seconds(), f"failed: {type(error).__name__}")
            raise
        history.finish(op, clock.seconds(), "done")

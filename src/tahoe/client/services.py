"""The client's file operations, as the gateway and other frontends use them."""
from __future__ import annotations

from typing import Any

from ..caps.immutable import CHKReadCap
from ..crypto.lease_secrets import ClientLeaseSecrets
from ..immutable.params import EncodingParameters
from ..stats.registry import Statistics
from .broker import StorageBroker
from .dirnode import DirectoryClient
from .downloader import Downloader, FileDownload
from .mutable import KeyPool, MutableClient
from .uploadable import Uploadable
from .uploader import Uploader, UploadResult


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
        self.stats = stats
        self.uploader = Uploader(broker, ClientLeaseSecrets.from_lease_secret(lease_secret),
                                 convergence, params, clock)
        self.downloader = Downloader(broker, stats)
        self.lease_secrets = ClientLeaseSecrets.from_lease_secret(lease_secret)
        self.keypool = KeyPool()
        self.mutable = MutableClient(broker, self.lease_secrets, params.needed, params.total,
                                     clock, self.keypool)
        self.directories = DirectoryClient(self.mutable, self)

    def start(self) -> None:
        """Start background work: pre-generating RSA keys for new mutable files."""
        self.keypool.start()

    async def upload(self, source: Uploadable) -> UploadResult:
        """Upload an immutable file (LIT when small)."""
        if self.stats is None:
            return await self.uploader.upload(source)
        # statistics (reference/frontends.md §5): counted at the start, LIT included;
        # our own latency and speed samples only for CHK uploads that succeed
        self.stats.count("uploader.files_uploaded")
        self.stats.count("uploader.bytes_uploaded", source.size)
        timer = self.stats.timer()
        result = await self.uploader.upload(source)
        if result.storage_index is not None:
            timer.done("uploader.latencies.upload", "uploader.rates.upload", source.size)
        return result

    def download(self, cap: CHKReadCap) -> FileDownload:
        """A (lazy) download of an immutable file."""
        return self.downloader.open(cap)

"""The client's file operations, as the gateway and other frontends use them."""
from __future__ import annotations

from typing import Any

from ..caps.immutable import CHKReadCap
from ..crypto.lease_secrets import ClientLeaseSecrets
from ..immutable.params import EncodingParameters
from .broker import StorageBroker
from .downloader import Downloader, FileDownload
from .uploadable import Uploadable
from .uploader import Uploader, UploadResult


class ClientServices:
    """Uploads and downloads through one broker.

    :param lease_secret: the bytes of ``private/secret``.
    :param convergence: the bytes of ``private/convergence``.
    """

    def __init__(self, broker: StorageBroker, lease_secret: bytes, convergence: bytes,
                 params: EncodingParameters, clock: Any) -> None:
        self.broker = broker
        self.params = params
        self.uploader = Uploader(broker, ClientLeaseSecrets.from_lease_secret(lease_secret),
                                 convergence, params, clock)
        self.downloader = Downloader(broker)

    async def upload(self, source: Uploadable) -> UploadResult:
        """Upload an immutable file (LIT when small)."""
        return await self.uploader.upload(source)

    def download(self, cap: CHKReadCap) -> FileDownload:
        """A (lazy) download of an immutable file."""
        return self.downloader.open(cap)

"""A client's CHK upload through an upload helper (``[client] helper.furl``).

The client derives the convergent key and the storage index itself, asks
the helper whether the file is needed, and if so offers an
:class:`EncryptedUploadable`: the helper reads the ciphertext from it, in
order, from wherever its partial copy ends. Only ciphertext leaves the
client, about once the file's size. The read cap is built from the key and
the UEB hash the helper answers (``docs/formats/helper.md``).
"""
from __future__ import annotations

import time
from typing import Any

from foolscap.api import DeadReferenceError, Referenceable
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread
from zope.interface import implementer

from ..caps.immutable import CHKReadCap
from ..client.errors import ClientError
from ..client.placement import servers_of_happiness
from ..client.uploadable import Uploadable
from ..client.uploader import HASH_CHUNK, INLINE_LIMIT, UploadResult
from ..crypto.aes import aes_ctr
from ..immutable.keys import ConvergentKeyHasher
from ..immutable.params import EncodingParameters
from ..util.hashutil import storage_index_from_key
from .interfaces import RIEncryptedUploadable

#: How long to wait for a connection to the helper before uploading directly.
CONNECT_TIMEOUT = 10.0


class HelperUnreachable(ClientError):
    """The helper could not be reached (the caller uploads directly instead)."""


class HelperResultsInvalid(ClientError):
    """The helper's answer does not describe the file that was sent."""


@implementer(RIEncryptedUploadable)
class EncryptedUploadable(Referenceable):  # type: ignore[misc]
    """The ciphertext of one file, read by the helper at offsets it chooses.

    :param source: the plaintext.
    :param key: the AES key (AES-CTR seeks, so any offset costs only its own bytes).
    :param params: k, happy, N and the segment size the helper is told.
    """

    def __init__(self, source: Uploadable, key: bytes, params: EncodingParameters) -> None:
        self.source = source
        self.key = key
        geometry = params.geometry(source.size)
        self.params = (params.needed, params.happy, params.total, geometry.segment_size)
        #: Bytes of ciphertext handed to the helper (what went over the wire).
        self.sent = 0
        self.closed = False

    def remote_get_size(self) -> int:
        return self.source.size

    def remote_get_all_encoding_parameters(self) -> tuple[int, int, int, int]:
        return self.params

    def remote_read_encrypted(self, offset: int, length: int) -> Deferred:
        return deferToThread(self._read, offset, length)

    def _read(self, offset: int, length: int) -> list[bytes]:
        data = self.source.read(offset, min(length, max(0, self.source.size - offset)))
        self.sent += len(data)
        return [aes_ctr(self.key, data, offset)]

    def remote_close(self) -> None:
        self.closed = True


async def convergent_key(source: Uploadable, convergence: bytes,
                         params: EncodingParameters) -> bytes:
    """The file's convergent key (hashed in a thread for large files)."""
    geometry = params.geometry(source.size)

    def hash_all() -> bytes:
        hasher = ConvergentKeyHasher(convergence, geometry)
        for offset in range(0, source.size, HASH_CHUNK):
            hasher.update(source.read(offset, HASH_CHUNK))
        return hasher.key()
    if source.size <= INLINE_LIMIT:
        return hash_all()
    key: bytes = await deferToThread(hash_all)
    return key


async def connect(tub: Any, furl: str, clock: Any) -> Any:
    """A reference to the helper, or :class:`HelperUnreachable` within :data:`CONNECT_TIMEOUT`."""
    d = tub.getReference(furl)
    timer = clock.callLater(CONNECT_TIMEOUT, d.cancel)
    try:
        return await d
    except Exception as error:  # noqa: BLE001 (any failure to connect means: go direct)
        raise HelperUnreachable(f"helper {furl.split('@')[0][:40]}…: {error!r}") from error
    finally:
        if timer.active():
            timer.cancel()


async def upload_through_helper(helper: Any, source: Uploadable, convergence: bytes,
                                params: EncodingParameters) -> UploadResult:
    """Upload a CHK file (above the LIT size) through the helper referenced by ``helper``.

    :raises HelperResultsInvalid: if the helper's UEB fields do not match the file.
    """
    started = time.monotonic()
    key = await convergent_key(source, convergence, params)
    storage_index = storage_index_from_key(key)
    hashed = time.monotonic()
    try:
        results, upload_helper = await helper.callRemote("upload_chk", storage_index)
    except DeadReferenceError as error:
        # Lost before anything was sent: the caller uploads directly. A connection lost
        # later fails the upload (as Tahoe's does); the helper keeps the ciphertext it got,
        # and the next attempt sends only the rest.
        raise HelperUnreachable(f"the helper's connection was lost: {error}") from error
    reader = None
    if upload_helper is not None:
        reader = EncryptedUploadable(source, key, params)
        results = await upload_helper.callRemote("upload", reader)
    geometry = params.geometry(source.size)
    fields = getattr(results, "uri_extension_data", None) or {}
    expected = {"needed_shares": params.needed, "total_shares": params.total,
                "segment_size": geometry.segment_size, "size": source.size}
    for name, value in expected.items():
        if fields.get(name) != value:
            raise HelperResultsInvalid(
                f"the helper's UEB has {name}={fields.get(name)!r}, expected {value}")
    ueb_hash = getattr(results, "uri_extension_hash", None)
    if not isinstance(ueb_hash, bytes) or len(ueb_hash) != 32:
        raise HelperResultsInvalid("the helper's answer has no UEB hash")
    cap = CHKReadCap(key, ueb_hash, params.needed, params.total, source.size)
    sharemap = {int(shnum): frozenset(_server_name(s) for s in servers)
                for shnum, servers in (getattr(results, "sharemap", None) or {}).items()}
    now = time.monotonic()
    timings = {"hash": hashed - started, "push": now - hashed, "total": now - started,
               "ciphertext_sent": float(reader.sent if reader is not None else 0)}
    return UploadResult(cap, storage_index, sharemap,
                        servers_of_happiness({n: set(s) for n, s in sharemap.items()}), timings)


def _server_name(server: Any) -> str:
    return server.decode("ascii", "replace") if isinstance(server, bytes) else str(server)

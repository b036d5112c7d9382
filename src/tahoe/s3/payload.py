"""Request bodies of the S3 gateway: decoded, hashed and checked as they are read.

Twisted spools a body over 100 kB to a temporary file before the request is
rendered; :class:`Payload` reads it from there, decoding ``aws-chunked``
(signed chunks checked, :mod:`.chunked`) and hashing (MD5, SHA-256, the
``x-amz-checksum-*`` algorithms asked for, :mod:`.checksums`) as it goes, in a
worker thread for large bodies, and gives the upload a seekable file: a plain
body is uploaded from Twisted's own spool, a chunked one from a decoded copy.
Nothing is kept unless every check passed. Memory stays flat for any size.
"""
from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO

from twisted.internet import threads

from .channel import MAX_OBJECT_SIZE, SPOOL_PREFIX
from .errors import S3Error
from .staging import disk_refused

if TYPE_CHECKING:
    from .server import Context

__all__ = ["Payload", "MAX_XML_BODY"]

#: The most bytes of an XML request body read (Delete of 1,000 keys of 1 kB fits).
MAX_XML_BODY = 2 * 1024 * 1024
#: Bodies up to this size are hashed and decoded on the reactor, larger ones in a thread.
_INLINE_BODY = 1024 * 1024
_COPY_BLOCK = 256 * 1024
_STREAMING = "STREAMING-"


class Payload:
    """The body of a request, decoded and verified on demand.

    :param content: Twisted's spool of the raw body (a BytesIO or a temporary file).
    :param context: the request's authentication (for chunk signatures).
    """

    def __init__(self, content: BinaryIO, context: "Context") -> None:
        self._content = content
        self._context = context

    @property
    def streaming(self) -> bool:
        """Whether the body is ``aws-chunked``."""
        return self._context.payload_hash.startswith(_STREAMING)

    def raw_size(self) -> int:
        """The size of the body as sent."""
        self._content.seek(0, os.SEEK_END)
        return self._content.tell()

    async def small(self, limit: int = MAX_XML_BODY) -> bytes:
        """The whole (decoded, checked) body of a request that carries XML or nothing.

        :raises S3Error: for a body over ``limit`` bytes, or one that fails its checks.
        """
        if self.raw_size() > limit + (limit // 8 if self.streaming else 0) + 4096:
            raise S3Error("MaxMessageLengthExceeded",
                          f"The request body is larger than {limit} bytes.")
        spool, size, _ = await self.spool()
        spool.seek(0)
        data = spool.read(size)
        if spool is not self._content:
            spool.close()
        return data

    async def spool(self, named: bool = False) -> tuple[BinaryIO, int, Any]:
        """A seekable file holding the decoded body, its size, and its digests
        (``checksums.BodyDigests``: MD5 always, the requested checksums), all verified
        against the headers and trailers (Content-MD5, ``x-amz-checksum-*``,
        ``x-amz-content-sha256``).

        :param named: decode an ``aws-chunked`` body into a named temporary file (removed
            when closed), which the multipart staging can link as a part.

        :raises S3Error: ``EntityTooLarge`` (decoded over 5 GiB), ``BadDigest``,
            ``XAmzContentSHA256Mismatch``, ``IncompleteBody``,
            ``SignatureDoesNotMatch`` (a chunk), ``InvalidDigest``...
        """
        from . import checksums
        context = self._context
        headers = context.headers
        algorithms = checksums.requested_algorithms(headers)
        payload_hash = context.payload_hash
        hex_hash = re.fullmatch(r"[0-9a-f]{64}", payload_hash) is not None
        digests = checksums.BodyDigests(algorithms, md5=True, sha256=hex_hash)
        size = self.raw_size()
        decoder = self._decoder() if self.streaming else None
        out: BinaryIO = self._content if decoder is None \
            else tempfile.NamedTemporaryFile(prefix=SPOOL_PREFIX) if named \
            else tempfile.TemporaryFile()  # noqa: SIM115 (returned)

        def copy() -> dict[str, str]:
            """Read the raw body once: decode it into ``out`` (aws-chunked) and hash it."""
            self._content.seek(0)
            while True:
                block = self._content.read(_COPY_BLOCK)
                if not block:
                    break
                data = block if decoder is None else decoder.feed(block)
                digests.update(data)
                if decoder is not None:
                    out.write(data)
            return {} if decoder is None else decoder.finish()  # type: ignore[no-any-return]
        try:
            trailers = await self._run(copy, size)
        except BaseException as error:
            if out is not self._content:
                out.close()
            if isinstance(error, OSError):
                raise disk_refused(error, "the request body") from None
            raise
        out.flush()
        decoded = size if decoder is None else out.tell()
        if decoded > MAX_OBJECT_SIZE:  # the channel let it in with room for chunk headers
            if out is not self._content:
                out.close()
            raise S3Error("EntityTooLarge", ProposedSize=str(decoded),
                          MaxSizeAllowed=str(MAX_OBJECT_SIZE))
        if decoder is None:
            checksums.verify_payload_hash(payload_hash, digests)
        given = dict(headers)
        given.update(trailers)
        try:
            checksums.verify(given, digests)
        except BaseException:
            if out is not self._content:
                out.close()
            raise
        return out, decoded, digests

    def _decoder(self) -> Any:
        from . import chunked
        context = self._context
        headers = context.headers
        declared = headers.get("x-amz-decoded-content-length")
        try:
            decoded_length = int(declared) if declared is not None else None
        except ValueError:
            raise S3Error("InvalidArgument", "x-amz-decoded-content-length is not a number."
                          ) from None
        trailer = headers.get("x-amz-trailer", "")
        expected = tuple(name.strip().lower() for name in trailer.split(",") if name.strip())
        signer = None
        if context.payload_hash.startswith("STREAMING-AWS4-HMAC-SHA256-PAYLOAD"):
            signed = context.signed
            signer = chunked.ChunkSigner(context.signing_key, signed.amz_date,
                                         signed.credential.scope, signed.signature)
        return chunked.ChunkedDecoder(signer, expected, decoded_length)

    @staticmethod
    async def _run(work: Callable[[], Any], size: int) -> Any:
        if size <= _INLINE_BODY:
            return work()
        return await threads.deferToThread(work)

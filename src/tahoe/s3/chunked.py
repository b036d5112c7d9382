"""An incremental decoder of ``aws-chunked`` request bodies.

A body whose ``x-amz-content-sha256`` is one of the ``STREAMING-*`` values
arrives framed as chunks (AWS S3 API reference, "Signature Calculations for the
Authorization Header: Transferring Payload in Multiple Chunks" and "... Including
Trailing Headers")::

    hex-size[;chunk-signature=SIG]\\r\\n  DATA  \\r\\n      (repeated)
    0[;chunk-signature=SIG]\\r\\n                           (the final, empty chunk)
    name:value\\r\\n ...                                    (trailers, if announced)
    [x-amz-trailer-signature:SIG\\r\\n]
    \\r\\n

Signed bodies (``STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]``) carry a
signature per chunk, each chained from the one before, starting from the
request's own signature (the seed); a signed trailer is chained from the final
chunk's. Unsigned bodies (``STREAMING-UNSIGNED-PAYLOAD-TRAILER``, what boto3
and the aws CLI send over https) carry sizes only, and the trailer holds a
checksum of the data (``x-amz-checksum-crc32`` by default).

The decoder is push-style and sans-IO: :meth:`ChunkedDecoder.feed` takes bytes
as they come and returns the payload decoded so far, buffering at most one
chunk header or trailer line; :meth:`ChunkedDecoder.finish` checks that the body
ended where it should. Payload bytes are returned before the signature of
their chunk is checked, so a caller keeps nothing until ``finish`` succeeds.
Pure.
"""
from __future__ import annotations

import enum
import hashlib
import hmac
import re

from .errors import S3Error
from .sigv4 import chunk_signature, trailer_signature

__all__ = ["ChunkSigner", "ChunkedDecoder", "MAX_TRAILER_BYTES"]

#: The most bytes of trailer lines accepted after the final chunk.
MAX_TRAILER_BYTES = 16 * 1024
TRAILER_SIGNATURE = "x-amz-trailer-signature"
_SIGNED_HEADER = re.compile(rb"([0-9a-fA-F]{1,16});chunk-signature=([0-9a-f]{64})\Z")
_UNSIGNED_HEADER = re.compile(rb"([0-9a-fA-F]{1,16})(;[^\r\n]*)?\Z")
_TRAILER_LINE = re.compile(rb"([A-Za-z0-9-]+):[ \t]*([^\r\n]*?)[ \t]*\Z")


class ChunkSigner:
    """Checks the chained signatures of a signed ``aws-chunked`` body.

    :param signing_key: from :func:`tahoe.s3.sigv4.verify_request`.
    :param amz_date: the request's ``x-amz-date``.
    :param scope: the credential scope (``DATE/REGION/s3/aws4_request``).
    :param seed_signature: the request's signature, in hex.
    """

    def __init__(self, signing_key: bytes, amz_date: str, scope: str,
                 seed_signature: str) -> None:
        self._key = signing_key
        self._amz_date = amz_date
        self._scope = scope
        self.previous = seed_signature

    def check_chunk(self, signature: str, chunk_sha256_hex: str) -> None:
        """Accept the next chunk's signature, given the SHA-256 of its data.

        :raises S3Error: ``SignatureDoesNotMatch``.
        """
        expected = chunk_signature(self._key, self._amz_date, self._scope, self.previous,
                                   chunk_sha256_hex)
        self._compare(expected, signature)

    def check_trailer(self, signature: str, trailer: bytes) -> None:
        """Accept the trailer's signature, given its canonical ``name:value\\n`` lines
        (sorted by name, as the SDKs sign them).

        :raises S3Error: ``SignatureDoesNotMatch``.
        """
        expected = trailer_signature(self._key, self._amz_date, self._scope, self.previous,
                                     trailer)
        self._compare(expected, signature)

    def _compare(self, expected: str, given: str) -> None:
        if not hmac.compare_digest(expected.encode("ascii"), given.encode("utf-8", "replace")):
            raise S3Error("SignatureDoesNotMatch", "The chunk signature we calculated does"
                          " not match the signature you provided.")
        self.previous = given


class _State(enum.Enum):
    HEADER = "chunk header"
    DATA = "chunk data"
    DATA_END = "CRLF after chunk data"
    TRAILER = "trailer"
    DONE = "done"


def _malformed(why: str) -> S3Error:
    return S3Error("InvalidRequest", f"The aws-chunked body is malformed: {why}.")


class ChunkedDecoder:
    """Decode one ``aws-chunked`` body, fed in pieces of any size.

    :param signer: checks chunk signatures (a signed body), or None (unsigned:
        sizes only, any chunk extension ignored).
    :param expect_trailers: the lower-case trailer names the request announced
        in ``x-amz-trailer``; others are refused.
    :param decoded_length: ``x-amz-decoded-content-length``, if sent.
    :param max_chunk_header: the longest chunk header line accepted, in bytes.
    """

    def __init__(self, signer: ChunkSigner | None, expect_trailers: tuple[str, ...],
                 decoded_length: int | None, max_chunk_header: int = 4096) -> None:
        self._signer = signer
        self._expect = tuple(name.lower() for name in expect_trailers)
        self._decoded_length = decoded_length
        self._max_line = max_chunk_header
        self._state = _State.HEADER
        self._line = bytearray()
        self._remaining = 0
        self._chunk_signature = ""
        self._chunk_hash = hashlib.sha256()
        self._trailer_bytes = 0
        self._trailers: dict[str, str] = {}
        self._trailer_signature: str | None = None
        #: Payload bytes decoded so far.
        self.decoded = 0

    @property
    def done(self) -> bool:
        """True once the body's last line has been read."""
        return self._state is _State.DONE

    def feed(self, data: bytes) -> bytes:
        """The payload bytes that ``data`` completes (possibly ``b""``).

        :raises S3Error: ``InvalidRequest`` for bad framing (bad size, over-long
            header, missing CRLF, bytes after the end), ``InvalidRequest`` for more
            payload than ``decoded_length``, ``SignatureDoesNotMatch`` for a bad
            chunk or trailer signature, ``MalformedTrailerError`` for a bad trailer.
        """
        out: list[bytes] = []
        view = memoryview(data)
        position = 0
        while position < len(view):
            state = self._state
            if state is _State.DATA:
                piece = bytes(view[position:position + self._remaining])
                position += len(piece)
                self._remaining -= len(piece)
                self._take(piece)
                out.append(piece)
                if self._remaining == 0:
                    self._state = _State.DATA_END
            elif state is _State.DONE:
                raise _malformed("bytes follow the end of the body")
            else:
                line, position = self._read_line(view, position, state)
                if line is None:
                    break
                self._on_line(line)
        return b"".join(out)

    def finish(self) -> dict[str, str]:
        """The trailers (lower-case names), once the whole body has been fed.

        :raises S3Error: ``IncompleteBody`` if the body stopped early or decoded to
            fewer bytes than ``decoded_length``; ``MalformedTrailerError`` if an
            announced trailer is missing or a signed trailer is unsigned.
        """
        if self._state is _State.TRAILER and not self._line:
            # Some clients end the body with the last trailer line's CRLF and
            # leave out the empty line; nothing of the payload is missing.
            self._end_trailers()
        if self._state is not _State.DONE:
            raise S3Error("IncompleteBody", "The aws-chunked body ended inside a"
                          f" {self._state.value}.")
        if self._decoded_length is not None and self.decoded != self._decoded_length:
            raise S3Error("IncompleteBody", f"The aws-chunked body decoded to"
                          f" {self.decoded} bytes, not the {self._decoded_length} of"
                          " x-amz-decoded-content-length.")
        missing = [name for name in self._expect if name not in self._trailers]
        if missing:
            raise S3Error("MalformedTrailerError", "The announced trailer"
                          f" {', '.join(missing)} was not sent.")
        return dict(self._trailers)

    # ------------------------------------------------------------ internals

    def _take(self, piece: bytes) -> None:
        self.decoded += len(piece)
        if self._decoded_length is not None and self.decoded > self._decoded_length:
            raise _malformed("it holds more bytes than x-amz-decoded-content-length"
                             f" ({self._decoded_length})")
        if self._signer is not None:
            self._chunk_hash.update(piece)

    def _read_line(self, view: memoryview, position: int,
                   state: _State) -> tuple[bytes | None, int]:
        """The next CRLF-terminated line (without CRLF), or None if more bytes are needed."""
        limit = self._max_line if state is not _State.TRAILER else MAX_TRAILER_BYTES
        end = bytes(view[position:position + limit + 2]).find(b"\n")
        if end < 0:
            self._line += view[position:position + limit + 2]
            if len(self._line) > limit + 1:
                raise _malformed(f"a {state.value} line is longer than {limit} bytes")
            return None, len(view)
        self._line += view[position:position + end + 1]
        position += end + 1
        line = bytes(self._line)
        self._line.clear()
        if not line.endswith(b"\r\n"):
            raise _malformed(f"a {state.value} line does not end with CRLF")
        if len(line) - 2 > limit:
            raise _malformed(f"a {state.value} line is longer than {limit} bytes")
        return line[:-2], position

    def _on_line(self, line: bytes) -> None:
        if self._state is _State.HEADER:
            self._on_header(line)
        elif self._state is _State.DATA_END:
            if line:
                raise _malformed("chunk data is longer than its size")
            self._end_chunk()
            self._state = _State.HEADER
        else:
            self._on_trailer(line)

    def _on_header(self, line: bytes) -> None:
        pattern = _SIGNED_HEADER if self._signer is not None else _UNSIGNED_HEADER
        match = pattern.match(line)
        if match is None:
            shown = line[:64].decode("ascii", "replace")
            raise _malformed(f"bad chunk header {shown!r}" + (
                " (a signed body needs ';chunk-signature=')" if self._signer else ""))
        size = int(match.group(1), 16)
        if self._signer is not None:
            self._chunk_signature = match.group(2).decode("ascii")
            self._chunk_hash = hashlib.sha256()
        if self._decoded_length is not None and self.decoded + size > self._decoded_length:
            raise _malformed("a chunk goes past x-amz-decoded-content-length"
                             f" ({self._decoded_length})")
        if size:
            self._remaining = size
            self._state = _State.DATA
        else:
            self._end_chunk()
            self._state = _State.TRAILER

    def _end_chunk(self) -> None:
        if self._signer is not None:
            self._signer.check_chunk(self._chunk_signature, self._chunk_hash.hexdigest())

    def _on_trailer(self, line: bytes) -> None:
        if not line:
            self._end_trailers()
            return
        self._trailer_bytes += len(line) + 2
        if self._trailer_bytes > MAX_TRAILER_BYTES:
            raise S3Error("MalformedTrailerError", "The trailer is too long.")
        match = _TRAILER_LINE.match(line)
        if match is None:
            raise S3Error("MalformedTrailerError", "A trailer line is not 'name:value'.")
        name = match.group(1).decode("ascii").lower()
        value = match.group(2).decode("utf-8", "replace")
        if self._trailer_signature is not None:
            raise S3Error("MalformedTrailerError", "A trailer follows the trailer"
                          " signature.")
        if name == TRAILER_SIGNATURE and self._signer is not None:
            self._trailer_signature = value
        elif name not in self._expect or name in self._trailers:
            raise S3Error("MalformedTrailerError", f"The trailer {name} was not announced"
                          " in x-amz-trailer, or was sent twice.")
        else:
            self._trailers[name] = value

    def _end_trailers(self) -> None:
        if self._signer is not None and self._trailers:
            if self._trailer_signature is None:
                raise S3Error("MalformedTrailerError", "A signed body's trailer has no"
                              " x-amz-trailer-signature.")
            canonical = "".join(f"{name}:{self._trailers[name]}\n"
                                for name in sorted(self._trailers))
            self._signer.check_trailer(self._trailer_signature, canonical.encode("utf-8"))
        self._state = _State.DONE

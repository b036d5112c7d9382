"""The S3 gateway's HTTP server: every request authenticated, routed and answered in S3's terms.

One leaf :class:`S3Resource` (twisted.web) takes every request:

1. a request id (``x-amz-request-id``, ``x-amz-id-2``) for the answer and the log;
2. the bucket and key from the path (path style, ``/BUCKET/KEY``), or the bucket
   from the ``Host`` (virtual-host style: ``BUCKET.localhost`` or ``BUCKET.`` and
   the gateway's own host; and ``NAME.DOMAIN`` when the account has a bucket
   ``NAME``, so that a gateway reached by a DNS name path style still works);
3. Signature Version 4 (:mod:`.sigv4`), or version 2 (:mod:`.sigv2`, legacy, for
   the presigned URLs tools make by default): the access key's account, the
   signature, the clock skew or the presigned URL's expiry;
4. the operation, by method and sub-resource (:mod:`.operations`,
   :mod:`.multipart`).

Every refusal is S3's XML error (:mod:`.xmlio`) with S3's code and status;
an unexpected exception is ``InternalError``, logged here (without caps),
never shown to the client. The access log leaves out query strings (a
presigned URL is a bearer credential).

Request bodies are read by :class:`~.payload.Payload`; one over S3's 5 GiB is
dropped as it arrives, a header section over 8 KiB refused, and a signature checked
before the body is read (:mod:`.channel`).
"""
from __future__ import annotations

import email.utils
import re
import secrets
from collections.abc import Callable, Coroutine, Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote

from twisted.internet.defer import CancelledError, Deferred
from twisted.python import log
from twisted.web import resource, server

from ..web.rendering import StreamPausing
from . import xmlio
from .channel import censor, check_request, header_dict
from .errors import S3Error
from .payload import Payload

__all__ = ["Answer", "Context", "S3Resource", "grid_error", "http_date"]

_IP_HOST = re.compile(r"\A(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\])\Z")


def http_date(when: float) -> str:
    """An HTTP date (RFC 7231) for a header."""
    return email.utils.formatdate(when, usegmt=True)


class Context:
    """One request as the operations see it: who asks, for what, with which headers.

    :ivar headers: lower-case name -> value (several values joined with ``,``).
    :ivar query: name -> first value of the query string (blank values kept).
    :ivar bucket: the bucket named ("" for the service).
    :ivar key: the object key ("" for a bucket).
    """

    def __init__(self, request: server.Request, request_id: str, method: str, raw_path: str,
                 raw_query: str, headers: dict[str, str], query: dict[str, str],
                 bucket: str, key: str) -> None:
        self.request = request
        self.request_id = request_id
        self.method = method
        self.raw_path = raw_path
        self.raw_query = raw_query
        self.headers = headers
        self.query = query
        self.bucket = bucket
        self.key = key
        #: The bucket the Host named (virtual-host style), or None (path style).
        self.virtual_bucket: str | None = None
        #: A bucket the Host may name (its first label), to be decided by the gateway.
        self.host_bucket: str | None = None
        #: Filled in by the gateway once the signature is checked.
        self.account: Any = None
        self.store: Any = None
        self.services: Any = None
        self.gateway: Any = None
        self.gateway_region = "us-east-1"
        self.signed: Any = None
        self.signing_key: bytes = b""
        self.payload_hash = "UNSIGNED-PAYLOAD"
        self.payload = Payload(request.content, self)  # type: ignore[arg-type]

    def use_host_bucket(self, bucket: str) -> None:
        """Address the request virtual-host style: ``bucket`` from the Host, the whole
        path the key."""
        self.virtual_bucket, self.host_bucket = bucket, None
        self.bucket = bucket
        whole = _split_path("/" + bucket + self.raw_path)[1] if self.raw_path != "/" else ""
        self.key = whole

    def header(self, name: str, default: str | None = None) -> str | None:
        """One request header by lower-case name."""
        return self.headers.get(name, default)

    def integer_argument(self, name: str, limit: int) -> int:
        """A non-negative integer query argument, at most ``limit`` (``limit`` when absent).

        :raises S3Error: ``InvalidArgument`` for anything but digits.
        """
        text = self.query.get(name)
        if text is None:
            return limit
        if not text.isdigit():
            raise S3Error("InvalidArgument", f"{name} must be a non-negative integer.",
                          ArgumentName=name, ArgumentValue=text[:20])
        return min(int(text), limit)

    @property
    def owner(self) -> tuple[str, str]:
        """The ID and display name of the account (its access key id) in XML answers."""
        return self.account.access_key, self.account.access_key


def _headers(request: server.Request) -> dict[str, str]:
    return header_dict(request.requestHeaders)


def _bucket_from_host(host: str, own_hosts: frozenset[str]) -> tuple[str | None, bool]:
    """The bucket a virtual-host-style ``Host`` may name, and whether it surely does.

    ``BUCKET.localhost`` and ``BUCKET.`` + the gateway's own host name one surely; an IP
    address, ``localhost`` or a name without a dot none; the first label of another
    name (``photos.s3.example.org``, but also ``s3.example.org`` reached path style)
    maybe: the gateway decides once the account is known (:meth:`Context.use_host_bucket`).
    """
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    name = name.lower().rstrip(".")
    if not name or _IP_HOST.match(name) or name == "localhost" or name in own_hosts:
        return None, False
    if name.endswith(".localhost"):
        return name[:-len(".localhost")], True
    for own in own_hosts:
        if name.endswith("." + own):
            return name[:-len(own) - 1], True
    if "." not in name:
        return None, False
    return name.split(".", 1)[0], False


def _split_path(path: str) -> tuple[str, str]:
    """(bucket, key) of a path-style request path (percent-decoded)."""
    try:
        text = unquote(path, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise S3Error("InvalidArgument", "The path is not UTF-8 once percent-decoded.",
                      ArgumentName="path") from None
    text = text[1:] if text.startswith("/") else text
    bucket, _, key = text.partition("/")
    return bucket, key


def _header_bytes(value: str) -> bytes:
    """A header value as bytes: Latin-1 gives back the bytes a request header was read from
    (it was decoded so); text that is not Latin-1 is sent as UTF-8. Line breaks become
    spaces (no header may be injected by a ``response-*`` override)."""
    value = value.replace("\r", " ").replace("\n", " ")
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8")


def _set_header(request: server.Request, name: str, value: str) -> None:
    """Set a response header. ``x-amz-meta-*`` names keep their lower case, as S3 sends
    them: Twisted would write ``X-Amz-Meta-Color``, and SDKs give the user metadata the
    case they read (``Color``), not the case it was stored in. That needs Twisted's raw
    header table, as no public call keeps a name's case."""
    if name.startswith("x-amz-meta-"):
        request.responseHeaders._rawHeaders[  # noqa: SLF001 (see the docstring)
            name.encode("latin-1")] = [_header_bytes(value)]
    else:
        request.setHeader(name.encode("latin-1"), _header_bytes(value))


class Answer:
    """What an operation returns: a status, headers, and a body (bytes, or chunks)."""

    def __init__(self, status: int = 200, headers: Mapping[str, str] | None = None,
                 body: bytes | None = b"", chunks: Any = None, length: int | None = None
                 ) -> None:
        self.status = status
        self.headers = dict(headers or {})
        self.body = body
        self.chunks = chunks
        self.length = length


Operation = Callable[[Context], Coroutine[Any, Any, Answer]]


def grid_error(error: Exception, request_id: str) -> S3Error:
    """The S3 error for an exception that is not one: ``ServiceUnavailable`` (503, which
    clients retry) when too few storage servers answered or took an upload's shares
    (saying why: servers full, not connected...), ``InternalError`` (500) for anything
    else, logged here with its traceback, caps censored."""
    from ..client.errors import NotEnoughSharesError, UploadUnhappinessError
    from ..mutable.errors import UnrecoverableFile
    log.msg(f"S3 request {request_id} failed: {censor(type(error).__name__)}:"
            f" {censor(str(error))[:300]}")
    if isinstance(error, UploadUnhappinessError):
        return S3Error("ServiceUnavailable", "Too few storage servers of the grid took the"
                       f" object's shares ({censor(str(error))[:400]}); try again later.")
    if isinstance(error, (NotEnoughSharesError, UnrecoverableFile)):
        return S3Error("ServiceUnavailable", "Too few storage servers of the grid answered;"
                       " try again later.")
    from twisted.python.failure import Failure
    log.msg(censor(Failure(error).getTraceback()))
    return S3Error("InternalError")


class S3Resource(resource.Resource):
    """Every request to the gateway.

    :param gateway: what authenticates and routes (:class:`tahoe.s3.service.S3Gateway`):
        ``authenticate(context)`` and ``route(context) -> Operation``.
    :param own_hosts: host names of the gateway itself (path style).
    """

    isLeaf = True

    def __init__(self, gateway: Any, own_hosts: frozenset[str]) -> None:
        super().__init__()
        self.gateway = gateway
        self.own_hosts = own_hosts

    def render(self, request: server.Request) -> Any:
        """Answer asynchronously.

        A client that goes away does not cancel its operation: an upload or a directory
        change cut at an arbitrary point could leave other requests coalesced with it
        waiting; it runs to its end and its answer is dropped (a download stops at its
        next chunk).
        """
        request_id = secrets.token_hex(8).upper()
        request.setHeader(b"x-amz-request-id", request_id.encode("ascii"))
        request.setHeader(b"x-amz-id-2", secrets.token_urlsafe(24).encode("ascii"))
        request.setHeader(b"Server", b"TahoeLAFS-S3")
        d = Deferred.fromCoroutine(self._answer(request, request_id))
        request.notifyFinish().addErrback(lambda _: None)
        d.addErrback(lambda f: log.msg(
            f"S3 request {request_id} failed while answering: {f.type.__name__}"))
        return server.NOT_DONE_YET

    def precheck(self, method: str, uri: str, headers: dict[str, str]) -> S3Error | None:
        """The signature of a request whose headers are in, checked before its body: the
        refusal, or None if it may go on (to be checked again, with its body)."""
        raw_path, _, raw_query = uri.partition("?")
        virtual, certain = _bucket_from_host(headers.get("host", ""), self.own_hosts)
        try:
            self.gateway.verify(method, raw_path, raw_query, headers,
                                virtual if certain else None, None if certain else virtual)
        except S3Error as error:
            return error
        except Exception:  # noqa: BLE001 (checked again when the request is answered)
            return None
        return None

    def _context(self, request: server.Request, request_id: str) -> Context:
        uri = request.uri.decode("utf-8", "replace")
        raw_path, _, raw_query = uri.partition("?")
        headers = _headers(request)
        query = {}
        for name, value in parse_qsl(raw_query, keep_blank_values=True):
            query.setdefault(name, value)
        bucket, key = _split_path(raw_path)
        context = Context(request, request_id, request.method.decode("latin-1"), raw_path,
                          raw_query, headers, query, bucket, key)
        virtual, certain = _bucket_from_host(headers.get("host", ""), self.own_hosts)
        if virtual is not None and certain:
            context.use_host_bucket(virtual)
        else:
            context.host_bucket = virtual
        return context

    async def _answer(self, request: server.Request, request_id: str) -> None:
        context: Context | None = None
        try:
            check_request(request)
            context = self._context(request, request_id)
            await self.gateway.authenticate(context)
            operation = self.gateway.route(context)
            answer = await operation(context)
        except S3Error as error:
            self._error(request, error, context, request_id)
            return
        except CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 (the one boundary: never a traceback out)
            self._error(request, grid_error(error, request_id), context, request_id)
            return
        await self._send(request, answer)

    def _error(self, request: server.Request, error: S3Error, context: Context | None,
               request_id: str) -> None:
        if request.finished or getattr(request, "_disconnected", False):
            return
        if request.startedWriting:
            request.loseConnection()
            return
        request.setResponseCode(error.status)
        if error.status == 304 or request.method == b"HEAD":
            request.setHeader(b"Content-Length", b"0")
            request.finish()
            return
        resource_path = context.raw_path if context is not None else ""
        body = xmlio.error_body(error.code, error.message, error.extra,
                                resource=unquote(resource_path), request_id=request_id)
        request.setHeader(b"Content-Type", b"application/xml")
        request.setHeader(b"Content-Length", b"%d" % len(body))
        request.write(body)
        request.finish()

    async def _send(self, request: server.Request, answer: Answer) -> None:
        if request.finished or getattr(request, "_disconnected", False):
            return
        request.setResponseCode(answer.status)
        for name, value in answer.headers.items():
            _set_header(request, name, value)
        if answer.chunks is None:
            body = answer.body or b""
            if answer.status not in (204, 304) and not request.responseHeaders.hasHeader(
                    b"content-length"):
                request.setHeader(b"Content-Length", b"%d" % len(body))
            if body and request.method != b"HEAD":
                request.write(body)
            request.finish()
            return
        if answer.length is not None:
            request.setHeader(b"Content-Length", b"%d" % answer.length)
        producer = StreamPausing()
        request.registerProducer(producer, True)
        sent = 0
        try:
            async for chunk in answer.chunks:
                if producer.stopped:
                    return
                request.write(chunk)
                sent += len(chunk)
                await producer.ready()
        except CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 (the status is sent: cut the answer short)
            log.msg(f"S3 download failed after {sent} bytes:"
                    f" {censor(type(error).__name__)}: {censor(str(error))[:300]}")
            request.unregisterProducer()
            request.loseConnection()
            return
        request.unregisterProducer()
        if not request.finished:
            request.finish()

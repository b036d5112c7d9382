"""S3 requests made by hand: signed with botocore's SigV4 signer, sent over a plain socket.

A test builds a request, signs it as any SDK would (``botocore.auth.S3SigV4Auth`` on an
``AWSRequest``, or ``S3SigV4QueryAuth`` for a presigned URL), and may then change any
byte of it (the body, a header, the length) before sending it with :func:`exchange`, which
writes exactly the bytes given and reads every answer the server sends back on that
connection. The clock of a signature can be set (skew, expired URLs). Every socket has a
timeout: nothing may hang.
"""
from __future__ import annotations

import datetime
import re
import socket
import urllib.parse
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping, Sequence
from types import SimpleNamespace

import attrs
from botocore.auth import SIGV4_TIMESTAMP, S3SigV4Auth, S3SigV4QueryAuth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

__all__ = ["Answer", "Keys", "RawRequest", "error_code", "exchange", "presign", "send", "sign"]

SOCKET_TIMEOUT = 60.0
_NAMESPACE = "{http://s3.amazonaws.com/doc/2006-03-01/}"


@attrs.frozen
class Keys:
    """An account's keys and the region it signs for."""

    access_key: str
    secret_key: str
    region: str = "us-east-1"


@attrs.frozen
class RawRequest:
    """A request as it goes on the wire: method, target (path and query, already encoded),
    header lines in order, body."""

    method: str
    target: str
    headers: tuple[tuple[str, str], ...]
    body: bytes = b""

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (any case), or None."""
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def replace(self, *, body: bytes | None = None, target: str | None = None,
                set_headers: Mapping[str, str] | None = None,
                drop: Sequence[str] = ()) -> "RawRequest":
        """A copy with another body or target, headers set (replacing any of the same name)
        or dropped; the signature is not redone."""
        changed = {name.lower() for name in (set_headers or {})} | {n.lower() for n in drop}
        headers = [(k, v) for k, v in self.headers if k.lower() not in changed]
        headers += list((set_headers or {}).items())
        return RawRequest(self.method, self.target if target is None else target,
                          tuple(headers), self.body if body is None else body)

    def wire(self, *, content_length: int | None = None) -> bytes:
        """The bytes of the request: request line, headers (with ``Content-Length``, the
        body's length unless given), blank line, body."""
        length = len(self.body) if content_length is None else content_length
        lines = [f"{self.method} {self.target} HTTP/1.1"]
        lines += [f"{name}: {value}" for name, value in self.headers
                  if name.lower() != "content-length"]
        if self.body or content_length is not None or self.method in ("PUT", "POST"):
            lines.append(f"Content-Length: {length}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + self.body


@attrs.frozen
class Answer:
    """An HTTP answer: status, headers (names lower-cased; repeated ones joined), body."""

    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def code(self) -> str | None:
        """The S3 error code of an XML error body, or None."""
        return error_code(self.body)


def error_code(body: bytes) -> str | None:
    """The ``Code`` of an S3 XML error body, or None if ``body`` is not one."""
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        return None
    if root.tag not in ("Error", _NAMESPACE + "Error"):
        return None
    code = root.find("Code")
    if code is None:
        code = root.find(_NAMESPACE + "Code")
    return None if code is None else code.text


def _host(endpoint: str) -> str:
    return urllib.parse.urlsplit(endpoint).netloc


def _quote_path(path: str) -> str:
    """``path`` with every byte but unreserved ones and ``/`` percent-encoded (as SDKs do)."""
    return urllib.parse.quote(path, safe="/~")


def _sign_at(signer: SigV4Auth, request: AWSRequest, when: datetime.datetime) -> None:
    """What ``signer.add_auth(request)`` does, with the clock at ``when`` (UTC, naive)."""
    request.context["timestamp"] = when.strftime(SIGV4_TIMESTAMP)
    signer._modify_request_before_signing(request)
    string_to_sign = signer.string_to_sign(request, signer.canonical_request(request))
    signer._inject_signature_to_request(request, signer.signature(string_to_sign, request))


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def sign(keys: Keys, endpoint: str, method: str, path: str, *, query: str = "",
         headers: Mapping[str, str] | None = None, body: bytes = b"",
         when: datetime.datetime | None = None, unsigned_payload: bool = False) -> RawRequest:
    """A request signed in its ``Authorization`` header, as an SDK signs it over HTTP (the
    body's SHA-256 in ``x-amz-content-sha256``, or ``UNSIGNED-PAYLOAD``).

    :param path: the decoded path (``/bucket/key``); percent-encoded here once.
    :param query: the query string, already encoded (``uploads=``, ``list-type=2&...``).
    :param when: the signing time (UTC, naive); now if None.
    """
    url = endpoint.rstrip("/") + _quote_path(path) + (f"?{query}" if query else "")
    request = AWSRequest(method=method, url=url,
                         headers={"Host": _host(endpoint), **(headers or {})}, data=body)
    if unsigned_payload:  # what S3SigV4Auth reads from a client's configuration
        request.context["client_config"] = SimpleNamespace(s3={"payload_signing_enabled": False})
    credentials = Credentials(keys.access_key, keys.secret_key)
    _sign_at(S3SigV4Auth(credentials, "s3", keys.region), request, when or _now())
    split = urllib.parse.urlsplit(request.url)
    target = split.path + (f"?{split.query}" if split.query else "")
    return RawRequest(method, target, tuple((str(k), str(v)) for k, v in request.headers.items()),
                      body)


def presign(keys: Keys, endpoint: str, method: str, path: str, *, expires: int = 300,
            when: datetime.datetime | None = None) -> str:
    """A presigned URL (query-string signature, ``UNSIGNED-PAYLOAD``) for ``path``."""
    url = endpoint.rstrip("/") + _quote_path(path)
    request = AWSRequest(method=method, url=url, headers={"Host": _host(endpoint)})
    credentials = Credentials(keys.access_key, keys.secret_key)
    _sign_at(S3SigV4QueryAuth(credentials, "s3", keys.region, expires=expires), request,
             when or _now())
    return str(request.url)


_STATUS_LINE = re.compile(rb"HTTP/1\.[01] (\d{3})[^\r\n]*\r\n")


def _read_answers(data: bytes, head_only: bool) -> list[Answer]:
    """Every complete HTTP answer in ``data`` (bodies by Content-Length or chunked)."""
    answers = []
    while data:
        match = _STATUS_LINE.match(data)
        end = data.find(b"\r\n\r\n")
        if match is None or end < 0:
            break
        headers: dict[str, str] = {}
        for line in data[match.end():end].split(b"\r\n"):
            name, _, value = line.decode("latin-1").partition(":")
            key = name.strip().lower()
            headers[key] = (headers[key] + "," if key in headers else "") + value.strip()
        rest = data[end + 4:]
        status = int(match.group(1))
        if head_only or status in (204, 304) or 100 <= status < 200:
            body, data = b"", rest
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                line_end = rest.find(b"\r\n")
                if line_end < 0:
                    break
                size = int(rest[:line_end].split(b";")[0], 16)
                body += rest[line_end + 2:line_end + 2 + size]
                rest = rest[line_end + 2 + size + 2:]
                if size == 0:
                    break
            data = rest
        elif "content-length" in headers:
            length = int(headers["content-length"])
            body, data = rest[:length], rest[length:]
        else:
            body, data = rest, b""
        if 100 <= status < 200:
            continue
        answers.append(Answer(status, headers, body))
    return answers


def exchange(endpoint: str, data: bytes, *, half_close: bool = True, head_only: bool = False,
             timeout: float = SOCKET_TIMEOUT) -> list[Answer]:
    """Send ``data`` on a new connection, then read until the server closes it (or, when
    ``half_close`` is false and an answer is complete, until it goes quiet); every answer
    read.

    :param half_close: shut our sending side once ``data`` is sent (the server sees the
        end of the stream: a body cut short ends there).
    """
    split = urllib.parse.urlsplit(endpoint)
    with socket.create_connection((split.hostname, split.port), timeout=timeout) as sock:
        sock.sendall(data)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        received = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                break
            except socket.timeout:
                if half_close or not _read_answers(received, head_only):
                    raise
                break
            if not chunk:
                break
            received += chunk
            if not half_close and _read_answers(received, head_only):
                sock.settimeout(1.0)
    return _read_answers(received, head_only)


def send(endpoint: str, request: RawRequest, *, timeout: float = SOCKET_TIMEOUT) -> Answer:
    """Send one request with ``Connection: close``; its answer."""
    closing = request.replace(set_headers={"Connection": "close"})
    answers = exchange(endpoint, closing.wire(), half_close=False,
                       head_only=request.method == "HEAD", timeout=timeout)
    assert len(answers) == 1, answers
    return answers[0]

"""Capture HTTP storage protocol ("Great Black Swamp") vectors from a real Tahoe-LAFS 1.20.

Usage::

    .venv/bin/python misc/interop/capture_http_vectors.py [--tahoe PATH] [--output PATH]

What it does:

1. creates two fresh Tahoe-LAFS 1.20 storage nodes (``tahoe create-node``, no
   introducer, ``[storage] reserved_space = 1M``) on free ports of 127.0.0.1 and
   runs them (``tahoe run``), stopping them by PID at the end;
2. reads each node's NURL facts from its files: the swissnum (last path
   component of ``private/storage.furl``) and the SPKI hash of the certificate
   in ``private/node.pem``;
3. on each node, plays the fixed exchanges of :mod:`http_vector_exchanges` as raw
   HTTP/1.1 over TLS (standard-library ``ssl`` on plain sockets, kept alive,
   reopened only when the server closed it), then the pipelining experiments,
   then TLS handshake probes;
4. writes ``tests/vectors/http-storage-tahoe120.json``: the first node's
   exchanges, each marked ``deterministic`` when the second node answered with
   the same status, headers (``Date`` aside), framing and body, and nothing in
   the answer is known to vary (see ``Step.varies``).

Every input (storage indexes, secrets, share data) is a fixed byte pattern, so
two runs differ only in what Tahoe itself varies (swissnum, certificate, ports,
dates, available space, Python set order in some error texts).  The
specification is ``docs/specifications/http-storage-node-protocol.rst`` in
tahoe-lafs.

Needs the standard library, ``cryptography`` and ``cbor2``; Tahoe itself is only
run as a program (see ``misc/interop/install-tahoe-1.20.sh``).
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import datetime
import hashlib
import io
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import cbor2
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from http_vector_exchanges import (
    CANCEL_SECRET, CBOR, HOST, IMMUTABLE_SI, IMMUTABLE_SI_2, MUTABLE_SI, OTHER_SECRET,
    PIPELINE_SIS, RENEW_SECRET, UNKNOWN_SI, UPLOAD_SECRET, WRITE_ENABLER, WRONG_UPLOAD_SECRET,
    Request, RequestFactory, authorization, b64, pipelining_experiments, sequence, si_b32)

DEFAULT_TAHOE = Path.home() / ".cache" / "tahoe-lafs-py" / "tahoe-1.20.0" / "bin" / "tahoe"
DEFAULT_OUTPUT = (Path(__file__).resolve().parents[2]
                  / "tests" / "vectors" / "http-storage-tahoe120.json")

START_TIMEOUT = 60.0  # seconds for a node to write its FURL and accept connections
READ_TIMEOUT = 5.0  # seconds to wait for a response before recording a timeout
CLOSE_PROBE = 0.02  # seconds to wait for the server to close a connection after a response
IGNORED_HEADERS = {"date"}  # response headers that vary between runs by nature
CERTIFICATE_BLOCK = re.compile(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", re.S)

JSONObject = dict[str, Any]


# --- The node ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    """A running Tahoe 1.20 storage node and its NURL facts."""

    port: int
    swissnum: str
    spki_hash: str
    certificate: x509.Certificate


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (Tahoe refuses port 0)."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def tahoe_env() -> dict[str, str]:
    """Our environment without what would make Tahoe's Python see our venv."""
    hidden = {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"}
    return {k: v for k, v in os.environ.items() if k not in hidden}


def create_node(tahoe: Path, nodedir: Path, port: int) -> None:
    """``tahoe create-node`` a storage node listening on ``port``, with 1M reserved space.

    :raises subprocess.CalledProcessError: if ``create-node`` fails.
    """
    subprocess.run(
        [str(tahoe), "create-node", "--port", f"tcp:{port}:interface={HOST}",
         "--location", f"tcp:{HOST}:{port}", "--webport", "none", "--nickname", "gbs-vectors",
         str(nodedir)],
        check=True, stdin=subprocess.DEVNULL, capture_output=True, env=tahoe_env(), timeout=120)
    config = nodedir / "tahoe.cfg"
    text, count = re.subn(r"(?m)^reserved_space = .*$", "reserved_space = 1M",
                          config.read_text())
    if count != 1:
        raise RuntimeError(f"no reserved_space line in {config}")
    config.write_text(text)


def spki_hash(certificate: x509.Certificate) -> str:
    """Unpadded URL-safe base64 of SHA-256 of the certificate's DER SubjectPublicKeyInfo."""
    spki = certificate.public_key().public_bytes(Encoding.DER,
                                                 PublicFormat.SubjectPublicKeyInfo)
    return base64.urlsafe_b64encode(hashlib.sha256(spki).digest()).decode("ascii").rstrip("=")


def read_node(nodedir: Path, port: int) -> Node:
    """The NURL facts of a started node: swissnum from its FURL, certificate from node.pem.

    :raises RuntimeError: if ``private/node.pem`` holds no certificate.
    """
    furl = (nodedir / "private" / "storage.furl").read_text().strip()
    block = CERTIFICATE_BLOCK.search((nodedir / "private" / "node.pem").read_text())
    if block is None:
        raise RuntimeError(f"no certificate in {nodedir}/private/node.pem")
    certificate = x509.load_pem_x509_certificate(block.group().encode("ascii"))
    return Node(port, furl.rsplit("/", 1)[1], spki_hash(certificate), certificate)


def wait_until_ready(nodedir: Path, port: int, process: subprocess.Popen[bytes],
                     log: Path) -> Node:
    """Poll until the node wrote ``private/storage.furl`` and accepts TCP connections.

    :raises RuntimeError: if the node exits or is not ready within ``START_TIMEOUT``.
    """
    furl_path = nodedir / "private" / "storage.furl"
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"tahoe run {nodedir} exited with {process.returncode}:\n{output}")
        if furl_path.exists() and furl_path.read_text().strip():
            try:
                socket.create_connection((HOST, port), timeout=1.0).close()
            except OSError:
                pass
            else:
                return read_node(nodedir, port)
        time.sleep(0.1)
    raise RuntimeError(f"{nodedir} not ready after {START_TIMEOUT:g} s")


@contextlib.contextmanager
def running_nodes(tahoe: Path, count: int) -> Iterator[list[Node]]:
    """Create and run ``count`` fresh nodes in a temporary directory; stop them by PID after."""
    with tempfile.TemporaryDirectory(prefix="gbs-vectors-") as tmp:
        processes: list[subprocess.Popen[bytes]] = []
        try:
            started = []
            for index in range(count):
                nodedir, log = Path(tmp) / f"node{index}", Path(tmp) / f"node{index}.log"
                port = free_port()
                create_node(tahoe, nodedir, port)
                with log.open("wb") as output:
                    processes.append(subprocess.Popen(
                        [str(tahoe), "run", "--allow-stdin-close", str(nodedir)],
                        stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                        env=tahoe_env()))
                started.append((nodedir, port, log))
            yield [wait_until_ready(nodedir, port, process, log)
                   for (nodedir, port, log), process in zip(started, processes)]
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


# --- Raw HTTP/1.1 over TLS --------------------------------------------------------------


@dataclass(frozen=True)
class Response:
    """One parsed HTTP response; ``body`` is de-chunked, ``framing`` says how it was sent:
    ``content-length``, ``chunked``, ``until-close`` or ``none``."""

    version: str
    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    body: bytes = b""
    framing: str = "none"

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or None."""
        return next((v for n, v in self.headers if n.lower() == name.lower()), None)


class ResponseTimeout(Exception):
    """The server sent no complete response within ``READ_TIMEOUT``."""


class Connection:
    """A TLS connection to a node, with blocking reads of raw HTTP responses.

    The certificate is not checked against any CA; its SPKI hash must be ``spki``.

    :raises ssl.SSLError: from the constructor, if the handshake fails.
    :raises RuntimeError: from the constructor, if the server's SPKI hash is not ``spki``.
    """

    def __init__(self, port: int, spki: str, alpn: Sequence[str] = ("http/1.1",),
                 maximum_version: ssl.TLSVersion = ssl.TLSVersion.MAXIMUM_SUPPORTED) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.maximum_version = maximum_version
        if alpn:
            context.set_alpn_protocols(list(alpn))
        raw = socket.create_connection((HOST, port), timeout=READ_TIMEOUT)
        try:
            self.sock = context.wrap_socket(raw)
        except BaseException:
            raw.close()
            raise
        der = self.sock.getpeercert(binary_form=True)
        if der is None or spki_hash(x509.load_der_x509_certificate(der)) != spki:
            self.sock.close()
            raise RuntimeError("the server's certificate does not have the expected SPKI hash")
        self.buffer = b""
        self.eof = False

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()

    def chain_length(self) -> int | None:
        """How many certificates the server sent (CPython 3.10+ private API; None if absent)."""
        get_chain = getattr(self.sock._sslobj, "get_unverified_chain", None)  # type: ignore
        return None if get_chain is None else len(get_chain() or [])

    def _fill(self) -> None:
        """Read more bytes into the buffer; set ``eof`` when the server closed."""
        try:
            data = self.sock.recv(65536)
        except TimeoutError as e:
            raise ResponseTimeout() from e
        except (ssl.SSLError, ConnectionError):
            data = b""
        if not data:
            self.eof = True
        self.buffer += data

    def _read_line(self) -> bytes:
        """The next CRLF-terminated line, without its CRLF."""
        while b"\r\n" not in self.buffer:
            if self.eof:
                raise ConnectionError("connection closed in the middle of a response")
            self._fill()
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def _read_exact(self, count: int) -> bytes:
        """The next ``count`` bytes."""
        while len(self.buffer) < count:
            if self.eof:
                raise ConnectionError("connection closed in the middle of a body")
            self._fill()
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def _read_chunked(self) -> bytes:
        """A chunked body, trailers skipped."""
        body = b""
        while size := int(self._read_line().split(b";")[0], 16):
            body += self._read_exact(size)
            self._read_exact(2)
        while self._read_line():
            pass
        return body

    def read_response(self, method: str) -> Response:
        """Read one response to a ``method`` request.

        :raises ResponseTimeout: if the server stays silent for ``READ_TIMEOUT``.
        :raises ConnectionError: if the server closes before a whole response.
        """
        self.sock.settimeout(READ_TIMEOUT)
        version, status, reason = (self._read_line().decode("latin-1").split(" ", 2) + [""])[:3]
        headers = []
        while line := self._read_line():
            name, value = line.decode("latin-1").split(":", 1)
            headers.append((name, value.strip()))
        head = Response(version, int(status), reason, tuple(headers))
        if method == "HEAD" or head.status in (204, 304) or head.status < 200:
            return head
        if (head.header("transfer-encoding") or "").lower() == "chunked":
            body, framing = self._read_chunked(), "chunked"
        elif (length := head.header("content-length")) is not None:
            body, framing = self._read_exact(int(length)), "content-length"
        else:
            while not self.eof:
                self._fill()
            body, framing, self.buffer = self.buffer, "until-close", b""
        return Response(version, head.status, reason, head.headers, body, framing)

    def closed_by_server(self) -> bool:
        """Whether the server closed the connection (waiting up to ``CLOSE_PROBE`` for it)."""
        if not self.eof:
            self.sock.settimeout(CLOSE_PROBE)
            with contextlib.suppress(ResponseTimeout):
                self._fill()
        return self.eof


# --- Recording --------------------------------------------------------------------------


def decode_cbor(data: bytes) -> tuple[bool, Any]:
    """``(True, value)`` if ``data`` is exactly one CBOR item, else ``(False, None)``."""
    stream = io.BytesIO(data)
    try:
        value = cbor2.CBORDecoder(stream).decode()
    except (cbor2.CBORDecodeError, ValueError, EOFError):
        return False, None
    return stream.tell() == len(data), value


def cbor_to_json(value: Any) -> Any:
    """A JSON-able rendering of a decoded CBOR value.

    Sets become ``{"set": [...sorted...]}``, bytes ``{"bytes_b64": ...}``, maps with
    text keys objects, other maps ``[[key, value], ...]`` in wire order, other tags
    ``{"tag": n, "value": ...}``.
    """
    if isinstance(value, (set, frozenset)):
        items = [cbor_to_json(v) for v in value]
        return {"set": sorted(items, key=lambda v: json.dumps(v, sort_keys=True))}
    if isinstance(value, bytes):
        return {"bytes_b64": b64(value)}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: cbor_to_json(v) for k, v in value.items()}
        return [[cbor_to_json(k), cbor_to_json(v)] for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return [cbor_to_json(v) for v in value]
    if isinstance(value, cbor2.CBORTag):
        return {"tag": value.tag, "value": cbor_to_json(value.value)}
    return value


def with_cbor(record: JSONObject, body: bytes, content_type: str | None) -> JSONObject:
    """``record`` plus ``body_cbor`` if the body is declared CBOR and is one CBOR item."""
    ok, value = decode_cbor(body)
    if ok and content_type == CBOR:
        record["body_cbor"] = cbor_to_json(value)
    return record


def request_record(request: Request) -> JSONObject:
    """The JSON form of a request."""
    return with_cbor({"method": request.method, "target": request.target,
                      "http_version": request.version,
                      "headers": [list(h) for h in request.headers],
                      "body_b64": b64(request.body)},
                     request.body, request.header("content-type"))


def response_record(response: Response) -> JSONObject:
    """The JSON form of a response."""
    return with_cbor({"http_version": response.version, "status": response.status,
                      "reason": response.reason, "headers": [list(h) for h in response.headers],
                      "framing": response.framing, "body_b64": b64(response.body)},
                     response.body, response.header("content-type"))


@dataclass
class Session:
    """Plays requests on one node over a kept-alive connection, reopening it when closed."""

    node: Node
    connection: Connection | None = None
    requests_per_connection: list[int] = field(default_factory=list)

    def connect(self) -> Connection:
        """The open connection, or a new one."""
        if self.connection is None:
            self.connection = Connection(self.node.port, self.node.spki_hash)
            self.requests_per_connection.append(0)
        return self.connection

    def drop(self) -> None:
        """Close the current connection, if any."""
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def send(self, requests: Sequence[Request]) -> tuple[list[JSONObject | None], JSONObject]:
        """Write ``requests`` in one send, then read their responses in order.

        :returns: one response record per request (``None`` once sending or reading
            failed) and a connection record: whether it was new, whether the server
            closed it after, and the error that stopped the exchange, if any.
        """
        new = self.connection is None
        connection = self.connect()
        self.requests_per_connection[-1] += len(requests)
        error = None
        try:
            connection.sock.sendall(b"".join(r.to_bytes() for r in requests))
        except OSError as e:
            error = f"send failed: {e}"
        responses: list[JSONObject | None] = []
        for request in requests:
            if error:
                break
            try:
                responses.append(response_record(connection.read_response(request.method)))
            except ResponseTimeout:
                error = f"no complete response within {READ_TIMEOUT:g} s"
            except ConnectionError as e:
                error = f"connection lost: {e}"
        responses += [None] * (len(requests) - len(responses))
        closed = connection.eof if error else connection.closed_by_server()
        if error or closed:
            self.drop()
        info: JSONObject = {"new": new, "closed_by_server_after": closed}
        if error:
            info["error"] = error
        return responses, info


def play_sequence(session: Session) -> list[JSONObject]:
    """Play :func:`sequence` on a fresh node; one record per exchange."""
    records = []
    for step in sequence(RequestFactory(session.node.swissnum)):
        responses, connection = session.send([step.request])
        record = {"name": step.name, "note": step.note, "request": request_record(step.request),
                  "response": responses[0], "connection": connection}
        if step.varies:
            record["varies"] = step.varies
        records.append(record)
    return records


# --- Pipelining -------------------------------------------------------------------------


def matches(record: JSONObject | None, status: int, body: Any) -> bool:
    """Whether a response record has ``status`` and, unless ``body`` is None, that body
    (raw bytes, or else the decoded CBOR value)."""
    if record is None or record["status"] != status:
        return False
    if body is None:
        return True
    actual = base64.b64decode(record["body_b64"])
    if isinstance(body, bytes):
        return actual == body
    ok, value = decode_cbor(actual)
    return ok and value == body


def play_pipelining(session: Session) -> list[JSONObject]:
    """Run :func:`pipelining_experiments`, each on a new connection."""
    records = []
    for experiment in pipelining_experiments(RequestFactory(session.node.swissnum)):
        session.drop()
        responses, connection = session.send(experiment.requests)
        correct = [matches(response, status, body)
                   for response, (status, body) in zip(responses, experiment.expected)]
        records.append({
            "name": experiment.name, "note": experiment.note,
            "requests": [request_record(r) for r in experiment.requests],
            "responses": responses,
            "expected_statuses": [status for status, _ in experiment.expected],
            "each_answered_correctly_in_order": correct, "all_correct": all(correct),
            "connection": connection})
    session.drop()
    return records


# --- TLS facts --------------------------------------------------------------------------


def handshake(node: Node, alpn: Sequence[str] = (),
              maximum_version: ssl.TLSVersion = ssl.TLSVersion.MAXIMUM_SUPPORTED) -> JSONObject:
    """Handshake once and describe the outcome (version, cipher, ALPN, chain) or the error."""
    try:
        connection = Connection(node.port, node.spki_hash, alpn, maximum_version)
    except (ssl.SSLError, OSError) as e:
        return {"alpn_offered": list(alpn), "handshake": "failed", "error": str(e)}
    with contextlib.closing(connection):
        cipher = connection.sock.cipher()
        return {"alpn_offered": list(alpn), "handshake": "ok",
                "tls_version": connection.sock.version(),
                "cipher": cipher[0] if cipher else None,
                "alpn_selected": connection.sock.selected_alpn_protocol(),
                "certificate_chain_length": connection.chain_length()}


def certificate_facts(certificate: x509.Certificate) -> JSONObject:
    """Subject, issuer, key and validity of the node's certificate."""
    key = certificate.public_key()
    hash_algorithm = certificate.signature_hash_algorithm
    lifetime = certificate.not_valid_after_utc - certificate.not_valid_before_utc
    return {
        "subject": certificate.subject.rfc4514_string(),
        "issuer": certificate.issuer.rfc4514_string(),
        "self_issued": certificate.subject == certificate.issuer,
        "version": certificate.version.name,
        "public_key": f"{type(key).__name__.lstrip('_')} {getattr(key, 'key_size', '')}".strip(),
        "signature_hash": hash_algorithm.name if hash_algorithm else None,
        "validity_days": lifetime.days,
        "extensions": [e.oid.dotted_string for e in certificate.extensions],
    }


def tls_facts(node: Node) -> JSONObject:
    """Handshake outcomes for several ALPN offers and TLS versions, and the certificate."""
    return {
        "default": handshake(node, ("http/1.1",)),
        "alpn_h2_and_http11": handshake(node, ("h2", "http/1.1")),
        "alpn_h2_only": handshake(node, ("h2",)),
        "alpn_none": handshake(node),
        "tls12_maximum": handshake(node, ("http/1.1",), ssl.TLSVersion.TLSv1_2),
        "certificate": certificate_facts(node.certificate),
    }


# --- Putting it together ----------------------------------------------------------------


@dataclass
class Run:
    """What one node answered: the sequence, the pipelining experiments, the TLS probes."""

    node: Node
    session: Session
    exchanges: list[JSONObject]
    pipelining: list[JSONObject]
    tls: JSONObject


def play_node(node: Node) -> Run:
    """Play the sequence, then the pipelining experiments, then the TLS probes on ``node``."""
    session = Session(node)
    exchanges = play_sequence(session)
    session.drop()
    return Run(node, session, exchanges, play_pipelining(session), tls_facts(node))


def comparable(record: JSONObject | None) -> Any:
    """What must agree between runs for a response to count as deterministic."""
    if record is None:
        return None
    headers = [h for h in record["headers"] if h[0].lower() not in IGNORED_HEADERS]
    return record["status"], record["reason"], headers, record["body_b64"], record["framing"]


def mark_determinism(first: Run, second: Run) -> None:
    """Set ``deterministic`` on the first run's records from a comparison with the second's."""
    for mine, other in zip(first.exchanges, second.exchanges):
        same = comparable(mine["response"]) == comparable(other["response"])
        mine["deterministic"] = same and "varies" not in mine
    for mine, other in zip(first.pipelining, second.pipelining):
        mine["deterministic"] = [comparable(a) == comparable(b)
                                 for a, b in zip(mine["responses"], other["responses"])]


ABOUT = (
    "HTTP storage protocol (Great Black Swamp) exchanges recorded from a real {version} "
    "storage node on {date} by misc/interop/capture_http_vectors.py: a fresh node (tahoe "
    "create-node, no introducer, [storage] reserved_space = 1M, tahoe run) on 127.0.0.1, raw "
    "HTTP/1.1 over TLS from Python's ssl module. The exchanges are stateful and ordered. "
    "Requests are exactly as sent (header values are latin-1 text of the wire bytes; body_b64 "
    "is every byte after the blank line); to replay against another server, replace this "
    "document's 'credentials' (base64 of the swissnum) wherever it appears in a header with "
    "the other server's (some Authorization values are deliberately malformed around it). "
    "Responses: body_b64 is the de-chunked body and 'framing' how it was delimited; body_cbor "
    "renders CBOR with sets as {{'set': [...]}}, bytes as {{'bytes_b64': ...}}, maps with "
    "non-text keys as [[key, value], ...]. 'deterministic' means a second fresh node gave the "
    "same status, reason, headers (Date aside), framing and body, and nothing in the answer is "
    "known to vary ('varies' says what does).")


def inputs() -> JSONObject:
    """The fixed storage indexes and secrets, for readers of the document."""
    storage_indexes = [("immutable", IMMUTABLE_SI), ("immutable_2", IMMUTABLE_SI_2),
                       ("mutable", MUTABLE_SI), ("unknown", UNKNOWN_SI)]
    storage_indexes += [(f"pipeline_{i + 1}", s) for i, s in enumerate(PIPELINE_SIS)]
    secrets = [("lease_renew", RENEW_SECRET), ("lease_cancel", CANCEL_SECRET),
               ("write_enabler", WRITE_ENABLER), ("other", OTHER_SECRET),
               ("upload", UPLOAD_SECRET), ("wrong_upload", WRONG_UPLOAD_SECRET)]
    return {
        "storage_indexes": {name: {"hex": si.hex(), "base32": si_b32(si)}
                            for name, si in storage_indexes},
        "secrets_hex": {name: value.hex() for name, value in secrets},
        "immutable_share_data": "share n, byte i: (31 * n + 7 * i) % 256; 100 bytes",
    }


def facts(run: Run) -> JSONObject:
    """TLS, connection and framing facts measured on the first node."""
    exchanges = run.exchanges
    statuses = {e["name"]: (e["response"] or {}).get("status") for e in exchanges}
    return {
        "tls": run.tls,
        "connections": {
            "sequence_exchanges": len(exchanges),
            "connections_opened": len(run.session.requests_per_connection),
            "requests_per_connection": run.session.requests_per_connection,
            "closed_by_server_after": [e["name"] for e in exchanges
                                       if e["connection"]["closed_by_server_after"]],
        },
        "chunked_request_bodies": {name: statuses[name] for name in (
            "allocate-chunked-request", "immutable-write-chunked-request")},
        "response_framing": sorted({f"{e['response']['status']} {e['response']['framing']}"
                                    for e in exchanges if e["response"]}),
    }


def document(run: Run) -> JSONObject:
    """The vector document for one run (the first, already compared with the second)."""
    node = run.node
    version = next(e for e in run.exchanges if e["name"] == "version")["response"]
    version_map = decode_cbor(base64.b64decode(version["body_b64"]))[1]
    application_version = version_map[b"application-version"].decode()
    return {
        "about": ABOUT.format(version=application_version, date=datetime.date.today()),
        "tahoe_version": application_version,
        "swissnum": node.swissnum,
        "credentials": b64(node.swissnum.encode("ascii")),
        "authorization": authorization(node.swissnum),
        "spki_hash": node.spki_hash,
        "certificate_pem": node.certificate.public_bytes(Encoding.PEM).decode("ascii"),
        "nurl": f"pb://{node.spki_hash}@{HOST}:{node.port}/{node.swissnum}#v=1",
        "inputs": inputs(),
        "exchanges": run.exchanges,
        "pipelining": {
            "note": "each experiment writes all its requests in one send on a new connection, "
                    "then reads the responses",
            "all_correct": all(p["all_correct"] for p in run.pipelining),
            "experiments": run.pipelining,
        },
        "facts": facts(run),
    }


def capture(tahoe: Path) -> JSONObject:
    """Play everything on two fresh nodes; the document of the first, compared with the second."""
    with running_nodes(tahoe, 2) as nodes:
        first, second = (play_node(node) for node in nodes)
    mark_determinism(first, second)
    return document(first)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, capture, and write the JSON document."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tahoe", type=Path,
                        default=Path(os.environ.get("TAHOE120", DEFAULT_TAHOE)),
                        help="the Tahoe-LAFS 1.20 tahoe executable")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT,
                        help="where to write the JSON")
    args = parser.parse_args(argv)
    if not shutil.which(str(args.tahoe)):
        parser.error(f"{args.tahoe} is not executable (see misc/interop/install-tahoe-1.20.sh)")
    vectors = capture(args.tahoe)
    args.output.write_text(json.dumps(vectors, indent=1) + "\n")
    print(f"wrote {args.output}: {len(vectors['exchanges'])} exchanges, "
          f"pipelining all correct: {vectors['pipelining']['all_correct']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

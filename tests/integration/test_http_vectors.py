"""Tahoe 1.20's HTTPS storage vectors replayed against a real storage node of ours.

``tests/vectors/http-storage-tahoe120.json`` holds 152 request/answer pairs
recorded from a fresh Tahoe 1.20 storage node (``misc/interop/capture_http_vectors.py``),
covering every endpoint and its errors, and pipelining experiments. They are
sent, byte for byte (with our swissnum in the credentials), in the same
order to a fresh node of ours over TLS on its Tub port, and each answer must
equal Tahoe's: the status always, and where the vector says the answer is
deterministic, the media type and the body (CBOR compared decoded).

Where Tahoe 1.20 answers 500 (a crash) or accepts nonsense, we answer
otherwise, on purpose; :data:`DEVIATIONS` lists each case with our status.
"""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import cbor2

from tests.integration.http_storage_support import NodeAddress, http_node
from tests.support.rawhttp import RawConnection, RawResponse, request_bytes
from tests.vectors import VECTORS as VECTORS_DIR
from tests.vectors import load

__all__ = ["http_node"]

VECTORS = load("http-storage-tahoe120.json")

#: Exchanges answered otherwise on purpose: name -> (our status, why).
DEVIATIONS: dict[str, tuple[int, str]] = {
    "immutable-allocate-share-300":
        (400, "share numbers are 0..255 in every Tahoe format; Tahoe 1.20 allocates share 300"),
    "immutable-write-past-allocated-size":
        (413, "Tahoe 1.20 crashes (500); nothing is written in either"),
    "immutable-write-body-longer-than-range":
        (400, "Tahoe 1.20 drops the extra bytes silently; both write the range's bytes"),
    "immutable-write-body-shorter-than-range":
        (400, "Tahoe 1.20 crashes (500); both keep the bytes that came"),
    "immutable-corrupt-reason-bytes": (400, "Tahoe 1.20 crashes (500) on a bytes reason"),
    "mutable-string-share-number": (400, "Tahoe 1.20 crashes (500) on a text share number"),
    "mutable-rtw-on-immutable-si": (409, "Tahoe 1.20 crashes (500): the shares are immutable"),
    "mutable-read-of-immutable": (404, "Tahoe 1.20 crashes (500): no mutable share there"),
    "immutable-read-of-mutable": (404, "Tahoe 1.20 crashes (500): no immutable share there"),
    "immutable-shares-of-mutable": (200, "Tahoe 1.20 crashes (500); we list no immutable shares"),
    "mutable-shares-of-immutable":
        (200, "Tahoe 1.20 lists the immutable shares as mutable; we list none (body differs)"),
}


def _request(record: dict[str, Any], credentials: str) -> bytes:
    headers = [(name, value.replace(VECTORS["credentials"], credentials))
               for name, value in record["headers"]]
    return request_bytes(record["method"], record["target"], headers,
                         base64.b64decode(record["body_b64"]), record["http_version"])


def _media_type(headers: list[tuple[str, str]]) -> str | None:
    value = next((v for k, v in headers if k.lower() == "content-type"), None)
    return value.split(";")[0].strip().lower() if value else None


def _body(media_type: str | None, body: bytes) -> Any:
    return cbor2.loads(body) if media_type == "application/cbor" and body else body


def _check(name: str, expected: dict[str, Any], answer: RawResponse, deterministic: bool) -> None:
    if name in DEVIATIONS:
        status, why = DEVIATIONS[name]
        assert answer.status == status, (name, why, answer.status, answer.body[:300])
        return
    assert answer.status == expected["status"], (name, answer.status, answer.body[:300])
    if answer.status >= 300:
        return
    theirs = _media_type(expected["headers"])
    assert _media_type(answer.headers) == theirs, name
    if deterministic:
        assert _body(theirs, answer.body) == \
            _body(theirs, base64.b64decode(expected["body_b64"])), name
    elif theirs == "application/cbor" and answer.body:
        assert cbor2.loads(answer.body).keys() == \
            cbor2.loads(base64.b64decode(expected["body_b64"])).keys(), name


def test_exchanges_replayed(http_node: NodeAddress) -> None:
    """Every recorded exchange, in order: our answers equal Tahoe 1.20's (or deviate as listed)."""
    credentials = base64.b64encode(http_node.swissnum).decode("ascii")
    connection = RawConnection("127.0.0.1", http_node.port)
    try:
        for exchange in VECTORS["exchanges"]:
            request = exchange["request"]
            answer = connection.exchange(_request(request, credentials),
                                         head=request["method"] == "HEAD")
            _check(exchange["name"], exchange["response"], answer, exchange["deterministic"])
            if answer.closes or exchange["connection"]["closed_by_server_after"]:
                connection.reconnect()
    finally:
        connection.close()


def test_pipelined_experiments_replayed(http_node: NodeAddress) -> None:
    """Requests written back to back in one send are answered like Tahoe's, in order."""
    credentials = base64.b64encode(http_node.swissnum).decode("ascii")
    for experiment in VECTORS["pipelining"]["experiments"]:
        connection = RawConnection("127.0.0.1", http_node.port)
        try:
            connection.send(b"".join(_request(r, credentials) for r in experiment["requests"]))
            for request, expected in zip(experiment["requests"], experiment["responses"]):
                answer = connection.read_response(head=request["method"] == "HEAD")
                _check(experiment["name"], expected, answer, experiment["deterministic"])
        finally:
            connection.close()


def test_deviations_name_real_exchanges() -> None:
    """Every listed deviation is an exchange of the vectors, and none hides a plain success."""
    names = {exchange["name"]: exchange for exchange in VECTORS["exchanges"]}
    for name in DEVIATIONS:
        assert name in names, name
        assert names[name]["response"]["status"] == 500 or name in (
            "immutable-allocate-share-300", "immutable-write-body-longer-than-range",
            "mutable-shares-of-immutable"), name


def test_vectors_are_tahoes() -> None:
    """The vector file says where it came from (a guard against replacing it by our own output)."""
    assert VECTORS["tahoe_version"] == "tahoe-lafs/1.20.0"
    assert len(VECTORS["exchanges"]) >= 150
    assert Path(VECTORS_DIR / "http-storage-tahoe120.json").stat().st_size > 100_000


def test_tls_as_tahoe(http_node: NodeAddress) -> None:
    """TLS as Tahoe's server does it: ALPN http/1.1 chosen when offered (with h2 or not),
    none is fine, h2 alone fails; one self-signed certificate."""
    import ssl

    for case in ("default", "alpn_h2_and_http11", "alpn_none", "alpn_h2_only"):
        fact = VECTORS["facts"]["tls"][case]
        try:
            connection = RawConnection("127.0.0.1", http_node.port,
                                       alpn=tuple(fact["alpn_offered"]))
        except ssl.SSLError:
            assert fact["handshake"] == "failed", case
            continue
        assert fact["handshake"] == "ok", case
        assert connection.selected_alpn == fact["alpn_selected"], case
        connection.close()

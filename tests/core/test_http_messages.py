"""The HTTPS storage protocol's messages: headers, ranges and CBOR bodies, against Tahoe's bytes."""
from __future__ import annotations

import base64

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.storage import http_messages as m
from tahoe.storage.http_messages import MessageError, Secret
from tests.vectors import load

VECTORS = load("http-storage-tahoe120.json")
EXCHANGES = {e["name"]: e for e in VECTORS["exchanges"]}
LEASE = frozenset({Secret.LEASE_RENEW, Secret.LEASE_CANCEL})


def _request_body(name: str) -> bytes:
    return base64.b64decode(EXCHANGES[name]["request"]["body_b64"])


def _response_body(name: str) -> bytes:
    return base64.b64decode(EXCHANGES[name]["response"]["body_b64"])


def _secret_headers(name: str) -> list[bytes]:
    return [value.encode("latin-1") for key, value in EXCHANGES[name]["request"]["headers"]
            if key.lower() == "x-tahoe-authorization"]


def test_authorization_is_tahoes() -> None:
    """``Authorization`` is ``Tahoe-LAFS`` and the base64 of the swissnum, as Tahoe sends it."""
    assert m.authorization(VECTORS["swissnum"].encode()) == VECTORS["authorization"].encode()


def test_secrets_of_tahoes_requests() -> None:
    """The secrets of a recorded allocation parse into the kinds and bytes Tahoe meant."""
    secrets = m.parse_secrets(_secret_headers("immutable-allocate"),
                              LEASE | {Secret.UPLOAD})
    assert len(secrets[Secret.LEASE_RENEW]) == len(secrets[Secret.LEASE_CANCEL]) == 32
    assert secrets[Secret.UPLOAD] == b"upload-secret-20byte"


@pytest.mark.parametrize("name", [
    "immutable-allocate-missing-upload-secret", "immutable-allocate-no-secrets",
    "immutable-allocate-short-lease-secret", "immutable-allocate-unknown-secret-kind",
    "immutable-allocate-extra-write-enabler", "immutable-allocate-empty-secret",
    "immutable-allocate-secret-no-value", "immutable-allocate-comma-joined-secrets"])
def test_bad_secrets_refused(name: str) -> None:
    """Every secrets header Tahoe answered 400 is refused here too."""
    assert EXCHANGES[name]["response"]["status"] == 400
    with pytest.raises(MessageError):
        m.parse_secrets(_secret_headers(name), LEASE | {Secret.UPLOAD})


@given(st.dictionaries(st.sampled_from(list(Secret)), st.binary(min_size=1, max_size=64)))
def test_secrets_round_trip(secrets: dict[Secret, bytes]) -> None:
    """Secret headers parse back to what was sent, when lease secrets are 32 bytes."""
    values = [m.secret_header(kind, value) for kind, value in secrets.items()]
    lease_ok = all(len(v) == 32 for k, v in secrets.items() if k in LEASE)
    if lease_ok:
        assert m.parse_secrets(values, frozenset(secrets)) == secrets
    else:
        with pytest.raises(MessageError):
            m.parse_secrets(values, frozenset(secrets))


@pytest.mark.parametrize("values, accepted", [
    ([], True), ([b"application/cbor"], True), ([b"application/json"], False),
    ([b"*/*"], False), ([b"application/cbor, application/json"], True),
    ([b"application/json, application/cbor"], False),
    ([b"application/json;q=0.5, application/cbor"], True),
    ([b"application/cbor;q=0"], False)])
def test_accept(values: list[bytes], accepted: bool) -> None:
    """CBOR is sent only when it is the best of the first ``Accept`` header, as in Tahoe 1.20."""
    assert m.accepts_cbor(values) is accepted


@pytest.mark.parametrize("value, expected", [
    (b"bytes=0-9", (0, 10)), (b"bytes=5-5", (5, 6)), (b" bytes = 7 - 8 ", (7, 9))])
def test_range(value: bytes, expected: tuple[int, int]) -> None:
    """One closed byte range parses to a half-open range."""
    assert m.parse_range(value) == expected


@pytest.mark.parametrize("value", [
    b"bytes=0-9,20-29", b"bytes=5-", b"bytes=-5", b"items=0-9", b"bytes=9-0", b"bytes=a-b",
    b"", b"bytes=" + b"9" * 30 + b"-" + b"9" * 30])
def test_range_refused(value: bytes) -> None:
    """Several ranges, open or suffix ranges, other units and nonsense are refused (416)."""
    with pytest.raises(MessageError):
        m.parse_range(value)


@given(st.integers(0, 2 ** 64), st.integers(1, 2 ** 32), st.one_of(st.none(), st.integers(0, 2 ** 64)))
def test_content_range_round_trip(start: int, length: int, extra: int | None) -> None:
    """A Content-Range formats and parses back (a total, when given, covers the range)."""
    total = None if extra is None else start + length + extra
    value = m.format_content_range(start, start + length, total)
    assert m.parse_content_range(value) == (start, start + length, total)
    assert m.parse_range(m.format_range(start, start + length)) == (start, start + length)


def test_allocate_request_is_tahoes() -> None:
    """Our allocation body is byte for byte the one Tahoe's client sent."""
    body = _request_body("immutable-allocate")
    request = m.AllocateRequest.from_cbor(body)
    assert request.to_cbor() == body


@pytest.mark.parametrize("name", [
    "immutable-allocate-malformed-cbor", "immutable-allocate-array-not-set",
    "immutable-allocate-257-shares", "immutable-allocate-negative-size",
    "immutable-allocate-extra-key", "immutable-allocate-missing-key"])
def test_bad_allocate_bodies_refused(name: str) -> None:
    """Bodies Tahoe answered 400 do not parse."""
    with pytest.raises(MessageError):
        m.AllocateRequest.from_cbor(_request_body(name))


@given(st.frozensets(st.integers(0, 255), max_size=256), st.integers(0, 2 ** 64 - 1))
def test_allocate_round_trip(shares: frozenset[int], size: int) -> None:
    """Allocation requests round-trip through CBOR."""
    request = m.AllocateRequest(shares, size)
    assert m.AllocateRequest.from_cbor(request.to_cbor()) == request


@pytest.mark.parametrize("name", [
    "immutable-allocate", "immutable-allocate-repeat", "immutable-allocate-after-abort"])
def test_allocation_answers_decode_and_encode_alike(name: str) -> None:
    """Tahoe's allocation answers decode, and encoding them again gives Tahoe's bytes."""
    body = _response_body(name)
    already, allocated = m.decode_allocation(body)
    assert m.encode_allocation(already, allocated) == body


@pytest.mark.parametrize("name", [
    "immutable-write-first-half", "immutable-write-after-short-body", "immutable-write-completing"])
def test_required_ranges_are_tahoes(name: str) -> None:
    """A write's answer (missing ranges) decodes and re-encodes to Tahoe's bytes."""
    body = _response_body(name)
    assert m.encode_required(m.decode_required(body)) == body


@pytest.mark.parametrize("name", [
    "immutable-shares-unknown-si", "immutable-shares-after-completion",
    "mutable-shares-before-delete"])
def test_share_lists_are_tahoes(name: str) -> None:
    """Share-number sets (tag 258) decode and re-encode to Tahoe's bytes."""
    body = _response_body(name)
    assert m.encode_share_numbers(m.decode_share_numbers(body)) == body


@pytest.mark.parametrize("name", [
    "mutable-create-share-0", "mutable-test-fails", "mutable-write-past-end", "mutable-shrink",
    "mutable-delete-share-1"])
def test_read_test_write_is_tahoes(name: str) -> None:
    """Read-test-write requests and answers decode and re-encode to Tahoe's bytes."""
    request = _request_body(name)
    assert m.ReadTestWrite.from_cbor(request).to_cbor() == request
    answer = _response_body(name)
    assert m.encode_read_test_write_result(*m.decode_read_test_write_result(answer)) == answer


@pytest.mark.parametrize("name", [
    "mutable-malformed-cbor", "mutable-missing-specimen", "mutable-missing-new-length",
    "mutable-31-read-vectors", "mutable-no-read-vector-key", "mutable-string-share-number"])
def test_bad_read_test_write_refused(name: str) -> None:
    """Read-test-write bodies Tahoe refused (or crashed on) do not parse."""
    with pytest.raises(MessageError):
        m.ReadTestWrite.from_cbor(_request_body(name))


def test_version_is_tahoes() -> None:
    """Tahoe's version answer decodes (bytes keys), gains the implied flags, and our encoding
    of it gives the same bytes."""
    body = _response_body("version")
    version = m.decode_version(body)
    assert version[b"application-version"] == b"tahoe-lafs/1.20.0"
    assert all(version[m.STORAGE_V1][flag] is True for flag in m.IMPLIED_FLAGS)
    assert m.encode_version(version) == body


@pytest.mark.parametrize("name, valid", [
    ("immutable-corrupt", True), ("immutable-corrupt-empty-reason", False),
    ("immutable-corrupt-malformed", False), ("immutable-corrupt-reason-bytes", False)])
def test_corruption_reports(name: str, valid: bool) -> None:
    """Corruption reports need a text reason of 1 to 32765 bytes."""
    body = _request_body(name)
    if valid:
        assert m.CorruptionReport.from_cbor(body).to_cbor() == body
    else:
        with pytest.raises(MessageError):
            m.CorruptionReport.from_cbor(body)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_decoders_never_crash(body: bytes) -> None:
    """Any bytes at all either decode or raise MessageError, for every decoder."""
    for decode in (m.AllocateRequest.from_cbor, m.CorruptionReport.from_cbor,
                   m.ReadTestWrite.from_cbor, m.decode_version, m.decode_allocation,
                   m.decode_required, m.decode_share_numbers, m.decode_read_test_write_result):
        try:
            decode(body)
        except MessageError:
            pass


_CBOR_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.binary(max_size=8)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.text(max_size=12) | st.integers(0, 300), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_CBOR_VALUES)
def test_decoders_refuse_wrong_shapes(value: object) -> None:
    """Well-formed CBOR of any other shape is refused with MessageError, never another error."""
    body = cbor2.dumps(value)
    for decode in (m.AllocateRequest.from_cbor, m.ReadTestWrite.from_cbor,
                   m.decode_read_test_write_result, m.decode_required):
        try:
            decode(body)
        except MessageError:
            pass

"""Hypothesis against a real storage node's HTTPS storage API: hostile input gets the right
status, the node stays up, and no share is visible before its last byte is written."""
from __future__ import annotations

import os
from collections.abc import Iterator

import cbor2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tahoe.storage import http_messages as m
from tests.integration.http_storage_support import (CANCEL, RENEW, UPLOAD, WRITE_ENABLER,
                                                    HTTPStorage, NodeAddress, http_node, secrets,
                                                    si_path)
from tests.support.rawhttp import ConnectionClosed
from tests.support.reliability import record_fuzz

__all__ = ["http_node"]

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
PREFIXES = ["/storage/v1/version", "/storage/v1/immutable/", "/storage/v1/mutable/",
            "/storage/v1/lease/", "/storage/v1/", "/", ""]
_CBOR = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.binary(max_size=40)
    | st.text(max_size=20) | st.frozensets(st.integers(-5, 300), max_size=5),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(
        st.sampled_from(["share-numbers", "allocated-size", "reason", "test-write-vectors",
                         "read-vector", "test", "write", "new-length", "offset", "size",
                         "specimen", "data"]) | st.integers(0, 300), inner, max_size=5),
    max_leaves=25)
BODIES = st.one_of(st.binary(max_size=300), _CBOR.map(cbor2.dumps))


@pytest.fixture
def api(http_node: NodeAddress) -> Iterator[HTTPStorage]:
    """A connection to the module's node."""
    storage = HTTPStorage(http_node)
    yield storage
    storage.close()


def _alive(api: HTTPStorage) -> None:
    api.close()
    assert api.send("GET", "/storage/v1/version").status == 200


@FUZZ
@given(method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]),
       prefix=st.sampled_from(PREFIXES),
       rest=st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=60),
       headers=st.lists(st.tuples(
           st.sampled_from(["Authorization", "X-Tahoe-Authorization", "Content-Type", "Range",
                            "Content-Range", "Accept", "Expect"]),
           st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=60)),
           max_size=5),
       authorized=st.booleans(), body=BODIES)
def test_any_request_gets_an_answer_below_500(api: HTTPStorage, method: str, prefix: str,
                                              rest: str, headers: list[tuple[str, str]],
                                              authorized: bool, body: bytes) -> None:
    """Random methods, paths, headers and bodies: never a 500, never a traceback; the
    connection and the node stay usable."""
    record_fuzz("HTTPS storage API")
    target = "/" + (prefix + rest).lstrip("/")
    try:
        answer = api.send(method, target, headers, body, authorized=authorized)
    except ConnectionClosed:
        _alive(api)
        return
    assert 200 <= answer.status < 500, (method, target, headers, answer.status, answer.body)
    assert b"Traceback" not in answer.body


@FUZZ
@given(value=st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=80))
def test_wrong_authorization_is_401(api: HTTPStorage, value: str) -> None:
    """Any Authorization but the right one is 401, on every endpoint, before anything else."""
    record_fuzz("HTTPS storage API")
    if value.strip() == api.authorization[1]:
        return
    for method, target in [("GET", "/storage/v1/version"),
                           ("PUT", f"/storage/v1/lease/{si_path(b'x' * 16)}"),
                           ("POST", f"/storage/v1/immutable/{si_path(b'y' * 16)}")]:
        answer = api.send(method, target, [("Authorization", value)], authorized=False)
        assert answer.status == 401, (value, answer.status)


@FUZZ
@given(body=BODIES)
def test_malformed_bodies_are_400(api: HTTPStorage, body: bytes) -> None:
    """Allocation and read-test-write bodies of any other shape are 400 (a valid one, 200)."""
    record_fuzz("HTTPS storage API")
    storage_index = os.urandom(16)
    allocate = api.send("POST", f"/storage/v1/immutable/{si_path(storage_index)}",
                        secrets(renew=RENEW, cancel=CANCEL, upload=UPLOAD), body)
    rtw = api.send("POST", f"/storage/v1/mutable/{si_path(storage_index)}/read-test-write",
                   secrets(renew=RENEW, cancel=CANCEL, write_enabler=WRITE_ENABLER), body)
    for answer, parse in ((allocate, m.AllocateRequest.from_cbor),
                          (rtw, m.ReadTestWrite.from_cbor)):
        try:
            parse(body)
        except m.MessageError:
            assert answer.status in (400, 413), answer
        else:
            assert answer.status in (200, 400), answer  # 400: a share number above 255


@FUZZ
@given(shares=st.frozensets(st.integers(-2 ** 65, 2 ** 65), min_size=1, max_size=4),
       size=st.integers(-2 ** 65, 2 ** 65))
def test_share_numbers_and_sizes(api: HTTPStorage, shares: frozenset[int], size: int) -> None:
    """Share numbers outside 0..255 and sizes outside 0..2**64-1 are 400; others allocate
    what fits."""
    record_fuzz("HTTPS storage API")
    body = cbor2.dumps({"share-numbers": set(shares), "allocated-size": size})
    answer = api.send("POST", f"/storage/v1/immutable/{si_path(os.urandom(16))}",
                      secrets(renew=RENEW, cancel=CANCEL, upload=UPLOAD), body)
    good = all(0 <= n <= 255 for n in shares) and 0 <= size < 2 ** 64
    assert answer.status == (200 if good else 400), (shares, size, answer)
    if good:
        _, allocated = m.decode_allocation(answer.body)
        assert allocated <= shares


@pytest.fixture(scope="module")
def share(http_node: NodeAddress) -> tuple[str, bytes]:
    """A complete immutable share of 1000 bytes; its path and data."""
    api = HTTPStorage(http_node)
    storage_index = os.urandom(16)
    data = os.urandom(1000)
    path = f"/storage/v1/immutable/{si_path(storage_index)}"
    assert api.send("POST", path, secrets(renew=RENEW, cancel=CANCEL, upload=UPLOAD),
                    m.AllocateRequest(frozenset({0}), len(data)).to_cbor()).status == 200
    assert api.send("PATCH", path + "/0", secrets(upload=UPLOAD) + [
        ("Content-Range", "bytes 0-999/*")], data).status == 201
    api.close()
    return path + "/0", data


@FUZZ
@given(value=st.one_of(
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
    st.tuples(st.integers(0, 1500), st.integers(0, 1500)).map(
        lambda r: f"bytes={r[0]}-{r[1]}")))
def test_ranges(api: HTTPStorage, share: tuple[str, bytes], value: str) -> None:
    """A closed byte range reads exactly its bytes (cut at the end; 204 past it); anything
    else is 416."""
    record_fuzz("HTTPS storage API")
    path, data = share
    answer = api.send("GET", path, [("Range", value)])
    try:
        start, stop = m.parse_range(value.encode())
    except m.MessageError:
        assert answer.status == 416, (value, answer)
        return
    if start >= len(data):
        assert answer.status == 204
    else:
        assert answer.status == 206 and answer.body == data[start:stop], value
        assert answer.header("content-range") == f"bytes {start}-{start + len(answer.body) - 1}/*"


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=st.lists(st.tuples(st.integers(0, 99), st.integers(1, 40)), min_size=1,
                       max_size=12))
def test_no_share_visible_before_its_last_byte(api: HTTPStorage,
                                               writes: list[tuple[int, int]]) -> None:
    """Writes in any order and overlap: the share is listed, readable, and answered 201 only
    once every byte is in."""
    record_fuzz("HTTPS storage API")
    storage_index = os.urandom(16)
    path = f"/storage/v1/immutable/{si_path(storage_index)}"
    data = os.urandom(100)
    assert api.send("POST", path, secrets(renew=RENEW, cancel=CANCEL, upload=UPLOAD),
                    m.AllocateRequest(frozenset({3}), 100).to_cbor()).status == 200
    written: set[int] = set()
    for offset, length in writes:
        stop = min(100, offset + length)
        answer = api.send("PATCH", f"{path}/3", secrets(upload=UPLOAD) + [
            ("Content-Range", f"bytes {offset}-{stop - 1}/*")], data[offset:stop])
        if len(written) == 100:
            assert answer.status == 404  # complete: no upload in progress any more
            continue
        written |= set(range(offset, stop))
        complete = len(written) == 100
        assert answer.status == (201 if complete else 200), answer
        listed = m.decode_share_numbers(api.send("GET", f"{path}/shares").body)
        assert listed == (frozenset({3}) if complete else frozenset())
        read = api.send("GET", f"{path}/3", [("Range", "bytes=0-99")])
        assert (read.status, read.body) == ((206, data) if complete else (404, read.body))

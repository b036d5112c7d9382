"""The HTTPS storage API's routing: paths found by their segments, storage indexes decoded
as Tahoe's strict base32 decodes them."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet.task import Clock

from tahoe.httpwire.messages import HTTPError, Request
from tahoe.storage.http_api import StorageHTTPApplication, _decode_si
from tahoe.util import base32
from tahoe.util.errors import BadBase32
from tests.shell.storage_support import make_server


@settings(max_examples=500)
@given(st.text(alphabet=base32.ALPHABET, min_size=26, max_size=26))
def test_storage_index_decoded_as_tahoe_decodes_it(text: str) -> None:
    """26 base32 characters give Tahoe's 16 bytes, or None where its strict decoding refuses
    them (trailing bits set)."""
    try:
        expected: bytes | None = base32.a2b(text)
    except BadBase32:
        expected = None
    assert _decode_si(text.encode("ascii")) == expected


@pytest.fixture
def application(tmp_path: Path) -> StorageHTTPApplication:
    return StorageHTTPApplication(make_server(tmp_path / "storage", Clock()), b"swissnum")


SI = base32.b2a(b"s" * 16)


@pytest.mark.parametrize("method,path,status", [
    (b"GET", b"/storage/v1/nothing", 404),
    (b"GET", b"/storage/v2/version", 404),
    (b"GET", b"/storage/v1/version/", 404),
    (b"PUT", b"/storage/v1/version", 405),
    (b"GET", b"/storage/v1/immutable/" + SI.upper().encode(), 404),
    (b"GET", b"/storage/v1/immutable/" + SI[:-1].encode() + b"b/shares", 404),  # trailing bits
    (b"GET", b"/storage/v1/immutable/" + SI.encode() + b"/x1", 404),
    (b"GET", b"/storage/v1/immutable/" + SI.encode() + b"/1/abort", 405),
    (b"GET", b"/storage/v1/mutable/" + SI.encode() + b"/1/abort", 404),
    (b"GET", b"/storage/v1/immutable/" + SI.encode() + b"/shares", 401),  # found: no authorization
    (b"GET", b"/storage/v1/immutable/" + SI.encode() + b"/007", 401),
])
def test_routes(application: StorageHTTPApplication, method: bytes, path: bytes,
                status: int) -> None:
    """Unknown paths are 404, known ones with another method 405; a route found goes on to
    the authorization check (401 here)."""
    with pytest.raises(HTTPError) as raised:
        application(Request(method, path, [], True))
    assert raised.value.status == status

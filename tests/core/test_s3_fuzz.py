"""Random and mutated input never makes the S3 gateway's pure parsers raise anything but
``S3Error`` (which the shell turns into S3's XML error), nor accept a mutated signed body."""
from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.s3 import xmlio
from tahoe.s3.accounts import AccountsError, parse_accounts
from tahoe.s3.chunked import ChunkedDecoder, ChunkSigner
from tahoe.s3.errors import S3Error
from tahoe.s3.keys import check_bucket_name, split_key
from tahoe.s3.sigv4 import parse_request_auth, signing_key, verify_request
from tests.core.test_s3_chunked import AMZ_DATE, KEY, SCOPE, SEED, signed_body

header_text = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=120)
SIGNED = signed_body([b"first", b"second chunk"], {"x-amz-checksum-crc32": "AAAAAA=="})


@settings(deadline=None, max_examples=300)
@given(data=st.binary(max_size=300), signed=st.booleans(), length=st.none() | st.integers(0, 50))
def test_chunked_decoder_on_garbage(data: bytes, signed: bool, length: int | None) -> None:
    """Garbage bodies raise only S3Error, from feed or finish."""
    signer = ChunkSigner(KEY, AMZ_DATE, SCOPE, SEED) if signed else None
    decoder = ChunkedDecoder(signer, ("x-amz-checksum-crc32",), length, max_chunk_header=64)
    try:
        decoder.feed(data)
        decoder.finish()
    except S3Error:
        pass


@settings(deadline=None, max_examples=300)
@given(position=st.integers(0, len(SIGNED) - 1), byte=st.integers(0, 255))
def test_any_changed_byte_of_a_signed_body_is_caught(position: int, byte: int) -> None:
    """Changing any one byte of a signed body with a signed trailer never passes unnoticed."""
    mutated = bytearray(SIGNED)
    if mutated[position] == byte:
        return
    mutated[position] = byte
    decoder = ChunkedDecoder(ChunkSigner(KEY, AMZ_DATE, SCOPE, SEED),
                             ("x-amz-checksum-crc32",), None)
    try:
        decoded = decoder.feed(bytes(mutated))
        trailers = decoder.finish()
    except S3Error:
        return
    # Only a change the signatures do not cover may pass: the case of a hex digit in a
    # chunk size, or of the trailer's name; the payload and the trailer value stay intact.
    assert decoded == b"firstsecond chunk"
    assert trailers == {"x-amz-checksum-crc32": "AAAAAA=="}


@settings(deadline=None, max_examples=300)
@given(authorization=st.none() | header_text, query=header_text,
       date=st.none() | header_text, payload=st.none() | header_text)
def test_auth_parser_on_garbage(authorization: str | None, query: str, date: str | None,
                                payload: str | None) -> None:
    """Random Authorization headers, queries and dates raise only S3Error."""
    headers = {"host": "h"}
    for name, value in [("authorization", authorization), ("x-amz-date", date),
                        ("x-amz-content-sha256", payload)]:
        if value is not None:
            headers[name] = value
    for allow_v2 in (False, True):
        try:
            req = parse_request_auth("GET", "/b/k", query, headers, allow_v2=allow_v2)
            verify_request(req, "secret", "GET", "/b/k", query, headers, 0.0, "us-east-1")
        except S3Error:
            pass


@settings(deadline=None, max_examples=200)
@given(middle=header_text, signature=st.sampled_from(["0" * 64, "f" * 64]))
def test_near_valid_authorization(middle: str, signature: str) -> None:
    """An Authorization header with a garbled credential raises only S3Error."""
    headers = {"host": "h", "x-amz-date": "20130524T000000Z",
               "x-amz-content-sha256": hashlib.sha256(b"").hexdigest(),
               "authorization": f"AWS4-HMAC-SHA256 Credential={middle},"
                                f"SignedHeaders=host,Signature={signature}"}
    try:
        req = parse_request_auth("GET", "/", "", headers)
        verify_request(req, "secret", "GET", "/", "", headers, 1369353600.0, "us-east-1")
    except S3Error:
        pass
    assert len(signing_key("s", "20130524", "us-east-1")) == 32


@settings(deadline=None, max_examples=300)
@given(body=st.binary(max_size=300) | st.text(max_size=200).map(lambda t: (
    "<Delete><Object><Key>" + t + "</Key></Object></Delete>").encode("utf-8", "replace")))
def test_xml_parsers_on_garbage(body: bytes) -> None:
    """Garbage XML bodies raise only S3Error."""
    for parser in (xmlio.parse_delete, xmlio.parse_create_bucket,
                   xmlio.parse_complete_multipart_upload):
        try:
            parser(body)
        except S3Error:
            pass


@settings(deadline=None, max_examples=300)
@given(text=st.text(max_size=80))
def test_key_and_bucket_rules_on_any_text(text: str) -> None:
    """Any text is either a valid key/bucket or an S3Error; a valid key joins back to itself."""
    try:
        dirs, leaf, marker = split_key(text)
        assert "/".join([*dirs, leaf]) == text and marker == text.endswith("/")
    except S3Error:
        pass
    try:
        check_bucket_name(text)
    except S3Error:
        pass


@settings(deadline=None, max_examples=200)
@given(text=st.text(max_size=300))
def test_accounts_parser_on_any_text(text: str) -> None:
    """Any accounts-file text parses or raises AccountsError."""
    try:
        parse_accounts(text)
    except AccountsError:
        pass

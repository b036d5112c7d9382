"""The ``aws-chunked`` body decoder of the S3 gateway (``tahoe.s3.chunked``)."""
from __future__ import annotations

import base64
import datetime
import hashlib
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.s3.chunked import ChunkedDecoder, ChunkSigner
from tahoe.s3.errors import S3Error
from tahoe.s3.sigv4 import (chunk_signature, parse_request_auth, signing_key,
                            trailer_signature, verify_request)
from tests.vectors import load

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
AMZ_DATE = "20130524T000000Z"
SCOPE = "20130524/us-east-1/s3/aws4_request"
KEY = signing_key(AWS_SECRET, "20130524", "us-east-1")
SEED = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
CRC = "x-amz-checksum-crc32"


def crc32_b64(data: bytes) -> str:
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


def unsigned_body(chunks: list[bytes], trailers: dict[str, str] | None = None) -> bytes:
    """An unsigned aws-chunked body (as botocore frames one)."""
    out = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks if c)
    out += b"0\r\n"
    out += b"".join(f"{n}:{v}\r\n".encode() for n, v in (trailers or {}).items())
    return out + b"\r\n"


def signed_body(chunks: list[bytes], trailers: dict[str, str] | None = None,
                seed: str = SEED) -> bytes:
    """A signed aws-chunked body with chained chunk signatures (and a signed trailer)."""
    previous, out = seed, b""
    for data in [c for c in chunks if c] + [b""]:
        previous = chunk_signature(KEY, AMZ_DATE, SCOPE, previous,
                                   hashlib.sha256(data).hexdigest())
        out += b"%x;chunk-signature=%s\r\n" % (len(data), previous.encode())
        if data:
            out += data + b"\r\n"
    if not trailers:
        return out + b"\r\n"
    canonical = "".join(f"{n}:{trailers[n]}\n" for n in sorted(trailers)).encode()
    out += b"".join(f"{n}:{v}\r\n".encode() for n, v in trailers.items())
    signature = trailer_signature(KEY, AMZ_DATE, SCOPE, previous, canonical)
    return out + f"x-amz-trailer-signature:{signature}\r\n\r\n".encode()


def decoder(signed: bool, trailers: tuple[str, ...] = (), length: int | None = None,
            seed: str = SEED) -> ChunkedDecoder:
    signer = ChunkSigner(KEY, AMZ_DATE, SCOPE, seed) if signed else None
    return ChunkedDecoder(signer, trailers, length)


def decode(dec: ChunkedDecoder, body: bytes, step: int | None = None) -> tuple[bytes, dict]:
    step = step or len(body) or 1
    out = b"".join(dec.feed(body[i:i + step]) for i in range(0, len(body), step))
    return out, dec.finish()


def failure(dec: ChunkedDecoder, body: bytes) -> S3Error:
    with pytest.raises(S3Error) as info:
        decode(dec, body)
    return info.value


# ---------------------------------------------------------------- AWS's example

def test_aws_chunked_upload_example_end_to_end() -> None:
    """AWS's published chunked PUT: the seed signature verifies and the body decodes."""
    headers = {
        "host": "s3.amazonaws.com", "x-amz-date": AMZ_DATE,
        "x-amz-storage-class": "REDUCED_REDUNDANCY", "content-encoding": "aws-chunked",
        "content-length": "66824", "x-amz-decoded-content-length": "66560",
        "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
        "authorization": "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/"
        "us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;"
        "x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,"
        f"Signature={SEED}"}
    path = "/examplebucket/chunkObject.txt"
    req = parse_request_auth("PUT", path, "", headers)
    now = datetime.datetime(2013, 5, 24, tzinfo=datetime.timezone.utc).timestamp()
    key = verify_request(req, AWS_SECRET, "PUT", path, "", headers, now, "us-east-1")
    assert req.streaming and key == KEY
    body = (b"10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
            b"\r\n" + b"a" * 65536 + b"\r\n"
            b"400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
            b"\r\n" + b"a" * 1024 + b"\r\n"
            b"0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
            b"\r\n\r\n")
    assert len(body) == 66824
    dec = ChunkedDecoder(ChunkSigner(key, req.amz_date, req.credential.scope, req.signature),
                         (), 66560)
    assert decode(dec, body, step=1000) == (b"a" * 66560, {})
    assert body == signed_body([b"a" * 65536, b"a" * 1024])


# ---------------------------------------------------------------- botocore's bodies

CAPTURED = load("s3/botocore-https-aws-chunked.json")


@pytest.mark.parametrize("case", CAPTURED["requests"], ids=lambda c: c["name"])
def test_botocore_unsigned_trailer_bodies(case: dict) -> None:
    """What boto3 sends over https verifies and decodes; the trailer holds the checksum."""
    headers = {**case["headers"], "host": "127.0.0.1:3458"}
    req = parse_request_auth(case["method"], case["path"], case["query"], headers)
    now = datetime.datetime.strptime(req.amz_date, "%Y%m%dT%H%M%SZ") \
        .replace(tzinfo=datetime.timezone.utc).timestamp()
    verify_request(req, CAPTURED["secret"], case["method"], case["path"], case["query"],
                   headers, now, CAPTURED["region"])
    assert req.payload_hash == "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
    body = base64.b64decode(case["body_b64"])
    length = int(headers["x-amz-decoded-content-length"])
    for step in (1, 7, len(body)):
        dec = ChunkedDecoder(None, (headers["x-amz-trailer"],), length)
        data, trailers = decode(dec, body, step)
        assert len(data) == length and list(trailers) == [headers["x-amz-trailer"]]
    algorithm = headers["x-amz-trailer"].removeprefix("x-amz-checksum-")
    digest = {"crc32": lambda d: zlib.crc32(d).to_bytes(4, "big"),
              "sha1": lambda d: hashlib.sha1(d).digest(),
              "sha256": lambda d: hashlib.sha256(d).digest()}[algorithm](data)
    assert trailers[headers["x-amz-trailer"]] == base64.b64encode(digest).decode()


# ---------------------------------------------------------------- round trips

payloads = st.lists(st.binary(min_size=1, max_size=300), max_size=6)


@settings(deadline=None, max_examples=80)
@given(chunks=payloads, signed=st.booleans(), with_trailer=st.booleans(),
       cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=12))
def test_any_framing_fed_in_any_pieces_decodes(chunks: list[bytes], signed: bool,
                                               with_trailer: bool, cuts: list[int]) -> None:
    """Signed or not, with a trailer or not, cut anywhere: the payload comes back whole."""
    payload = b"".join(chunks)
    trailers = {CRC: crc32_b64(payload)} if with_trailer else None
    body = (signed_body if signed else unsigned_body)(chunks, trailers)
    dec = decoder(signed, (CRC,) if with_trailer else (), len(payload))
    points = sorted({min(c, len(body)) for c in cuts} | {0, len(body)})
    out = b"".join(dec.feed(body[a:b]) for a, b in zip(points, points[1:]))
    assert out == payload and dec.decoded == len(payload)
    assert dec.finish() == (trailers or {})


def test_byte_by_byte_and_big_chunks() -> None:
    """A 1 MiB chunk fed whole and a body fed byte by byte both decode."""
    big = bytes(range(256)) * 4096
    assert decode(decoder(True, (), len(big)), signed_body([big]))[0] == big
    small = [b"abc", b"defgh", b"i"]
    body = unsigned_body(small, {CRC: crc32_b64(b"abcdefghi")})
    assert decode(decoder(False, (CRC,)), body, step=1) == (b"abcdefghi",
                                                            {CRC: crc32_b64(b"abcdefghi")})


def test_empty_payload() -> None:
    """A body of only the final chunk decodes to nothing."""
    assert decode(decoder(True, (), 0), signed_body([])) == (b"", {})
    assert decode(decoder(False, (), 0), b"0\r\n\r\n") == (b"", {})


# ---------------------------------------------------------------- refusals

def test_every_truncation_is_incomplete_body() -> None:
    """A body cut anywhere before its last byte is IncompleteBody at finish (or fails earlier)."""
    for signed in (False, True):
        body = (signed_body if signed else unsigned_body)([b"hello", b"world"],
                                                           {CRC: crc32_b64(b"helloworld")})
        for cut in range(len(body) - 2):
            dec = decoder(signed, (CRC,), 10)
            dec.feed(body[:cut])
            with pytest.raises(S3Error) as info:
                dec.finish()
            assert info.value.code in ("IncompleteBody", "MalformedTrailerError")
            assert info.value.status == 400
        dec = decoder(signed, (CRC,), 10)
        dec.feed(body[:-2])
        assert dec.finish() == {CRC: crc32_b64(b"helloworld")}  # final empty line left out


def test_truncated_before_the_trailer_is_refused() -> None:
    """A body cut right after the final chunk lacks its announced trailer."""
    dec = decoder(False, (CRC,), 5)
    dec.feed(b"5\r\nhello\r\n0\r\n")
    with pytest.raises(S3Error) as info:
        dec.finish()
    assert info.value.code == "MalformedTrailerError"


@pytest.mark.parametrize("body", [
    b"zz\r\nab\r\n0\r\n\r\n", b"-2\r\nab\r\n0\r\n\r\n", b"\r\nab\r\n0\r\n\r\n",
    b" 2\r\nab\r\n0\r\n\r\n", b"2 \r\nab\r\n0\r\n\r\n", b"0x2\r\nab\r\n0\r\n\r\n",
    b"10000000000000000\r\n", b"2\nab\r\n0\r\n\r\n", b"2\r\nabc\r\n0\r\n\r\n",
    b"2\r\nab\n0\r\n\r\n", b"2\r\nab\r\n0\r\n\r\nextra",
], ids=["not-hex", "negative", "empty", "leading-space", "trailing-space", "0x", "17-digits",
        "bare-lf", "data-too-long", "data-lf", "bytes-after-end"])
def test_bad_framing_is_refused(body: bytes) -> None:
    """Malformed sizes and line ends are InvalidRequest naming the problem."""
    error = failure(decoder(False), body)
    assert error.code == "InvalidRequest" and "aws-chunked" in error.message


def test_over_long_chunk_header_is_refused_early() -> None:
    """A chunk header that never ends is refused once past the limit, not buffered."""
    dec = ChunkedDecoder(None, (), None, max_chunk_header=100)
    with pytest.raises(S3Error, match="longer than 100"):
        for _ in range(1000):
            dec.feed(b"1" * 7)
    signed = decoder(True)
    with pytest.raises(S3Error, match="longer than 4096"):
        signed.feed(b"1;chunk-signature=" + b"a" * 5000)


def test_decoded_length_mismatches() -> None:
    """More payload than x-amz-decoded-content-length fails at once; less fails at finish."""
    body = unsigned_body([b"abcdef"])
    assert "decoded-content-length" in failure(decoder(False, length=5), body).message
    error = failure(decoder(False, length=7), body)
    assert error.code == "IncompleteBody" and "6 bytes" in error.message


def test_signed_chunks_are_checked() -> None:
    """A changed byte, a changed seed, reordered chunks or a missing signature fail."""
    body = signed_body([b"first chunk", b"second chunk"])
    tampered = body.replace(b"second", b"sEcond")
    assert failure(decoder(True), tampered).code == "SignatureDoesNotMatch"
    assert failure(decoder(True, seed="0" * 64), body).code == "SignatureDoesNotMatch"
    swapped = signed_body([b"second chunk", b"first chunk"])
    assert decode(decoder(True), swapped)[0] == b"second chunkfirst chunk"
    parts = body.split(b"\r\n")
    reordered = b"\r\n".join(parts[2:4] + parts[0:2] + parts[4:])
    assert failure(decoder(True), reordered).code == "SignatureDoesNotMatch"
    unsigned = unsigned_body([b"first chunk"])
    assert failure(decoder(True), unsigned).code == "InvalidRequest"


def test_trailer_rules() -> None:
    """Unannounced, repeated, missing or malformed trailers are MalformedTrailerError."""
    good = {CRC: crc32_b64(b"x")}
    assert failure(decoder(False), unsigned_body([b"x"], good)).code == "MalformedTrailerError"
    assert failure(decoder(False, (CRC,)), unsigned_body([b"x"])).code == \
        "MalformedTrailerError"
    twice = unsigned_body([b"x"], good).replace(b"\r\n\r\n", b"\r\n" + f"{CRC}:x".encode()
                                                + b"\r\n\r\n")
    assert failure(decoder(False, (CRC,)), twice).code == "MalformedTrailerError"
    assert failure(decoder(False, (CRC,)), b"1\r\nx\r\n0\r\nno colon\r\n\r\n").code == \
        "MalformedTrailerError"
    huge = b"1\r\nx\r\n0\r\n" + (f"{CRC}:" + "A" * 20000).encode() + b"\r\n\r\n"
    assert failure(decoder(False, (CRC,)), huge).code in ("MalformedTrailerError",
                                                          "InvalidRequest")


def test_signed_trailers_are_checked() -> None:
    """A signed trailer verifies; a changed value or a missing signature fails."""
    trailers = {"x-amz-checksum-crc32c": "sOO8/Q=="}
    body = signed_body([b"a" * 100], trailers)
    assert decode(decoder(True, ("x-amz-checksum-crc32c",)), body, 3) == (b"a" * 100,
                                                                         trailers)
    changed = body.replace(b"sOO8/Q==", b"sOO8/R==")
    assert failure(decoder(True, ("x-amz-checksum-crc32c",)), changed).code == \
        "SignatureDoesNotMatch"
    two = {"x-amz-checksum-sha1": "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=", "x-amz-checksum-crc32": "Ag=="}
    assert decode(decoder(True, tuple(two)), signed_body([b"abc"], two))[1] == two
    cut = body[:body.index(b"x-amz-trailer-signature")] + b"\r\n"
    assert failure(decoder(True, ("x-amz-checksum-crc32c",)), cut).code == \
        "MalformedTrailerError"

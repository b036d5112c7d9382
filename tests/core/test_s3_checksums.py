"""Body digests of the S3 gateway (``tahoe.s3.checksums``)."""
from __future__ import annotations

import base64
import hashlib

import pytest
from botocore.httpchecksum import Crc32Checksum, Sha1Checksum, Sha256Checksum
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.s3.checksums import (BodyDigests, composite_checksum, multipart_etag,
                                requested_algorithms, verify, verify_payload_hash)
from tahoe.s3.errors import S3Error
from tests.vectors import load

CHECK = b"123456789"


def b64(number: int) -> str:
    return base64.b64encode(number.to_bytes(4, "big")).decode()


def digests_of(data: bytes, algorithms: tuple[str, ...] = ("CRC32", "CRC32C", "SHA1",
                                                            "SHA256"),
               pieces: int = 1) -> BodyDigests:
    digests = BodyDigests(algorithms, sha256=True)
    step = max(1, len(data) // pieces)
    for i in range(0, len(data), step):
        digests.update(data[i:i + step])
    return digests


def test_standard_check_values() -> None:
    """The CRCs of '123456789' are the catalogued check values (CRC-32, CRC-32C)."""
    digests = digests_of(CHECK)
    assert digests.checksum_b64("CRC32") == b64(0xCBF43926)
    assert digests.checksum_b64("crc32c") == b64(0xE3069283)
    assert digests.md5_hex() == hashlib.md5(CHECK).hexdigest()
    assert digests.size == 9


@settings(deadline=None, max_examples=50)
@given(data=st.binary(max_size=2000), pieces=st.integers(min_value=1, max_value=20))
def test_digests_match_botocore_however_fed(data: bytes, pieces: int) -> None:
    """CRC32, SHA1 and SHA256 equal botocore's own checksum classes, whatever the pieces."""
    digests = digests_of(data, pieces=pieces)
    for algorithm, reference in [("CRC32", Crc32Checksum), ("SHA1", Sha1Checksum),
                                 ("SHA256", Sha256Checksum)]:
        expected = reference()
        expected.update(data)
        assert digests.checksum_b64(algorithm) == base64.b64encode(expected.digest()).decode()
    assert digests.sha256_hex() == hashlib.sha256(data).hexdigest()
    assert digests.md5_b64() == base64.b64encode(hashlib.md5(data).digest()).decode()


@pytest.mark.parametrize("case", load("s3/botocore-http-requests.json")["requests"],
                         ids=lambda c: c["name"])
def test_botocore_header_checksums_verify(case: dict) -> None:
    """The checksum headers boto3 sent verify against the body it sent."""
    head = case["head"].split("\r\n")[1:]
    headers = {line.split(":", 1)[0].lower(): line.split(":", 1)[1].strip() for line in head}
    body = base64.b64decode(case["body_b64"])
    algorithms = requested_algorithms(headers)
    assert len(algorithms) == 1
    digests = BodyDigests(algorithms, sha256=True)
    digests.update(body)
    verify(headers, digests)
    verify_payload_hash(headers["x-amz-content-sha256"], digests)
    name = f"x-amz-checksum-{algorithms[0].lower()}"
    wrong = BodyDigests(algorithms)
    wrong.update(body + b"!")
    with pytest.raises(S3Error) as info:
        verify(headers, wrong)
    assert info.value.code == "BadDigest" and algorithms[0] in info.value.message
    assert headers[name] == digests.checksums()[algorithms[0]]


def test_requested_algorithms_sources() -> None:
    """Algorithms come from checksum headers, the SDK header and the trailer, once each."""
    assert requested_algorithms({}) == ()
    assert requested_algorithms({"x-amz-checksum-crc32": "AAAAAA==",
                                 "x-amz-sdk-checksum-algorithm": "CRC32"}) == ("CRC32",)
    assert requested_algorithms({"x-amz-trailer": "x-amz-checksum-crc32c",
                                 "x-amz-sdk-checksum-algorithm": "crc32c"}) == ("CRC32C",)
    assert requested_algorithms({"x-amz-checksum-sha256": "x", "x-amz-checksum-type":
                                 "FULL_OBJECT", "x-amz-checksum-mode": "ENABLED"}) == \
        ("SHA256",)


def test_unknown_and_unsupported_algorithms() -> None:
    """An unknown algorithm is InvalidRequest; CRC64NVME is NotImplemented (501)."""
    with pytest.raises(S3Error) as info:
        requested_algorithms({"x-amz-sdk-checksum-algorithm": "MD4"})
    assert info.value.code == "InvalidRequest"
    with pytest.raises(S3Error) as info:
        requested_algorithms({"x-amz-checksum-crc64nvme": "AAAAAAAAAAA="})
    assert (info.value.code, info.value.status) == ("NotImplemented", 501)
    with pytest.raises(S3Error):
        requested_algorithms({"x-amz-trailer": "x-amz-meta-foo"})


def test_content_md5() -> None:
    """A right Content-MD5 passes; a wrong one is BadDigest; a malformed one InvalidDigest."""
    digests = digests_of(b"hello")
    good = base64.b64encode(hashlib.md5(b"hello").digest()).decode()
    verify({"content-md5": good}, digests)
    with pytest.raises(S3Error) as info:
        verify({"content-md5": base64.b64encode(hashlib.md5(b"hellO").digest()).decode()},
               digests)
    assert (info.value.code, info.value.status) == ("BadDigest", 400)
    for malformed in ["not base64!", base64.b64encode(b"short").decode(), "",
                      hashlib.md5(b"hello").hexdigest()]:
        with pytest.raises(S3Error) as info:
            verify({"content-md5": malformed}, digests)
        assert info.value.code == "InvalidDigest"


def test_checksum_value_shape_and_announcement() -> None:
    """A checksum of the wrong size is InvalidRequest; an unannounced one too."""
    digests = digests_of(b"x", ("CRC32",))
    with pytest.raises(S3Error, match="x-amz-checksum-crc32 header is invalid"):
        verify({"x-amz-checksum-crc32": "AAAA"}, digests)
    with pytest.raises(S3Error, match="not announced"):
        verify({"x-amz-checksum-sha1": base64.b64encode(b"\0" * 20).decode()}, digests)


def test_payload_hash() -> None:
    """A hex x-amz-content-sha256 must match the body; the special values pass."""
    digests = digests_of(b"body")
    verify_payload_hash(hashlib.sha256(b"body").hexdigest(), digests)
    verify_payload_hash("UNSIGNED-PAYLOAD", digests)
    verify_payload_hash("STREAMING-UNSIGNED-PAYLOAD-TRAILER", digests)
    with pytest.raises(S3Error) as info:
        verify_payload_hash("0" * 64, digests)
    assert info.value.code == "XAmzContentSHA256Mismatch"
    assert info.value.extra["S3ComputedContentSHA256"] == hashlib.sha256(b"body").hexdigest()


def test_multipart_etag_and_composite_checksum() -> None:
    """Multipart ETag and checksum: digest of the parts' binary digests, then -N."""
    parts = [b"a" * 10, b"b" * 20, b"c"]
    md5s = [hashlib.md5(p).hexdigest() for p in parts]
    expected = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest()
    assert multipart_etag(md5s) == f"{expected}-3"
    sha = [base64.b64encode(hashlib.sha256(p).digest()).decode() for p in parts]
    inner = hashlib.sha256(b"".join(hashlib.sha256(p).digest() for p in parts)).digest()
    assert composite_checksum("SHA256", sha) == base64.b64encode(inner).decode() + "-3"
    crcs = [digests_of(p, ("CRC32",)).checksum_b64("CRC32") for p in parts]
    joined = b"".join(base64.b64decode(c) for c in crcs)
    assert composite_checksum("CRC32", crcs) == \
        digests_of(joined, ("CRC32",)).checksum_b64("CRC32") + "-3"
    with pytest.raises(S3Error):
        composite_checksum("CRC32", ["AAAA"])

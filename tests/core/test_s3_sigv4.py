"""Signature Version 4 checks of the S3 gateway (``tahoe.s3.sigv4``).

Signatures come from three independent places: AWS's published examples
(S3 API reference, "Signature Calculations for the Authorization Header" and
"Authenticating Requests: Using Query Parameters"), the real botocore signers
(``S3SigV4Auth`` and ``S3SigV4QueryAuth``), and hand-built negative cases.
"""
from __future__ import annotations

import datetime
import hashlib
from collections.abc import Mapping

import boto3
import pytest
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.s3.errors import S3Error
from tahoe.s3.sigv4 import (EMPTY_SHA256, SignedRequest, chunk_signature, parse_request_auth,
                            percent_decode, signing_key, uri_encode, verify_request)
from tests.vectors import load

# AWS's example credentials, published in the S3 SigV4 documentation.
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
AWS_NOW = datetime.datetime(2013, 5, 24, tzinfo=datetime.timezone.utc).timestamp()

KEY = "GKTESTACCESSKEY00001"
SECRET = "test-secret-0123456789abcdefghijklmnopqrstuv"
HOST = "127.0.0.1:3458"


def check(method: str, path: str, query: str, headers: Mapping[str, str], now: float,
          secret: str = AWS_SECRET, region: str = "us-east-1") -> SignedRequest:
    """Parse and verify; the parsed request."""
    req = parse_request_auth(method, path, query, headers)
    verify_request(req, secret, method, path, query, headers, now, region)
    return req


def refusal(method: str, path: str, query: str, headers: Mapping[str, str], now: float,
            secret: str = AWS_SECRET, region: str = "us-east-1") -> S3Error:
    with pytest.raises(S3Error) as info:
        check(method, path, query, headers, now, secret, region)
    return info.value


def aws_auth(signed_headers: str, signature: str) -> str:
    return (f"AWS4-HMAC-SHA256 Credential={AWS_KEY}/20130524/us-east-1/s3/aws4_request,"
            f"SignedHeaders={signed_headers},Signature={signature}")


# ---------------------------------------------------------------- AWS's examples

AWS_GET = {
    "host": "examplebucket.s3.amazonaws.com", "range": "bytes=0-9",
    "x-amz-content-sha256": EMPTY_SHA256, "x-amz-date": "20130524T000000Z",
    "authorization": aws_auth("host;range;x-amz-content-sha256;x-amz-date",
                              "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"),
}
AWS_PUT = {
    "host": "examplebucket.s3.amazonaws.com", "date": "Fri, 24 May 2013 00:00:00 GMT",
    "x-amz-date": "20130524T000000Z", "x-amz-storage-class": "REDUCED_REDUNDANCY",
    "x-amz-content-sha256": hashlib.sha256(b"Welcome to Amazon S3.").hexdigest(),
    "authorization": aws_auth("date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
                              "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"),
}
AWS_LIFECYCLE = {
    "host": "examplebucket.s3.amazonaws.com", "x-amz-date": "20130524T000000Z",
    "x-amz-content-sha256": EMPTY_SHA256,
    "authorization": aws_auth("host;x-amz-content-sha256;x-amz-date",
                              "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"),
}
AWS_LIST = {
    "host": "examplebucket.s3.amazonaws.com", "x-amz-date": "20130524T000000Z",
    "x-amz-content-sha256": EMPTY_SHA256,
    "authorization": aws_auth("host;x-amz-content-sha256;x-amz-date",
                              "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"),
}
AWS_PRESIGNED_QUERY = (
    "X-Amz-Algorithm=AWS4-HMAC-SHA256"
    "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
    "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
    "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")


@pytest.mark.parametrize("method,path,query,headers", [
    ("GET", "/test.txt", "", AWS_GET),
    ("PUT", "/test%24file.text", "", AWS_PUT),
    ("GET", "/", "lifecycle", AWS_LIFECYCLE),
    ("GET", "/", "max-keys=2&prefix=J", AWS_LIST),
    ("GET", "/test.txt", AWS_PRESIGNED_QUERY, {"host": "examplebucket.s3.amazonaws.com"}),
], ids=["get-object", "put-object", "get-lifecycle", "list-objects", "presigned-get"])
def test_aws_published_examples_verify(method: str, path: str, query: str,
                                       headers: Mapping[str, str]) -> None:
    """Each of AWS's published example requests verifies with AWS's example secret."""
    req = check(method, path, query, headers, AWS_NOW)
    assert req.credential.access_key == AWS_KEY and req.amz_date == "20130524T000000Z"


def test_aws_put_example_path_may_arrive_unencoded() -> None:
    """A '$' sent literally in the path is canonicalised as %24 (decode, encode once)."""
    check("PUT", "/test$file.text", "", AWS_PUT, AWS_NOW)


def test_aws_chunked_example_seed_and_chunks() -> None:
    """AWS's chunked-upload example: our chunk signatures chain as published."""
    key = signing_key(AWS_SECRET, "20130524", "us-east-1", "s3")
    scope = "20130524/us-east-1/s3/aws4_request"
    previous = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
    expected = ["ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
                "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
                "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"]
    for data, signature in zip([b"a" * 65536, b"a" * 1024, b""], expected):
        previous = chunk_signature(key, "20130524T000000Z", scope, previous,
                                   hashlib.sha256(data).hexdigest())
        assert previous == signature


@pytest.mark.parametrize("name,value", [("range", "bytes=0-8"),
                                        ("host", "otherbucket.s3.amazonaws.com"),
                                        ("x-amz-content-sha256", "0" * 64)])
def test_aws_example_with_a_tampered_header_fails(name: str, value: str) -> None:
    """Changing any signed header breaks the signature (SignatureDoesNotMatch, 403)."""
    error = refusal("GET", "/test.txt", "", {**AWS_GET, name: value}, AWS_NOW)
    assert (error.code, error.status) == ("SignatureDoesNotMatch", 403)
    assert error.extra["AWSAccessKeyId"] == AWS_KEY
    assert AWS_SECRET not in repr(error.extra)


def test_aws_example_other_path_method_query_fail() -> None:
    """The path, the method and the query are all signed."""
    assert refusal("GET", "/test.tx", "", AWS_GET, AWS_NOW).code == "SignatureDoesNotMatch"
    assert refusal("HEAD", "/test.txt", "", AWS_GET, AWS_NOW).code == "SignatureDoesNotMatch"
    assert refusal("GET", "/test.txt", "acl", AWS_GET, AWS_NOW).code == "SignatureDoesNotMatch"


def test_wrong_secret_fails() -> None:
    """Another secret gives another signature."""
    error = refusal("GET", "/test.txt", "", AWS_GET, AWS_NOW, secret=SECRET)
    assert error.code == "SignatureDoesNotMatch"
    assert error.extra["StringToSign"].startswith("AWS4-HMAC-SHA256\n20130524T000000Z\n")


def test_skew_window() -> None:
    """Header-form requests within 15 minutes pass; beyond, RequestTimeTooSkewed (403)."""
    check("GET", "/test.txt", "", AWS_GET, AWS_NOW + 900)
    check("GET", "/test.txt", "", AWS_GET, AWS_NOW - 900)
    error = refusal("GET", "/test.txt", "", AWS_GET, AWS_NOW + 901)
    assert (error.code, error.status) == ("RequestTimeTooSkewed", 403)
    assert error.extra == {"RequestTime": "20130524T000000Z",
                           "ServerTime": "2013-05-24T00:15:01Z",
                           "MaxAllowedSkewMilliseconds": "900000"}
    assert refusal("GET", "/test.txt", "", AWS_GET, AWS_NOW - 3600).code == \
        "RequestTimeTooSkewed"


def test_presigned_expiry() -> None:
    """A presigned URL is good until X-Amz-Expires seconds after X-Amz-Date, then AccessDenied."""
    headers = {"host": "examplebucket.s3.amazonaws.com"}
    req = check("GET", "/test.txt", AWS_PRESIGNED_QUERY, headers, AWS_NOW + 86400)
    assert req.presigned and req.expires == 86400 and req.payload_hash == "UNSIGNED-PAYLOAD"
    error = refusal("GET", "/test.txt", AWS_PRESIGNED_QUERY, headers, AWS_NOW + 86401)
    assert (error.code, error.message) == ("AccessDenied", "Request has expired")
    assert error.extra["Expires"] == "2013-05-25T00:00:00Z"
    future = refusal("GET", "/test.txt", AWS_PRESIGNED_QUERY, headers, AWS_NOW - 3600)
    assert future.code == "AccessDenied"


def test_wrong_region_and_service() -> None:
    """A scope for another region or service is AuthorizationHeaderMalformed naming ours."""
    error = refusal("GET", "/test.txt", "", AWS_GET, AWS_NOW, region="eu-west-1")
    assert (error.code, error.status) == ("AuthorizationHeaderMalformed", 400)
    assert error.extra == {"Region": "eu-west-1"} and "'us-east-1' is wrong" in error.message
    ec2 = {**AWS_GET, "authorization": AWS_GET["authorization"].replace("/s3/", "/ec2/")}
    assert "incorrect service" in refusal("GET", "/test.txt", "", ec2, AWS_NOW).message
    presigned = refusal("GET", "/test.txt", AWS_PRESIGNED_QUERY,
                        {"host": "examplebucket.s3.amazonaws.com"}, AWS_NOW, region="eu-west-1")
    assert presigned.code == "AuthorizationQueryParametersError"


def test_credential_date_must_match_request_date() -> None:
    """The scope's day must be the day of x-amz-date."""
    headers = {**AWS_GET, "authorization": AWS_GET["authorization"].replace("20130524/",
                                                                             "20130523/")}
    assert "credential date" in refusal("GET", "/test.txt", "", headers, AWS_NOW).message


# ---------------------------------------------------------------- parsing refusals

def parse_refusal(headers: Mapping[str, str], query: str = "") -> S3Error:
    with pytest.raises(S3Error) as info:
        parse_request_auth("GET", "/b/k", query, headers)
    return info.value


def test_anonymous_is_access_denied() -> None:
    """No Authorization and no X-Amz-Algorithm: AccessDenied (403)."""
    error = parse_refusal({"host": HOST})
    assert (error.code, error.status) == ("AccessDenied", 403)


def test_signature_v2_is_refused_clearly() -> None:
    """SigV2 headers and query strings are told that only AWS4-HMAC-SHA256 is supported."""
    error = parse_refusal({"host": HOST, "authorization": "AWS AKID:c2lnbmF0dXJl"})
    assert error.code == "InvalidRequest" and "AWS4-HMAC-SHA256" in error.message
    error = parse_refusal({"host": HOST},
                          "AWSAccessKeyId=AKID&Expires=1700000000&Signature=abc%3D")
    assert error.code == "InvalidRequest" and "signature_version='s3v4'" in error.message


def test_boto3_default_presigned_url_is_refused_with_a_hint() -> None:
    """boto3's generate_presigned_url without s3v4 config makes a SigV2 URL: refused, with a hint."""
    options = dict(endpoint_url="http://127.0.0.1:3458", region_name="us-east-1",
                   aws_access_key_id=KEY, aws_secret_access_key=SECRET)
    url = boto3.client("s3", **options).generate_presigned_url(
        "get_object", Params={"Bucket": "b", "Key": "k"}, ExpiresIn=60)
    query = url.partition("?")[2]
    assert "Signature=" in query and "X-Amz-Algorithm" not in query
    assert "s3v4" in parse_refusal({"host": HOST}, query).message
    url = boto3.client("s3", config=Config(signature_version="s3v4"), **options) \
        .generate_presigned_url("get_object", Params={"Bucket": "b", "Key": "k"}, ExpiresIn=60)
    path, _, query = url.partition("127.0.0.1:3458")[2].partition("?")
    req = parse_request_auth("GET", path, query, {"host": HOST})
    signed_at = now_of({"x-amz-date": req.amz_date})
    verify_request(req, SECRET, "GET", path, query, {"host": HOST}, signed_at, "us-east-1")


@pytest.mark.parametrize("authorization", [
    "AWS4-HMAC-SHA256",
    "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request",
    "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3,SignedHeaders=host,"
    "Signature=" + "0" * 64,
    "AWS4-HMAC-SHA256 Credential=AKID/2013-05-24/us-east-1/s3/aws4_request,"
    "SignedHeaders=host,Signature=" + "0" * 64,
    "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request,"
    "SignedHeaders=range,Signature=" + "0" * 64,
    "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request,"
    "SignedHeaders=Host,Signature=" + "0" * 64,
    "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request,"
    "SignedHeaders=host,Signature=xyz",
    "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request,"
    "SignedHeaders=host,Signature=" + "0" * 64 + ",Extra=1",
    "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request,"
    "Credential=X,SignedHeaders=host",
], ids=["no-fields", "missing-fields", "short-credential", "bad-date", "host-unsigned",
        "upper-case-header", "bad-signature", "extra-field", "repeated-field"])
def test_malformed_authorization_headers(authorization: str) -> None:
    """A malformed V4 header is AuthorizationHeaderMalformed (400)."""
    error = parse_refusal({"host": HOST, "authorization": authorization,
                           "x-amz-date": "20130524T000000Z",
                           "x-amz-content-sha256": EMPTY_SHA256})
    assert (error.code, error.status) == ("AuthorizationHeaderMalformed", 400)


def test_other_header_refusals() -> None:
    """Unknown schemes, a missing payload hash, a bad payload hash and a missing date."""
    good = AWS_GET["authorization"]
    assert parse_refusal({"host": HOST, "authorization": "Bearer x"}).code == "InvalidArgument"
    assert parse_refusal({"host": HOST, "authorization": good,
                          "x-amz-date": "20130524T000000Z"}).code == "InvalidRequest"
    assert parse_refusal({**AWS_GET, "x-amz-content-sha256": "abc"}).code == "InvalidArgument"
    no_date = {k: v for k, v in AWS_GET.items() if k != "x-amz-date"}
    assert parse_refusal(no_date).code == "AccessDenied"
    assert parse_refusal({**AWS_GET, "x-amz-date": "2013-05-24"}).code == "AccessDenied"


@pytest.mark.parametrize("change,message", [
    (("X-Amz-Algorithm=AWS4-HMAC-SHA256", "X-Amz-Algorithm=AWS4-HMAC-SHA1"), "only supports"),
    (("&X-Amz-Expires=86400", ""), "requires"),
    (("X-Amz-Expires=86400", "X-Amz-Expires=604801"), "less than a week"),
    (("X-Amz-Expires=86400", "X-Amz-Expires=-1"), "number"),
    (("X-Amz-Date=20130524T000000Z", "X-Amz-Date=20130524"), "ISO8601"),
    (("%2Faws4_request", "%2Fother"), "Credential"),
])
def test_malformed_presigned_queries(change: tuple[str, str], message: str) -> None:
    """A malformed presigned query is AuthorizationQueryParametersError (400)."""
    query = AWS_PRESIGNED_QUERY.replace(*change)
    assert query != AWS_PRESIGNED_QUERY
    error = parse_refusal({"host": HOST}, query)
    assert (error.code, error.status) == ("AuthorizationQueryParametersError", 400)
    assert message in error.message


def test_both_mechanisms_at_once_are_refused() -> None:
    """A header signature and a query signature together are InvalidArgument."""
    assert parse_refusal(AWS_GET, AWS_PRESIGNED_QUERY).code == "InvalidArgument"


# ---------------------------------------------------------------- botocore's signers

def botocore_request(method: str, url: str, body: bytes = b"",
                     headers: Mapping[str, str] | None = None) -> AWSRequest:
    return AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))


def as_server_sees(request: AWSRequest) -> tuple[str, str, dict[str, str]]:
    """(raw path, raw query, lower-case headers) of a botocore request, as sent."""
    after_host = request.url.split("://", 1)[1]
    target = after_host[after_host.index("/"):]
    path, _, query = target.partition("?")
    headers = {name.lower(): (value.decode() if isinstance(value, bytes) else value)
               for name, value in request.headers.items()}
    headers.setdefault("host", HOST)
    return path, query, headers


def now_of(headers: Mapping[str, str]) -> float:
    return datetime.datetime.strptime(headers["x-amz-date"], "%Y%m%dT%H%M%SZ") \
        .replace(tzinfo=datetime.timezone.utc).timestamp()


def sign_header_form(method: str, url: str, body: bytes = b"",
                     headers: Mapping[str, str] | None = None,
                     secret: str = SECRET) -> tuple[str, str, dict[str, str]]:
    request = botocore_request(method, url, body, headers)
    S3SigV4Auth(Credentials(KEY, secret), "s3", "us-east-1").add_auth(request)
    return as_server_sees(request)


URLS = [
    "http://127.0.0.1:3458/",
    "http://127.0.0.1:3458/bucket",
    "http://127.0.0.1:3458/bucket/a/b/c.txt",
    "http://127.0.0.1:3458/bucket/sp%20ace/%C3%BC%E2%82%AC/%2B%3D%21%24%26%27%28%29",
    "http://127.0.0.1:3458/bucket/k?uploadId=abc%2Fdef&partNumber=3",
    "http://127.0.0.1:3458/bucket?list-type=2&prefix=a%2Fb&delimiter=%2F&encoding-type=url",
    "http://127.0.0.1:3458/bucket?uploads",
    "http://127.0.0.1:3458/bucket?delete",
    "http://127.0.0.1:3458/bucket/k?response-content-type=text%2Fplain%3B%20charset%3Dutf-8",
    "http://127.0.0.1:3458/bucket/tilde~dot.dash-under_score",
]


@pytest.mark.parametrize("url", URLS)
def test_botocore_header_signatures_verify(url: str) -> None:
    """Requests signed by botocore's S3SigV4Auth verify, and the signing key is returned."""
    path, query, headers = sign_header_form("PUT", url, b"payload",
                                            {"Content-Type": "text/plain",
                                             "x-amz-meta-colour": "  blue   green "})
    req = parse_request_auth("PUT", path, query, headers)
    key = verify_request(req, SECRET, "PUT", path, query, headers, now_of(headers),
                         "us-east-1")
    assert key == signing_key(SECRET, req.credential.date, "us-east-1")
    assert req.payload_hash == hashlib.sha256(b"payload").hexdigest()
    assert "x-amz-meta-colour" in req.signed_headers


def test_botocore_signature_with_wrong_secret_and_tampering() -> None:
    """A botocore request fails with another secret, a changed header or path."""
    path, query, headers = sign_header_form("GET", URLS[2], headers={"Range": "bytes=1-2"},
                                            secret="another-secret")
    req = parse_request_auth("GET", path, query, headers)
    with pytest.raises(S3Error, match="SignatureDoesNotMatch"):
        verify_request(req, SECRET, "GET", path, query, headers, now_of(headers), "us-east-1")
    path, query, headers = sign_header_form("GET", URLS[2], headers={"Range": "bytes=1-2"})
    req = parse_request_auth("GET", path, query, headers)
    for changed_path, changed_headers in [(path + "x", headers),
                                          (path, {**headers, "range": "bytes=1-3"})]:
        with pytest.raises(S3Error, match="SignatureDoesNotMatch"):
            verify_request(req, SECRET, "GET", changed_path, query, changed_headers,
                           now_of(headers), "us-east-1")


def test_unsigned_amz_headers_are_refused() -> None:
    """An x-amz-* header added after signing is AccessDenied naming it."""
    path, query, headers = sign_header_form("PUT", URLS[2], b"x")
    headers["x-amz-meta-added"] = "1"
    req = parse_request_auth("PUT", path, query, headers)
    with pytest.raises(S3Error) as info:
        verify_request(req, SECRET, "PUT", path, query, headers, now_of(headers), "us-east-1")
    assert info.value.code == "AccessDenied"
    assert info.value.extra["HeadersNotSigned"] == "x-amz-meta-added"


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("method", ["GET", "PUT"])
def test_botocore_presigned_urls_verify(url: str, method: str) -> None:
    """URLs presigned by botocore's S3SigV4QueryAuth verify until they expire."""
    request = botocore_request(method, url)
    S3SigV4QueryAuth(Credentials(KEY, SECRET), "s3", "us-east-1", expires=600).add_auth(request)
    path, query, headers = as_server_sees(request)
    headers.pop("x-amz-content-sha256", None)
    req = parse_request_auth(method, path, query, headers)
    assert req.presigned and req.expires == 600
    signed_at = now_of({"x-amz-date": req.amz_date})
    verify_request(req, SECRET, method, path, query, headers, signed_at + 600, "us-east-1")
    with pytest.raises(S3Error, match="Request has expired"):
        verify_request(req, SECRET, method, path, query, headers, signed_at + 601,
                       "us-east-1")
    with pytest.raises(S3Error, match="SignatureDoesNotMatch"):
        verify_request(req, SECRET, "DELETE", path, query, headers, signed_at, "us-east-1")


key_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)


@settings(deadline=None, max_examples=60)
@given(key=key_text, value=key_text)
def test_botocore_signs_any_key_and_query_we_verify(key: str, value: str) -> None:
    """For any key text and query value, a botocore-quoted, botocore-signed request verifies."""
    quoted_key = uri_encode(key.encode("utf-8"), keep_slash=True)
    url = (f"http://127.0.0.1:3458/bucket/{quoted_key}"
           f"?prefix={uri_encode(value.encode('utf-8'))}")
    path, query, headers = sign_header_form("GET", url)
    req = parse_request_auth("GET", path, query, headers)
    verify_request(req, SECRET, "GET", path, query, headers, now_of(headers), "us-east-1")
    assert percent_decode(path[len("/bucket/"):]) == key.encode("utf-8")


def test_percent_decode_keeps_stray_percent() -> None:
    """'%' not followed by two hex digits stays literal; '+' is not a space."""
    assert percent_decode("a%2Fb%zz%4") == b"a/b%zz%4"
    assert percent_decode("a+b%20c") == b"a+b c"
    assert uri_encode(b"a/b c~", keep_slash=True) == "a/b%20c~"
    assert uri_encode(b"a/b") == "a%2Fb"


WIRE = load("s3/botocore-http-requests.json")


@pytest.mark.parametrize("case", WIRE["requests"], ids=lambda c: c["name"])
def test_requests_captured_from_the_wire_verify(case: dict) -> None:
    """Requests boto3 really sent to a socket verify, and fail once a header is changed."""
    request_line, *lines = case["head"].split("\r\n")
    method, target, _version = request_line.split(" ")
    path, _, query = target.partition("?")
    headers = {line.split(":", 1)[0].lower(): line.split(":", 1)[1].strip() for line in lines}
    req = check(method, path, query, headers, now_of(headers), secret=WIRE["secret"])
    assert req.credential.access_key == WIRE["access_key"]
    assert "x-amz-sdk-checksum-algorithm" in req.signed_headers
    changed = {**headers, "x-amz-sdk-checksum-algorithm": "CRC32C"}
    assert refusal(method, path, query, changed, now_of(headers),
                   secret=WIRE["secret"]).code == "SignatureDoesNotMatch"

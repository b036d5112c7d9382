"""Signature Version 2 of the S3 gateway (``tahoe.s3.sigv2``), accepted only when allowed:
AWS's published examples, botocore's HmacV1 signers, and boto3's default presigned URLs."""
from __future__ import annotations

import email.utils
from collections.abc import Mapping

import boto3
import pytest
from botocore.auth import HmacV1Auth, HmacV1QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tahoe.s3.errors import S3Error
from tahoe.s3.sigv4 import parse_request_auth, verify_request

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
KEY = "TLTESTACCESSKEY0001"
SECRET = "test-secret-0123456789abcdefghijklmnopqrstuv"
HOST = "127.0.0.1:3458"


def check(method: str, path: str, query: str, headers: Mapping[str, str], now: float,
          secret: str = SECRET, bucket: str | None = None) -> bytes:
    req = parse_request_auth(method, path, query, headers, allow_v2=True)
    assert req.version == 2
    return verify_request(req, secret, method, path, query, headers, now, "us-east-1",
                          virtual_host_bucket=bucket)


def refusal(*args: object, **kwargs: object) -> S3Error:
    with pytest.raises(S3Error) as info:
        check(*args, **kwargs)  # type: ignore[arg-type]
    return info.value


def epoch(date: str) -> float:
    return email.utils.parsedate_to_datetime(date).timestamp()


@pytest.mark.parametrize("method,path,query,headers", [
    ("GET", "/photos/puppy.jpg", "", {"date": "Tue, 27 Mar 2007 19:36:42 +0000",
                                      "authorization": "bWq2s1WEIj+Ydj0vQ697zp+IXMU="}),
    ("PUT", "/photos/puppy.jpg", "", {"date": "Tue, 27 Mar 2007 21:15:45 +0000",
                                      "content-type": "image/jpeg", "content-length": "94328",
                                      "authorization": "MyyxeRY7whkBe+bq8fHCL/2kKUg="}),
    ("GET", "/", "prefix=photos&max-keys=50&marker=puppy",
     {"date": "Tue, 27 Mar 2007 19:42:41 +0000", "user-agent": "Mozilla/5.0",
      "authorization": "htDYFYduRNen8P9ZfE/s9SuKy0U="}),
    ("GET", "/", "acl", {"date": "Tue, 27 Mar 2007 19:44:46 +0000",
                         "authorization": "c2WLPFtWHVgbEmeEG93a4cG37dM="}),
], ids=["get-object", "put-object", "list", "get-acl"])
def test_aws_published_v2_examples(method: str, path: str, query: str,
                                   headers: dict[str, str]) -> None:
    """AWS's Signature Version 2 examples (virtual-host bucket johnsmith) verify."""
    headers = {**headers, "host": "johnsmith.s3.amazonaws.com",
               "authorization": f"AWS {AWS_KEY}:{headers['authorization']}"}
    now = epoch(headers["date"])
    assert check(method, path, query, headers, now, AWS_SECRET, "johnsmith") == b""
    assert refusal(method, path, query, headers, now, AWS_SECRET).code == \
        "SignatureDoesNotMatch"  # the bucket is part of what V2 signs


def test_aws_published_v2_query_example() -> None:
    """AWS's presigned V2 example verifies until its Expires second."""
    query = (f"AWSAccessKeyId={AWS_KEY}&Expires=1175139620"
             "&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D")
    headers = {"host": "johnsmith.s3.amazonaws.com"}
    check("GET", "/photos/puppy.jpg", query, headers, 1175139620, AWS_SECRET, "johnsmith")
    error = refusal("GET", "/photos/puppy.jpg", query, headers, 1175139621, AWS_SECRET,
                    "johnsmith")
    assert (error.code, error.message) == ("AccessDenied", "Request has expired")


def test_v2_is_refused_unless_allowed() -> None:
    """Without allow_v2 both V2 forms are InvalidRequest, as before."""
    for headers, query in [({"authorization": f"AWS {KEY}:{'A' * 27}="}, ""),
                           ({}, f"AWSAccessKeyId={KEY}&Expires=1&Signature=x")]:
        with pytest.raises(S3Error, match="AWS4-HMAC-SHA256"):
            parse_request_auth("GET", "/", query, {"host": HOST, **headers})


def botocore_v2(method: str, url: str, headers: Mapping[str, str] | None = None,
                presign: bool = False) -> tuple[str, str, dict[str, str]]:
    request = AWSRequest(method=method, url=url, headers=dict(headers or {}))
    request.auth_path = None
    signer = (HmacV1QueryAuth(Credentials(KEY, SECRET), expires=300) if presign
              else HmacV1Auth(Credentials(KEY, SECRET)))
    signer.add_auth(request)
    target = request.url.split(HOST, 1)[1]
    path, _, query = target.partition("?")
    sent = {name.lower(): value for name, value in request.headers.items()}
    return path, query, {"host": HOST, **sent}


URLS = [f"http://{HOST}/bucket/a/b.txt", f"http://{HOST}/bucket/sp%20ace/%C3%BC%2B",
        f"http://{HOST}/bucket/k?uploadId=a%2Fb&partNumber=2",
        f"http://{HOST}/bucket?uploads", f"http://{HOST}/bucket?acl",
        f"http://{HOST}/bucket/k?response-content-type=text%2Fplain&x-id=GetObject",
        f"http://{HOST}/bucket?list-type=2&prefix=a%20b"]


@pytest.mark.parametrize("url", URLS)
def test_botocore_v2_header_signatures(url: str) -> None:
    """botocore's HmacV1Auth requests verify, with x-amz-* and Content-Type signed."""
    path, query, headers = botocore_v2("PUT", url, {"Content-Type": "text/plain",
                                                    "x-amz-meta-colour": "blue"})
    now = epoch(headers["date"])
    assert check("PUT", path, query, headers, now) == b""
    for changed in [{"content-type": "text/html"}, {"x-amz-meta-colour": "red"},
                    {"x-amz-meta-added": "1"}]:
        assert refusal("PUT", path, query, {**headers, **changed}, now).code == \
            "SignatureDoesNotMatch"
    assert refusal("PUT", path, query, headers, now, "wrong secret").code == \
        "SignatureDoesNotMatch"
    assert refusal("PUT", path, query, headers, now + 901).code == "RequestTimeTooSkewed"


@pytest.mark.parametrize("url", URLS)
def test_botocore_v2_presigned_urls(url: str) -> None:
    """botocore's HmacV1QueryAuth URLs verify until they expire; the method is signed."""
    path, query, headers = botocore_v2("GET", url, presign=True)
    expires = int(dict(p.split("=", 1) for p in query.split("&") if "=" in p)["Expires"])
    headers.pop("date", None)
    check("GET", path, query, headers, expires)
    assert refusal("GET", path, query, headers, expires + 1).code == "AccessDenied"
    assert refusal("DELETE", path, query, headers, expires).code == "SignatureDoesNotMatch"


def test_boto3_default_presigned_url_verifies_when_allowed() -> None:
    """boto3's default generate_presigned_url (V2) for GET and PUT verifies with allow_v2."""
    client = boto3.client("s3", endpoint_url=f"http://{HOST}", region_name="us-east-1",
                          aws_access_key_id=KEY, aws_secret_access_key=SECRET)
    for method, operation in [("GET", "get_object"), ("PUT", "put_object")]:
        url = client.generate_presigned_url(operation, Params={"Bucket": "b", "Key": "k k"},
                                            ExpiresIn=60)
        path, _, query = url.split(HOST, 1)[1].partition("?")
        expires = int(dict(p.split("=", 1) for p in query.split("&"))["Expires"])
        check(method, path, query, {"host": HOST}, expires - 30)


def test_malformed_v2() -> None:
    """A V2 header without ':' or with a signature that is not base64 SHA-1 is AccessDenied."""
    for authorization in ["AWS nocolon", f"AWS {KEY}:short", "AWS :" + "A" * 27 + "="]:
        with pytest.raises(S3Error) as info:
            parse_request_auth("GET", "/", "", {"host": HOST, "authorization": authorization},
                               allow_v2=True)
        assert info.value.code == "AccessDenied"
    with pytest.raises(S3Error):
        parse_request_auth("GET", "/", f"AWSAccessKeyId={KEY}&Expires=soon&Signature=x",
                           {"host": HOST}, allow_v2=True)
    headers = {"host": HOST, "authorization": f"AWS {KEY}:{'A' * 27}="}
    assert refusal("GET", "/", "", headers, 0).code == "AccessDenied"  # no date

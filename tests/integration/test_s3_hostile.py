"""Hostile requests to the S3 gateway: each gets S3's error code and status, and writes nothing.

Requests are signed as an SDK signs them (botocore's ``S3SigV4Auth`` on an
``AWSRequest``, :mod:`tests.support.s3_raw`) and then tampered with, and sent
over a plain socket: a wrong secret, an unknown access key, a changed
signature or signed header, no signature, an expired presigned URL, a clock
15 minutes off, oversized headers and metadata, malformed or hostile XML
bodies (DeleteObjects, CompleteMultipartUpload), keys a tree cannot hold
(``..``, ``.``, ``//``, NFD, 1,025 bytes, NUL), a body shorter than its
Content-Length (the connection then closed), a longer one (a request
pipelined after it), a payload whose SHA-256 differs from the signed one,
a wrong Content-MD5 or x-amz-checksum-crc32. Each answer is checked
against Amazon S3's documented code and status (the S3 API reference,
"Error responses"); after each, the bucket's listing (and the account's
root directory) shows that nothing was written, and objects already there
are unchanged. The gateway stays up for the next request.
"""
from __future__ import annotations

import base64
import datetime
import hashlib
import unicodedata
import urllib.parse
import xml.etree.ElementTree as ElementTree
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs
import pytest

from tests.integration.conftest import DEFAULT_SHARES
from tests.support.dirapi import WebAPI
from tests.support.proxied_grid import ProxiedGrid
from tests.support.reliability import record_fuzz, record_limit
from tests.support.s3 import S3Node, started_s3_node
from tests.support.s3_raw import Answer, Keys, RawRequest, exchange, presign, send, sign

BUCKET = "hostile"
BOUNDARY = "S3 gateway requests"
_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
#: An object present before the hostile requests, which none of them may change.
KEPT_KEY, KEPT_BODY = "kept/object.txt", b"written before the hostile requests\n"


@pytest.fixture(scope="module")
def node(local_grid: ProxiedGrid, tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Node]:
    """A client with the S3 gateway on the local grid, with one bucket holding one object."""
    with started_s3_node(local_grid, tmp_path_factory.mktemp("s3-hostile"),
                         DEFAULT_SHARES) as started:
        keys = keys_of(started)
        assert send(started.endpoint, sign(keys, started.endpoint, "PUT", f"/{BUCKET}")
                    ).status == 200
        assert put(started, KEPT_KEY, KEPT_BODY).status == 200
        yield started


@pytest.fixture(autouse=True)
def clean_bucket(node: S3Node) -> Iterator[None]:
    """After each test, whatever it left (when it failed) is removed and the kept object
    put back, so that one failure does not fail the tests after it."""
    yield
    for key in listed_keys(node):
        if key != KEPT_KEY:
            send(node.endpoint, sign(keys_of(node), node.endpoint, "DELETE", f"/{BUCKET}/{key}"))
    if get(node, KEPT_KEY).body != KEPT_BODY:
        put(node, KEPT_KEY, KEPT_BODY)


def keys_of(node: S3Node) -> Keys:
    """The node's account keys."""
    return Keys(node.access_key, node.secret_key, node.region)


def put(node: S3Node, key: str, body: bytes, **headers: str) -> Answer:
    """A correctly signed PutObject."""
    return send(node.endpoint, sign(keys_of(node), node.endpoint, "PUT", f"/{BUCKET}/{key}",
                                    body=body, headers=headers))


def listed_keys(node: S3Node) -> list[str]:
    """Every key of the bucket (ListObjectsV2 with ``encoding-type=url``, all pages)."""
    keys: list[str] = []
    token = ""
    while True:
        query = "encoding-type=url&list-type=2" + (
            f"&continuation-token={urllib.parse.quote(token, safe='')}" if token else "")
        answer = send(node.endpoint, sign(keys_of(node), node.endpoint, "GET", f"/{BUCKET}",
                                          query=query))
        assert answer.status == 200, answer
        root = ElementTree.fromstring(answer.body)
        keys += [urllib.parse.unquote(element.text or "")
                 for element in root.iter(f"{_NS}Key")]
        token = root.findtext(f"{_NS}NextContinuationToken") or ""
        if root.findtext(f"{_NS}IsTruncated") != "true":
            return keys


def get(node: S3Node, key: str) -> Answer:
    """A correctly signed GetObject."""
    return send(node.endpoint, sign(keys_of(node), node.endpoint, "GET", f"/{BUCKET}/{key}"))


def assert_nothing_written(node: S3Node, before: list[str] | None = None) -> None:
    """The bucket lists only what it listed before (the kept object by default), that
    object is unchanged, and the account's root holds only the bucket."""
    assert listed_keys(node) == (before if before is not None else [KEPT_KEY])
    kept = get(node, KEPT_KEY)
    assert (kept.status, kept.body) == (200, KEPT_BODY)
    assert sorted(WebAPI(node.gateway.url).children(node.root, "")) == [BUCKET]


def assert_error(answer: Answer, code: str, status: int) -> None:
    """``answer`` is S3's XML error ``code`` with HTTP ``status`` and a request id."""
    assert (answer.status, answer.code) == (status, code), (answer.status, answer.body[:600])
    assert answer.headers.get("content-type", "").startswith("application/xml")
    assert answer.headers.get("x-amz-request-id")
    record_fuzz(BOUNDARY)


def test_wrong_secret_unknown_key_and_changed_signatures(node: S3Node) -> None:
    """A PUT signed with another secret: SignatureDoesNotMatch 403; with an unknown access
    key: InvalidAccessKeyId 403; a signature with one digit changed, or a signed header
    changed after signing: SignatureDoesNotMatch; no signature at all: AccessDenied 403."""
    keys = keys_of(node)
    wrong = Keys(keys.access_key, keys.secret_key[:-1] + ("A" if keys.secret_key[-1] != "A"
                                                          else "B"), keys.region)
    endpoint = node.endpoint
    assert_error(send(endpoint, sign(wrong, endpoint, "PUT", f"/{BUCKET}/a", body=b"x")),
                 "SignatureDoesNotMatch", 403)
    stranger = Keys("AKIANOSUCHKEY0000000", keys.secret_key, keys.region)
    assert_error(send(endpoint, sign(stranger, endpoint, "PUT", f"/{BUCKET}/a", body=b"x")),
                 "InvalidAccessKeyId", 403)
    good = sign(keys, endpoint, "PUT", f"/{BUCKET}/a", body=b"x", headers={"x-amz-meta-n": "1"})
    authorization = good.header("Authorization") or ""
    flipped = authorization[:-1] + ("0" if authorization[-1] != "0" else "1")
    assert_error(send(endpoint, good.replace(set_headers={"Authorization": flipped})),
                 "SignatureDoesNotMatch", 403)
    assert_error(send(endpoint, good.replace(set_headers={"x-amz-meta-n": "2"})),
                 "SignatureDoesNotMatch", 403)
    anonymous = RawRequest("PUT", f"/{BUCKET}/a", (("Host", urllib.parse.urlsplit(
        endpoint).netloc),), b"x")
    assert_error(send(endpoint, anonymous), "AccessDenied", 403)
    # an overwrite of the kept object with a bad signature changes nothing either
    assert_error(send(endpoint, sign(wrong, endpoint, "PUT", f"/{BUCKET}/{KEPT_KEY}",
                                     body=b"replaced")), "SignatureDoesNotMatch", 403)
    assert_nothing_written(node)


def test_removed_account_is_refused(node: S3Node) -> None:
    """An account added while the node runs works at once; once its line is removed from
    the accounts file (the key revoked), its requests get InvalidAccessKeyId 403 without a
    restart, and the other account still works."""
    added = node.add_account()
    other = Keys(added["access_key_id"], added["secret_access_key"], node.region)
    assert send(node.endpoint, sign(other, node.endpoint, "GET", "/")).status == 200
    accounts = node.basedir / "private" / "s3-accounts"
    lines = accounts.read_text().splitlines(keepends=True)
    accounts.write_text("".join(line for line in lines
                                if not line.startswith(other.access_key + " ")))
    assert_error(send(node.endpoint, sign(other, node.endpoint, "GET", "/")),
                 "InvalidAccessKeyId", 403)
    assert send(node.endpoint, sign(keys_of(node), node.endpoint, "GET", "/")).status == 200


def test_expired_presigned_urls_and_clock_skew(node: S3Node) -> None:
    """A presigned GET or PUT signed two hours ago for 60 s: AccessDenied 403 (expired);
    the same URL signed now works. A header signature 20 minutes old or ahead:
    RequestTimeTooSkewed 403; 5 minutes old is inside S3's 15-minute window."""
    keys, endpoint = keys_of(node), node.endpoint
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    old = now - datetime.timedelta(hours=2)
    for method, body in (("GET", b""), ("PUT", b"late")):
        url = presign(keys, endpoint, method, f"/{BUCKET}/{KEPT_KEY}", expires=60, when=old)
        split = urllib.parse.urlsplit(url)
        request = RawRequest(method, f"{split.path}?{split.query}",
                             (("Host", split.netloc),), body)
        assert_error(send(endpoint, request), "AccessDenied", 403)
    fresh = urllib.parse.urlsplit(presign(keys, endpoint, "GET", f"/{BUCKET}/{KEPT_KEY}"))
    answer = send(endpoint, RawRequest("GET", f"{fresh.path}?{fresh.query}",
                                       (("Host", fresh.netloc),)))
    assert (answer.status, answer.body) == (200, KEPT_BODY)

    for offset in (datetime.timedelta(minutes=-20), datetime.timedelta(minutes=20)):
        skewed = sign(keys, endpoint, "PUT", f"/{BUCKET}/skewed", body=b"x", when=now + offset)
        assert_error(send(endpoint, skewed), "RequestTimeTooSkewed", 403)
    assert_nothing_written(node)
    slightly = sign(keys, endpoint, "GET", f"/{BUCKET}/{KEPT_KEY}",
                    when=now - datetime.timedelta(minutes=5))
    assert send(endpoint, slightly).status == 200


def test_oversized_headers_and_metadata(node: S3Node) -> None:
    """A request whose header section is 10 kB, 20 kB or 100 kB (over S3's 8 kB; the last
    over what Twisted reads too): RequestHeaderSectionTooLarge 400; user metadata of 3 kB
    (over S3's 2 kB): MetadataTooLarge 400; 1.5 kB is stored."""
    keys, endpoint = keys_of(node), node.endpoint
    for kilobytes in (10, 20, 100):
        padded = sign(keys, endpoint, "PUT", f"/{BUCKET}/big-headers", body=b"x")
        padded = padded.replace(set_headers={f"X-Padding-{n}": "p" * 1000
                                             for n in range(kilobytes)})
        assert_error(send(endpoint, padded), "RequestHeaderSectionTooLarge", 400)
    assert_error(put(node, "big-metadata", b"x", **{"x-amz-meta-big": "m" * 3000}),
                 "MetadataTooLarge", 400)
    assert_nothing_written(node)
    record_limit("S3 gateway: header section", "8 KiB (RequestHeaderSectionTooLarge)")
    record_limit("S3 gateway: user metadata", "2 KiB (MetadataTooLarge)")
    assert put(node, "fits", b"x", **{"x-amz-meta-fits": "m" * 1500}).status == 200
    assert listed_keys(node) == ["fits", KEPT_KEY]
    delete = send(endpoint, sign(keys, endpoint, "DELETE", f"/{BUCKET}/fits"))
    assert delete.status == 204
    assert_nothing_written(node)


def _md5_header(body: bytes) -> dict[str, str]:
    return {"Content-MD5": base64.b64encode(hashlib.md5(body).digest()).decode()}


def test_malformed_and_hostile_delete_bodies(node: S3Node) -> None:
    """DeleteObjects with a truncated body, a body of another shape, an entity expansion
    (billion laughs), or bytes that are not XML: MalformedXML 400; a well-formed body of
    3 MB: MaxMessageLengthExceeded 400; the object named is not deleted."""
    keys, endpoint = keys_of(node), node.endpoint
    bodies = [
        f"<Delete><Object><Key>{KEPT_KEY}</Key></Object>".encode(),
        f"<Remove><Object><Key>{KEPT_KEY}</Key></Object></Remove>".encode(),
        (b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa">'
         b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">]>'
         b"<Delete><Object><Key>&c;</Key></Object></Delete>"),
        b"\x00\xff not xml at all",
    ]
    for body in bodies:
        request = sign(keys, endpoint, "POST", f"/{BUCKET}", query="delete=", body=body,
                       headers=_md5_header(body))
        assert_error(send(endpoint, request), "MalformedXML", 400)
    # well-formed but 3 MB (S3 takes at most 1,000 keys): refused unparsed
    huge = (f"<Delete><Object><Key>{KEPT_KEY}</Key></Object><!--".encode()
            + b"p" * 3_000_000 + b"--></Delete>")
    request = sign(keys, endpoint, "POST", f"/{BUCKET}", query="delete=", body=huge,
                   headers=_md5_header(huge))
    assert_error(send(endpoint, request), "MaxMessageLengthExceeded", 400)
    record_limit("S3 gateway: XML request body", "2 MiB (MaxMessageLengthExceeded)")
    assert_nothing_written(node)


def test_malformed_complete_multipart_bodies(node: S3Node) -> None:
    """CompleteMultipartUpload with a truncated body, an entity expansion, or a part
    number that is not a number: MalformedXML 400; the upload and its part are still
    there (ListParts), no object appears; Abort then removes it."""
    keys, endpoint = keys_of(node), node.endpoint
    created = send(endpoint, sign(keys, endpoint, "POST", f"/{BUCKET}/multi.bin",
                                  query="uploads="))
    assert created.status == 200, created
    upload_id = ElementTree.fromstring(created.body).findtext(f"{_NS}UploadId") or ""
    quoted = urllib.parse.quote(upload_id, safe="")
    part = send(endpoint, sign(keys, endpoint, "PUT", f"/{BUCKET}/multi.bin",
                               query=f"partNumber=1&uploadId={quoted}", body=b"only part"))
    assert part.status == 200, part
    etag = part.headers["etag"]
    bodies = [
        f"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{etag}".encode(),
        (b'<!DOCTYPE c [<!ENTITY e "eeeeeeeeee"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;">]>'
         b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&f;</ETag></Part>"
         b"</CompleteMultipartUpload>"),
        f"<CompleteMultipartUpload><Part><PartNumber>one</PartNumber><ETag>{etag}</ETag>"
        "</Part></CompleteMultipartUpload>".encode(),
    ]
    for body in bodies:
        request = sign(keys, endpoint, "POST", f"/{BUCKET}/multi.bin",
                       query=f"uploadId={quoted}", body=body)
        assert_error(send(endpoint, request), "MalformedXML", 400)
    assert_nothing_written(node)
    parts = send(endpoint, sign(keys, endpoint, "GET", f"/{BUCKET}/multi.bin",
                                query=f"uploadId={quoted}"))
    assert parts.status == 200
    assert [e.text for e in ElementTree.fromstring(parts.body).iter(f"{_NS}PartNumber")] == ["1"]
    aborted = send(endpoint, sign(keys, endpoint, "DELETE", f"/{BUCKET}/multi.bin",
                                  query=f"uploadId={quoted}"))
    assert aborted.status == 204


#: Keys a tree of directories cannot hold as S3 does, with the error each gets.
BAD_KEYS = [
    ("..", "InvalidArgument"),
    ("../escape.txt", "InvalidArgument"),
    ("a/../../escape.txt", "InvalidArgument"),
    (".", "InvalidArgument"),
    ("a/./b", "InvalidArgument"),
    ("a//b", "InvalidArgument"),
    ("/leading", "InvalidArgument"),
    (unicodedata.normalize("NFD", "café.txt"), "InvalidArgument"),
    ("k" * 1025, "KeyTooLongError"),
    ("/".join(["d" * 205] * 5) + "/e", "KeyTooLongError"),
]


@pytest.mark.parametrize("key,code", BAD_KEYS,
                         ids=["dotdot", "dotdot-first", "dotdot-up-two", "dot", "dot-inside",
                              "empty-segment", "leading-slash", "nfd", "1025-bytes", "1031-bytes-in-segments"])
def test_keys_a_tree_cannot_hold(node: S3Node, key: str, code: str) -> None:
    """PutObject of a key with a ``.``/``..``/empty segment, in NFD, or over 1,024 bytes:
    a clear 400 error (never a silent rename), nothing written anywhere in
    the account; CopyObject to it and CreateMultipartUpload of it are refused the same."""
    keys, endpoint = keys_of(node), node.endpoint
    assert_error(put(node, key, b"tricky"), code, 400)
    copy = sign(keys, endpoint, "PUT", f"/{BUCKET}/{key}",
                headers={"x-amz-copy-source": f"/{BUCKET}/{KEPT_KEY}"})
    assert_error(send(endpoint, copy), code, 400)
    initiate = sign(keys, endpoint, "POST", f"/{BUCKET}/{key}", query="uploads=")
    assert_error(send(endpoint, initiate), code, 400)
    assert_nothing_written(node)


def test_encoded_slashes_bucket_names_and_copy_sources(node: S3Node) -> None:
    """``%2F`` in the path is a ``/`` of the key, so ``a%2F..%2F..%2Fescape`` is a key with
    ``..`` segments: InvalidArgument; bucket names ``..``, ``Upper`` and ``a``:
    InvalidBucketName; a copy source with a ``..`` segment, or naming a bucket the account
    does not have: refused (InvalidArgument, NoSuchBucket), the target not written."""
    keys, endpoint = keys_of(node), node.endpoint
    # S3's canonical path is the decoded path encoded once: the same for both spellings
    signed = sign(keys, endpoint, "PUT", f"/{BUCKET}/a/../../escape", body=b"escape")
    encoded = signed.replace(target=f"/{BUCKET}/a%2F..%2F..%2Fescape")
    assert_error(send(endpoint, encoded), "InvalidArgument", 400)
    for name in ("..", "Upper", "a"):
        assert_error(send(endpoint, sign(keys, endpoint, "PUT", f"/{name}")),
                     "InvalidBucketName", 400)
    for source, code, status in ((f"/{BUCKET}/kept/../{KEPT_KEY}", "InvalidArgument", 400),
                                 (f"/no-such-bucket/{KEPT_KEY}", "NoSuchBucket", 404)):
        copy = sign(keys, endpoint, "PUT", f"/{BUCKET}/copied.txt",
                    headers={"x-amz-copy-source": source})
        assert_error(send(endpoint, copy), code, status)
    assert_nothing_written(node)


def test_bad_listing_parameters(node: S3Node) -> None:
    """ListObjectsV2 with ``max-keys`` not a number or negative, or a continuation token
    the gateway never gave (S3's tokens are opaque): InvalidArgument 400."""
    keys, endpoint = keys_of(node), node.endpoint
    for query in ("list-type=2&max-keys=abc", "list-type=2&max-keys=-1",
                  "list-type=2&continuation-token=bm90LWEtdG9rZW4h"):
        assert_error(send(endpoint, sign(keys, endpoint, "GET", f"/{BUCKET}", query=query)),
                     "InvalidArgument", 400)


def test_bad_part_numbers_and_orders(node: S3Node) -> None:
    """UploadPart numbered 0 or 10,001: InvalidArgument 400 (no part kept); Complete
    listing parts out of order or one twice: InvalidPartOrder, no object made, the upload
    still there."""
    keys, endpoint = keys_of(node), node.endpoint
    created = send(endpoint, sign(keys, endpoint, "POST", f"/{BUCKET}/ordered.bin",
                                  query="uploads="))
    upload = "uploadId=" + urllib.parse.quote(
        ElementTree.fromstring(created.body).findtext(f"{_NS}UploadId") or "", safe="")
    path = f"/{BUCKET}/ordered.bin"
    for number in (0, 10001):
        assert_error(send(endpoint, sign(keys, endpoint, "PUT", path, body=b"p",
                                         query=f"partNumber={number}&{upload}")),
                     "InvalidArgument", 400)
    etags = []
    for number in (1, 2):
        part = send(endpoint, sign(keys, endpoint, "PUT", path, body=b"p" * number,
                                   query=f"partNumber={number}&{upload}"))
        etags.append(part.headers["etag"])
    for order in ((2, 1), (1, 1)):
        body = ("<CompleteMultipartUpload>" + "".join(
            f"<Part><PartNumber>{n}</PartNumber><ETag>{etags[n - 1]}</ETag></Part>"
            for n in order) + "</CompleteMultipartUpload>").encode()
        answer = send(endpoint, sign(keys, endpoint, "POST", path, query=upload, body=body))
        assert answer.code == "InvalidPartOrder" and answer.status in (200, 400), answer
    parts = send(endpoint, sign(keys, endpoint, "GET", path, query=upload))
    assert [e.text for e in ElementTree.fromstring(parts.body).iter(f"{_NS}PartNumber")] \
        == ["1", "2"]
    assert send(endpoint, sign(keys, endpoint, "DELETE", path, query=upload)).status == 204
    assert_nothing_written(node)


def test_another_account_cannot_reach_an_upload(node: S3Node) -> None:
    """A multipart upload of this account, addressed by its id through another account's
    bucket of the same name and key: ListParts, UploadPart, Complete and Abort all get
    NoSuchUpload 404, and the other account's ListMultipartUploads does not show it; the
    upload is unchanged for its owner, who aborts it."""
    keys, endpoint = keys_of(node), node.endpoint
    created = send(endpoint, sign(keys, endpoint, "POST", f"/{BUCKET}/private.bin",
                                  query="uploads="))
    upload_id = ElementTree.fromstring(created.body).findtext(f"{_NS}UploadId") or ""
    quoted = urllib.parse.quote(upload_id, safe="")
    assert send(endpoint, sign(keys, endpoint, "PUT", f"/{BUCKET}/private.bin",
                               query=f"partNumber=1&uploadId={quoted}", body=b"mine")
                ).status == 200
    added = node.add_account()
    other = Keys(added["access_key_id"], added["secret_access_key"], node.region)
    assert send(endpoint, sign(other, endpoint, "PUT", f"/{BUCKET}")).status == 200
    path, upload = f"/{BUCKET}/private.bin", f"uploadId={quoted}"
    attempts = [
        sign(other, endpoint, "GET", path, query=upload),
        sign(other, endpoint, "PUT", path, query=f"partNumber=2&{upload}", body=b"theirs"),
        sign(other, endpoint, "POST", path, query=upload,
             body=b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>x</ETag>"
                  b"</Part></CompleteMultipartUpload>"),
        sign(other, endpoint, "DELETE", path, query=upload),
    ]
    for attempt in attempts:
        assert_error(send(endpoint, attempt), "NoSuchUpload", 404)
    theirs = send(endpoint, sign(other, endpoint, "GET", f"/{BUCKET}", query="uploads="))
    assert theirs.status == 200 and upload_id.encode() not in theirs.body
    parts = send(endpoint, sign(keys, endpoint, "GET", path, query=upload))
    assert [e.text for e in ElementTree.fromstring(parts.body).iter(f"{_NS}PartNumber")] == ["1"]
    assert send(endpoint, sign(keys, endpoint, "DELETE", path, query=upload)).status == 204
    assert_nothing_written(node)


def test_longest_nfc_and_nul_keys_are_stored(node: S3Node) -> None:
    """Controls for the refused keys, stored faithfully and read back under the same name:
    a 1,024-byte key (in segments), a key in NFC, and a key with a NUL (``%00`` in the
    path), which a listing with ``encoding-type=url`` gives back as ``%00``."""
    longest = "/".join(["s" * 100] * 10) + "/" + "e" * 14
    assert len(longest.encode()) == 1024
    record_limit("S3 gateway: object key", "1,024 bytes of UTF-8 (KeyTooLongError)")
    nfc = unicodedata.normalize("NFC", "café.txt")
    nul = "nul\x00byte"
    for key in (longest, nfc, nul):
        assert put(node, key, key.encode()).status == 200
        answer = get(node, key)
        assert (answer.status, answer.body) == (200, key.encode())
    encoded = send(node.endpoint, sign(keys_of(node), node.endpoint, "GET", f"/{BUCKET}",
                                       query="encoding-type=url&list-type=2&prefix=nul"))
    assert encoded.status == 200, encoded
    assert [e.text for e in ElementTree.fromstring(encoded.body).iter(f"{_NS}Key")] == [
        "nul%00byte"]
    assert listed_keys(node) == sorted([longest, nfc, nul, KEPT_KEY])
    for key in (longest, nfc, nul):
        assert send(node.endpoint, sign(keys_of(node), node.endpoint, "DELETE",
                                        f"/{BUCKET}/{key}")).status == 204
    assert listed_keys(node) == [KEPT_KEY]


def test_object_and_directory_of_one_name(node: S3Node) -> None:
    """S3 holds ``a`` and ``a/b`` at once, a tree cannot: with ``kept/object.txt`` stored,
    a PUT of ``kept`` (a directory holding objects) and of ``kept/object.txt/inner`` (under
    an object) are refused with 409 InvalidRequest, and neither changes anything."""
    assert_error(put(node, "kept", b"an object where a directory is"), "InvalidRequest", 409)
    assert_error(put(node, f"{KEPT_KEY}/inner", b"under an object"), "InvalidRequest", 409)
    assert_nothing_written(node)


def test_body_shorter_than_content_length(node: S3Node) -> None:
    """A PUT whose body stops 500 bytes short of its Content-Length, the connection then
    closed (our side shut): no success answer (at most IncompleteBody 400), nothing
    stored; the same over the kept object leaves it as it was."""
    keys, endpoint = keys_of(node), node.endpoint
    for key in ("short.bin", KEPT_KEY):
        body = b"s" * 1000
        request = sign(keys, endpoint, "PUT", f"/{BUCKET}/{key}", body=body,
                       unsigned_payload=True)
        cut = request.replace(body=body[:500]).wire(content_length=1000)
        answers = exchange(endpoint, cut, half_close=True)
        assert all(a.status >= 400 for a in answers), answers
        for answer in answers:
            assert_error(answer, "IncompleteBody", 400)
    assert_nothing_written(node)


def test_body_longer_than_content_length(node: S3Node) -> None:
    """A PUT followed on the same connection by more bytes than its Content-Length: the
    PUT stores exactly its Content-Length bytes; the bytes after it, read as a second
    (unsigned) request, get AccessDenied 403 and write nothing."""
    keys, endpoint = keys_of(node), node.endpoint
    body = b"exactly this\n"
    first = sign(keys, endpoint, "PUT", f"/{BUCKET}/longer.txt", body=body)
    smuggled = RawRequest("PUT", f"/{BUCKET}/smuggled.txt",
                          (("Host", urllib.parse.urlsplit(endpoint).netloc),
                           ("Connection", "close")), b"smuggled")
    answers = exchange(endpoint, first.wire() + smuggled.wire(), half_close=False)
    assert [a.status for a in answers][:1] == [200], answers
    for answer in answers[1:]:
        assert answer.status in (400, 403), answer
        if answer.status == 403:
            assert_error(answer, "AccessDenied", 403)
    stored = get(node, "longer.txt")
    assert (stored.status, stored.body) == (200, body)
    assert listed_keys(node) == ["kept/object.txt", "longer.txt"]
    assert send(endpoint, sign(keys, endpoint, "DELETE", f"/{BUCKET}/longer.txt")).status == 204
    assert_nothing_written(node)


def test_payload_and_digests_that_do_not_match(node: S3Node) -> None:
    """A body other than the one signed (same length): XAmzContentSHA256Mismatch 400; a
    Content-MD5 of other bytes: BadDigest 400; a Content-MD5 that is not 16 bytes of
    base64: InvalidDigest 400; an x-amz-checksum-crc32 of other bytes: BadDigest 400.
    Each also aimed at the kept object: unchanged."""
    keys, endpoint = keys_of(node), node.endpoint
    body, other = b"the body that was signed", b"the body that was SENT!!"
    assert len(body) == len(other)
    crc = base64.b64encode(zlib.crc32(other).to_bytes(4, "big")).decode()
    for key in ("digest.bin", KEPT_KEY):
        signed = sign(keys, endpoint, "PUT", f"/{BUCKET}/{key}", body=body)
        assert_error(send(endpoint, signed.replace(body=other)), "XAmzContentSHA256Mismatch", 400)
        md5 = sign(keys, endpoint, "PUT", f"/{BUCKET}/{key}", body=body,
                   headers=_md5_header(other))
        assert_error(send(endpoint, md5), "BadDigest", 400)
        unsigned_md5 = sign(keys, endpoint, "PUT", f"/{BUCKET}/{key}", body=body,
                            headers=_md5_header(other), unsigned_payload=True)
        assert_error(send(endpoint, unsigned_md5), "BadDigest", 400)
        invalid = sign(keys, endpoint, "PUT", f"/{BUCKET}/{key}", body=body,
                       headers={"Content-MD5": "bm90IG1kNQ=="})
        assert_error(send(endpoint, invalid), "InvalidDigest", 400)
        checksum = sign(keys, endpoint, "PUT", f"/{BUCKET}/{key}", body=body,
                        headers={"x-amz-checksum-crc32": crc}, unsigned_payload=True)
        assert_error(send(endpoint, checksum), "BadDigest", 400)
    assert_nothing_written(node)


def test_two_gateways_writing_one_directory_lose_nothing_silently(
        node: S3Node, local_grid: ProxiedGrid, tmp_path: Path) -> None:
    """A second gateway (another node) serving the same account (the same key, secret
    and root), both taking 20 PutObjects at once into one directory: every PUT answered
    200 is listed at the end by both gateways with its bytes (a PUT may fail with an
    error the client sees, never be lost after its 200)."""
    with started_s3_node(local_grid, tmp_path, DEFAULT_SHARES) as other_node:
        line = f"{node.access_key} {node.secret_key} {node.root}\n"
        accounts = other_node.basedir / "private" / "s3-accounts"
        accounts.write_text(accounts.read_text() + line)
        # the second gateway, used with the first one's account
        second = attrs.evolve(other_node, access_key=node.access_key,
                              secret_key=node.secret_key, root=node.root)
        writers = [(node, f"race/first-{n:02d}") for n in range(20)]
        writers += [(second, f"race/second-{n:02d}") for n in range(20)]
        with ThreadPoolExecutor(len(writers)) as pool:
            answers = list(pool.map(lambda job: put(job[0], job[1], job[1].encode()), writers))
        acknowledged = sorted(key for (_, key), answer in zip(writers, answers)
                              if answer.status == 200)
        for answer in answers:
            assert answer.status == 200 or answer.code, answer  # an S3 error, if any
        assert len(acknowledged) >= 20, [a.status for a in answers]
        for gateway in (node, second):
            listed = [key for key in listed_keys(gateway) if key.startswith("race/")]
            assert listed == acknowledged
            for key in acknowledged[::7]:
                assert get(gateway, key).body == key.encode()
    for key in acknowledged:
        send(node.endpoint, sign(keys_of(node), node.endpoint, "DELETE", f"/{BUCKET}/{key}"))
    assert_nothing_written(node)


def test_gateway_still_answers_and_logged_no_secret(node: S3Node) -> None:
    """After every hostile request above, a plain PUT, GET and DELETE still work; the
    node's log holds no traceback, and neither the account's root cap nor its secret."""
    assert put(node, "after.txt", b"still here").status == 200
    assert get(node, "after.txt").body == b"still here"
    assert send(node.endpoint, sign(keys_of(node), node.endpoint, "DELETE",
                                    f"/{BUCKET}/after.txt")).status == 204
    assert_nothing_written(node)
    text = node.log.read_text(encoding="utf-8", errors="replace")
    for forbidden in ("Traceback", "Unhandled Error", node.root, node.secret_key):
        assert forbidden not in text, f"{forbidden[:20]}... in {node.log}"

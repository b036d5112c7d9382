"""S3 XML bodies of the gateway (``tahoe.s3.xmlio``), checked with botocore's own
serializer and parser for the S3 service model, so that real clients read what we write."""
from __future__ import annotations

import datetime
from typing import Any
from urllib.parse import unquote_plus
from xml.etree import ElementTree

import botocore.session
import pytest
from botocore.parsers import RestXMLParser
from botocore.serialize import RestXMLSerializer
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.s3 import xmlio
from tahoe.s3.errors import S3Error
from tahoe.s3.xmlio import ListItem

MODEL = botocore.session.get_session().get_service_model("s3")
OWNER = ("GKTESTACCESSKEY00001", "GKTESTACCESSKEY00001")
WHEN = datetime.datetime(2026, 11, 28, 4, 26, 55, 123000, tzinfo=datetime.timezone.utc)
EPOCH = WHEN.timestamp()


def parsed(operation: str, body: bytes, status: int = 200) -> dict[str, Any]:
    """What botocore makes of ``body`` as the answer to ``operation``."""
    shape = MODEL.operation_model(operation).output_shape
    result = RestXMLParser().parse({"body": body, "headers": {}, "status_code": status},
                                   shape)
    result.pop("ResponseMetadata", None)
    return result


def serialized(operation: str, params: dict[str, Any]) -> bytes:
    """The body botocore sends for ``operation`` with ``params``."""
    request = RestXMLSerializer().serialize_to_request(params,
                                                       MODEL.operation_model(operation))
    return request["body"]


@given(st.floats(min_value=0, max_value=253402300799.0))
def test_iso_time_is_utc_to_the_millisecond(epoch: float) -> None:
    """Any time until 9999 is written as UTC with milliseconds, whether its second's
    text was remembered or not."""
    milliseconds = int(round(epoch * 1000))
    when = datetime.datetime.fromtimestamp(milliseconds // 1000, datetime.timezone.utc)
    expected = when.strftime("%Y-%m-%dT%H:%M:%S") + f".{milliseconds % 1000:03d}Z"
    assert xmlio.iso_time(epoch) == xmlio.iso_time(epoch) == expected


@given(st.text(max_size=40))
def test_element_text_round_trips_through_an_xml_parser(text: str) -> None:
    """Whatever a key holds comes back from an XML parser as written (\\r and the
    characters XML cannot hold as character references)."""
    body = xmlio._document("R", [xmlio._element("Key", text)], namespace=False)
    try:
        parsed = ElementTree.fromstring(body).findtext("Key") or ""
    except ElementTree.ParseError:  # a character XML 1.0 forbids even as a reference
        assert any(ord(c) < 32 and c not in "\t\n\r" or c in "\ufffe\uffff" for c in text)
        return
    assert parsed == text


def test_iso_time_has_milliseconds() -> None:
    """Times are ISO 8601 in UTC with milliseconds."""
    assert xmlio.iso_time(EPOCH) == "2026-11-28T04:26:55.123Z"
    assert xmlio.iso_time(0) == "1970-01-01T00:00:00.000Z"


def test_error_body_as_botocore_reads_it() -> None:
    """Error documents carry Code, Message, the extras, Resource and RequestId."""
    body = xmlio.error_body("NoSuchKey", "The specified key does not exist.",
                            {"Key": "a&b<c>"}, resource="/bucket/a&b<c>", request_id="ABC")
    assert body.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<Error>')
    error = parsed("GetObject", body, 404)["Error"]
    assert error["Code"] == "NoSuchKey" and error["Message"].startswith("The specified key")
    assert error["Key"] == "a&b<c>"
    assert b"<RequestId>ABC</RequestId>" in body and b"xmlns" not in body


def test_list_buckets() -> None:
    """ListBuckets gives the owner and each bucket's name and creation date."""
    body = xmlio.list_buckets_result(*OWNER, [("alpha", EPOCH), ("beta", 0.0)])
    result = parsed("ListBuckets", body)
    assert [b["Name"] for b in result["Buckets"]] == ["alpha", "beta"]
    assert result["Buckets"][0]["CreationDate"] == WHEN
    assert result["Owner"] == {"ID": OWNER[0], "DisplayName": OWNER[1]}
    assert parsed("ListBuckets", xmlio.list_buckets_result(*OWNER, []))["Buckets"] == []


def test_location_and_versioning() -> None:
    """GetBucketLocation is empty for us-east-1 and names other regions."""
    assert parsed("GetBucketLocation", xmlio.location_constraint(None)) \
        .get("LocationConstraint") in (None, "")
    assert b">eu-west-1</LocationConstraint>" in xmlio.location_constraint("eu-west-1")
    assert "Status" not in parsed("GetBucketVersioning", xmlio.versioning_configuration())


ITEMS = [ListItem("a b/+&ü.txt", 5, '"etag1"', EPOCH), ListItem("a/", prefix=True),
         ListItem("ctl\x01\r\n.bin", 0, '"etag2"', 0.0)]


def test_list_objects_v2_url_encoded() -> None:
    """ListObjectsV2 with encoding-type=url: keys decode back exactly (even control characters)."""
    body = xmlio.list_bucket_result_v2(
        bucket="bucket", prefix="a b/", delimiter="/", max_keys=1000, encoding_type="url",
        items=ITEMS, truncated=True, continuation_token="tok1", next_continuation_token="tok2",
        start_after="a b/+", owner=None)
    result = parsed("ListObjectsV2", body)
    assert [unquote_plus(c["Key"]) for c in result["Contents"]] == ["a b/+&ü.txt",
                                                                     "ctl\x01\r\n.bin"]
    assert [unquote_plus(p["Prefix"]) for p in result["CommonPrefixes"]] == ["a/"]
    assert unquote_plus(result["Prefix"]) == "a b/"
    assert unquote_plus(result["StartAfter"]) == "a b/+"
    assert result["KeyCount"] == 3 and result["IsTruncated"] is True
    assert result["NextContinuationToken"] == "tok2" and result["ContinuationToken"] == "tok1"
    assert result["Contents"][0]["ETag"] == '"etag1"' and result["Contents"][0]["Size"] == 5
    assert result["Contents"][0]["LastModified"] == WHEN
    assert result["EncodingType"] == "url" and result["Delimiter"] == "/"
    assert "Owner" not in result["Contents"][0]


def test_list_objects_v2_plain_escapes_markup() -> None:
    """Without url encoding, markup characters are escaped and read back as they were."""
    body = xmlio.list_bucket_result_v2(
        bucket="bucket", prefix="", delimiter=None, max_keys=2, encoding_type=None,
        items=ITEMS[:2], truncated=False, continuation_token=None,
        next_continuation_token=None, start_after=None, owner=OWNER)
    result = parsed("ListObjectsV2", body)
    assert result["Contents"][0]["Key"] == "a b/+&ü.txt"
    assert result["Contents"][0]["Owner"]["ID"] == OWNER[0]
    assert "NextContinuationToken" not in result and "Delimiter" not in result


def test_control_characters_are_numeric_references() -> None:
    """A control character in a plain listing becomes a numeric reference, as S3 writes it."""
    body = xmlio.list_bucket_result_v2(
        bucket="b", prefix="", delimiter=None, max_keys=1, encoding_type=None,
        items=[ITEMS[2]], truncated=False, continuation_token=None,
        next_continuation_token=None, start_after=None)
    assert b"<Key>ctl&#1;&#13;\n.bin</Key>" in body


def test_list_objects_v1() -> None:
    """ListObjects v1: Marker, NextMarker, owners on every object."""
    body = xmlio.list_bucket_result_v1(
        bucket="bucket", prefix="", delimiter="/", max_keys=2, encoding_type=None,
        items=ITEMS[:2], truncated=True, marker="", next_marker="a/", owner=OWNER)
    result = parsed("ListObjects", body)
    assert result["Marker"] == "" and result["NextMarker"] == "a/"
    assert result["Contents"][0]["Owner"]["DisplayName"] == OWNER[1]
    assert result["CommonPrefixes"] == [{"Prefix": "a/"}] and result["MaxKeys"] == 2


def test_multipart_documents() -> None:
    """Create, Complete, ListParts and ListMultipartUploads read as botocore expects."""
    assert parsed("CreateMultipartUpload",
                  xmlio.initiate_multipart_upload_result("b", "k/ü", "UP1")) == \
        {"Bucket": "b", "Key": "k/ü", "UploadId": "UP1"}
    done = parsed("CompleteMultipartUpload", xmlio.complete_multipart_upload_result(
        "http://127.0.0.1:3458/b/k", "b", "k", '"abc-2"', {"CRC32": "AAAAAA==-2"}))
    assert done["ETag"] == '"abc-2"' and done["ChecksumCRC32"] == "AAAAAA==-2"
    parts = parsed("ListParts", xmlio.list_parts_result(
        bucket="b", key="k", upload_id="UP1", part_number_marker=0, next_part_number_marker=2,
        max_parts=2, truncated=True, owner=OWNER,
        parts=[(1, '"e1"', 5242880, EPOCH), (2, '"e2"', 10, EPOCH)]))
    assert [(p["PartNumber"], p["ETag"], p["Size"]) for p in parts["Parts"]] == \
        [(1, '"e1"', 5242880), (2, '"e2"', 10)]
    assert parts["IsTruncated"] and parts["NextPartNumberMarker"] == 2
    assert parts["Initiator"]["ID"] == OWNER[0]
    uploads = parsed("ListMultipartUploads", xmlio.list_multipart_uploads_result(
        bucket="b", prefix=None, key_marker=None, upload_id_marker=None, next_key_marker="k",
        next_upload_id_marker="UP1", max_uploads=1, truncated=True, owner=OWNER,
        uploads=[("k", "UP1", EPOCH)]))
    assert uploads["Uploads"][0]["Key"] == "k" and uploads["Uploads"][0]["Initiated"] == WHEN
    assert uploads["NextUploadIdMarker"] == "UP1" and uploads["MaxUploads"] == 1


def test_copy_and_delete_results() -> None:
    """CopyObject, UploadPartCopy and DeleteObjects answers."""
    copied = parsed("CopyObject", xmlio.copy_object_result('"e"', EPOCH))["CopyObjectResult"]
    assert copied == {"ETag": '"e"', "LastModified": WHEN}
    part = parsed("UploadPartCopy", xmlio.copy_part_result('"p"', EPOCH))["CopyPartResult"]
    assert part["ETag"] == '"p"'
    result = parsed("DeleteObjects", xmlio.delete_result(
        ["a", "b&c"], [("d/", "InvalidArgument", "no <good>")]))
    assert [d["Key"] for d in result["Deleted"]] == ["a", "b&c"]
    assert result["Errors"] == [{"Key": "d/", "Code": "InvalidArgument",
                                 "Message": "no <good>"}]


# ---------------------------------------------------------------- parsing

def test_parse_botocore_create_bucket() -> None:
    """CreateBucket bodies: none, or a LocationConstraint."""
    assert xmlio.parse_create_bucket(b"") is None
    body = serialized("CreateBucket", {"Bucket": "b", "CreateBucketConfiguration":
                                       {"LocationConstraint": "eu-west-1"}})
    assert xmlio.parse_create_bucket(body) == "eu-west-1"
    assert xmlio.parse_create_bucket(
        b"<CreateBucketConfiguration></CreateBucketConfiguration>") is None


@settings(deadline=None, max_examples=40)
@given(keys=st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1,
                             max_size=20), min_size=1, max_size=10), quiet=st.booleans())
def test_parse_botocore_delete(keys: list[str], quiet: bool) -> None:
    """Any Delete body botocore writes parses back to its keys and Quiet flag."""
    body = serialized("DeleteObjects", {"Bucket": "b", "Delete": {
        "Objects": [{"Key": key} for key in keys], "Quiet": quiet}})
    assert xmlio.parse_delete(body) == ([(key, None) for key in keys], quiet)


def test_parse_botocore_complete_multipart_upload() -> None:
    """A CompleteMultipartUpload body gives part numbers, ETags and checksums in order."""
    body = serialized("CompleteMultipartUpload", {
        "Bucket": "b", "Key": "k", "UploadId": "U", "MultipartUpload": {"Parts": [
            {"PartNumber": 1, "ETag": '"e1"', "ChecksumCRC32": "AAAAAA=="},
            {"PartNumber": 2, "ETag": '"e2"'}]}})
    assert xmlio.parse_complete_multipart_upload(body) == [(1, '"e1"', {"CRC32": "AAAAAA=="}),
                                                           (2, '"e2"', {})]


@pytest.mark.parametrize("body", [
    b"", b"not xml", b"<Delete>", b"<Delete></Delete>", b"<Other><Object><Key>a</Key></Object></Other>",
    b"<Delete><Object><VersionId>1</VersionId></Object></Delete>",
    b"<Delete><Object><Key>a</Key></Object><Quiet>maybe</Quiet></Delete>",
    b"<Delete><Object><Key>a</Key></Object><Extra/></Delete>",
    b"<Delete><Object><Key><b>x</b></Key></Object></Delete>",
    b'<Delete xmlns="http://example.com/"><Object><Key>a</Key></Object></Delete>',
    b'<!DOCTYPE d [<!ENTITY x "boom">]><Delete><Object><Key>&x;</Key></Object></Delete>',
    b'<!DOCTYPE d SYSTEM "file:///etc/passwd"><Delete><Object><Key>a</Key></Object></Delete>',
], ids=["empty", "text", "unclosed", "no-objects", "wrong-root", "no-key", "bad-quiet",
        "extra", "markup-in-key", "other-namespace", "entity", "external-dtd"])
def test_malformed_delete_bodies(body: bytes) -> None:
    """Anything but a proper Delete (including DTDs and entities) is MalformedXML (400)."""
    with pytest.raises(S3Error) as info:
        xmlio.parse_delete(body)
    assert (info.value.code, info.value.status) == ("MalformedXML", 400)


def test_entity_expansion_bomb_is_refused() -> None:
    """A billion-laughs body is refused before any expansion."""
    bomb = (b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
            b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
            b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>'
            b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&c;</ETag>"
            b"</Part></CompleteMultipartUpload>")
    with pytest.raises(S3Error, match="MalformedXML"):
        xmlio.parse_complete_multipart_upload(bomb)


def test_oversized_bodies() -> None:
    """A body over the limit is MaxMessageLengthExceeded without being parsed."""
    with pytest.raises(S3Error) as info:
        xmlio.parse_delete(b"<Delete>" + b" " * xmlio.MAX_XML_BODY + b"</Delete>")
    assert info.value.code == "MaxMessageLengthExceeded"


@pytest.mark.parametrize("number,code", [
    ("0", "InvalidArgument"), ("10001", "InvalidArgument"), ("123456", "InvalidArgument"),
    ("-1", "MalformedXML"), ("x", "MalformedXML"), ("one", "MalformedXML"),
    ("1.5", "MalformedXML"), ("", "MalformedXML"), ("1" * 30, "MalformedXML")])
def test_bad_part_numbers(number: str, code: str) -> None:
    """A part number that is no integer breaks the schema; one outside 1-10,000 is InvalidArgument."""
    body = (f"<CompleteMultipartUpload><Part><PartNumber>{number}</PartNumber>"
            f"<ETag>e</ETag></Part></CompleteMultipartUpload>").encode()
    with pytest.raises(S3Error) as info:
        xmlio.parse_complete_multipart_upload(body)
    assert info.value.code == code


def test_parts_need_number_and_etag() -> None:
    """A Part without ETag, or another element, is MalformedXML; no parts is an empty list."""
    for body in [b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part>"
                 b"</CompleteMultipartUpload>",
                 b"<CompleteMultipartUpload><Other/></CompleteMultipartUpload>"]:
        with pytest.raises(S3Error, match="MalformedXML"):
            xmlio.parse_complete_multipart_upload(body)
    assert xmlio.parse_complete_multipart_upload(
        b"<CompleteMultipartUpload></CompleteMultipartUpload>") == []

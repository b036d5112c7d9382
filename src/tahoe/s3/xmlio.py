"""S3's XML bodies: the answers the gateway writes and the requests it reads.

Answers are built as bytes (``<?xml version="1.0" encoding="UTF-8"?>``, in
S3's namespace ``http://s3.amazonaws.com/doc/2006-03-01/``, except error bodies,
which S3 writes without one), with the element names and order of the S3 API
reference. Text is escaped; a character XML 1.0 cannot carry (a control
character in a key) is written as a numeric reference, as S3 does, and
``encoding-type=url`` listings percent-encode keys and prefixes instead (the
form boto3 and the aws CLI ask for). Times are ISO 8601 with milliseconds
(``2026-11-28T04:26:55.000Z``).

Request bodies (CreateBucketConfiguration, Delete, CompleteMultipartUpload) are
parsed with ``defusedxml``, which refuses DTDs and entity expansion; a body over
:data:`MAX_XML_BODY` is ``MaxMessageLengthExceeded``, anything else that is not
the expected document is ``MalformedXML``. Pure.
"""
from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree
from defusedxml import DefusedXmlException

from .errors import S3Error
from .sigv4 import uri_encode

__all__ = ["NAMESPACE", "MAX_XML_BODY", "ListItem", "iso_time", "error_body",
           "list_buckets_result", "location_constraint", "versioning_configuration",
           "list_bucket_result_v1", "list_bucket_result_v2",
           "initiate_multipart_upload_result", "complete_multipart_upload_result",
           "list_parts_result", "list_multipart_uploads_result", "copy_object_result",
           "copy_part_result", "delete_result", "parse_create_bucket", "parse_delete",
           "parse_complete_multipart_upload"]

NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/"
#: The largest XML request body read, in bytes (a Delete of 1,000 long keys fits).
MAX_XML_BODY = 2 * 1024 * 1024
#: The highest part number S3 allows.
MAX_PART_NUMBER = 10000
_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'
_NOT_XML_CHARACTER = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\r\ufffe\uffff]")
#: What :func:`_escape` changes: most keys, ETags and numbers hold none of it.
_TO_ESCAPE = re.compile("[&<>\x00-\x08\x0b\x0c\x0e-\x1f\r\ufffe\uffff]")
_CHECKSUM_ELEMENTS = {"ChecksumCRC32": "CRC32", "ChecksumCRC32C": "CRC32C",
                      "ChecksumSHA1": "SHA1", "ChecksumSHA256": "SHA256",
                      "ChecksumCRC64NVME": "CRC64NVME"}

Owner = tuple[str, str]
"""An owner as (ID, DisplayName)."""


@dataclass(frozen=True)
class ListItem:
    """One line of a listing: an object (``Contents``) or a common prefix.

    :ivar etag: quoted, as sent in the ``ETag`` header.
    :ivar last_modified: seconds since the epoch.
    """

    key: str
    size: int = 0
    etag: str = ""
    last_modified: float = 0.0
    prefix: bool = False
    storage_class: str = "STANDARD"


# ---------------------------------------------------------------- writing

@functools.lru_cache(maxsize=4096)
def _iso_second(second: int) -> str:
    when = datetime.datetime.fromtimestamp(second, datetime.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S")


def iso_time(epoch: float) -> str:
    """S3's timestamp form of seconds since the epoch: ``2026-11-28T04:26:55.123Z``.

    Each second's text is remembered (a listing's keys were mostly written in bursts).
    """
    milliseconds = int(round(epoch * 1000))
    return f"{_iso_second(milliseconds // 1000)}.{milliseconds % 1000:03d}Z"


def _escape(text: str) -> str:
    if _TO_ESCAPE.search(text) is None:
        return text
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _NOT_XML_CHARACTER.sub(lambda m: f"&#{ord(m.group())};", text)


def _element(name: str, value: object) -> str:
    if isinstance(value, bool):
        value = "true" if value else "false"
    return f"<{name}>{_escape(str(value))}</{name}>"


def _document(root: str, parts: Iterable[str], namespace: bool = True) -> bytes:
    attribute = f' xmlns="{NAMESPACE}"' if namespace else ""
    return (f"{_DECLARATION}<{root}{attribute}>{''.join(parts)}</{root}>").encode("utf-8")


def _encoded(text: str, encoding_type: str | None) -> str:
    if encoding_type == "url":
        return uri_encode(text.encode("utf-8", "surrogateescape"), keep_slash=True)
    return text


def _owner(owner: Owner, tag: str = "Owner") -> str:
    return f"<{tag}>{_element('ID', owner[0])}{_element('DisplayName', owner[1])}</{tag}>"


def _optional(name: str, value: object | None) -> str:
    return "" if value is None else _element(name, value)


def error_body(code: str, message: str, extra: Mapping[str, str] | None = None, *,
               resource: str | None = None, request_id: str = "",
               host_id: str = "") -> bytes:
    """An S3 error document: Code, Message, the extra elements, Resource, RequestId, HostId."""
    parts = [_element("Code", code), _element("Message", message)]
    parts += [_element(name, value) for name, value in (extra or {}).items()]
    parts += [_optional("Resource", resource), _element("RequestId", request_id),
              _element("HostId", host_id)]
    return _document("Error", parts, namespace=False)


def list_buckets_result(owner_id: str, owner_name: str,
                        buckets: Iterable[tuple[str, float]]) -> bytes:
    """ListBuckets: the owner and each (name, creation time in epoch seconds)."""
    listed = "".join(f"<Bucket>{_element('Name', name)}"
                     f"{_element('CreationDate', iso_time(created))}</Bucket>"
                     for name, created in buckets)
    return _document("ListAllMyBucketsResult",
                     [_owner((owner_id, owner_name)), f"<Buckets>{listed}</Buckets>"])


def location_constraint(region: str | None) -> bytes:
    """GetBucketLocation: the region, or an empty element for us-east-1 (None)."""
    return _document("LocationConstraint", [_escape(region or "")])


def versioning_configuration() -> bytes:
    """GetBucketVersioning of a bucket that never had versioning: an empty document."""
    return _document("VersioningConfiguration", [])


def _contents(item: ListItem, encoding_type: str | None, owner: Owner | None) -> str:
    return ("<Contents>" + _element("Key", _encoded(item.key, encoding_type))
            + _element("LastModified", iso_time(item.last_modified))
            + _element("ETag", item.etag) + _element("Size", item.size)
            + (_owner(owner) if owner is not None else "")
            + _element("StorageClass", item.storage_class) + "</Contents>")


def _listing(items: Iterable[ListItem], encoding_type: str | None,
             owner: Owner | None) -> tuple[list[str], int]:
    items = list(items)
    contents = [_contents(item, encoding_type, owner) for item in items if not item.prefix]
    prefixes = [f"<CommonPrefixes>{_element('Prefix', _encoded(item.key, encoding_type))}"
                "</CommonPrefixes>" for item in items if item.prefix]
    return contents + prefixes, len(items)


def list_bucket_result_v1(*, bucket: str, prefix: str, delimiter: str | None, max_keys: int,
                          encoding_type: str | None, items: Iterable[ListItem],
                          truncated: bool, marker: str, next_marker: str | None,
                          owner: Owner | None) -> bytes:
    """ListObjects (v1). ``next_marker`` is written when given (S3: truncated with a delimiter)."""
    def encoded(text: str) -> str:
        return _encoded(text, encoding_type)
    listed, _count = _listing(items, encoding_type, owner)
    parts = [_element("Name", bucket), _element("Prefix", encoded(prefix)),
             _element("Marker", encoded(marker)),
             "" if next_marker is None else _element("NextMarker", encoded(next_marker)),
             _element("MaxKeys", max_keys),
             "" if delimiter is None else _element("Delimiter", encoded(delimiter)),
             _optional("EncodingType", encoding_type), _element("IsTruncated", truncated)]
    return _document("ListBucketResult", parts + listed)


def list_bucket_result_v2(*, bucket: str, prefix: str, delimiter: str | None, max_keys: int,
                          encoding_type: str | None, items: Iterable[ListItem],
                          truncated: bool, continuation_token: str | None,
                          next_continuation_token: str | None, start_after: str | None,
                          owner: Owner | None = None) -> bytes:
    """ListObjectsV2; ``owner`` only when ``fetch-owner=true`` was asked."""
    def encoded(text: str) -> str:
        return _encoded(text, encoding_type)
    listed, count = _listing(items, encoding_type, owner)
    parts = [_element("Name", bucket), _element("Prefix", encoded(prefix)),
             "" if delimiter is None else _element("Delimiter", encoded(delimiter)),
             _element("MaxKeys", max_keys), _optional("EncodingType", encoding_type),
             _element("KeyCount", count), _element("IsTruncated", truncated),
             _optional("ContinuationToken", continuation_token),
             _optional("NextContinuationToken", next_continuation_token),
             "" if start_after is None else _element("StartAfter", encoded(start_after))]
    return _document("ListBucketResult", parts + listed)


def initiate_multipart_upload_result(bucket: str, key: str, upload_id: str) -> bytes:
    """CreateMultipartUpload: Bucket, Key, UploadId."""
    return _document("InitiateMultipartUploadResult", [
        _element("Bucket", bucket), _element("Key", key), _element("UploadId", upload_id)])


def complete_multipart_upload_result(location: str, bucket: str, key: str, etag: str,
                                     checksums: Mapping[str, str] | None = None) -> bytes:
    """CompleteMultipartUpload: Location, Bucket, Key, ETag (quoted) and any checksums."""
    extra = [_element(f"Checksum{algorithm}", value)
             for algorithm, value in (checksums or {}).items()]
    return _document("CompleteMultipartUploadResult", [
        _element("Location", location), _element("Bucket", bucket), _element("Key", key),
        _element("ETag", etag), *extra])


def list_parts_result(*, bucket: str, key: str, upload_id: str, part_number_marker: int,
                      next_part_number_marker: int, max_parts: int, truncated: bool,
                      owner: Owner, parts: Iterable[tuple[int, str, int, float]]) -> bytes:
    """ListParts; each part is (number, quoted ETag, size, last-modified epoch)."""
    listed = "".join(f"<Part>{_element('PartNumber', number)}"
                     f"{_element('LastModified', iso_time(modified))}"
                     f"{_element('ETag', etag)}{_element('Size', size)}</Part>"
                     for number, etag, size, modified in parts)
    return _document("ListPartsResult", [
        _element("Bucket", bucket), _element("Key", key), _element("UploadId", upload_id),
        _owner(owner, "Initiator"), _owner(owner), _element("StorageClass", "STANDARD"),
        _element("PartNumberMarker", part_number_marker),
        _element("NextPartNumberMarker", next_part_number_marker),
        _element("MaxParts", max_parts), _element("IsTruncated", truncated), listed])


def list_multipart_uploads_result(*, bucket: str, prefix: str | None, key_marker: str | None,
                                  upload_id_marker: str | None, next_key_marker: str | None,
                                  next_upload_id_marker: str | None, max_uploads: int,
                                  truncated: bool, owner: Owner,
                                  uploads: Iterable[tuple[str, str, float]],
                                  encoding_type: str | None = None) -> bytes:
    """ListMultipartUploads; each upload is (key, upload id, initiated epoch)."""
    def encoded(text: str | None) -> str:
        return _encoded(text or "", encoding_type)
    listed = "".join(f"<Upload>{_element('Key', encoded(key))}"
                     f"{_element('UploadId', upload_id)}{_owner(owner, 'Initiator')}"
                     f"{_owner(owner)}{_element('StorageClass', 'STANDARD')}"
                     f"{_element('Initiated', iso_time(initiated))}</Upload>"
                     for key, upload_id, initiated in uploads)
    return _document("ListMultipartUploadsResult", [
        _element("Bucket", bucket), _element("KeyMarker", encoded(key_marker)),
        _element("UploadIdMarker", upload_id_marker or ""),
        _element("NextKeyMarker", encoded(next_key_marker)),
        _element("NextUploadIdMarker", next_upload_id_marker or ""),
        _element("Prefix", encoded(prefix)), _optional("EncodingType", encoding_type),
        _element("MaxUploads", max_uploads), _element("IsTruncated", truncated), listed])


def copy_object_result(etag: str, last_modified: float) -> bytes:
    """CopyObject: LastModified and the (quoted) ETag of the new object."""
    return _document("CopyObjectResult", [_element("LastModified", iso_time(last_modified)),
                                          _element("ETag", etag)])


def copy_part_result(etag: str, last_modified: float) -> bytes:
    """UploadPartCopy: LastModified and the (quoted) ETag of the new part."""
    return _document("CopyPartResult", [_element("LastModified", iso_time(last_modified)),
                                        _element("ETag", etag)])


def delete_result(deleted: Iterable[str], errors: Iterable[tuple[str, str, str]]) -> bytes:
    """DeleteObjects: each deleted key, then each (key, code, message) that failed."""
    parts = [f"<Deleted>{_element('Key', key)}</Deleted>" for key in deleted]
    parts += [f"<Error>{_element('Key', key)}{_element('Code', code)}"
              f"{_element('Message', message)}</Error>" for key, code, message in errors]
    return _document("DeleteResult", parts)


# ---------------------------------------------------------------- reading

def _malformed(why: str = "") -> S3Error:
    return S3Error("MalformedXML", None if not why else
                   f"The XML you provided was not well-formed or did not validate against"
                   f" our published schema: {why}")


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _parse(body: bytes, root_name: str) -> Element:
    if len(body) > MAX_XML_BODY:
        raise S3Error("MaxMessageLengthExceeded", "Your request was too big.",
                      MaxMessageLengthBytes=str(MAX_XML_BODY))
    try:
        root = defusedxml.ElementTree.fromstring(body, forbid_dtd=True)
    except (ParseError, DefusedXmlException, ValueError, UnicodeDecodeError):
        raise _malformed("not well-formed XML") from None
    if _local(root.tag) != root_name or (root.tag.startswith("{")
                                         and not root.tag.startswith("{" + NAMESPACE)):
        raise _malformed(f"the document must be a {root_name}")
    return root  # type: ignore[no-any-return]


def _children(element: Element) -> list[tuple[str, Element]]:
    return [(_local(child.tag), child) for child in element]


def _text(element: Element) -> str:
    if len(element):
        raise _malformed(f"{_local(element.tag)} must hold text only")
    return element.text or ""


def parse_create_bucket(body: bytes) -> str | None:
    """The LocationConstraint of a CreateBucket body (None: empty body or no constraint).

    :raises S3Error: ``MalformedXML``, ``MaxMessageLengthExceeded``.
    """
    if not body.strip():
        return None
    root = _parse(body, "CreateBucketConfiguration")
    location = None
    for name, child in _children(root):
        if name == "LocationConstraint":
            location = _text(child).strip() or None
    return location


def parse_delete(body: bytes) -> tuple[list[tuple[str, str | None]], bool]:
    """The objects (key, version id or None) and Quiet flag of a DeleteObjects body.

    :raises S3Error: ``MalformedXML`` (also for no Object, an Object without Key, an
        unknown element), ``MaxMessageLengthExceeded``.
    """
    root = _parse(body, "Delete")
    objects: list[tuple[str, str | None]] = []
    quiet = False
    for name, child in _children(root):
        if name == "Quiet":
            value = _text(child).strip().lower()
            if value not in ("true", "false"):
                raise _malformed("Quiet must be true or false")
            quiet = value == "true"
        elif name == "Object":
            fields = {field: _text(element) for field, element in _children(child)}
            if "Key" not in fields or set(fields) - {"Key", "VersionId", "ETag",
                                                     "LastModifiedTime", "Size"}:
                raise _malformed("each Object needs one Key")
            objects.append((fields["Key"], fields.get("VersionId")))
        else:
            raise _malformed(f"unexpected element {name}")
    if not objects:
        raise _malformed("a Delete names at least one Object")
    return objects, quiet


def parse_complete_multipart_upload(body: bytes) -> list[tuple[int, str, dict[str, str]]]:
    """The parts of a CompleteMultipartUpload body: (number, ETag, checksums by algorithm).

    The order is the body's (the caller checks that it ascends).

    :raises S3Error: ``MalformedXML`` for a bad document, a part without number
        or ETag, or a number that is not an integer; ``InvalidArgument`` for a part
        number outside 1-10,000;
        ``MaxMessageLengthExceeded``.
    """
    root = _parse(body, "CompleteMultipartUpload")
    parts: list[tuple[int, str, dict[str, str]]] = []
    for name, child in _children(root):
        if name != "Part":
            raise _malformed(f"unexpected element {name}")
        fields = {field: _text(element).strip() for field, element in _children(child)}
        if "PartNumber" not in fields or "ETag" not in fields:
            raise _malformed("each Part needs a PartNumber and an ETag")
        number_text = fields["PartNumber"]
        if not re.fullmatch(r"\d{1,9}", number_text):
            raise _malformed("PartNumber must be an integer")
        if not 1 <= int(number_text) <= MAX_PART_NUMBER:
            raise S3Error("InvalidArgument", "Part number must be an integer between 1 and"
                          " 10000, inclusive", ArgumentName="partNumber",
                          ArgumentValue=number_text[:20])
        checksums = {_CHECKSUM_ELEMENTS[field]: value for field, value in fields.items()
                     if field in _CHECKSUM_ELEMENTS}
        parts.append((int(number_text), fields["ETag"], checksums))
    return parts

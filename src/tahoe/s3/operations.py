"""The S3 operations on buckets and objects: request headers in, :class:`Answer` out.

Each operation reads what it needs from a :class:`~.server.Context` (headers,
query, body) and calls the account's :class:`~.store.AccountStore`:

* service and buckets: ListBuckets, CreateBucket, HeadBucket, DeleteBucket,
  GetBucketLocation, GetBucketVersioning (never enabled);
* objects: PutObject (streamed from the request's spool into one CHK upload
  and one link), GetObject and HeadObject (Range, the conditional headers,
  ``response-*`` overrides, checksums with ``x-amz-checksum-mode``),
  DeleteObject, DeleteObjects, CopyObject (the same cap linked again, no
  bytes moved; ``x-amz-metadata-directive`` COPY or REPLACE).

Facts: the Amazon S3 API Reference, one page per operation.
"""
from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import unquote

from twisted.internet.defer import DeferredSemaphore

from ..caps.immutable import CHKReadCap, LiteralCap
from ..client.uploadable import BytesUploadable, FileUploadable
from . import xmlio
from .errors import S3Error
from .keys import split_key
from .listing import list_objects_v1, list_objects_v2
from .objects import STORED_HEADERS, ObjectInfo, quoted_etag
from .server import Answer, Context, http_date
from .store import AccountStore, gather

__all__ = ["OPERATIONS", "object_headers", "put_metadata", "check_preconditions", "byte_range",
           "parse_copy_source", "stored_answer", "check_length"]

#: S3's limit on the user metadata of an object (``x-amz-meta-*``), in bytes.
MAX_METADATA = 2048
#: The most keys one DeleteObjects names.
MAX_KEYS = 1000
#: Deletes of one DeleteObjects under way at once.
DELETES_AT_ONCE = 64
_RESPONSE_OVERRIDES = {"response-content-type": "Content-Type",
                       "response-content-language": "Content-Language",
                       "response-expires": "Expires",
                       "response-cache-control": "Cache-Control",
                       "response-content-disposition": "Content-Disposition",
                       "response-content-encoding": "Content-Encoding"}
_RANGE = re.compile(r"\Abytes=(\d*)-(\d*)\Z")


def _parse_http_date(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


def _etag_matches(condition: str, etag: str) -> bool:
    wanted = {part.strip().removeprefix("W/").strip('"') for part in condition.split(",")}
    return "*" in wanted or etag in wanted


def check_preconditions(headers: dict[str, str], info: ObjectInfo, prefix: str = "",
                        modifying: bool = False) -> None:
    """RFC 7232's order of the conditional headers, as S3 applies them.

    :param prefix: ``"x-amz-copy-source-"`` for a copy's source conditions.
    :raises S3Error: ``PreconditionFailed`` (412) or ``NotModified`` (304).
    """
    def header(name: str) -> str | None:
        return headers.get(prefix + name)
    if_match, if_none_match = header("if-match"), header("if-none-match")
    modified = int(info.last_modified)
    if if_match is not None and not _etag_matches(if_match, info.etag):
        raise S3Error("PreconditionFailed", Condition="If-Match")
    unmodified_since = _parse_http_date(header("if-unmodified-since"))
    if if_match is None and unmodified_since is not None and modified > unmodified_since:
        raise S3Error("PreconditionFailed", Condition="If-Unmodified-Since")
    if if_none_match is not None and _etag_matches(if_none_match, info.etag):
        if modifying or prefix:
            raise S3Error("PreconditionFailed", Condition="If-None-Match")
        raise S3Error("NotModified")
    modified_since = _parse_http_date(header("if-modified-since"))
    if if_none_match is None and modified_since is not None and modified <= modified_since:
        if prefix:
            raise S3Error("PreconditionFailed", Condition="If-Modified-Since")
        raise S3Error("NotModified")


def object_headers(info: ObjectInfo, size: int, with_checksums: bool) -> dict[str, str]:
    """The headers that describe an object in GET and HEAD answers."""
    headers = {"ETag": quoted_etag(info.etag), "Last-Modified": http_date(info.last_modified),
               "Content-Type": info.content_type, "Accept-Ranges": "bytes"}
    for name, value in info.headers.items():
        headers["-".join(part.capitalize() for part in name.split("-"))] = value
    for name, value in info.meta.items():
        headers["x-amz-meta-" + name] = value
    if with_checksums:
        for algorithm, value in info.checksums.items():
            headers["x-amz-checksum-" + algorithm.lower()] = value
    return headers


def put_metadata(context: Context) -> dict[str, Any]:
    """The S3 metadata a PUT stores from its headers (content type, ``x-amz-meta-*``, the
    stored response headers).

    :raises S3Error: ``MetadataTooLarge`` past 2 KB of user metadata.
    """
    meta = {}
    for name, value in context.headers.items():
        if name.startswith("x-amz-meta-"):
            meta[name[len("x-amz-meta-"):]] = value
    if sum(len(k.encode()) + len(v.encode()) for k, v in meta.items()) > MAX_METADATA:
        raise S3Error("MetadataTooLarge", Size=str(sum(len(k) + len(v)
                                                      for k, v in meta.items())),
                      MaxSizeAllowed=str(MAX_METADATA))
    s3: dict[str, Any] = {"content-type": context.headers.get("content-type")
                          or "binary/octet-stream", "meta": meta}
    for name in STORED_HEADERS:
        if name in context.headers:
            s3[name] = context.headers[name]
    # aws-chunked says how this request's body is framed, not how the object is encoded
    encodings = [part.strip() for part in s3.get("content-encoding", "").split(",")
                 if part.strip() and part.strip().lower() != "aws-chunked"]
    if encodings:
        s3["content-encoding"] = ",".join(encodings)
    else:
        s3.pop("content-encoding", None)
    return s3


def _store(context: Context) -> AccountStore:
    return context.store  # type: ignore[no-any-return]


# -- service and buckets

async def list_buckets(context: Context) -> Answer:
    """GET /: the account's buckets."""
    buckets = await _store(context).list_buckets()
    owner_id, owner_name = context.owner
    return Answer(body=xmlio.list_buckets_result(owner_id, owner_name, buckets),
                  headers={"Content-Type": "application/xml"})


async def create_bucket(context: Context) -> Answer:
    """PUT /BUCKET: make a bucket (a location constraint, if any, must be ours). One that
    exists already is ``BucketAlreadyOwnedByYou`` (409), except in us-east-1, where S3
    answers 200 to its owner."""
    body = await context.payload.small()
    if body.strip():
        location = xmlio.parse_create_bucket(body)
        region = context.gateway_region
        if location and location != region and not (region == "us-east-1"
                                                     and location == "US"):
            raise S3Error("InvalidArgument", f"The location constraint {location!r} is not"
                          f" this gateway's region ({region}).",
                          ArgumentName="LocationConstraint",
                          ArgumentValue=location)
    try:
        await _store(context).create_bucket(context.bucket)
    except S3Error as error:
        # S3's legacy rule in us-east-1: creating a bucket you own again succeeds
        if error.code != "BucketAlreadyOwnedByYou" or context.gateway_region != "us-east-1":
            raise
    return Answer(headers={"Location": "/" + context.bucket})


async def head_bucket(context: Context) -> Answer:
    """HEAD /BUCKET: 200 if it exists."""
    await _store(context).bucket(context.bucket)
    return Answer(headers={"x-amz-bucket-region": context.gateway_region})


async def delete_bucket(context: Context) -> Answer:
    """DELETE /BUCKET: unlink it if it holds no object."""
    await _store(context).delete_bucket(context.bucket)
    return Answer(status=204)


async def get_bucket_location(context: Context) -> Answer:
    """GET /BUCKET?location: the gateway's region (empty for us-east-1, as S3 says)."""
    await _store(context).bucket(context.bucket)
    region = context.gateway_region
    return Answer(body=xmlio.location_constraint(None if region == "us-east-1" else region),
                  headers={"Content-Type": "application/xml"})


async def get_bucket_versioning(context: Context) -> Answer:
    """GET /BUCKET?versioning: never enabled."""
    await _store(context).bucket(context.bucket)
    return Answer(body=xmlio.versioning_configuration(),
                  headers={"Content-Type": "application/xml"})


# -- objects

async def put_object(context: Context) -> Answer:
    """PUT /BUCKET/KEY: store the body as one immutable file, linked under the key."""
    if "x-amz-copy-source" in context.headers:
        return await copy_object(context)
    store = _store(context)
    dirs, leaf, folder = split_key(context.key)
    s3 = put_metadata(context)
    check_length(context)
    spool, size, digests = await context.payload.spool()
    try:
        s3.update(etag=digests.md5_hex(), size=size, **{"last-modified": time.time()})
        s3["checksums"] = digests.checksums()
        if folder:
            if size:
                raise S3Error("InvalidArgument", "A key ending in '/' is a directory on the"
                              " grid (a folder marker): its body must be empty.",
                              ArgumentName="key", ArgumentValue=context.key[:256])
            await _conditional_put(context, store)
            await store.put_folder(context.bucket, context.key, s3)
        else:
            await _conditional_put(context, store)
            parent, result = await gather(
                store.directory_for(context.bucket, dirs, context.key),
                context.services.upload(FileUploadable(spool, size)))
            await store.link_file(parent, leaf, context.key, result.cap.to_string(), s3)
    finally:
        spool.close()
    return stored_answer(s3["etag"], s3["checksums"])


def stored_answer(etag: str, checksums: dict[str, str]) -> Answer:
    """The answer to a PUT of data: its ETag and checksums."""
    headers = {"ETag": quoted_etag(etag)}
    for algorithm, value in checksums.items():
        headers["x-amz-checksum-" + algorithm.lower()] = value
    return Answer(headers=headers)


def check_length(context: Context) -> None:
    """A body's length must be given (or the body chunked by HTTP).

    :raises S3Error: ``MissingContentLength``.
    """
    if "content-length" not in context.headers \
            and "chunked" not in context.headers.get("transfer-encoding", "").lower():
        raise S3Error("MissingContentLength")


async def _conditional_put(context: Context, store: AccountStore) -> None:
    """S3's conditional writes: ``If-None-Match: *`` (only if absent), ``If-Match``."""
    if_none_match = context.headers.get("if-none-match")
    if_match = context.headers.get("if-match")
    if if_none_match is None and if_match is None:
        return
    try:
        info = await store.lookup(context.bucket, context.key)
    except S3Error as error:
        if error.code != "NoSuchKey":
            raise
        if if_match is not None:
            raise S3Error("NoSuchKey", Key=context.key) from None
        return
    check_preconditions(context.headers, info, modifying=True)


def byte_range(text: str | None, size: int) -> tuple[int, int] | None:
    """(first, last) byte of a ``Range`` header; None for the whole object.

    :raises S3Error: ``InvalidRange`` when it starts past the end.
    """
    if text is None:
        return None
    match = _RANGE.match(text.strip())
    if match is None or match.group(1) == match.group(2) == "":
        return None  # not a single byte range: ignored, as HTTP says
    first, last = match.group(1), match.group(2)
    if first == "":
        length = int(last)
        if length == 0:
            raise S3Error("InvalidRange", ActualObjectSize=str(size), RangeRequested=text)
        return max(0, size - length), size - 1
    start = int(first)
    end = size - 1 if last == "" else min(int(last), size - 1)
    if last != "" and int(last) < start:
        return None
    if start >= size:
        raise S3Error("InvalidRange", ActualObjectSize=str(size), RangeRequested=text)
    return start, end


async def get_object(context: Context) -> Answer:
    """GET or HEAD /BUCKET/KEY."""
    store = _store(context)
    info = await store.lookup(context.bucket, context.key)
    check_preconditions(context.headers, info)
    size = await store.size_of(info)
    span = byte_range(context.headers.get("range"), size)
    # checksums are of the whole object: a part of it is sent without them, as S3 does
    with_checksums = span is None and context.headers.get(
        "x-amz-checksum-mode", "").upper() == "ENABLED"
    headers = object_headers(info, size, with_checksums)
    part = context.query.get("partNumber")
    if part is not None and part != "1":
        raise S3Error("InvalidPart" if part.isdigit() else "InvalidArgument",
                      "The requested partnumber is not satisfiable")
    for name, header in _RESPONSE_OVERRIDES.items():
        if name in context.query:
            headers[header] = context.query[name]
    status = 200
    offset, length = 0, size
    if span is not None:
        status = 206
        offset, length = span[0], span[1] - span[0] + 1
        headers["Content-Range"] = f"bytes {span[0]}-{span[1]}/{size}"
    if context.method == "HEAD":
        headers["Content-Length"] = str(length)
        return Answer(status=status, headers=headers)
    chunks: AsyncIterator[bytes] = store.read(info, offset, length)
    return Answer(status=status, headers=headers, chunks=chunks, length=length)


async def delete_object(context: Context) -> Answer:
    """DELETE /BUCKET/KEY: 204, whether it was there or not."""
    await _store(context).delete(context.bucket, context.key)
    return Answer(status=204)


async def delete_objects(context: Context) -> Answer:
    """POST /BUCKET?delete: several keys; each outcome reported, in the order asked (only
    errors when quiet). The deletes run together (at most :data:`DELETES_AT_ONCE` at a
    time), so that those in one directory are coalesced into a few directory writes."""
    body = await context.payload.small()
    keys, quiet = xmlio.parse_delete(body)
    if len(keys) > MAX_KEYS:
        raise S3Error("MalformedXML", f"A Delete request names at most {MAX_KEYS} keys.")
    store = _store(context)
    await store.bucket(context.bucket)
    limit = DeferredSemaphore(DELETES_AT_ONCE)

    async def delete(key: str) -> S3Error | None:
        await limit.acquire()
        try:
            await store.delete(context.bucket, key)
        except S3Error as error:
            return error
        finally:
            limit.release()
        return None
    outcomes = await gather(*(delete(key) for key, _version in keys))
    deleted = [key for (key, _), error in zip(keys, outcomes) if error is None]
    errors = [(key, error.code, error.message) for (key, _), error in zip(keys, outcomes)
              if error is not None]
    return Answer(body=xmlio.delete_result([] if quiet else deleted, errors),
                  headers={"Content-Type": "application/xml"})


def parse_copy_source(text: str) -> tuple[str, str]:
    """(bucket, key) of an ``x-amz-copy-source`` header (``/bucket/key``, URL-encoded).

    :raises S3Error: ``InvalidArgument`` for a malformed one.
    """
    source = text.split("?versionId=", 1)[0]
    try:
        source = unquote(source, errors="strict")
    except UnicodeDecodeError:
        source = ""
    source = source[1:] if source.startswith("/") else source
    bucket, _, key = source.partition("/")
    if not bucket or not key:
        raise S3Error("InvalidArgument", "Copy Source must mention the source bucket and key:"
                      " sourcebucket/sourcekey", ArgumentName="x-amz-copy-source",
                      ArgumentValue=text[:256])
    return bucket, key


async def copy_object(context: Context) -> Answer:
    """PUT /BUCKET/KEY with ``x-amz-copy-source``: link the source's file again."""
    store = _store(context)
    source_bucket, source_key = parse_copy_source(context.headers["x-amz-copy-source"])
    directive = context.headers.get("x-amz-metadata-directive", "COPY").upper()
    if directive not in ("COPY", "REPLACE"):
        raise S3Error("InvalidArgument", "Unknown metadata directive.",
                      ArgumentName="x-amz-metadata-directive", ArgumentValue=directive)
    info = await store.lookup(source_bucket, source_key)
    check_preconditions(context.headers, info, prefix="x-amz-copy-source-")
    if (source_bucket, source_key) == (context.bucket, context.key) and directive == "COPY":
        raise S3Error("InvalidRequest", "This copy request is illegal because it is trying"
                      " to copy an object to itself without changing the object's metadata,"
                      " storage class, website redirect location or encryption attributes.")
    size = await store.size_of(info)
    now = time.time()
    if directive == "REPLACE":
        s3 = put_metadata(context)
    else:
        s3 = {"content-type": info.content_type, "meta": dict(info.meta)}
        s3.update(info.headers)
    s3.update(etag=info.etag, size=size, checksums=dict(info.checksums),
              **{"last-modified": now})
    dirs, leaf, folder = split_key(context.key)
    if folder or info.child is None:
        if size:
            raise S3Error("InvalidArgument", "A key ending in '/' is a directory on the grid:"
                          " only an empty object can be copied to it.")
        await store.put_folder(context.bucket, context.key, s3)
    else:
        parent = await store.directory_for(context.bucket, dirs, context.key)
        await store.link_file(parent, leaf, context.key, await _immutable_cap(context, info),
                              s3)
    return Answer(body=xmlio.copy_object_result(quoted_etag(info.etag), now),
                  headers={"Content-Type": "application/xml"})


async def _immutable_cap(context: Context, info: ObjectInfo) -> str:
    """The read cap of an immutable file holding the object: its own (no bytes move), or,
    for a mutable file another tool linked, a new immutable copy (linking the mutable
    file again would make the two keys one file)."""
    assert info.child is not None
    cap = info.child.cap
    if isinstance(cap, (CHKReadCap, LiteralCap)):
        return cap.to_string()
    data = await context.services.mutable.open(cap).read()
    result = await context.services.upload(BytesUploadable(data))
    return result.cap.to_string()  # type: ignore[no-any-return]


#: (method, what) -> operation; ``what`` is "service", "bucket", "object" or
#: "bucket?SUBRESOURCE".
OPERATIONS: dict[tuple[str, str], Any] = {
    ("GET", "service"): list_buckets,
    ("PUT", "bucket"): create_bucket,
    ("HEAD", "bucket"): head_bucket,
    ("DELETE", "bucket"): delete_bucket,
    ("GET", "bucket?location"): get_bucket_location,
    ("GET", "bucket?versioning"): get_bucket_versioning,
    ("GET", "bucket?list-type"): list_objects_v2,
    ("GET", "bucket"): list_objects_v1,
    ("POST", "bucket?delete"): delete_objects,
    ("PUT", "object"): put_object,
    ("GET", "object"): get_object,
    ("HEAD", "object"): get_object,
    ("DELETE", "object"): delete_object,
}

"""Multipart uploads: parts staged on the gateway's disk (:mod:`.staging`), one CHK upload
at Complete.

CreateMultipartUpload stages a record; UploadPart and UploadPartCopy store
durable part files; Complete checks the list (ascending numbers, ETags and
checksums that match, every part but the last at least 5 MiB), uploads the
concatenation through :class:`~.staging.PartsUploadable` (no copy; its convergent
key hashed while the parts came, :mod:`.key_ahead`), links the
file with S3's multipart ETag (the MD5 of the parts' binary MD5s, then ``-N``)
and composite checksum, and removes the staging directory. Uploads left
unfinished are removed after ``[s3]multipart.max_age``
(:meth:`~.staging.Staging.remove_older_than`, called by the service's timer).

Facts: the Amazon S3 API Reference (CreateMultipartUpload, UploadPart,
UploadPartCopy, CompleteMultipartUpload, AbortMultipartUpload, ListParts,
ListMultipartUploads) and its multipart limits (parts 1 to 10,000, 5 MiB
minimum but for the last, 5 GiB a part).
"""
from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import AsyncIterator
from typing import Any, BinaryIO

from twisted.internet import threads
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from . import xmlio
from .checksums import composite_checksum, multipart_etag
from .errors import S3Error
from .key_ahead import LARGE_FILE, KeyAhead
from .keys import split_key
from .objects import quoted_etag
from .operations import (byte_range, check_length, check_preconditions, parse_copy_source,
                         put_metadata, stored_answer)
from .server import Answer, Context, grid_error
from .staging import PartsUploadable, Staging, disk_refused
from .store import gather

__all__ = ["OPERATIONS"]

MIN_PART_SIZE = 5 * 1024 * 1024
MAX_PART_NUMBER = 10000
#: Seconds between the spaces that keep a long Complete's answer alive.
KEEPALIVE_SECONDS = 10.0
XML_DECLARATION = b'<?xml version="1.0" encoding="UTF-8"?>\n'


def _staging(context: Context) -> Staging:
    return context.gateway.uploads  # type: ignore[no-any-return]


def _part_number(context: Context) -> int:
    text = context.query.get("partNumber", "")
    if not text.isdigit() or not 1 <= int(text) <= MAX_PART_NUMBER:
        raise S3Error("InvalidArgument", "Part number must be an integer between 1 and 10000,"
                      " inclusive", ArgumentName="partNumber", ArgumentValue=text[:20])
    return int(text)


async def create_upload(context: Context) -> Answer:
    """POST /BUCKET/KEY?uploads: stage a new upload."""
    _, _, folder = split_key(context.key)
    if folder:
        raise S3Error("InvalidArgument", "A key ending in '/' is a directory on the grid: it"
                      " holds no data, so it cannot be uploaded in parts.",
                      ArgumentName="key", ArgumentValue=context.key[:256])
    await context.store.bucket(context.bucket)
    algorithm = context.headers.get("x-amz-checksum-algorithm", "").upper() or None
    record = {"account": context.account.access_key, "bucket": context.bucket,
              "key": context.key, "s3": put_metadata(context), "initiated": time.time(),
              "checksum-algorithm": algorithm}
    upload_id = _staging(context).create(record)
    headers = {"Content-Type": "application/xml"}
    if algorithm:
        headers["x-amz-checksum-algorithm"] = algorithm
    return Answer(body=xmlio.initiate_multipart_upload_result(context.bucket, context.key,
                                                              upload_id), headers=headers)


async def upload_part(context: Context) -> Answer:
    """PUT /BUCKET/KEY?partNumber=N&uploadId=ID (a copy with ``x-amz-copy-source``)."""
    number = _part_number(context)
    staging = _staging(context)
    upload_id = context.query["uploadId"]
    staging.load(upload_id, context.account.access_key, context.bucket, context.key)
    if "x-amz-copy-source" in context.headers:
        return await _upload_part_copy(context, upload_id, number)
    check_length(context)
    spool, size, digests = await context.payload.spool(named=True)
    try:
        info = {"size": size, "md5": digests.md5_hex(), "last-modified": time.time(),
                "checksums": digests.checksums()}
        await _store_part(context, upload_id, number, spool, info)
    finally:
        spool.close()
    return stored_answer(info["md5"], info["checksums"])


async def _store_part(context: Context, upload_id: str, number: int, spool: BinaryIO,
                      info: dict[str, Any]) -> None:
    """Store a part durably (in a thread), then hash it for the key if its turn came
    (:class:`~.key_ahead.KeyAhead`; not when uploads go through a helper)."""
    staging = _staging(context)
    ahead = staging.ahead.get(upload_id)
    if ahead is None and context.services.helper_furl is None:
        hasher = context.services.uploader.key_hasher(LARGE_FILE)
        ahead = staging.ahead[upload_id] = KeyAhead(
            hasher, lambda n: staging.part_path(upload_id, n))
    if ahead is not None:
        ahead.storing(number)
    try:
        await threads.deferToThread(staging.store_part, upload_id, number, spool,
                                    info["size"], info)
    except BaseException:
        if ahead is not None:
            ahead.not_stored(number)
        raise
    if ahead is not None:
        ahead.stored(number, info["size"], info["md5"])


async def _upload_part_copy(context: Context, upload_id: str, number: int) -> Answer:
    source_bucket, source_key = parse_copy_source(context.headers["x-amz-copy-source"])
    store = context.store
    info = await store.lookup(source_bucket, source_key)
    check_preconditions(context.headers, info, prefix="x-amz-copy-source-")
    size = await store.size_of(info)
    offset, length = 0, size
    wanted = context.headers.get("x-amz-copy-source-range")
    if wanted is not None:
        span = byte_range(wanted, size)
        if span is None:
            raise S3Error("InvalidArgument", "The x-amz-copy-source-range value must be of the"
                          " form bytes=first-last where first and last are the zero-based"
                          " offsets of the first and last bytes to copy",
                          ArgumentName="x-amz-copy-source-range", ArgumentValue=wanted[:80])
        offset, length = span[0], span[1] - span[0] + 1
    md5 = hashlib.md5()
    with tempfile.TemporaryFile() as spool:
        async for chunk in store.read(info, offset, length):
            md5.update(chunk)
            try:
                spool.write(chunk)
            except OSError as error:
                raise disk_refused(error, "the part's copy") from None
        written = spool.tell()
        if written != length:
            raise S3Error("InternalError", "The source object could not be read whole.")
        now = time.time()
        record = {"size": length, "md5": md5.hexdigest(), "last-modified": now,
                  "checksums": {}}
        await _store_part(context, upload_id, number, spool, record)
    return Answer(body=xmlio.copy_part_result(quoted_etag(record["md5"]), now),
                  headers={"Content-Type": "application/xml"})


async def complete_upload(context: Context) -> Answer:
    """POST /BUCKET/KEY?uploadId=ID: check the parts, upload them as one file, link it.

    The list is checked before anything is answered (S3's errors with their statuses);
    then the answer starts at once, ``200`` and the XML declaration, and spaces follow
    every :data:`KEEPALIVE_SECONDS` until the upload is linked, as S3 does, so that a
    client does not time out while a large object is encoded; its outcome ends the
    body (a ``CompleteMultipartUploadResult``, or an ``Error`` document, which SDKs
    look for in this answer). A second Complete of an upload being completed (a
    client's retry) waits for the first and gets the same outcome.
    """
    staging = _staging(context)
    upload_id = context.query["uploadId"]
    owner = (context.account.access_key, context.bucket, context.key)
    answered = staging.completed.get(upload_id)
    if answered is not None and answered[1] == owner:
        return Answer(body=answered[2], headers={"Content-Type": "application/xml"})
    record = staging.load(upload_id, *owner)
    requested = xmlio.parse_complete_multipart_upload(await context.payload.small())
    waiters = staging.completing.get(upload_id)
    if waiters is None:
        plan = _plan(staging, upload_id, record, requested)
        waiters = staging.completing[upload_id] = []

        def done(result: Any) -> None:
            del staging.completing[upload_id]
            if isinstance(result, bytes):
                staging.remember(upload_id, owner, result, context.gateway.clock.seconds())
            for waiter in waiters:
                waiter.callback(result)
        Deferred.fromCoroutine(_complete(context, upload_id, record, *plan)).addBoth(done)
    outcome: Deferred = Deferred()
    waiters.append(outcome)
    return Answer(headers={"Content-Type": "application/xml"},
                  chunks=_kept_alive(context.gateway.clock, outcome, context.request_id))


def _plan(staging: Staging, upload_id: str, record: dict[str, Any],
          requested: list[tuple[int, str, dict[str, str]]]
          ) -> tuple[list[int], list[str], list[int], list[str], dict[str, str]]:
    """Check a Complete's list of parts against the parts stored: their files, sizes, MD5s
    and the object's checksums (composite, when the upload asked for an algorithm).

    :raises S3Error: ``MalformedXML``, ``InvalidPartOrder``, ``InvalidPart``,
        ``EntityTooSmall``.
    """
    if not requested:
        raise S3Error("MalformedXML", "You must specify at least one part.")
    stored = staging.parts(upload_id)
    numbers = [number for number, _, _ in requested]
    if numbers != sorted(set(numbers)):
        raise S3Error("InvalidPartOrder", UploadId=upload_id)
    algorithm = record.get("checksum-algorithm")
    paths, sizes, md5s, part_checksums = [], [], [], []
    for index, (number, etag, given) in enumerate(requested):
        info = stored.get(number)
        if info is None or etag.strip().strip('"') != info["md5"] or any(
                info["checksums"].get(name) != value for name, value in given.items()):
            raise S3Error("InvalidPart", UploadId=upload_id, PartNumber=str(number),
                          ETag=etag[:80])
        if index < len(requested) - 1 and info["size"] < MIN_PART_SIZE:
            raise S3Error("EntityTooSmall", UploadId=upload_id, PartNumber=str(number),
                          ProposedSize=str(info["size"]), MinSizeAllowed=str(MIN_PART_SIZE))
        paths.append(staging.part_path(upload_id, number))
        sizes.append(info["size"])
        md5s.append(info["md5"])
        part_checksums.append(info["checksums"].get(algorithm))
    checksums = {}
    if algorithm and None not in part_checksums:
        checksums[algorithm] = composite_checksum(algorithm, part_checksums)
    return numbers, paths, sizes, md5s, checksums


async def _complete(context: Context, upload_id: str, record: dict[str, Any],
                    numbers: list[int], paths: list[str], sizes: list[int], md5s: list[str],
                    checksums: dict[str, str]) -> bytes:
    """Upload the parts as one file, link it, drop the staging; the result document."""
    etag = multipart_etag(md5s)
    store = context.store
    dirs, leaf, _ = split_key(context.key)
    ahead = _staging(context).ahead.get(upload_id)
    known = None if ahead is None else await ahead.key_for(numbers, sizes, md5s)
    source = PartsUploadable(paths, sizes, known)
    try:
        parent, result = await gather(
            store.directory_for(context.bucket, dirs, context.key),
            context.services.upload(source))
    finally:
        source.close()
    s3 = dict(record["s3"])
    s3.update(etag=etag, size=sum(sizes), checksums=checksums,
              **{"last-modified": time.time()})
    await store.link_file(parent, leaf, context.key, result.cap.to_string(), s3)
    _staging(context).remove(upload_id)
    return xmlio.complete_multipart_upload_result(
        f"/{context.bucket}/{context.key}", context.bucket, context.key, quoted_etag(etag),
        checksums)


def _without_declaration(document: bytes) -> bytes:
    return document.split(b"?>", 1)[1] if document.startswith(b"<?xml") else document


async def _kept_alive(clock: Any, outcome: Deferred, request_id: str) -> AsyncIterator[bytes]:
    """The body of a Complete: the declaration, a space every :data:`KEEPALIVE_SECONDS`
    while ``outcome`` is pending, then the document it gives (or the error it fails with:
    an ``InternalError`` for anything but an :class:`S3Error`, logged without caps)."""
    finished: list[Any] = []
    waiting: list[Deferred] = []

    def wake(result: Any) -> None:
        finished.append(result)
        if waiting and not waiting[-1].called:
            waiting[-1].callback(None)
    outcome.addBoth(wake)
    yield XML_DECLARATION
    while not finished:
        tick: Deferred = Deferred()
        waiting.append(tick)
        timer = clock.callLater(KEEPALIVE_SECONDS, lambda: tick.called or tick.callback(None))
        await tick
        if timer.active():
            timer.cancel()
        if not finished:
            yield b" "
    result = finished[0]
    if isinstance(result, Failure):
        error = result.value
        if not isinstance(error, S3Error):
            error = grid_error(error, request_id)
        result = xmlio.error_body(error.code, error.message, error.extra,
                                  request_id=request_id)
    yield _without_declaration(result)


async def abort_upload(context: Context) -> Answer:
    """DELETE /BUCKET/KEY?uploadId=ID: drop the upload and its parts."""
    staging = _staging(context)
    upload_id = context.query["uploadId"]
    staging.load(upload_id, context.account.access_key, context.bucket, context.key)
    staging.remove(upload_id)
    return Answer(status=204)


async def list_parts(context: Context) -> Answer:
    """GET /BUCKET/KEY?uploadId=ID: the parts stored, by number."""
    staging = _staging(context)
    upload_id = context.query["uploadId"]
    staging.load(upload_id, context.account.access_key, context.bucket, context.key)
    max_parts = context.integer_argument("max-parts", 1000)
    marker_text = context.query.get("part-number-marker", "0") or "0"
    if not marker_text.isdigit():
        raise S3Error("InvalidArgument", "part-number-marker must be an integer.",
                      ArgumentName="part-number-marker", ArgumentValue=marker_text[:20])
    marker = int(marker_text)
    parts = sorted((number, info) for number, info in staging.parts(upload_id).items()
                   if number > marker)
    page, truncated = parts[:max_parts], len(parts) > max_parts
    owner = context.owner
    return Answer(body=xmlio.list_parts_result(
        bucket=context.bucket, key=context.key, upload_id=upload_id,
        part_number_marker=marker, next_part_number_marker=page[-1][0] if page else marker,
        max_parts=max_parts, truncated=truncated, owner=owner,
        parts=[(number, quoted_etag(info["md5"]), info["size"], info["last-modified"])
               for number, info in page]),
        headers={"Content-Type": "application/xml"})


async def list_uploads(context: Context) -> Answer:
    """GET /BUCKET?uploads: this account's unfinished uploads into the bucket, by key."""
    await context.store.bucket(context.bucket)
    query = context.query
    prefix = query.get("prefix", "")
    key_marker, id_marker = query.get("key-marker", ""), query.get("upload-id-marker", "")
    max_uploads = context.integer_argument("max-uploads", 1000)
    found = sorted((record["key"], record.get("initiated", 0.0), upload_id)
                   for upload_id, record in _staging(context).uploads()
                   if record.get("account") == context.account.access_key
                   and record.get("bucket") == context.bucket
                   and str(record.get("key", "")).startswith(prefix))
    after = [(key, initiated, upload_id) for key, initiated, upload_id in found
             if key > key_marker or (key == key_marker and id_marker
                                     and upload_id > id_marker)]
    page, truncated = after[:max_uploads], len(after) > max_uploads
    owner = context.owner
    return Answer(body=xmlio.list_multipart_uploads_result(
        bucket=context.bucket, prefix=prefix, key_marker=key_marker, upload_id_marker=id_marker,
        next_key_marker=page[-1][0] if truncated else None,
        next_upload_id_marker=page[-1][2] if truncated else None, max_uploads=max_uploads,
        truncated=truncated, owner=owner, uploads=[(key, upload_id, initiated)
                                                   for key, initiated, upload_id in page]),
        headers={"Content-Type": "application/xml"})


#: (method, what) -> operation, as :meth:`tahoe.s3.service.S3Gateway.route` names them.
OPERATIONS: dict[tuple[str, str], Any] = {
    ("POST", "object?uploads"): create_upload,
    ("PUT", "object?uploadId"): upload_part,
    ("POST", "object?uploadId"): complete_upload,
    ("DELETE", "object?uploadId"): abort_upload,
    ("GET", "object?uploadId"): list_parts,
    ("GET", "bucket?uploads"): list_uploads,
}

"""A full temporary directory: large request bodies get an answer saying so, not a cut connection.

A client node with the S3 gateway whose ``[node]tempdir`` is a 1 MiB tmpfs
this test mounts (root only). A 3 MB ``PUT`` through the web API is answered
507 Insufficient Storage and a 3 MB PutObject S3's ``ServiceUnavailable``,
both naming the full directory, as is an aws-chunked body whose decoded copy
does not fit, and a multipart part that the staging directory (another
tmpfs) cannot hold; nothing is stored. Small requests, kept in
memory, go on working, and so do large ones once there is room.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.support.dirapi import WebAPI
from tests.support.proxied_grid import ProxiedGrid
from tests.support.s3 import S3Node, started_s3_node
from tests.support.sysfaults import require_root, tmpfs
from tests.integration.conftest import DEFAULT_SHARES
from tests.integration.test_s3_gateway import _streaming_put

SPOOL_SIZE = 1024 * 1024


@pytest.fixture(scope="module")
def spool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    require_root()
    with tmpfs(tmp_path_factory.mktemp("spool") / "tmpfs", SPOOL_SIZE) as path:
        yield path


@pytest.fixture(scope="module")
def s3_node(local_grid: ProxiedGrid, spool: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Node]:
    with started_s3_node(local_grid, tmp_path_factory.mktemp("s3"), DEFAULT_SHARES,
                         node_config={"tempdir": str(spool)}) as node:
        yield node


def _code(error: Any) -> tuple[str, int]:
    answer = error.value.response
    return answer["Error"]["Code"], answer["ResponseMetadata"]["HTTPStatusCode"]


def test_a_body_the_tempdir_cannot_hold_is_answered(s3_node: S3Node, spool: Path) -> None:
    api = WebAPI(s3_node.gateway.url)
    big = os.urandom(3_000_000)
    answer = api.request("PUT", "/uri", big)
    assert answer.status == 507, answer
    assert "could not keep the request body" in answer.text and str(spool) in answer.text
    assert "No space left on device" in answer.text

    s3 = s3_node.client()
    s3.create_bucket(Bucket="full")
    with pytest.raises(ClientError) as error:
        s3.put_object(Bucket="full", Key="big", Body=big)
    assert _code(error) == ("ServiceUnavailable", 503)
    assert "No space left on device" in error.value.response["Error"]["Message"]
    assert "Contents" not in s3.list_objects_v2(Bucket="full")  # nothing stored
    # aws-chunked: the raw body fits, its decoded copy beside it does not
    status, body = _streaming_put(s3_node, "/full/chunked", [os.urandom(65536)] * 10)
    assert status == 503 and b"<Code>ServiceUnavailable</Code>" in body
    assert b"could not keep the request body" in body and b"No space left" in body
    assert "Contents" not in s3.list_objects_v2(Bucket="full")

    small = os.urandom(50_000)  # kept in memory: unaffected
    cap = api.request("PUT", "/uri", small).text.strip()
    assert cap.startswith("URI:CHK:") and api.request("GET", f"/uri/{cap}").body == small
    s3.put_object(Bucket="full", Key="small", Body=small)
    assert s3.get_object(Bucket="full", Key="small")["Body"].read() == small
    assert not os.listdir(spool)  # every spool file closed and gone


def test_a_large_body_goes_through_once_there_is_room(s3_node: S3Node) -> None:
    api = WebAPI(s3_node.gateway.url)
    fits = os.urandom(600_000)
    answer = api.request("PUT", "/uri", fits)
    assert answer.status == 200 and answer.text.startswith("URI:CHK:")


def test_a_part_the_staging_disk_cannot_hold_is_answered(s3_node: S3Node) -> None:
    """The multipart staging directory on a 300 kB tmpfs: a 600 kB part (spooled, then
    staged) is S3's ServiceUnavailable naming the full disk, and leaves no file; a small
    part then goes in, and the upload completes with it."""
    staging = s3_node.basedir / "private" / "s3-multipart"
    s3 = s3_node.client()
    s3.create_bucket(Bucket="parts-full")
    with tmpfs(staging, 300_000):
        upload = s3.create_multipart_upload(Bucket="parts-full", Key="obj")["UploadId"]
        with pytest.raises(ClientError) as error:
            s3.upload_part(Bucket="parts-full", Key="obj", UploadId=upload, PartNumber=1,
                           Body=os.urandom(600_000))
        assert _code(error) == ("ServiceUnavailable", 503)
        assert "could not keep part 1" in error.value.response["Error"]["Message"]
        assert "No space left on device" in error.value.response["Error"]["Message"]
        assert sorted(os.listdir(staging / upload)) == ["upload.json"]
        small = os.urandom(20_000)
        etag = s3.upload_part(Bucket="parts-full", Key="obj", UploadId=upload, PartNumber=1,
                              Body=small)["ETag"]
        s3.complete_multipart_upload(Bucket="parts-full", Key="obj", UploadId=upload,
                                     MultipartUpload={"Parts": [
                                         {"PartNumber": 1, "ETag": etag}]})
        assert s3.get_object(Bucket="parts-full", Key="obj")["Body"].read() == small
        assert os.listdir(staging) == []

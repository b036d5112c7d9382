"""The S3 gateway SIGKILLed mid-multipart and right after acknowledging: nothing acknowledged is lost.

A client node of ours with ``[s3]`` on the session's local grid, killed
with SIGKILL (the node process, by its PID) and started again on the same
node directory and port:

* after two 5 MiB parts were acknowledged and while a third was half sent,
  ListParts still shows the two acknowledged parts (and not the cut one),
  and Complete then gives the right bytes and S3's ETag;
* right after a PutObject and a CompleteMultipartUpload were acknowledged,
  both objects are there with their bytes;
* while a Complete works (its early 200 sent, the result not yet), there is
  never a partial object: the upload is still there and a retried Complete
  makes the whole object (or the object was already whole).

Each kill is a row of the reliability table ("S3 gateway SIGKILLed").
"""
from __future__ import annotations

import hashlib
import os
import random
import signal
import socket
import urllib.parse
from collections.abc import Iterator

import attrs
import pytest

from tests.integration.conftest import DEFAULT_SHARES
from tests.support.grid import Gateway
from tests.support.processes import ProcessSet, wait_for_file
from tests.support.proxied_grid import ProxiedGrid
from tests.support.reliability import fault_run
from tests.support.s3 import S3_START_TIMEOUT, S3Node, started_s3_node
from tests.support.s3_raw import Keys, sign

FAULT_CLASS = "S3 gateway SIGKILLed (multipart, acknowledged writes)"
MiB = 1024 * 1024
PART = 5 * MiB


@attrs.define
class Crashing:
    """The node as last started, and the processes of its restarts (stopped at the end)."""

    node: S3Node
    servers: int
    processes: ProcessSet

    def kill_and_restart(self) -> S3Node:
        """SIGKILL the node's process, start it again on the same directory and port, wait
        until it is connected to every server and its gateway listens; the new node."""
        process = self.node.gateway.node.process
        os.kill(process.pid, signal.SIGKILL)
        assert process.stop(timeout=30) == -signal.SIGKILL
        basedir = self.node.basedir
        for stale in ("node.url", "s3.url"):
            (basedir / stale).unlink(missing_ok=True)
        running = self.node.tool.start(basedir, self.processes)
        gateway = Gateway(running, running.node_url())
        gateway.wait_for_servers(self.servers)
        wait_for_file(basedir / "s3.url", S3_START_TIMEOUT, processes=[running.process])
        self.node = attrs.evolve(self.node, gateway=gateway,
                                 endpoint=(basedir / "s3.url").read_text().strip())
        return self.node


@pytest.fixture(scope="module")
def crashing(local_grid: ProxiedGrid, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Crashing]:
    """A client with the S3 gateway on the local grid, for this module, restarted by the
    tests."""
    with started_s3_node(local_grid, tmp_path_factory.mktemp("s3-crash"),
                         DEFAULT_SHARES) as started, ProcessSet() as processes:
        yield Crashing(started, len(local_grid.servers), processes)


def multipart_etag(parts: list[bytes]) -> str:
    """S3's ETag of an object made of ``parts``."""
    digests = b"".join(hashlib.md5(part).digest() for part in parts)
    return f'"{hashlib.md5(digests).hexdigest()}-{len(parts)}"'


def test_sigkill_mid_multipart_keeps_acknowledged_parts(crashing: Crashing) -> None:
    """Two parts acknowledged, a third half sent, SIGKILL: after the restart ListParts
    shows parts 1 and 2 (sizes and ETags as acknowledged), the third can be sent again,
    and Complete gives the three parts' bytes with S3's ETag."""
    rng = random.Random(2803)
    parts = [rng.randbytes(PART), rng.randbytes(PART), rng.randbytes(300_000)]
    node = crashing.node
    with fault_run(FAULT_CLASS) as fault:
        s3 = node.client()
        s3.create_bucket(Bucket="crash")
        upload_id = s3.create_multipart_upload(Bucket="crash", Key="mid/object.bin")["UploadId"]
        acknowledged = [s3.upload_part(Bucket="crash", Key="mid/object.bin", UploadId=upload_id,
                                       PartNumber=n, Body=parts[n - 1])["ETag"] for n in (1, 2)]
        # part 3: headers and half its body sent, then the gateway is killed
        quoted = urllib.parse.quote(upload_id, safe="")
        third = sign(Keys(node.access_key, node.secret_key, node.region), node.endpoint, "PUT",
                     "/crash/mid/object.bin", query=f"partNumber=3&uploadId={quoted}",
                     body=parts[2], unsigned_payload=True)
        split = urllib.parse.urlsplit(node.endpoint)
        # what a killed gateway's part spool leaves (whether part 3's is there yet races)
        (node.basedir / "tmp" / "s3-part-leftover").write_bytes(b"x" * 1000)
        (node.basedir / "tmp" / "not-ours").write_bytes(b"y")
        with socket.create_connection((split.hostname, split.port), timeout=60) as sock:
            sock.sendall(third.wire()[:-len(parts[2]) // 2])
            with fault.timing_recovery():
                restarted = crashing.kill_and_restart()
        assert [p.name for p in (restarted.basedir / "tmp").iterdir()] == ["not-ours"]
        s3 = restarted.client()
        listed = s3.list_parts(Bucket="crash", Key="mid/object.bin", UploadId=upload_id)
        assert [(p["PartNumber"], p["Size"], p["ETag"]) for p in listed["Parts"]] == [
            (1, PART, acknowledged[0]), (2, PART, acknowledged[1])]
        sent = s3.upload_part(Bucket="crash", Key="mid/object.bin", UploadId=upload_id,
                              PartNumber=3, Body=parts[2])["ETag"]
        done = s3.complete_multipart_upload(
            Bucket="crash", Key="mid/object.bin", UploadId=upload_id,
            MultipartUpload={"Parts": [{"PartNumber": n, "ETag": etag} for n, etag
                                       in enumerate([*acknowledged, sent], start=1)]})
        assert done["ETag"] == multipart_etag(parts)
        stored = s3.get_object(Bucket="crash", Key="mid/object.bin")["Body"].read()
        assert stored == b"".join(parts)
        assert s3.list_multipart_uploads(Bucket="crash").get("Uploads", []) == []
        fault.checked(stored)


def test_sigkill_right_after_acknowledged_writes(crashing: Crashing) -> None:
    """A PutObject and a CompleteMultipartUpload acknowledged, then SIGKILL at once: after
    the restart both objects read back whole, and the upload is gone from the staging."""
    rng = random.Random(2804)
    small, parts = rng.randbytes(20_000), [rng.randbytes(PART), rng.randbytes(1000)]
    node = crashing.node
    with fault_run(FAULT_CLASS) as fault:
        s3 = node.client()
        s3.create_bucket(Bucket="acked")
        s3.put_object(Bucket="acked", Key="put/small.bin", Body=small)
        upload_id = s3.create_multipart_upload(Bucket="acked", Key="multi/big.bin")["UploadId"]
        etags = [s3.upload_part(Bucket="acked", Key="multi/big.bin", UploadId=upload_id,
                                PartNumber=n, Body=part)["ETag"]
                 for n, part in enumerate(parts, start=1)]
        s3.complete_multipart_upload(
            Bucket="acked", Key="multi/big.bin", UploadId=upload_id,
            MultipartUpload={"Parts": [{"PartNumber": n, "ETag": etag}
                                       for n, etag in enumerate(etags, start=1)]})
        with fault.timing_recovery():
            restarted = crashing.kill_and_restart()
        s3 = restarted.client()
        assert s3.get_object(Bucket="acked", Key="put/small.bin")["Body"].read() == small
        _assert_whole_and_staging_empty(restarted, "acked", "multi/big.bin", parts)
        fault.checked(len(small) + sum(map(len, parts)))


def _assert_whole_and_staging_empty(node: S3Node, bucket: str, key: str,
                                    parts: list[bytes]) -> None:
    """The multipart object ``key`` is whole (S3's ETag of its parts), no upload is left in
    ``bucket``, and the gateway's staging holds nothing."""
    s3 = node.client()
    whole = s3.get_object(Bucket=bucket, Key=key)
    assert whole["ETag"] == multipart_etag(parts)
    assert whole["Body"].read() == b"".join(parts)
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    staging = node.basedir / "private" / "s3-multipart"
    assert not staging.exists() or not any(staging.iterdir())


def test_sigkill_during_complete_leaves_a_whole_object_or_the_upload(crashing: Crashing
                                                                      ) -> None:
    """SIGKILL while CompleteMultipartUpload works (its 200 status line sent, the result
    not yet): after the restart there is never a partial object. Either the object is
    whole, or the upload is still there with its parts and a retried Complete makes it
    whole; the staging ends empty either way."""
    rng = random.Random(2805)
    parts = [rng.randbytes(PART), rng.randbytes(PART), rng.randbytes(PART)]
    node = crashing.node
    with fault_run(FAULT_CLASS) as fault:
        s3 = node.client()
        s3.create_bucket(Bucket="mid-complete")
        upload_id = s3.create_multipart_upload(Bucket="mid-complete",
                                               Key="object.bin")["UploadId"]
        listed = [{"PartNumber": n, "ETag": s3.upload_part(
            Bucket="mid-complete", Key="object.bin", UploadId=upload_id, PartNumber=n,
            Body=part)["ETag"]} for n, part in enumerate(parts, start=1)]
        body = ("<CompleteMultipartUpload>" + "".join(
            f"<Part><PartNumber>{p['PartNumber']}</PartNumber><ETag>{p['ETag']}</ETag></Part>"
            for p in listed) + "</CompleteMultipartUpload>").encode()
        quoted = urllib.parse.quote(upload_id, safe="")
        complete = sign(Keys(node.access_key, node.secret_key, node.region), node.endpoint,
                        "POST", "/mid-complete/object.bin", query=f"uploadId={quoted}",
                        body=body)
        split = urllib.parse.urlsplit(node.endpoint)
        with socket.create_connection((split.hostname, split.port), timeout=60) as sock:
            sock.sendall(complete.wire())
            answered = b""
            while b"\r\n" not in answered:
                chunk = sock.recv(4096)
                assert chunk, "the gateway closed the connection without an answer"
                answered += chunk
            assert answered.startswith(b"HTTP/1.1 200"), answered[:200]
            with fault.timing_recovery():
                restarted = crashing.kill_and_restart()
        s3 = restarted.client()
        uploads = s3.list_multipart_uploads(Bucket="mid-complete").get("Uploads", [])
        if uploads:
            assert [u["UploadId"] for u in uploads] == [upload_id]
            assert "Contents" not in s3.list_objects_v2(Bucket="mid-complete")
            s3.complete_multipart_upload(Bucket="mid-complete", Key="object.bin",
                                         UploadId=upload_id,
                                         MultipartUpload={"Parts": listed})
        _assert_whole_and_staging_empty(restarted, "mid-complete", "object.bin", parts)
        fault.checked(sum(map(len, parts)))

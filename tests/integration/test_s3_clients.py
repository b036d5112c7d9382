"""S3 clients no one here wrote, against the S3 gateway: the aws CLI, boto3, rclone, restic, s3cmd.

One client node of ours with ``[s3]`` on the session's local grid
(:func:`tests.support.s3.started_s3_node`) serves every test of the module.
The aws CLI (awscli from PyPI, in the venv) copies and syncs a tree taken
from ``/usr/share/doc`` with duplicate files, odd names, deep directories
and a few 12 MB files sent in 5 MB parts; boto3 makes the calls the CLI
does not (ranges, conditions, copies, multipart with a copied part,
presigned PUT); Debian's rclone, restic and s3cmd each bring their own S3
code (Go's and Python's signers, their own multipart). What S3 writes is a
tree of directories the ``tahoe`` CLI lists, and the other way round.
Every client run has a timeout; no client reads the machine's home
directory.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import random
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.integration.conftest import DEFAULT_SHARES
from tests.support.dirapi import WebAPI
from tests.support.programs import require
from tests.support.proxied_grid import ProxiedGrid
from tests.support.s3 import S3Node, started_s3_node
from tests.support.trees import same_trees

CLIENT_TIMEOUT = 180
AWS = Path(sys.executable).with_name("aws")
MiB = 1024 * 1024
#: The aws CLI's multipart settings for these tests (its defaults are 8 MB).
PART = 5 * MiB
BIG = 12 * 1000 * 1000
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture(scope="module")
def node(local_grid: ProxiedGrid, tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Node]:
    """A client with the S3 gateway on the local grid, for this module."""
    with started_s3_node(local_grid, tmp_path_factory.mktemp("s3-clients"),
                         DEFAULT_SHARES) as started:
        yield started


@pytest.fixture(scope="module")
def s3(node: S3Node) -> Any:
    """A boto3 client of the account, path-style, never retrying (a failure shows at once)."""
    return node.client(read_timeout=CLIENT_TIMEOUT)


def endpoint(node: S3Node) -> str:
    """The gateway's URL without the final ``/`` (as S3 tools want an endpoint)."""
    return node.endpoint.rstrip("/")


def client_env(node: S3Node, home: Path) -> dict[str, str]:
    """An environment for every client: a home of its own, the aws CLI's configuration
    (path style, Signature V4 for presigned URLs too, 5 MB parts) and credentials files in it, the account's keys for restic."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "RESTIC_", "RCLONE_", "S3CMD"))}
    home.mkdir(parents=True, exist_ok=True)
    (home / "aws-config").write_text(
        f"[default]\nregion = {node.region}\ns3 =\n    addressing_style = path\n"
        f"    signature_version = s3v4\n"
        f"    multipart_threshold = {PART}\n    multipart_chunksize = {PART}\n")
    (home / "aws-credentials").write_text(
        f"[default]\naws_access_key_id = {node.access_key}\n"
        f"aws_secret_access_key = {node.secret_key}\n")
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_CACHE_HOME=str(home / ".cache"),
               AWS_CONFIG_FILE=str(home / "aws-config"),
               AWS_SHARED_CREDENTIALS_FILE=str(home / "aws-credentials"),
               AWS_ACCESS_KEY_ID=node.access_key, AWS_SECRET_ACCESS_KEY=node.secret_key,
               AWS_DEFAULT_REGION=node.region, RESTIC_PASSWORD="correct horse",
               RESTIC_CACHE_DIR=str(home / "restic-cache"),
               RCLONE_CONFIG=str(home / "rclone.conf"))
    (home / "rclone.conf").write_text(
        f"[grid]\ntype = s3\nprovider = Other\nendpoint = {endpoint(node)}\n"
        f"access_key_id = {node.access_key}\nsecret_access_key = {node.secret_key}\n"
        f"region = {node.region}\nforce_path_style = true\n")
    return env


def run(args: list[str | Path], env: dict[str, str], cwd: Path,
        expect: int = 0) -> subprocess.CompletedProcess[str]:
    """A client command that must exit with ``expect`` (its output in the message when it
    does not)."""
    result = subprocess.run([str(a) for a in args], env=env, cwd=cwd,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=CLIENT_TIMEOUT)
    assert result.returncode == expect, (f"{[str(a) for a in args[:4]]} exited with"
                                         f" {result.returncode}:\n{result.stdout[-3000:]}\n"
                                         f"{result.stderr[-3000:]}")
    return result


def aws(node: S3Node, env: dict[str, str], cwd: Path, *args: str | Path,
        expect: int = 0) -> subprocess.CompletedProcess[str]:
    """The aws CLI against the gateway."""
    return run([AWS, "--endpoint-url", endpoint(node), *args], env, cwd, expect)


def aws_json(node: S3Node, env: dict[str, str], cwd: Path, *args: str | Path) -> Any:
    """An ``aws s3api`` call's JSON output."""
    return json.loads(aws(node, env, cwd, "s3api", *args, "--output", "json").stdout or "{}")


def doc_tree(root: Path, seed: int, big_files: int = 0, budget: int = 250_000,
             flat_files: int = 0) -> int:
    """A tree of files copied from ``/usr/share/doc`` (regular files only, about
    ``budget`` bytes), with duplicates under odd names (spaces, quotes, accents in NFC,
    ``+``, ``=``, ``&``, a leading dash), an empty file, a directory 9 deep,
    ``big_files`` files of 12 MB (random, seeded) and ``flat_files`` small files in one
    directory; returns the bytes written."""
    rng = random.Random(seed)
    written = 0
    copied: list[Path] = []
    for package in ("bash", "apt", "coreutils", "python3.11", "git"):
        source = Path("/usr/share/doc") / package
        for directory, _, names in sorted(os.walk(source)):
            for name in sorted(names):
                path = Path(directory) / name
                if path.is_symlink() or not path.is_file() or path.stat().st_size > 200_000:
                    continue
                if written + path.stat().st_size > budget:
                    break
                target = root / "doc" / path.relative_to("/usr/share/doc")
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
                written += path.stat().st_size
                copied.append(target)
    if not copied:  # a machine without documentation still gets a tree
        for n in range(20):
            target = root / "doc" / f"pkg{n % 4}" / f"file{n}.txt"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(rng.randbytes(rng.randrange(1, 40_000)))
            written += target.stat().st_size
            copied.append(target)
    odd = ["space dir/a file.txt", "quotes/it's \"quoted\".txt", "accents/café crème.txt",
           "plus/a+b=c&d.txt", "-dash/-leading.txt", "deep/1/2/3/4/5/6/7/8/9/leaf.txt",
           "copies/same one.gz", "copies/same two.gz", "percent/100% done.txt"]
    for n, name in enumerate(odd):
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(copied[n * 7 % len(copied)], target)
        written += target.stat().st_size
    (root / "empty").write_bytes(b"")
    for n in range(flat_files):
        target = root / "flat" / f"f{n:03d}"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(f"flat file {n}\n".encode())
        written += target.stat().st_size
    for n in range(big_files):
        target = root / "big" / f"big {n}.bin"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(rng.randbytes(BIG))
        written += BIG
    return written


def md5_hex(data: bytes) -> str:
    """The MD5 of ``data`` in hex (a single-part ETag)."""
    return hashlib.md5(data).hexdigest()


def multipart_etag(parts: list[bytes]) -> str:
    """S3's ETag of an object made of ``parts``: the MD5 of the parts' MD5s, ``-N``."""
    digests = b"".join(hashlib.md5(part).digest() for part in parts)
    return f"{hashlib.md5(digests).hexdigest()}-{len(parts)}"


def tahoe(node: S3Node, *args: str | Path) -> str:
    """Our ``tahoe`` CLI on the gateway's node; its output."""
    return node.tool.cli("--node-directory", node.basedir, *args)


def test_aws_cli_objects_metadata_and_presign(node: S3Node, tmp_path: Path) -> None:
    """aws s3 mb/cp/ls/rm/rb (BucketNotEmpty, then --force) and s3api put/head/get-object with metadata, list-objects-v2
    with a delimiter, and URLs from ``aws s3 presign`` (Signature V4, and V2 as the CLI
    makes them by default) fetched with urllib; a V2 URL for another key is refused."""
    env = client_env(node, tmp_path / "home")
    hello = tmp_path / "hello.txt"
    hello.write_bytes(b"hello from the aws CLI\n")
    aws(node, env, tmp_path, "s3", "mb", "s3://cli-objects")
    aws(node, env, tmp_path, "s3", "cp", hello, "s3://cli-objects/dir/sub/hello.txt")
    listed = aws(node, env, tmp_path, "s3", "ls", "s3://cli-objects/dir/sub/").stdout
    assert listed.split()[-2:] == ["23", "hello.txt"], listed
    assert "PRE dir/" in aws(node, env, tmp_path, "s3", "ls", "s3://cli-objects").stdout

    document = tmp_path / "doc.json"
    document.write_bytes(b'{"a": 1}\n')
    aws_json(node, env, tmp_path, "put-object", "--bucket", "cli-objects", "--key",
             "meta/doc.json", "--body", document, "--content-type", "application/json",
             "--metadata", "colour=blue,size=xl")
    head = aws_json(node, env, tmp_path, "head-object", "--bucket", "cli-objects", "--key",
                    "meta/doc.json")
    assert head["ContentType"] == "application/json"
    assert head["Metadata"] == {"colour": "blue", "size": "xl"}
    assert head["ContentLength"] == 9
    assert head["ETag"] == f'"{md5_hex(document.read_bytes())}"'
    fetched = aws_json(node, env, tmp_path, "get-object", "--bucket", "cli-objects", "--key",
                       "meta/doc.json", tmp_path / "doc-back.json")
    assert fetched["Metadata"] == {"colour": "blue", "size": "xl"}
    assert (tmp_path / "doc-back.json").read_bytes() == document.read_bytes()

    top = aws_json(node, env, tmp_path, "list-objects-v2", "--bucket", "cli-objects",
                   "--delimiter", "/")
    assert [p["Prefix"] for p in top["CommonPrefixes"]] == ["dir/", "meta/"]
    assert "Contents" not in top
    inner = aws_json(node, env, tmp_path, "list-objects-v2", "--bucket", "cli-objects",
                     "--prefix", "dir/", "--delimiter", "/")
    assert [p["Prefix"] for p in inner["CommonPrefixes"]] == ["dir/sub/"]
    everything = aws_json(node, env, tmp_path, "list-objects-v2", "--bucket", "cli-objects")
    assert [o["Key"] for o in everything["Contents"]] == ["dir/sub/hello.txt", "meta/doc.json"]

    url = aws(node, env, tmp_path, "s3", "presign", "s3://cli-objects/dir/sub/hello.txt",
              "--expires-in", "300").stdout.strip()
    assert "X-Amz-Signature=" in url
    with _OPENER.open(url, timeout=CLIENT_TIMEOUT) as answer:
        assert answer.read() == hello.read_bytes()
    # without signature_version = s3v4 the aws CLI 1.x presigns with Signature Version 2
    (tmp_path / "home" / "aws-config-v2").write_text(f"[default]\nregion = {node.region}\n")
    v2_url = aws(node, {**env, "AWS_CONFIG_FILE": str(tmp_path / "home" / "aws-config-v2")},
                 tmp_path, "s3", "presign", "s3://cli-objects/dir/sub/hello.txt").stdout.strip()
    assert "AWSAccessKeyId=" in v2_url
    with _OPENER.open(v2_url, timeout=CLIENT_TIMEOUT) as answer:
        assert answer.read() == hello.read_bytes()
    with pytest.raises(urllib.error.HTTPError) as tampered:
        _OPENER.open(v2_url.replace("hello.txt", "hello.txT"), timeout=CLIENT_TIMEOUT)
    assert tampered.value.code == 403
    assert b"<Code>SignatureDoesNotMatch</Code>" in tampered.value.read()

    aws(node, env, tmp_path, "s3", "rm", "s3://cli-objects/dir/sub/hello.txt")
    gone = aws(node, env, tmp_path, "s3api", "head-object", "--bucket", "cli-objects",
               "--key", "dir/sub/hello.txt", expect=255)
    assert "404" in gone.stderr
    after = aws_json(node, env, tmp_path, "list-objects-v2", "--bucket", "cli-objects")
    assert [o["Key"] for o in after["Contents"]] == ["meta/doc.json"]
    full = aws(node, env, tmp_path, "s3", "rb", "s3://cli-objects", expect=1)
    assert "BucketNotEmpty" in full.stderr
    aws(node, env, tmp_path, "s3", "rb", "--force", "s3://cli-objects")
    assert "cli-objects" not in tahoe(node, "ls", node.root).split()


def test_aws_cli_recursive_copy_and_sync_with_multipart(node: S3Node, tmp_path: Path) -> None:
    """aws s3 cp --recursive of a tree (10 threads; two 12 MB files in 5 MB parts; 100
    files at once into one directory), sync back down to an equal tree, a second sync up
    sends nothing, a changed file is the only one sent; multipart ETags are S3's; a 12 MB
    copy inside S3 (UploadPartCopy) and a move; rm --recursive removes a subtree, and
    sync --delete removes what is gone locally (and puts the subtree back)."""
    env = client_env(node, tmp_path / "home")
    source = tmp_path / "tree"
    doc_tree(source, seed=28, big_files=2, flat_files=100)
    aws(node, env, tmp_path, "s3", "mb", "s3://cli-tree")
    copied = aws(node, env, tmp_path, "s3", "cp", "--recursive", "tree", "s3://cli-tree/up")
    files = [p for p in source.rglob("*") if p.is_file()]
    assert copied.stdout.count("upload:") == len(files), copied.stdout[-2000:]
    aws(node, env, tmp_path, "s3", "sync", "s3://cli-tree/up", "down")
    assert same_trees(source, tmp_path / "down")

    again = aws(node, env, tmp_path, "s3", "sync", "tree", "s3://cli-tree/up")
    assert "upload:" not in again.stdout, again.stdout
    changed = source / "accents" / "café crème.txt"
    changed.write_bytes(changed.read_bytes() + b"one more line\n")
    once = aws(node, env, tmp_path, "s3", "sync", "tree", "s3://cli-tree/up")
    assert once.stdout.count("upload:") == 1 and "café crème.txt" in once.stdout, once.stdout
    back = aws_json(node, env, tmp_path, "get-object", "--bucket", "cli-tree", "--key",
                    "up/accents/café crème.txt", tmp_path / "changed-back")
    assert (tmp_path / "changed-back").read_bytes() == changed.read_bytes()
    assert back["ContentLength"] == changed.stat().st_size

    big = (source / "big" / "big 0.bin").read_bytes()
    head = aws_json(node, env, tmp_path, "head-object", "--bucket", "cli-tree", "--key",
                    "up/big/big 0.bin")
    assert head["ContentLength"] == BIG
    assert head["ETag"] == f'"{multipart_etag([big[i:i + PART] for i in range(0, BIG, PART)])}"'

    # a copy inside S3 of an object over the multipart threshold: UploadPartCopy ranges
    aws(node, env, tmp_path, "s3", "cp", "s3://cli-tree/up/big/big 0.bin",
        "s3://cli-tree/copies/big copy.bin")
    aws(node, env, tmp_path, "s3", "mv", "s3://cli-tree/copies/big copy.bin",
        "s3://cli-tree/copies/moved.bin")
    aws(node, env, tmp_path, "s3", "cp", "s3://cli-tree/copies/moved.bin", "moved.bin")
    assert (tmp_path / "moved.bin").read_bytes() == big
    copies = aws_json(node, env, tmp_path, "list-objects-v2", "--bucket", "cli-tree",
                      "--prefix", "copies/")
    assert [o["Key"] for o in copies["Contents"]] == ["copies/moved.bin"]

    aws(node, env, tmp_path, "s3", "rm", "--recursive", "s3://cli-tree/up/deep")
    (source / "empty").unlink()
    synced = aws(node, env, tmp_path, "s3", "sync", "--delete", "tree", "s3://cli-tree/up")
    assert synced.stdout.count("delete:") == 1 and "upload:" in synced.stdout  # deep/ again
    left = aws_json(node, env, tmp_path, "list-objects-v2", "--bucket", "cli-tree", "--prefix",
                    "up/")
    keys = [o["Key"] for o in left["Contents"]]
    assert len(keys) == len(files) - 1 and "up/empty" not in keys
    assert "up/deep/1/2/3/4/5/6/7/8/9/leaf.txt" in keys


def test_boto3_ranges_conditions_and_copies(node: S3Node, s3: Any) -> None:
    """Ranged GETs (a 206 with Content-Range, a suffix, InvalidRange 416), conditional
    GETs (If-None-Match: 304, If-Match: 412), CopyObject linking the same cap (metadata
    copied, or replaced), DeleteObjects of present and absent keys."""
    rng = random.Random(2801)
    data = rng.randbytes(100_000)
    s3.create_bucket(Bucket="boto-objects")
    put = s3.put_object(Bucket="boto-objects", Key="src/data.bin", Body=data,
                        ContentType="application/x-test", Metadata={"origin": "boto3"})
    etag = put["ETag"]
    assert etag == f'"{md5_hex(data)}"'

    part = s3.get_object(Bucket="boto-objects", Key="src/data.bin", Range="bytes=1000-1999")
    assert part["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert part["ContentRange"] == "bytes 1000-1999/100000"
    assert part["Body"].read() == data[1000:2000]
    tail = s3.get_object(Bucket="boto-objects", Key="src/data.bin", Range="bytes=-10")
    assert tail["Body"].read() == data[-10:]
    with pytest.raises(ClientError) as outside:
        s3.get_object(Bucket="boto-objects", Key="src/data.bin", Range="bytes=200000-300000")
    assert outside.value.response["Error"]["Code"] == "InvalidRange"
    assert outside.value.response["ResponseMetadata"]["HTTPStatusCode"] == 416

    with pytest.raises(ClientError) as unchanged:
        s3.get_object(Bucket="boto-objects", Key="src/data.bin", IfNoneMatch=etag)
    assert unchanged.value.response["ResponseMetadata"]["HTTPStatusCode"] == 304
    with pytest.raises(ClientError) as failed:
        s3.get_object(Bucket="boto-objects", Key="src/data.bin", IfMatch='"0000"')
    assert failed.value.response["Error"]["Code"] == "PreconditionFailed"
    assert failed.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    matched = s3.get_object(Bucket="boto-objects", Key="src/data.bin", IfMatch=etag)
    assert matched["Body"].read() == data

    copied = s3.copy_object(Bucket="boto-objects", Key="copies/same.bin",
                            CopySource={"Bucket": "boto-objects", "Key": "src/data.bin"})
    assert copied["CopyObjectResult"]["ETag"] == etag
    head = s3.head_object(Bucket="boto-objects", Key="copies/same.bin")
    assert head["Metadata"] == {"origin": "boto3"} and head["ContentType"] == "application/x-test"
    s3.copy_object(Bucket="boto-objects", Key="copies/replaced.bin", MetadataDirective="REPLACE",
                   CopySource={"Bucket": "boto-objects", "Key": "src/data.bin"},
                   Metadata={"origin": "copy"}, ContentType="text/plain")
    head = s3.head_object(Bucket="boto-objects", Key="copies/replaced.bin")
    assert head["Metadata"] == {"origin": "copy"} and head["ContentType"] == "text/plain"
    api = WebAPI(node.gateway.url)
    source_cap = api.children(node.root, "boto-objects/src")["data.bin"][1]["ro_uri"]
    copies = api.children(node.root, "boto-objects/copies")
    assert {copies[name][1]["ro_uri"] for name in ("same.bin", "replaced.bin")} == {source_cap}

    deleted = s3.delete_objects(Bucket="boto-objects", Delete={"Objects": [
        {"Key": "copies/same.bin"}, {"Key": "copies/replaced.bin"}, {"Key": "never/was"}]})
    assert sorted(d["Key"] for d in deleted["Deleted"]) == [
        "copies/replaced.bin", "copies/same.bin", "never/was"]
    assert deleted.get("Errors", []) == []
    listed = s3.list_objects_v2(Bucket="boto-objects")
    assert [o["Key"] for o in listed["Contents"]] == ["src/data.bin"]


def test_boto3_multipart_with_copied_part_list_and_abort(node: S3Node, s3: Any) -> None:
    """A multipart upload of a 5 MiB part and a part copied from a range of another
    object (UploadPartCopy): ListParts and ListMultipartUploads show them, Complete gives
    the concatenation and S3's ETag; an aborted upload is gone (NoSuchUpload)."""
    rng = random.Random(2802)
    s3.create_bucket(Bucket="boto-multipart")
    source = rng.randbytes(50_000)
    s3.put_object(Bucket="boto-multipart", Key="source.bin", Body=source)
    first = rng.randbytes(PART)
    upload = s3.create_multipart_upload(Bucket="boto-multipart", Key="joined/object.bin",
                                        Metadata={"kind": "joined"})
    upload_id = upload["UploadId"]
    one = s3.upload_part(Bucket="boto-multipart", Key="joined/object.bin", UploadId=upload_id,
                         PartNumber=1, Body=first)
    assert one["ETag"] == f'"{md5_hex(first)}"'
    two = s3.upload_part_copy(Bucket="boto-multipart", Key="joined/object.bin",
                              UploadId=upload_id, PartNumber=2,
                              CopySource={"Bucket": "boto-multipart", "Key": "source.bin"},
                              CopySourceRange="bytes=10-9999")
    assert two["CopyPartResult"]["ETag"] == f'"{md5_hex(source[10:10000])}"'

    parts = s3.list_parts(Bucket="boto-multipart", Key="joined/object.bin", UploadId=upload_id)
    assert [(p["PartNumber"], p["Size"], p["ETag"]) for p in parts["Parts"]] == [
        (1, PART, one["ETag"]), (2, 9990, two["CopyPartResult"]["ETag"])]
    uploads = s3.list_multipart_uploads(Bucket="boto-multipart")
    assert [(u["Key"], u["UploadId"]) for u in uploads["Uploads"]] == [
        ("joined/object.bin", upload_id)]
    # nothing is visible before Complete
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="boto-multipart")["Contents"]] == [
        "source.bin"]

    done = s3.complete_multipart_upload(
        Bucket="boto-multipart", Key="joined/object.bin", UploadId=upload_id,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": one["ETag"]},
                                   {"PartNumber": 2, "ETag": two["CopyPartResult"]["ETag"]}]})
    expected = first + source[10:10000]
    assert done["ETag"] == f'"{multipart_etag([first, source[10:10000]])}"'
    fetched = s3.get_object(Bucket="boto-multipart", Key="joined/object.bin")
    assert fetched["Body"].read() == expected
    assert fetched["Metadata"] == {"kind": "joined"}
    assert s3.list_multipart_uploads(Bucket="boto-multipart").get("Uploads", []) == []

    dropped = s3.create_multipart_upload(Bucket="boto-multipart", Key="dropped.bin")["UploadId"]
    s3.upload_part(Bucket="boto-multipart", Key="dropped.bin", UploadId=dropped, PartNumber=1,
                   Body=b"soon gone")
    s3.abort_multipart_upload(Bucket="boto-multipart", Key="dropped.bin", UploadId=dropped)
    with pytest.raises(ClientError) as aborted:
        s3.list_parts(Bucket="boto-multipart", Key="dropped.bin", UploadId=dropped)
    assert aborted.value.response["Error"]["Code"] == "NoSuchUpload"
    assert s3.list_multipart_uploads(Bucket="boto-multipart").get("Uploads", []) == []
    assert sorted(o["Key"] for o in s3.list_objects_v2(Bucket="boto-multipart")["Contents"]) \
        == ["joined/object.bin", "source.bin"]


def put_to_url(url: str, body: bytes) -> http.client.HTTPResponse:
    """PUT ``body`` to a presigned ``url`` as ``curl -T`` does (no Content-Type); the
    answer, read."""
    split = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(split.hostname, split.port, timeout=CLIENT_TIMEOUT)
    connection.request("PUT", f"{split.path}?{split.query}", body=body)
    answer = connection.getresponse()
    answer.read()
    connection.close()
    return answer


def test_boto3_presigned_put_and_get(node: S3Node) -> None:
    """A PUT to a URL from ``generate_presigned_url('put_object')`` stores the body sent
    with nothing but the URL, and a presigned GET reads it back: with Signature V4, and
    with Version 2 (botocore's ``s3``, what older setups presign with)."""
    node.client().create_bucket(Bucket="boto-presigned")
    for version in ("s3v4", "s3"):
        s3 = node.client(signature_version=version)
        body, key = f"sent with nothing but a {version} URL\n".encode(), f"up/by {version}.txt"
        url = s3.generate_presigned_url("put_object", ExpiresIn=300,
                                        Params={"Bucket": "boto-presigned", "Key": key})
        assert ("X-Amz-Signature=" in url) == (version == "s3v4"), url
        answer = put_to_url(url, body)
        assert answer.status == 200
        assert answer.headers["ETag"] == f'"{md5_hex(body)}"'
        assert s3.get_object(Bucket="boto-presigned", Key=key)["Body"].read() == body
        url = s3.generate_presigned_url("get_object", ExpiresIn=300,
                                        Params={"Bucket": "boto-presigned", "Key": key})
        with _OPENER.open(url, timeout=CLIENT_TIMEOUT) as fetched:
            assert fetched.read() == body


def test_tahoe_and_s3_see_each_other(node: S3Node, s3: Any, tmp_path: Path) -> None:
    """A key written over S3 is a path of subdirectories ``tahoe ls`` lists (its
    metadata under the entry's ``s3`` key); a file written with ``tahoe put`` into a
    bucket's directory, and a directory made with ``tahoe mkdir``, are an object and a
    bucket to S3."""
    s3.create_bucket(Bucket="both-ways")
    s3.put_object(Bucket="both-ways", Key="seen/by/tahoe.txt", Body=b"from S3\n",
                  ContentType="text/plain", Metadata={"who": "s3"})
    assert tahoe(node, "ls", f"{node.root}/both-ways").split() == ["seen"]
    assert tahoe(node, "ls", f"{node.root}/both-ways/seen/by").split() == ["tahoe.txt"]
    listing = json.loads(tahoe(node, "ls", "--json", f"{node.root}/both-ways/seen/by"))
    entry = listing[1]["children"]["tahoe.txt"]
    assert entry[0] == "filenode"
    assert entry[1]["metadata"]["s3"]["content-type"] == "text/plain"
    assert entry[1]["metadata"]["s3"]["meta"] == {"who": "s3"}
    assert tahoe(node, "get", f"{node.root}/both-ways/seen/by/tahoe.txt", "-").encode() \
        == b"from S3\n"

    local = tmp_path / "local.txt"
    local.write_bytes(b"from tahoe put\n")
    tahoe(node, "put", local, f"{node.root}/both-ways/from-tahoe/put.txt")
    listed = s3.list_objects_v2(Bucket="both-ways", Prefix="from-tahoe/")
    assert [(o["Key"], o["Size"]) for o in listed["Contents"]] == [("from-tahoe/put.txt", 15)]
    fetched = s3.get_object(Bucket="both-ways", Key="from-tahoe/put.txt")
    assert fetched["Body"].read() == b"from tahoe put\n"
    tahoe(node, "mkdir", f"{node.root}/made-by-tahoe")
    assert "made-by-tahoe" in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    s3.head_bucket(Bucket="made-by-tahoe")


def test_rclone_sync_up_down_and_check(node: S3Node, tmp_path: Path) -> None:
    """rclone (Go's S3 code, 5 MB parts for a 6 MB file): sync up, sync down to an equal
    tree, check finds no difference, a second sync up sends nothing; a server-side copy
    of the tree (CopyObject) checks equal too, and purge removes it."""
    require("rclone")
    env = client_env(node, tmp_path / "home")
    source = tmp_path / "tree"
    doc_tree(source, seed=29, budget=150_000)
    (source / "six-mb.bin").write_bytes(random.Random(29).randbytes(6_000_000))
    options = ["--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M", "--transfers", "8"]
    run(["rclone", "mkdir", "grid:rclone"], env, tmp_path)
    run(["rclone", "sync", *options, "tree", "grid:rclone/tree"], env, tmp_path)
    run(["rclone", "sync", "grid:rclone/tree", "down"], env, tmp_path)
    assert same_trees(source, tmp_path / "down")
    checked = run(["rclone", "check", "tree", "grid:rclone/tree"], env, tmp_path)
    assert "0 differences found" in checked.stderr, checked.stderr[-2000:]
    again = run(["rclone", "sync", "-v", *options, "tree", "grid:rclone/tree"], env, tmp_path)
    assert "Copied (new)" not in again.stderr and "Copied (replaced" not in again.stderr
    copied = run(["rclone", "copy", "-v", "grid:rclone/tree", "grid:rclone/copy"], env,
                 tmp_path)
    assert "Copied (server-side copy)" in copied.stderr, copied.stderr[-2000:]
    run(["rclone", "check", "tree", "grid:rclone/copy"], env, tmp_path)
    run(["rclone", "purge", "grid:rclone/copy"], env, tmp_path)
    assert node.client().list_objects_v2(Bucket="rclone", Prefix="copy/")["KeyCount"] == 0


def test_restic_backup_check_restore(node: S3Node, tmp_path: Path) -> None:
    """restic with an S3 repository (minio-go): init (the bucket made by restic), backup,
    a second backup after a change, forget --prune of the first (restic deletes and
    rewrites packs), check --read-data, restore, and the restored tree equals the
    source as changed."""
    require("restic")
    env = client_env(node, tmp_path / "home")
    source = tmp_path / "tree"
    doc_tree(source, seed=30, budget=400_000)
    restic = ["restic", "--repo", f"s3:{endpoint(node)}/restic-repo",
              "-o", f"s3.region={node.region}"]
    run([*restic, "init"], env, tmp_path)
    run([*restic, "backup", "tree"], env, tmp_path)
    (source / "empty").write_bytes(b"no longer empty\n")
    shutil.rmtree(source / "deep")
    run([*restic, "backup", "tree"], env, tmp_path)
    run([*restic, "forget", "--keep-last", "1", "--prune"], env, tmp_path)
    snapshots = json.loads(run([*restic, "snapshots", "--json"], env, tmp_path).stdout)
    assert len(snapshots) == 1
    checked = run([*restic, "check", "--read-data"], env, tmp_path)
    assert "no errors were found" in checked.stdout
    run([*restic, "restore", "latest", "--target", "restored"], env, tmp_path)
    assert same_trees(source, tmp_path / "restored" / "tree")
    listed = WebAPI(node.gateway.url).children(node.root, "restic-repo")
    assert {"config", "data", "index", "keys", "snapshots"} <= set(listed)


def test_s3cmd_multipart_put_get_and_info(node: S3Node, tmp_path: Path) -> None:
    """s3cmd (its own SigV4 signer with signed payloads, its own multipart in 5 MB
    parts): put of an 11 MB file, ls, info (its attribute metadata kept), get of the
    same bytes, del."""
    require("s3cmd")
    env = client_env(node, tmp_path / "home")
    host = endpoint(node).split("//", 1)[1]
    config = tmp_path / "s3cmd.cfg"
    config.write_text(
        f"[default]\naccess_key = {node.access_key}\nsecret_key = {node.secret_key}\n"
        f"host_base = {host}\nhost_bucket = {host}\nbucket_location = {node.region}\n"
        "use_https = False\nsignature_v2 = False\nmultipart_chunk_size_mb = 5\n"
        "check_ssl_certificate = False\n")
    s3cmd = ["s3cmd", "--config", str(config), "--no-progress"]
    data = random.Random(31).randbytes(11 * MiB)
    (tmp_path / "eleven.bin").write_bytes(data)
    run([*s3cmd, "mb", "s3://s3cmd-bucket"], env, tmp_path)
    run([*s3cmd, "put", "eleven.bin", "s3://s3cmd-bucket/in/eleven.bin"], env, tmp_path)
    head = node.client().head_object(Bucket="s3cmd-bucket", Key="in/eleven.bin")
    parts = [data[i:i + PART] for i in range(0, len(data), PART)]
    assert len(parts) == 3 and head["ETag"] == f'"{multipart_etag(parts)}"'
    listed = run([*s3cmd, "ls", "s3://s3cmd-bucket/in/"], env, tmp_path).stdout
    assert str(len(data)) in listed and "s3://s3cmd-bucket/in/eleven.bin" in listed
    info = run([*s3cmd, "info", "s3://s3cmd-bucket/in/eleven.bin"], env, tmp_path).stdout
    assert "x-amz-meta-s3cmd-attrs" in info and f"md5:{md5_hex(data)}" in info
    run([*s3cmd, "get", "s3://s3cmd-bucket/in/eleven.bin", "back.bin"], env, tmp_path)
    assert (tmp_path / "back.bin").read_bytes() == data
    run([*s3cmd, "del", "s3://s3cmd-bucket/in/eleven.bin"], env, tmp_path)
    assert "eleven.bin" not in run([*s3cmd, "ls", "-r", "s3://s3cmd-bucket"], env,
                                   tmp_path).stdout


def test_boto3_checksums_verified_and_returned(node: S3Node, s3: Any) -> None:
    """boto3's default CRC32 (in a trailer of an aws-chunked body, or a header) is
    verified and given back: HeadObject with ChecksumMode ENABLED returns the same value."""
    s3.create_bucket(Bucket="boto-checksums")
    body = b"checksummed body\n" * 100
    put = s3.put_object(Bucket="boto-checksums", Key="c.txt", Body=body,
                        ChecksumAlgorithm="CRC32")
    expected = base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
    assert put["ChecksumCRC32"] == expected
    head = s3.head_object(Bucket="boto-checksums", Key="c.txt", ChecksumMode="ENABLED")
    assert head["ChecksumCRC32"] == expected

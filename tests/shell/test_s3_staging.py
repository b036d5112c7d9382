"""Multipart staging on disk: durable parts, reads across part files, cleanup by age."""
from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from tahoe.s3.errors import S3Error
from tahoe.s3.staging import PartsUploadable, Staging


def test_parts_read_across_boundaries(tmp_path: Path) -> None:
    """The concatenation of the part files reads the same at every offset and length."""
    pieces = [os.urandom(n) for n in (7, 1, 20, 3)]
    paths = []
    for number, piece in enumerate(pieces):
        path = tmp_path / f"p{number}"
        path.write_bytes(piece)
        paths.append(str(path))
    whole = b"".join(pieces)
    source = PartsUploadable(paths, [len(p) for p in pieces])
    try:
        assert source.size == len(whole)
        for offset in range(len(whole) + 2):
            for length in (0, 1, 5, 8, 40):
                assert source.read(offset, length) == whole[offset:offset + length]
    finally:
        source.close()


def test_staging_round_trip_and_ownership(tmp_path: Path) -> None:
    """A staged upload belongs to its account, bucket and key; parts are kept with their
    records; removal forgets it."""
    staging = Staging(str(tmp_path / "s3-multipart"))
    upload = staging.create({"account": "AK", "bucket": "b", "key": "k", "initiated": 5.0})
    assert staging.load(upload, "AK", "b", "k")["initiated"] == 5.0
    for wrong in (("OTHER", "b", "k"), ("AK", "c", "k"), ("AK", "b", "j")):
        with pytest.raises(S3Error, match="NoSuchUpload"):
            staging.load(upload, *wrong)
    staging.store_part(upload, 2, io.BytesIO(b"part two"), 8, {"size": 8, "md5": "x"})
    assert staging.parts(upload) == {2: {"size": 8, "md5": "x"}}
    assert Path(staging.part_path(upload, 2)).read_bytes() == b"part two"
    assert (tmp_path / "s3-multipart" / upload).stat().st_mode & 0o777 == 0o700
    staging.remove(upload)
    with pytest.raises(S3Error, match="NoSuchUpload"):
        staging.load(upload, "AK")


def test_bad_upload_ids_name_nothing(tmp_path: Path) -> None:
    """An upload id that is not one of ours (a path trick) is NoSuchUpload."""
    staging = Staging(str(tmp_path))
    for upload in ("../../etc", "a/b", "", "x" * 100):
        with pytest.raises(S3Error, match="NoSuchUpload"):
            staging.load(upload, "AK")


def test_remove_older_than(tmp_path: Path) -> None:
    """Only uploads initiated before the cutoff are removed."""
    staging = Staging(str(tmp_path))
    old = staging.create({"account": "AK", "bucket": "b", "key": "k", "initiated": 100.0})
    new = staging.create({"account": "AK", "bucket": "b", "key": "k", "initiated": 300.0})
    assert staging.remove_older_than(200.0) == 1
    assert [upload for upload, _ in staging.uploads()] == [new]
    assert not (tmp_path / old).exists()


def test_cleanup_timer(tmp_path: Path) -> None:
    """The gateway removes uploads older than ``multipart.max_age`` at its start and every
    hour after (driven by a task Clock)."""
    from twisted.internet.defer import Deferred
    from twisted.internet.task import Clock

    from tahoe.s3.service import CLEANUP_PERIOD, S3Gateway
    clock = Clock()
    clock.advance(10_000)
    gateway = S3Gateway(str(tmp_path / "accounts"), None, clock, "us-east-1", str(tmp_path),
                        multipart_max_age=600)
    staging = gateway.uploads
    old = staging.create({"account": "AK", "bucket": "b", "key": "k", "initiated": 9_000.0})
    fresh = staging.create({"account": "AK", "bucket": "b", "key": "k", "initiated": 9_900.0})
    gateway.start_cleanup()
    assert [upload for upload, _ in staging.uploads()] == [fresh]
    assert not (tmp_path / "private" / "s3-multipart" / old).exists()
    clock.advance(CLEANUP_PERIOD)
    assert staging.uploads() == []
    stopped = Deferred.fromCoroutine(gateway.stop())
    assert stopped.called and not clock.getDelayedCalls()


def test_what_cannot_be_kept_on_disk_is_service_unavailable(tmp_path: Path) -> None:
    """An upload or part the disk cannot take (here its directory made a file) is S3's
    ServiceUnavailable, naming the cause; nothing half-written stays, and a part whose
    record could not be written is no part at all."""
    (tmp_path / "blocked").write_text("a file where the staging directory would be")
    with pytest.raises(S3Error, match="ServiceUnavailable") as error:
        Staging(str(tmp_path / "blocked")).create({"account": "AK"})
    assert "(File exists)" in error.value.message

    staging = Staging(str(tmp_path / "s3-multipart"))
    upload = staging.create({"account": "AK", "bucket": "b", "key": "k", "initiated": 1.0})
    staging.store_part(upload, 1, io.BytesIO(b"first"), 5, {"size": 5, "md5": "a"})
    part = Path(staging.part_path(upload, 1))
    blocker = f".part-00001.json.tmp-{os.getpid()}"  # write_atomically's temporary name
    os.mkdir(part.parent / blocker)  # taken: the record cannot be written
    with pytest.raises(S3Error, match="ServiceUnavailable") as error:
        staging.store_part(upload, 1, io.BytesIO(b"again"), 5, {"size": 5, "md5": "b"})
    assert "part 1" in error.value.message
    assert staging.parts(upload) == {}  # neither the old record nor the new bytes
    assert sorted(p.name for p in part.parent.iterdir()) == [blocker, "upload.json"]


def test_a_named_spool_is_linked_as_the_part_not_copied(tmp_path: Path) -> None:
    """An UploadPart body the channel spooled to a named file becomes the part file itself
    (the same inode: no copy), and stays when the spool is closed (its name removed); an
    anonymous spool, or a named one whose size is not the part's, is copied."""
    import tempfile
    staging = Staging(str(tmp_path / "s3-multipart"))
    upload = staging.create({"account": "AK", "bucket": "b", "key": "k", "initiated": 1.0})
    data = os.urandom(200_000)
    with tempfile.NamedTemporaryFile(dir=tmp_path, prefix="s3-part-") as spool:
        spool.write(data)
        staging.store_part(upload, 1, spool, len(data), {"size": len(data), "md5": "m"})
        part = Path(staging.part_path(upload, 1))
        assert part.stat().st_ino == os.fstat(spool.fileno()).st_ino
    assert part.read_bytes() == data and part.stat().st_nlink == 1
    assert not list(tmp_path.glob("s3-part-*"))
    with tempfile.TemporaryFile(dir=tmp_path) as anonymous:
        anonymous.write(data)
        staging.store_part(upload, 2, anonymous, len(data), {"size": len(data), "md5": "m"})
        assert Path(staging.part_path(upload, 2)).stat().st_ino != os.fstat(
            anonymous.fileno()).st_ino
    with tempfile.NamedTemporaryFile(dir=tmp_path) as longer:
        longer.write(data + b"more")
        staging.store_part(upload, 3, longer, len(data), {"size": len(data), "md5": "m"})
    for number in (2, 3):
        assert Path(staging.part_path(upload, number)).read_bytes() == data

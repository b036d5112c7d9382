"""The operation history behind /status, and the welcome page's forms and security headers."""
from __future__ import annotations

from tahoe.client.history import RECENT, OperationHistory
from tahoe.util import base32
from tahoe.web.json_shapes import ServerSummary
from tahoe.web.root import welcome_page


def test_history_moves_finished_operations_to_recent() -> None:
    """Active operations become recent ones, newest first, with Tahoe's JSON keys."""
    history = OperationHistory()
    upload = history.start("upload", None, 1000, now=10.0)
    download = history.start("download", b"\x01" * 16, 500, now=11.0)
    assert [op.number for op in history.active()] == [download.number, upload.number]
    history.finish(upload, now=10.5, storage_index=b"\x02" * 16)
    document = history.as_json()
    assert [op["type"] for op in document["active"]] == ["download"]
    (recent,) = document["recent"]
    assert recent["type"] == "upload" and recent["status"] == "done"
    assert recent["storage-index-string"] == base32.b2a(b"\x02" * 16)
    assert recent["progress-encode-push"] == 1.0 and recent["elapsed"] == 0.5
    assert document["active"][0]["progress"] == 0.0


def test_history_keeps_a_bounded_number() -> None:
    """Only the last RECENT finished operations are kept."""
    history = OperationHistory()
    for n in range(RECENT + 10):
        history.finish(history.start("upload", None, n, now=float(n)), now=float(n))
    recent = history.recent()
    assert len(recent) == RECENT and recent[0].size == RECENT + 9


def test_welcome_page_has_the_forms_and_server_table() -> None:
    """The welcome page offers view, download, upload and mkdir forms and lists servers."""
    servers = [ServerSummary("v0-abc", "s1", "Connected to tcp:127.0.0.1:1 via tcp", 10 ** 9,
                             "tahoe-lafs-py/0.1.0", None),
               ServerSummary("v0-def", "s2", "Not connected", None, None, None)]
    page = welcome_page(("gateway", "v0-node"), ["Connected to tcp:127.0.0.1:2 via tcp"],
                        servers).decode()
    for form in ("view-form", "download-form", "upload-form", "mkdir-form"):
        assert f'id="{form}"' in page
    assert "Connected to 1 of 2 known storage servers" in page
    assert "1.0 GB" in page and "<script" not in page


def test_history_records_mutable_operations_with_tahoes_keys() -> None:
    """record() keeps an operation for the length of a block: done, or failed with the
    exception's name; mapupdates carry their mode and Tahoe's "-NA-" size."""
    class Clock:
        now = 100.0

        def seconds(self) -> float:
            return self.now

    clock = Clock()
    history = OperationHistory()
    with history.record("mapupdate", b"\x03" * 16, None, clock, "MODE_WRITE"):
        assert [op.kind for op in history.active()] == ["mapupdate"]
        clock.now = 100.25
    try:
        with history.record("publish", b"\x03" * 16, 1234, clock):
            raise RuntimeError("lost")
    except RuntimeError:
        pass
    publish, mapupdate = history.as_json()["recent"]
    assert mapupdate == {"storage-index-string": base32.b2a(b"\x03" * 16),
                         "total-size": "-NA-", "status": "done", "type": "mapupdate",
                         "started": 100.0, "elapsed": 0.25, "mode": "MODE_WRITE"}
    assert publish["status"] == "failed: RuntimeError" and publish["total-size"] == 1234
    assert history.active() == []


def test_history_upload_phases() -> None:
    """An upload reports its hashing and its encode-and-push progress apart."""
    history = OperationHistory()
    op = history.start("upload", None, 10_000, now=1.0)
    op.hash_progress, op.progress = 1.0, 0.5
    (active,) = history.as_json()["active"]
    assert (active["progress-hash"], active["progress-ciphertext"],
            active["progress-encode-push"]) == (1.0, 0.5, 0.5)

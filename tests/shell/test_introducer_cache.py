"""The introducer client keeps announcements in its cache file, and uses them even when the
cache cannot be written (the disk full)."""
from __future__ import annotations

from pathlib import Path

import yaml

from tahoe.crypto.ed25519 import SigningKey
from tahoe.introducer.announcement import VerifiedAnnouncement, sign_announcement
from tahoe.introducer.client import IntroducerClient
from tests.core.test_announcement import KEY, vector_announcement


def _client(cache: Path, got: list[VerifiedAnnouncement]) -> IntroducerClient:
    client = IntroducerClient(None, "pb://unused@tcp:127.0.0.1:1/x", "me", "v", got.append,
                              cache_file=cache)
    client.subscribe_to("storage")
    return client


def test_announcements_are_cached(tmp_path: Path) -> None:
    """A new announcement is used and written to the cache."""
    got: list[VerifiedAnnouncement] = []
    _client(tmp_path / "cache.yaml", got).remote_announce_v2(
        [sign_announcement(vector_announcement(), KEY)])
    assert len(got) == 1
    (entry,) = yaml.safe_load((tmp_path / "cache.yaml").read_text())
    assert entry["key_s"] == got[0].server_id


def test_an_unwritable_cache_does_not_lose_announcements(tmp_path: Path) -> None:
    """With the cache's directory gone (as a full disk refuses the write), every
    announcement of the batch is still used; before, the first failed write ended the
    batch, and the client never learnt of those servers."""
    got: list[VerifiedAnnouncement] = []
    client = _client(tmp_path / "missing" / "cache.yaml", got)
    other = SigningKey(b"\x07" * 32)
    client.remote_announce_v2([sign_announcement(vector_announcement(), KEY),
                               sign_announcement(vector_announcement(nickname="two"), other)])
    assert [a.announcement["nickname"] for a in got] == [vector_announcement()["nickname"],
                                                          "two"]
    assert not (tmp_path / "missing").exists()

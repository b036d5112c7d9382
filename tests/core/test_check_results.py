"""Check results in Tahoe 1.20's JSON shape (``reference/frontends.md`` §3.6)."""
from __future__ import annotations

from tahoe.client.check_results import immutable_results, lit_results, mutable_results
from tahoe.mutable.version import VersionInfo
from tahoe.util import base32

SERVERS = [f"v0-server{i}" for i in range(5)]


def _version(seqnum: int, root: int, needed: int = 2, total: int = 4) -> VersionInfo:
    return VersionInfo(seqnum=seqnum, root_hash=bytes([root]) * 32, iv=b"\x00" * 16,
                       segment_size=3, data_length=3, needed=needed, total=total,
                       signed_prefix=b"\x00" * 75, offsets=(0,) * 8)


def test_lit() -> None:
    assert lit_results() == {"storage-index": "", "results": {"healthy": True}}


def test_immutable_healthy_and_not() -> None:
    full = immutable_results("si", 2, 3, {0: {"a"}, 1: {"b"}, 2: {"c", "a"}}, ["a", "b", "c", "d"])
    details = full["results"]
    assert full["summary"] == "Healthy" and details["healthy"] and details["recoverable"]
    assert details["sharemap"] == {"0": ["a"], "1": ["b"], "2": ["a", "c"]}
    assert details["count-happiness"] == 3 and details["count-good-share-hosts"] == 3
    assert details["servers-responding"] == ["a", "b", "c", "d"]
    assert set(details) == {
        "count-happiness", "count-shares-good", "count-shares-needed", "count-shares-expected",
        "count-good-share-hosts", "count-corrupt-shares", "list-corrupt-shares",
        "servers-responding", "sharemap", "count-wrong-shares", "count-recoverable-versions",
        "count-unrecoverable-versions", "healthy", "recoverable"}
    short = immutable_results("si", 2, 3, {0: {"a"}}, ["a"])
    assert short["summary"] == "Not Healthy: 1 shares (enc 2-of-3)"
    assert short["results"]["recoverable"] is False
    assert short["results"]["count-unrecoverable-versions"] == 1


def test_mutable_one_full_version_is_healthy() -> None:
    v = _version(3, 7)
    shares = {(SERVERS[n], n): v for n in range(4)}
    result = mutable_results("si", shares, [], SERVERS)
    prefix = f"seq3-{base32.b2a(bytes([7]) * 32)[:4]}"
    assert result["summary"] == "Healthy"
    assert sorted(result["results"]["sharemap"]) == [f"{prefix}-sh{n}" for n in range(4)]
    assert result["results"]["count-recoverable-versions"] == 1


def test_mutable_problems_are_listed_as_tahoe_does() -> None:
    old, new = _version(1, 1), _version(2, 2)
    shares = {(SERVERS[0], 0): new, (SERVERS[1], 1): new, (SERVERS[2], 2): new,
              (SERVERS[3], 0): old, (SERVERS[4], 1): old}
    result = mutable_results("si", shares, [(SERVERS[4], 3)], SERVERS)
    assert result["summary"] == ("Unhealthy: multiple versions are recoverable 3 shares "
                                 "(enc 2-of-4) Corrupt Shares: v0-server4-sh3")
    details = result["results"]
    assert details["count-shares-good"] == 3 and details["count-wrong-shares"] == 2
    assert details["list-corrupt-shares"] == [["v0-server4", "si", 3]]
    nothing = mutable_results("si", {}, [], SERVERS)
    assert nothing["summary"] == "Unhealthy: no versions are recoverable"
    assert nothing["results"]["count-shares-expected"] == 10
    lone = mutable_results("si", {(SERVERS[0], 0): new}, [], SERVERS)
    assert lone["summary"] == ("Unhealthy: some versions are unrecoverable "
                               "no versions are recoverable")
    assert lone["results"]["count-shares-good"] == 1 and not lone["results"]["recoverable"]


def test_deep_stats_buckets_and_counts() -> None:
    from tahoe.client.deep_stats import DeepStats, size_bucket
    assert [size_bucket(s) for s in (0, 1, 3, 4, 10, 11, 100, 101, 316, 317, 1000, 1001)] == [
        (0, 0), (1, 3), (1, 3), (4, 10), (4, 10), (11, 31), (32, 100), (101, 316),
        (101, 316), (317, 1000), (317, 1000), (1001, 3162)]
    assert size_bucket(10 ** 9) == (316227767, 1000000000)
    stats = DeepStats()
    stats.add_node("directory")
    stats.add_node("immutable", 5000)
    stats.add_node("immutable", 20, literal=True)
    stats.add_node("mutable")
    stats.add_node("unknown")
    stats.enter_directory(700, 4)
    result = stats.results()
    assert result["api-version"] == 1
    assert (result["count-files"], result["count-literal-files"], result["count-unknown"],
            result["size-directories"], result["largest-directory-children"]) == (3, 1, 1, 700, 4)
    assert result["size-files-histogram"] == [[11, 31, 1], [3163, 10000, 1]]

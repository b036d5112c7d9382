"""``t=check`` (and ``add-lease``) through our gateway on the local grid of ten servers.

Shares are looked at on the servers' disks: a check counts what is there,
and ``add-lease=true`` moves the expiration of the client's lease on every
share forward (same renew secret, so no new lease record).
"""
from __future__ import annotations

import json
import random
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tahoe.mutable.layout import parse_header
from tahoe.storage import paths
from tahoe.storage.containers import open_container
from tahoe.storage.disk import open_file
from tahoe.util import base32
from tests.support.dirapi import WebAPI
from tests.support.nodes import our_tahoe
from tests.support.processes import wait_until
from tests.support.proxied_grid import ProxiedGrid


@pytest.fixture
def api(local_grid: ProxiedGrid) -> WebAPI:
    return WebAPI(local_grid.client.url)


def _unique(size: int) -> bytes:
    return random.Random(f"check-{time.time()}").randbytes(size)


def _share_files(grid: ProxiedGrid, si_b32: str) -> list[Path]:
    si = base32.a2b(si_b32)
    return [path for node in grid.storage_nodes
            for path in sorted((node.node.basedir / "storage" /
                                paths.as_text(paths.share_dir_parts(si))).glob("[0-9]*"))]


def _expirations(files: list[Path]) -> list[list[int]]:
    out = []
    for path in files:
        with open_file(str(path)) as file:
            out.append([lease.expiration for lease in open_container(file).leases()])
    return out


def _check(api: WebAPI, cap: str, path: str = "", extra: str = "") -> dict:
    answer = api.post(cap, path, "t=check&output=JSON" + extra)
    assert answer.status == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return answer.json()


def test_check_an_immutable_file_and_renew_its_leases(api: WebAPI, local_grid: ProxiedGrid) -> None:
    cap = api.ok("PUT", "/uri", _unique(5000)).text.strip()
    result = _check(api, cap)
    details = result["results"]
    assert result["summary"] == "Healthy" and details["healthy"] and details["recoverable"]
    assert (details["count-shares-good"], details["count-shares-needed"],
            details["count-shares-expected"]) == (10, 3, 10)
    assert details["count-happiness"] == 10 and details["count-good-share-hosts"] == 10
    assert len(details["servers-responding"]) == 10
    assert sorted(details["sharemap"], key=int) == [str(n) for n in range(10)]
    assert all(s.startswith("v0-") for servers in details["sharemap"].values() for s in servers)
    files = _share_files(local_grid, result["storage-index"])
    assert len(files) == 10
    before = _expirations(files)
    time.sleep(1.1)
    _check(api, cap, extra="&add-lease=true")
    after = _expirations(files)
    assert all(len(leases) == 1 for leases in after)  # renewed, not added
    assert all(a[0] > b[0] for a, b in zip(after, before))


def test_check_a_directory_renews_its_mutable_shares(api: WebAPI, local_grid: ProxiedGrid) -> None:
    root = api.mkdir()
    api.put(root, "file.bin", _unique(3000))
    result = _check(api, root)
    details = result["results"]
    assert result["summary"] == "Healthy"
    assert details["count-recoverable-versions"] == 1
    assert details["count-unrecoverable-versions"] == 0
    assert all(key.startswith("seq") and "-sh" in key for key in details["sharemap"])
    assert len(details["sharemap"]) == 10
    files = _share_files(local_grid, result["storage-index"])
    before = _expirations(files)
    time.sleep(1.1)
    _check(api, root, extra="&add-lease=true")
    after = _expirations(files)
    assert all(max(a) > max(b) for a, b in zip(after, before))
    child = _check(api, root, "file.bin")
    assert child["results"]["count-shares-good"] == 10


def test_a_missing_share_makes_a_file_unhealthy(api: WebAPI, local_grid: ProxiedGrid) -> None:
    cap = api.ok("PUT", "/uri", _unique(4000)).text.strip()
    si_b32 = _check(api, cap)["storage-index"]
    _share_files(local_grid, si_b32)[0].unlink()
    result = _check(api, cap)
    assert result["summary"] == "Not Healthy: 9 shares (enc 3-of-10)"
    assert result["results"]["healthy"] is False and result["results"]["recoverable"] is True


def test_literal_html_and_refusals(api: WebAPI) -> None:
    lit = api.ok("PUT", "/uri", b"tiny").text.strip()
    assert _check(api, lit) == {"storage-index": "", "results": {"healthy": True}}
    cap = api.ok("PUT", "/uri", _unique(2000)).text.strip()
    page = api.post(cap, "", "t=check&return_to=/somewhere")
    assert page.status == 200 and "File Check Results" in page.text
    assert 'href="/somewhere"' in page.text and "count-shares-good" in page.text
    unknown_t = api.post(cap, "", "t=check&output=JSON&repair=true")
    assert unknown_t.status == 200 and unknown_t.json()["repair-attempted"] is False


def test_tahoe_check_cli(api: WebAPI, local_grid: ProxiedGrid) -> None:
    cap = api.ok("PUT", "/uri", _unique(3000)).text.strip()
    si_b32 = _check(api, cap)["storage-index"]
    result = subprocess.run([str(our_tahoe()), "-d", str(local_grid.client.node.basedir),
                             "check", "--add-lease", cap],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"Summary: Healthy\n storage index: {si_b32}\n"
                             " good-shares: 10 (encoding is 3-of-10)\n wrong-shares: 0\n")
    raw = subprocess.run([str(our_tahoe()), "-d", str(local_grid.client.node.basedir),
                          "check", "--raw", "URI:LIT:ozsw4zjsmvzw4"],
                         capture_output=True, text=True, timeout=60)
    assert raw.returncode == 0 and '"healthy": true' in raw.stdout


def _tree(api: WebAPI) -> tuple[str, dict[str, str]]:
    """A root with a CHK file, a LIT file, an SDMF file, a subdirectory holding another
    CHK file and a second link to the first one."""
    root = api.mkdir()
    caps = {"a.bin": api.put(root, "a.bin", _unique(3000)).text.strip(),
            "tiny": api.put(root, "tiny", b"tiny").text.strip()}
    caps["m"] = api.create_mutable(_unique(500), "SDMF")
    api.ok("PUT", WebAPI.object_path(root, "m") + "?t=uri", caps["m"].encode())
    caps["sub/b.bin"] = api.put(root, "sub/b.bin", _unique(2000)).text.strip()
    api.ok("PUT", WebAPI.object_path(root, "sub/again") + "?t=uri", caps["a.bin"].encode())
    return root, caps


def _stream(api: WebAPI, root: str, t: str, extra: str = "") -> list[dict]:
    answer = api.post(root, "", f"t={t}{extra}")
    assert answer.status == 200, answer.text
    return [json.loads(line) for line in answer.text.splitlines()]


def test_stream_manifest_and_deep_check(api: WebAPI, local_grid: ProxiedGrid) -> None:
    root, caps = _tree(api)
    lines = _stream(api, root, "stream-manifest")
    units, stats = lines[:-1], lines[-1]
    assert [u["path"] for u in units] == [[], ["a.bin"], ["m"], ["tiny"], ["sub"],
                                          ["sub", "b.bin"]]  # "again" is a.bin: once
    by_path = {"/".join(u["path"]): u for u in units}
    assert by_path[""]["cap"] == root and by_path[""]["type"] == "directory"
    assert by_path["tiny"]["verifycap"] == by_path["tiny"]["storage-index"] == ""
    assert by_path["a.bin"]["repaircap"] == by_path["a.bin"]["verifycap"]
    assert by_path["a.bin"]["verifycap"].startswith("URI:CHK-Verifier:")
    assert by_path["m"]["repaircap"] == caps["m"]
    assert stats["type"] == "stats"
    counts = stats["stats"]
    assert (counts["count-directories"], counts["count-files"], counts["count-immutable-files"],
            counts["count-literal-files"], counts["count-mutable-files"]) == (2, 4, 2, 1, 1)
    assert counts["size-immutable-files"] == 5000 and counts["largest-immutable-file"] == 3000
    assert counts["size-files-histogram"] == [[4, 10, 1], [1001, 3162, 2]]
    assert counts["largest-directory-children"] == 4

    sub_files = _share_files(local_grid, by_path["sub/b.bin"]["storage-index"])
    before = _expirations(sub_files)
    time.sleep(1.1)
    checked = _stream(api, root, "stream-deep-check", "&add-lease=true")
    assert [u["path"] for u in checked[:-1]] == [u["path"] for u in units]
    assert all(u["check-results"]["results"]["healthy"] for u in checked[:-1])
    assert checked[-1] == stats
    assert all(a[0] > b[0] for a, b in zip(_expirations(sub_files), before))

    cli = [str(our_tahoe()), "-d", str(local_grid.client.node.basedir)]
    manifest = subprocess.run(cli + ["manifest", root], capture_output=True, text=True,
                              timeout=60)
    assert manifest.returncode == 0, manifest.stderr
    assert manifest.stdout.splitlines()[0] == f"{root} "
    assert f"{caps['sub/b.bin']} sub/b.bin" in manifest.stdout.splitlines()
    sis = subprocess.run(cli + ["manifest", "-s", root], capture_output=True, text=True,
                         timeout=60).stdout.split()
    assert len(sis) == 5 and by_path["m"]["storage-index"] in sis
    deep = subprocess.run(cli + ["deep-check", "-v", "--add-lease", root], capture_output=True,
                          text=True, timeout=60)
    assert deep.returncode == 0, deep.stderr
    assert deep.stdout.splitlines()[0] == "'<root>': Healthy"
    assert "'tiny': Healthy (LIT)" in deep.stdout
    assert deep.stdout.splitlines()[-1] == "done: 6 objects checked, 6 healthy, 0 unhealthy"


def test_stream_of_a_file_is_refused(api: WebAPI) -> None:
    cap = api.ok("PUT", "/uri", _unique(2000)).text.strip()
    answer = api.post(cap, "", "t=stream-manifest")
    assert answer.status == 400 and "needs a directory" in answer.text


def test_an_unreadable_directory_ends_the_stream_with_an_error(api: WebAPI,
                                                               local_grid: ProxiedGrid) -> None:
    root = api.mkdir()
    api.put(root, "a.bin", _unique(1000))
    missing = (f"URI:DIR2:{base32.b2a(random.randbytes(16))}:"
               f"{base32.b2a(random.randbytes(32))}")
    api.ok("PUT", WebAPI.object_path(root, "gone") + "?t=uri", missing.encode())
    answer = api.post(root, "", "t=stream-manifest")
    lines = answer.text.splitlines()
    assert json.loads(lines[0])["path"] == [] and json.loads(lines[2])["path"] == ["gone"]
    error_at = next(i for i, line in enumerate(lines) if line.startswith("ERROR:"))
    assert error_at == 3 and "Traceback" in "\n".join(lines[error_at:])
    result = subprocess.run([str(our_tahoe()), "-d", str(local_grid.client.node.basedir),
                             "deep-check", root], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stderr.startswith("ERROR:")
    assert "done:" not in result.stdout


def _operation(api: WebAPI, root: str, t: str, handle: str, output: str = "JSON",
               extra: str = "") -> Any:
    started = api.post(root, "", f"t={t}&ophandle={handle}&output={output}{extra}",
                       follow=False)
    assert started.status == 302, started.text
    assert started.headers["location"] == f"{api.url}operations/{handle}?output={output}"
    for _ in range(100):
        answer = api.request("GET", f"/operations/{handle}?output={output}")
        assert answer.status == 200, answer.text
        if output.lower() != "json":
            if answer.text.startswith("finished: yes"):
                return answer.text
        elif answer.json()["finished"]:
            return answer.json()
        time.sleep(0.1)
    raise AssertionError(f"{t} did not finish")


def test_operations_with_handles(api: WebAPI, local_grid: ProxiedGrid) -> None:
    root, caps = _tree(api)
    stream = _stream(api, root, "stream-manifest")
    stats = stream[-1]["stats"]
    manifest = _operation(api, root, "start-manifest", "h-manifest")
    assert manifest["stats"] == stats and manifest["origin"] == stream[0]["storage-index"]
    assert manifest["manifest"] == [[u["path"], u["cap"]] for u in stream[:-1]]
    assert set(manifest["storage-index"]) == {u["storage-index"] for u in stream[:-1]} - {""}
    text = _operation(api, root, "start-manifest", "h-text", "text")
    assert text.splitlines()[1] == f" {root}"
    size = _operation(api, root, "start-deep-size", "h-size", "text")
    assert size == ("finished: yes\nsize: "
                    f"{stats['size-immutable-files'] + stats['size-directories']}\n")
    deep_stats = _operation(api, root, "start-deep-stats", "h-stats")
    assert {k: v for k, v in deep_stats.items() if k != "finished"} == stats
    assert api.request("GET", "/operations/h-stats?output=html").json() == deep_stats
    checked = _operation(api, root, "start-deep-check", "h-check", extra="&add-lease=true")
    assert checked["count-objects-checked"] == 5  # the LIT file is not counted
    assert checked["count-objects-healthy"] == 5 and checked["list-unhealthy-files"] == []
    assert checked["root-storage-index"] == manifest["origin"]
    si = next(u["storage-index"] for u in stream if u["path"] == ["sub", "b.bin"])
    detail = api.request("GET", f"/operations/h-check/{si}")
    assert detail.status == 200 and detail.json()["storage-index"] == si
    assert api.request("GET", "/operations/h-check/nosuchsi").status == 404

    page = api.request("GET", "/operations/h-check")
    assert page.status == 200 and "Deep-Check Results" in page.text
    released = api.request("GET", "/operations/h-check?output=JSON&release-after-complete=true")
    assert released.status == 200
    gone = api.request("GET", "/operations/h-check")
    assert gone.status == 404 and "unknown/expired handle 'h-check'" in gone.text
    cancel = api.request("POST", "/operations/h-manifest?t=cancel", b"")
    assert cancel.status == 200
    assert api.request("GET", "/operations/h-manifest").status == 404
    refused = api.post(root, "", "t=start-manifest")
    assert refused.status == 400 and "slow operation requires ophandle=" in refused.text

    cli = subprocess.run([str(our_tahoe()), "-d", str(local_grid.client.node.basedir), "stats",
                          root], capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    lines = cli.stdout.splitlines()
    assert lines[0] == "Counts and Total Sizes:"
    assert " count-immutable-files: 2" in lines
    assert "  size-immutable-files: 5000    (5.00 kB, 4.88 kiB)" in lines
    assert "Size Histogram:" in lines and lines[-1].startswith("1001-3162 : 2")


#: Where a mutable container's share data starts (header and four lease slots before it).
MUTABLE_DATA_OFFSET = 100 + 4 * 92


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


def test_verify_finds_a_corrupt_share(api: WebAPI, local_grid: ProxiedGrid) -> None:
    """verify=true reads every share: one flipped byte is found, named, reported, not counted."""
    cap = api.ok("PUT", "/uri", _unique(20000)).text.strip()
    si_b32 = _check(api, cap)["storage-index"]
    victim = _share_files(local_grid, si_b32)[3]
    _flip(victim, 12 + 2000)  # inside the share data, after the container header
    assert _check(api, cap)["results"]["count-shares-good"] == 10  # presence only
    verified = _check(api, cap, extra="&verify=true")
    details = verified["results"]
    assert verified["summary"] == "Not Healthy: 9 shares (enc 3-of-10)"
    assert details["count-corrupt-shares"] == 1
    ((server, si, shnum),) = details["list-corrupt-shares"]
    assert si == si_b32 and shnum == int(victim.name) and server.startswith("v0-")
    storage_dir = victim.parents[3]
    # The report to the server is sent without waiting for its answer.
    wait_until(lambda: any((storage_dir / "corruption-advisories").iterdir()), 10,
               "the corruption advisory on the server")
    assert api.read(cap, "") is not None  # the file still reads (from the good shares)

    root = api.mkdir()
    api.put(root, "x", _unique(1500))
    dir_si = _check(api, root)["storage-index"]
    mutable_victim = _share_files(local_grid, dir_si)[0]
    share = mutable_victim.read_bytes()[MUTABLE_DATA_OFFSET:]
    _flip(mutable_victim, MUTABLE_DATA_OFFSET + parse_header(share).offsets.share_data + 5)
    checked = _check(api, root, extra="&verify=true")
    assert checked["results"]["count-corrupt-shares"] == 1
    assert checked["results"]["count-shares-good"] == 9
    assert checked["summary"].startswith("Unhealthy: 9 shares (enc 3-of-10) Corrupt Shares:")



def _share_data(path: Path) -> bytes:
    with open_file(str(path)) as file:
        container = open_container(file)
        return container.read_share_data(0, container.data_length)


def test_repair_puts_back_lost_shares(api: WebAPI, local_grid: ProxiedGrid) -> None:
    """repair=true re-creates a lost immutable share byte for byte, and republishes a
    directory that lost one; a healthy object is left alone."""
    cap = api.ok("PUT", "/uri", _unique(300_000)).text.strip()
    si_b32 = _check(api, cap)["storage-index"]
    lost = _share_files(local_grid, si_b32)[5]
    original = _share_data(lost)
    lost.unlink()
    repaired = _check(api, cap, extra="&repair=true")
    assert set(repaired) == {"storage-index", "repair-attempted", "repair-successful",
                             "pre-repair-results", "post-repair-results"}
    assert repaired["repair-attempted"] and repaired["repair-successful"]
    assert repaired["pre-repair-results"]["results"]["count-shares-good"] == 9
    assert repaired["post-repair-results"]["results"]["count-shares-good"] == 10
    assert _share_data(lost) == original  # the very same share, where it was
    again = _check(api, cap, extra="&repair=true")
    assert not again["repair-attempted"] and again["post-repair-results"]["summary"] == "Healthy"

    root = api.mkdir()
    api.put(root, "f", _unique(1000))
    dir_si = _check(api, root)["storage-index"]
    _share_files(local_grid, dir_si)[2].unlink()
    cli = subprocess.run([str(our_tahoe()), "-d", str(local_grid.client.node.basedir), "check",
                          "--repair", root], capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout == (f"Summary: not healthy\n storage index: {dir_si}\n"
                          " good-shares: 9 (encoding is 3-of-10)\n wrong-shares: 0\n"
                          " repair successful\n")
    assert _check(api, root)["summary"] == "Healthy"
    assert api.children(root)["f"]  # contents kept


def test_deep_check_repair(api: WebAPI, local_grid: ProxiedGrid) -> None:
    root, caps = _tree(api)
    units = _stream(api, root, "stream-manifest")[:-1]
    b_si = next(u["storage-index"] for u in units if u["path"] == ["sub", "b.bin"])
    _share_files(local_grid, b_si)[0].unlink()
    result = subprocess.run([str(our_tahoe()), "-d", str(local_grid.client.node.basedir),
                             "deep-check", "--repair", root], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-4:] == [
        "done: 6 objects checked", " pre-repair: 5 healthy, 1 unhealthy",
        " 1 repairs attempted, 1 successful, 0 failed", " post-repair: 6 healthy, 0 unhealthy"]
    assert " repair successful" in result.stdout.splitlines()
    lines = _stream(api, root, "stream-deep-check", "&repair=true")
    assert all(not u["check-and-repair-results"]["repair-attempted"] for u in lines[:-1])
    assert next(u for u in lines if u.get("path") == ["tiny"])["check-and-repair-results"] == \
        {"storage-index": "", "repair-attempted": False}
    started = api.post(root, "", "t=start-deep-check&repair=true&ophandle=h-repair&output=JSON",
                       follow=False)
    assert started.status == 302
    for _ in range(100):
        status = api.request("GET", "/operations/h-repair?output=JSON").json()
        if status["finished"]:
            break
        time.sleep(0.1)
    assert status["count-objects-checked"] == 5 and status["count-repairs-attempted"] == 0
    assert status["count-objects-healthy-post-repair"] == 5


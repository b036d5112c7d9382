"""Directories and mutable files shared by a Tahoe 1.20 client and ours, on either grid.

On the Tahoe 1.20 grid (our client joins it) and on our grid (a Tahoe 1.20
client joins it): a directory made by one gateway is listed and extended by
the other, SDMF and MDMF alike; mutable files written or overwritten by one
are read by the other.
"""
from __future__ import annotations

import json
import random
import time
from typing import Any

import pytest

from tests.support.dirapi import WebAPI
from tests.support.grid import ClientFactory, Gateway, Grid

pytestmark = pytest.mark.interop

GRIDS = ["tahoe-grid", "our-grid"]
FORMATS = ["SDMF", "MDMF"]


def data(seed: str, size: int) -> bytes:
    """Bytes unique to this run."""
    return random.Random(f"{seed}-{time.time()}").randbytes(size)


@pytest.fixture(params=GRIDS)
def pair(request: pytest.FixtureRequest, tahoe_client: ClientFactory) -> tuple[WebAPI, WebAPI]:
    """(Tahoe 1.20's gateway, ours), both clients of the same grid."""
    if request.param == "tahoe-grid":
        grid: Grid = request.getfixturevalue("tahoe_grid")
        ours: Gateway = request.getfixturevalue("our_client_on_tahoe_grid")
    else:
        grid = request.getfixturevalue("our_grid")
        ours = grid.storage_nodes[0]
    theirs = tahoe_client(grid.introducer_furl)
    return WebAPI(theirs.url), WebAPI(ours.url)


def _extend_and_cross_check(maker: WebAPI, other: WebAPI, fmt: str, label: str) -> None:
    root = maker.mkdir(fmt)
    assert root.startswith("URI:DIR2:" if fmt == "SDMF" else "URI:DIR2-MDMF:")
    by_maker = data(f"{label}-maker", 3000)
    assert maker.put(root, "sub/from-maker.bin", by_maker).status == 201
    listed = other.children(root, "sub")
    assert set(listed) == {"from-maker.bin"}
    assert other.read(root, "sub/from-maker.bin") == by_maker

    by_other = data(f"{label}-other", 2000)
    assert other.put(root, "sub/from-other.bin", by_other).status == 201
    assert other.post(root, "sub", "t=mkdir&name=made-by-other").status == 200
    batch = {"linked": ["filenode", {"ro_uri": maker.put(root, "x.bin", b"x" * 99).text,
                                     "metadata": {"note": "set by the other"}}]}
    assert other.post(root, "", "t=set_children", json.dumps(batch).encode()).status == 200
    assert other.post(root, "", "t=rename&from_name=x.bin&to_name=y.bin").status == 200

    children = maker.children(root, "sub")
    assert set(children) == {"from-maker.bin", "from-other.bin", "made-by-other"}
    assert maker.read(root, "sub/from-other.bin") == by_other
    top = maker.children(root)
    assert set(top) == {"sub", "linked", "y.bin"}
    assert top["linked"][1]["metadata"]["note"] == "set by the other"
    assert maker.json(root, "sub/from-other.bin")[1]["metadata"]["tahoe"]["linkcrtime"] > 0
    assert maker.request("DELETE", maker.object_path(root, "sub/from-other.bin")).status == 200
    assert set(other.children(root, "sub")) == {"from-maker.bin", "made-by-other"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_tahoe_directory_extended_by_ours(pair: tuple[WebAPI, WebAPI], fmt: str) -> None:
    """A directory Tahoe 1.20 made is listed and changed by our gateway, and Tahoe sees it."""
    theirs, ours = pair
    _extend_and_cross_check(theirs, ours, fmt, f"tahoe-dir-{fmt}")


@pytest.mark.parametrize("fmt", FORMATS)
def test_our_directory_extended_by_tahoe(pair: tuple[WebAPI, WebAPI], fmt: str) -> None:
    """A directory our gateway made is listed and changed by Tahoe 1.20, and we see it."""
    theirs, ours = pair
    _extend_and_cross_check(ours, theirs, fmt, f"our-dir-{fmt}")


@pytest.mark.parametrize("fmt", FORMATS)
def test_mutable_files_both_ways(pair: tuple[WebAPI, WebAPI], fmt: str) -> None:
    """Mutable files written by either gateway are read by the other, also after overwrites."""
    theirs, ours = pair
    for writer, reader in ((theirs, ours), (ours, theirs)):
        first = data(f"mutable-{fmt}", 5000)
        cap = writer.create_mutable(first, fmt)
        assert reader.read(cap) == first
        kind, info = reader.json(cap)
        assert (kind, info["format"], info["size"], info["rw_uri"]) == ("filenode", fmt, 5000,
                                                                         cap)
        second = data(f"mutable-{fmt}-2", 7000)
        assert reader.ok("PUT", reader.object_path(cap), second).text == cap
        assert writer.read(cap) == second
        assert writer.read(info["ro_uri"]) == second
        third = data(f"mutable-{fmt}-3", 100)
        assert writer.ok("PUT", writer.object_path(cap), third).text == cap
        assert reader.read(cap) == third


def test_our_immutable_directory_read_by_tahoe(pair: tuple[WebAPI, WebAPI]) -> None:
    """An immutable directory made through our gateway is listed and read by Tahoe 1.20."""
    theirs, ours = pair
    file_cap = ours.ok("PUT", "/uri", data("immutable-dir", 4000)).text
    kids = json.dumps({"f": ["filenode", {"ro_uri": file_cap, "metadata": {"m": 1}}]}).encode()
    cap = ours.ok("POST", "/uri?t=mkdir-immutable", kids).text
    assert cap.startswith("URI:DIR2-CHK:")
    assert theirs.children(cap)["f"][1]["ro_uri"] == file_cap
    assert theirs.read(cap, "f") == ours.read(cap, "f")


def _normalize(value: Any) -> Any:
    """Check results with their server lists sorted (the order is not part of the format)."""
    if isinstance(value, dict):
        out = {k: _normalize(v) for k, v in value.items()}
        if isinstance(out.get("servers-responding"), list):
            out["servers-responding"] = sorted(out["servers-responding"])
        if isinstance(out.get("sharemap"), dict):
            out["sharemap"] = {k: sorted(v) for k, v in out["sharemap"].items()}
        return out
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    return value


def _normalized_check(api: WebAPI, cap: str, extra: str = "") -> dict:
    answer = api.post(cap, "", "t=check&output=JSON" + extra)
    assert answer.status == 200, answer.text
    return _normalize(answer.json())


@pytest.mark.parametrize("fmt", FORMATS)
def test_check_results_equal_tahoes(pair: tuple[WebAPI, WebAPI], fmt: str) -> None:
    """t=check of the same file and directory gives the same JSON from both gateways,
    plain, with add-lease and with verify."""
    theirs, ours = pair
    root = ours.mkdir(fmt)
    assert ours.put(root, "file.bin", data(f"check-{fmt}", 3000)).status == 201
    file_cap = ours.json(root, "file.bin")[1]["ro_uri"]
    for cap in (root, file_cap):
        for extra in ("", "&add-lease=true", "&verify=true", "&repair=true"):
            assert _normalized_check(ours, cap, extra) == _normalized_check(theirs, cap, extra)


def _stream_lines(api: WebAPI, root: str, query: str) -> list[dict]:
    answer = api.post(root, "", query)
    assert answer.status == 200, answer.text
    return [_normalize(json.loads(line)) for line in answer.text.splitlines()]


def test_manifest_and_deep_check_equal_tahoes(pair: tuple[WebAPI, WebAPI]) -> None:
    """The same tree streams the same manifest, deep-check lines and deep-stats from both
    gateways (walk order, caps, repair caps, duplicates skipped, sizes)."""
    theirs, ours = pair
    root = ours.mkdir("MDMF")
    file_cap = ours.put(root, "a.bin", data("deep-a", 3000)).text.strip()
    ours.put(root, "tiny", b"tiny")
    ours.put(root, "sub/b.bin", data("deep-b", 1500))
    ours.post(root, "sub", "t=mkdir&name=empty")
    ours.ok("PUT", WebAPI.object_path(root, "sub/again") + "?t=uri", file_cap.encode())
    mutable = ours.create_mutable(data("deep-m", 700), "SDMF")
    ours.ok("PUT", WebAPI.object_path(root, "m") + "?t=uri", mutable.encode())
    for query in ("t=stream-manifest", "t=stream-deep-check",
                  "t=stream-deep-check&add-lease=true", "t=stream-deep-check&repair=true"):
        assert _stream_lines(ours, root, query) == _stream_lines(theirs, root, query), query


def _finished_operation(api: WebAPI, root: str, t: str, output: str) -> tuple[str, Any]:
    handle = f"op-{random.randrange(10 ** 9)}"
    started = api.post(root, "", f"t={t}&ophandle={handle}&output={output}", follow=False)
    assert started.status == 302, started.text
    location = started.headers["location"].replace(handle, "H").replace(api.url, "GATEWAY/")
    for _ in range(300):
        answer = api.request("GET", f"/operations/{handle}?output={output}")
        assert answer.status == 200, answer.text
        if output == "text":
            if answer.text.startswith("finished: yes"):
                return location, answer.text
        elif answer.json()["finished"]:
            body = _normalize(answer.json())
            for key in ("verifycaps", "storage-index"):
                if key in body:
                    body[key] = sorted(body[key])
            return location, body
        time.sleep(0.1)
    raise AssertionError(f"{t} did not finish")


def test_operations_equal_tahoes(pair: tuple[WebAPI, WebAPI]) -> None:
    """start-manifest, start-deep-size, start-deep-stats and start-deep-check give the same
    redirect and the same results from both gateways."""
    theirs, ours = pair
    root = ours.mkdir()
    ours.put(root, "a.bin", data("ops-a", 2500))
    ours.put(root, "sub/b.bin", data("ops-b", 40))
    ours.put(root, "sub/tiny", b"x")
    for t, output in (("start-manifest", "JSON"), ("start-manifest", "text"),
                      ("start-deep-size", "text"), ("start-deep-stats", "JSON"),
                      ("start-deep-check", "JSON"), ("start-deep-check&repair=true", "JSON")):
        assert _finished_operation(ours, root, t, output) == \
            _finished_operation(theirs, root, t, output), (t, output)


@pytest.mark.parametrize("grid_name", GRIDS)
def test_repairs_are_interchangeable(grid_name: str, request: pytest.FixtureRequest,
                                     tahoe_client: ClientFactory) -> None:
    """A share lost from the grid is put back by either gateway's repair, and the other
    one's verify finds the file whole again; both answer in the same shape."""
    if grid_name == "tahoe-grid":
        grid: Grid = request.getfixturevalue("tahoe_grid")
        ours: Gateway = request.getfixturevalue("our_client_on_tahoe_grid")
    else:
        grid = request.getfixturevalue("our_grid")
        ours = grid.storage_nodes[0]
    apis = {"ours": WebAPI(ours.url), "theirs": WebAPI(tahoe_client(grid.introducer_furl).url)}
    shapes = []
    for repairer, verifier in (("ours", "theirs"), ("theirs", "ours")):
        cap = apis[repairer].ok("PUT", "/uri", data(f"repair-{repairer}", 5000)).text.strip()
        si = _normalized_check(apis[repairer], cap)["storage-index"]
        shares = sorted(p for node in grid.storage_nodes
                        for p in (node.node.basedir / "storage" / "shares" / si[:2] / si).glob("*"))
        assert len(shares) == 3
        shares[0].unlink()
        repaired = _normalized_check(apis[repairer], cap, "&repair=true")
        assert repaired["repair-attempted"] and repaired["repair-successful"], repaired
        after = [p for node in grid.storage_nodes
                 for p in (node.node.basedir / "storage" / "shares" / si[:2] / si).glob("*")]
        assert shares[0].name in {p.name for p in after}  # the lost share number is back
        verified = _normalized_check(apis[verifier], cap, "&verify=true")
        assert verified["summary"] == "Healthy" and verified["results"]["count-shares-good"] == 3
        assert verified["results"]["count-happiness"] == 3
        shapes.append((sorted(repaired), sorted(repaired["pre-repair-results"]["results"]),
                       repaired["pre-repair-results"]["summary"],
                       repaired["post-repair-results"]["summary"]))
    assert shapes[0] == shapes[1]

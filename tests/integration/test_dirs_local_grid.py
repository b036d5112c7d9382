"""Directories and mutable files through our gateway on the local grid of ten proxied servers.

The web API of ``reference/frontends.md`` §3.3-3.5 and §3.10 end to end:
paths with intermediate directories, JSON shapes, link changes, mkdir
variants, SDMF and MDMF files, concurrent changes of one directory, our
``tahoe`` CLI against the gateway, and the round trips of a small ``PUT``
into a directory.
"""
from __future__ import annotations

import base64
import json
import os
import random
import subprocess
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.dirapi import WebAPI, multipart
from tests.support.nodes import our_tahoe
from tests.support.proxied_grid import ProxiedGrid
from tests.support.trees import same_trees
from tests.vectors import load

EXISTING = "There was already a child by that name, and you asked me to not replace it."


@pytest.fixture
def api(local_grid: ProxiedGrid) -> WebAPI:
    """The local grid's client gateway."""
    return WebAPI(local_grid.client.url)


def data(seed: str, size: int) -> bytes:
    """Bytes unique to a test (no other upload finds them already stored)."""
    return random.Random(seed + str(time.time())).randbytes(size)


def test_put_paths_create_directories_and_json_shapes(api: WebAPI) -> None:
    """PUT creates intermediate directories (201, then 200); t=json shapes are Tahoe's."""
    root = api.mkdir()
    assert root.startswith("URI:DIR2:")
    contents = data("paths", 2000)
    first = api.put(root, "a/b/c.bin", contents)
    assert first.status == 201 and first.body.startswith(b"URI:CHK:"), first
    again = api.put(root, "a/b/c.bin", contents)
    assert again.status == 200 and again.body == first.body
    refused = api.put(root, "a/b/c.bin", contents, "replace=false")
    assert (refused.status, refused.text.strip()) == (409, EXISTING)
    assert api.read(root, "a/b/c.bin") == contents

    kind, info = api.json(root, "a/b/c.bin")
    assert kind == "filenode"
    assert info["mutable"] is False and info["format"] == "CHK" and info["size"] == 2000
    assert info["ro_uri"] == first.text and info["verify_uri"].startswith("URI:CHK-Verifier:")
    times = info["metadata"]["tahoe"]
    assert times["linkcrtime"] <= times["linkmotime"]

    kind, top = api.json(root)
    assert kind == "dirnode"
    assert set(top) == {"children", "ro_uri", "rw_uri", "verify_uri", "mutable"}
    assert top["rw_uri"] == root and top["ro_uri"].startswith("URI:DIR2-RO:")
    sub_kind, sub = top["children"]["a"]
    assert sub_kind == "dirnode"
    assert set(sub) == {"mutable", "metadata", "rw_uri", "ro_uri", "verify_uri"}
    listed = api.children(sub["rw_uri"], "b")["c.bin"][1]
    assert set(listed) == {"mutable", "format", "size", "metadata", "ro_uri", "verify_uri"}

    assert api.get(root, "", "t=uri").text == root
    assert api.get(root, "a", "t=readonly-uri").text == sub["ro_uri"]
    page = api.get(root, "a/b/")
    assert page.status == 200 and "c.bin" in page.text and "modifiable" in page.text
    assert api.get(root, "a", "t=info").status == 200

    missing = api.get(root, "a/nosuch")
    assert (missing.status, missing.text.strip()) == (404, "No such child: nosuch")
    assert api.get(root, "a//b").status == 400
    below = api.get(root, "a/b/c.bin/d")
    assert below.status == 400 and "Files have no children named 'd'" in below.text
    blocked = api.put(root, "a/b/c.bin/d", b"x" * 100)
    assert blocked.status == 409 and "a file was in the way" in blocked.text
    ro = api.put(sub["ro_uri"], "new.bin", b"y" * 100)
    assert ro.status == 400


def test_links_set_children_and_unknown_caps(api: WebAPI) -> None:
    """t=uri links caps (replace=, only-files); set_children links a batch; unknown caps need ro."""
    root = api.mkdir()
    file_cap = api.ok("PUT", "/uri", data("links", 500)).text
    other = api.mkdir()
    assert api.put(root, "f", file_cap.encode(), "t=uri").text == file_cap
    assert api.put(root, "d", other.encode(), "t=uri").status == 200
    assert api.put(root, "f", file_cap.encode(), "t=uri&replace=false").status == 409
    assert api.put(root, "d", file_cap.encode(), "t=uri&replace=only-files").status == 409
    assert api.put(root, "f", other.encode(), "t=uri&replace=only-files").status == 200
    posted = api.post(root, "", f"t=uri&name=g&uri={file_cap}")
    assert (posted.status, posted.text) == (200, file_cap)

    batch = {
        "x": ["filenode", {"ro_uri": file_cap, "metadata": {"mtime": 5}}],
        "y": ["dirnode", {"rw_uri": other}],
        "odd": ["unknown", {"ro_uri": "ro.x-tahoe-future:abc"}],
    }
    answer = api.post(root, "", "t=set_children", json.dumps(batch).encode())
    assert (answer.status, answer.text) == (200, "Okay so I did it.")
    children = api.children(root)
    assert set(children) == {"f", "d", "g", "x", "y", "odd"}
    assert children["x"][1]["metadata"]["mtime"] == 5
    assert "linkcrtime" in children["x"][1]["metadata"]["tahoe"]
    assert children["y"][1]["rw_uri"] == other
    assert children["odd"] == ["unknown", {"metadata": children["odd"][1]["metadata"],
                                           "ro_uri": "ro.x-tahoe-future:abc"}]
    assert api.get(root, "odd", "t=json").json()[0] == "unknown"
    assert api.get(root, "odd").status == 400
    refused = api.post(root, "", "t=set_children&replace=false",
                       json.dumps({"x": batch["x"]}).encode())
    assert refused.status == 409
    unknown_rw = api.post(root, "", "t=set-children", json.dumps(
        {"bad": ["unknown", {"rw_uri": "x-tahoe-future:abc"}]}).encode())
    assert unknown_rw.status == 400 and "MustNotBeUnknownRWError" in unknown_rw.text


def test_rename_relink_unlink_and_delete(api: WebAPI) -> None:
    """Renames keep metadata; relink moves between directories; unlink and DELETE remove."""
    root, elsewhere = api.mkdir(), api.mkdir()
    cap = api.put(root, "old", data("rename", 300)).text
    api.ok("POST", api.object_path(root) + "?t=set_children",
           json.dumps({"meta": ["filenode", {"ro_uri": cap, "metadata": {"k": "v"}}]}).encode())
    moved = api.post(root, "", "t=rename&from_name=meta&to_name=renamed")
    assert (moved.status, moved.text) == (200, "thing moved")
    children = api.children(root)
    assert "meta" not in children and children["renamed"][1]["metadata"]["k"] == "v"
    assert api.post(root, "", "t=rename&from_name=old&to_name=renamed&replace=false"
                    ).status == 409
    assert api.post(root, "", "t=rename&from_name=nosuch&to_name=x").status == 404
    assert api.post(root, "", f"t=rename&from_name=old&to_name=x&to_dir={elsewhere}"
                    ).status == 400

    relinked = api.post(root, "", f"t=relink&from_name=old&to_dir={elsewhere}/sub&to_name=new")
    assert relinked.status == 404  # sub does not exist yet
    api.ok("POST", api.object_path(elsewhere, "sub") + "?t=mkdir")
    relinked = api.post(root, "", f"t=relink&from_name=old&to_dir={elsewhere}/sub&to_name=new")
    assert relinked.text == "thing moved"
    assert "old" not in api.children(root)
    assert api.children(elsewhere, "sub")["new"][1]["ro_uri"] == cap
    assert api.post(root, "", f"t=relink&from_name=renamed&to_dir={cap}").status == 400

    unlinked = api.post(root, "", "t=unlink&name=renamed")
    assert (unlinked.status, unlinked.text) == (200, "thing unlinked")
    assert api.post(root, "", "t=delete&name=renamed").status == 404
    deleted = api.request("DELETE", api.object_path(elsewhere, "sub/new"))
    assert (deleted.status, deleted.text) == (200, cap)
    assert api.request("DELETE", api.object_path(elsewhere, "sub/new")).status == 404
    assert api.children(elsewhere, "sub") == {}


def test_mkdir_variants_and_immutable_directories(api: WebAPI) -> None:
    """mkdir by path and by name, with children, immutable (ETag, 304), redirects."""
    root = api.mkdir("MDMF")
    assert root.startswith("URI:DIR2-MDMF:")
    file_cap = api.ok("PUT", "/uri", data("mkdir", 400)).text
    lit_cap = api.ok("PUT", "/uri", b"tiny").text
    kids = json.dumps({"f": ["filenode", {"ro_uri": file_cap, "metadata": {"a": 1}}],
                       "l": ["filenode", {"ro_uri": lit_cap}]}).encode()

    made = api.ok("POST", "/uri?t=mkdir-with-children", kids).text
    assert made.startswith("URI:DIR2:")
    assert api.children(made)["f"][1]["metadata"] == {"a": 1}
    frozen = api.ok("POST", "/uri?t=mkdir-immutable", kids).text
    assert frozen.startswith("URI:DIR2-CHK:")
    kind, info = api.json(frozen)
    assert info["mutable"] is False and "rw_uri" not in info and set(info["children"]) == {"f", "l"}
    etag = api.get(frozen, "", "t=json").headers["etag"]
    assert etag.startswith("DIR:") and etag.endswith("-json")
    assert api.get(frozen, "", "t=json", headers={"If-None-Match": etag}).status == 304
    assert api.ok("POST", "/uri?t=mkdir-immutable", b"{}").text == "URI:DIR2-LIT:"
    mutable_child = json.dumps({"m": ["dirnode", {"rw_uri": made}]}).encode()
    refused = api.request("POST", "/uri?t=mkdir-immutable", mutable_child)
    assert refused.status == 400 and "MustBeDeepImmutableError" in refused.text
    assert api.put(frozen, "x", b"z" * 100).status == 400

    sub = api.post(root, "p/q", "t=mkdir&format=SDMF")
    assert sub.status == 200 and sub.text.startswith("URI:DIR2:")
    assert api.post(root, "p/q", "t=mkdir").text == sub.text
    assert api.put(root, "p/q", b"", "t=mkdir").text == sub.text
    assert api.post(root, "p/q", "t=mkdir-with-children", kids).text == sub.text
    named = api.post(root, "p", "t=mkdir-with-children&name=kids", kids).text
    assert set(api.children(named)) == {"f", "l"}
    assert api.post(root, "p", "t=mkdir-with-children&name=kids", kids).status == 409
    imm = api.post(root, "p", "t=mkdir-immutable&name=imm", kids).text
    assert imm.startswith("URI:DIR2-CHK:") and api.json(root, "p/imm")[1]["mutable"] is False
    replaced = api.post(root, "p", "t=mkdir&name=kids")
    assert replaced.status == 200 and api.children(root, "p/kids") == {}
    assert api.post(root, "p", "t=mkdir&name=kids&replace=false").status == 409

    redirected = api.request("POST", "/uri?t=mkdir&redirect_to_result=true", b"", follow=False)
    assert redirected.status == 303 and redirected.headers["location"].startswith("uri/URI%3ADIR2")
    done = api.post(root, "", "t=mkdir&name=w&when_done=/done-here", follow=False)
    assert done.status == 302 and done.headers["location"] == "/done-here"
    assert api.request("POST", "/uri?t=mkdir", b"{}").status == 400
    assert api.request("POST", "/uri?t=mkdir&format=CHK").status == 400


def test_mutable_files_sdmf_and_mdmf(api: WebAPI) -> None:
    """Create, read, describe, overwrite (also at an offset), and link mutable files."""
    for fmt in ("SDMF", "MDMF"):
        first = data(fmt, 3000)
        cap = api.create_mutable(first, fmt)
        assert cap.startswith("URI:SSK:" if fmt == "SDMF" else "URI:MDMF:")
        assert api.read(cap) == first
        kind, info = api.json(cap)
        assert kind == "filenode" and info["mutable"] is True and info["format"] == fmt
        assert info["size"] == 3000 and info["rw_uri"] == cap
        readcap = info["ro_uri"]
        second = data(fmt + "2", 5000)
        assert api.ok("PUT", api.object_path(cap), second).text == cap
        assert api.read(readcap) == second
        assert api.ok("PUT", api.object_path(cap) + "?offset=10", b"0123456789").text == cap
        assert api.read(cap) == second[:10] + b"0123456789" + second[20:]
        ranged = api.get(cap, headers={"Range": "bytes=10-19"})
        assert (ranged.status, ranged.body) == (206, b"0123456789")
        assert api.put(readcap, "", b"nope").status == 400
        form, headers = multipart({"t": "upload"}, {"file": ("x.bin", b"from a form")})
        assert api.ok("POST", api.object_path(cap) + "?t=upload", form, headers=headers
                      ).text == cap
        assert api.read(readcap) == b"from a form"

    root = api.mkdir()
    created = api.put(root, "m.txt", b"mutable in a directory", "format=MDMF")
    assert created.status == 201 and created.text.startswith("URI:MDMF:")
    again = api.put(root, "m.txt", b"overwritten in place")
    assert (again.status, again.text) == (200, created.text)
    assert api.read(root, "m.txt") == b"overwritten in place"
    child = api.children(root)["m.txt"][1]
    assert child["mutable"] is True and child["format"] == "MDMF" and "size" not in child
    assert api.put(root, "m.txt", b"no", "replace=false").status == 409


def test_upload_form_into_directory(api: WebAPI) -> None:
    """POST t=upload takes the name from the form's file name, or from name=."""
    root = api.mkdir()
    contents = data("form", 700)
    form, headers = multipart({"t": "upload"}, {"file": ("from-form.bin", contents)})
    cap = api.ok("POST", api.object_path(root), form, headers=headers).text
    assert api.children(root)["from-form.bin"][1]["ro_uri"] == cap
    form, headers = multipart({"t": "upload", "name": "named.bin", "when_done": "/x"},
                              {"file": ("ignored.bin", contents)})
    answer = api.request("POST", api.object_path(root), form, headers=headers, follow=False)
    assert answer.status == 302 and answer.headers["location"] == "/x"
    assert "named.bin" in api.children(root)
    form, headers = multipart({"t": "upload", "replace": "false"}, {"file": ("named.bin", b"x")})
    assert api.request("POST", api.object_path(root), form, headers=headers).status == 409
    assert api.post(root, "newfile.bin", "t=upload", form, headers=headers).status == 404


def test_concurrent_puts_into_one_directory(api: WebAPI) -> None:
    """Twenty simultaneous PUTs into one directory: every file ends up listed."""
    root = api.mkdir()
    blobs = {f"file-{i:02d}.bin": data(f"concurrent{i}", 1000 + i) for i in range(20)}
    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(lambda item: api.put(root, item[0], item[1]), blobs.items()))
    assert [a.status for a in answers] == [201] * 20
    children = api.children(root)
    assert set(children) == set(blobs)
    for name, answer in zip(blobs, answers):
        assert children[name][1]["ro_uri"] == answer.text


def run_cli(cli_dir: Path, *args: str | os.PathLike[str]) -> str:
    """Our ``tahoe -d CLI_DIR ARGS``; its stdout (fails the test on a non-zero exit)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run([str(our_tahoe()), "-d", str(cli_dir), *map(os.fspath, args)],
                            stdin=subprocess.DEVNULL, capture_output=True, timeout=600, env=env)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout.decode()


def test_cli_against_our_gateway(local_grid: ProxiedGrid, tmp_path: Path) -> None:
    """create-alias, put, ls, mkdir, mv, ln, unlink and cp -r of 200 files up and back."""
    cli_dir = tmp_path / "cli"
    (cli_dir / "private").mkdir(parents=True)
    (cli_dir / "node.url").write_text(local_grid.client.url + "\n")
    assert run_cli(cli_dir, "create-alias", "work") == "Alias 'work' created\n"
    local = tmp_path / "one.txt"
    local.write_bytes(data("cli", 1200))
    assert run_cli(cli_dir, "put", local, "work:dir/name.txt").startswith("URI:CHK:")
    assert run_cli(cli_dir, "ls", "work:dir").split() == ["name.txt"]
    assert run_cli(cli_dir, "mkdir", "work:other").startswith("URI:DIR2:")
    assert run_cli(cli_dir, "mv", "work:dir/name.txt", "work:other/").strip() == "OK"
    assert run_cli(cli_dir, "ln", "work:other/name.txt", "work:dir/again.txt").strip() == "OK"
    assert run_cli(cli_dir, "ls", "work:other").split() == ["name.txt"]
    assert run_cli(cli_dir, "ls", "work:dir").split() == ["again.txt"]
    run_cli(cli_dir, "unlink", "work:dir/again.txt")
    assert run_cli(cli_dir, "ls", "work:dir").split() == []

    tree = tmp_path / "tree"
    rng = random.Random(f"cli-tree-{time.time()}")
    folders = [tree, tree / "a", tree / "a" / "deep", tree / "b c"]
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    for i in range(200):
        (folders[i % len(folders)] / f"f{i:03d}.bin").write_bytes(rng.randbytes(1000 + i % 11))
    run_cli(cli_dir, "cp", "-r", tree, "work:copy")
    back = tmp_path / "back"
    run_cli(cli_dir, "cp", "-r", "work:copy", back)
    assert same_trees(tree, back / "copy" / "tree")


def test_small_put_into_directory_takes_two_round_trips(local_grid: ProxiedGrid,
                                                        api: WebAPI) -> None:
    """Over warm HTTPS connections, PUT /uri/$DIRCAP/name takes one round trip for the file and
    one to link it: the gateway wrote the directory last, so it changes what it wrote without
    reading it again, and writes it (test-and-set, which would fail had anyone else written
    it since)."""
    grid = local_grid
    root = api.mkdir()
    assert api.put(root, "warm.bin", data("warm", 1000)).status == 201
    answers = []
    elapsed, turns, bursts = grid.round_trips_while(
        lambda: answers.append(api.put(root, "timed.bin", data("timed", 1000))))
    assert answers[0].status == 201
    rtt = 0.4
    assert 2 * rtt <= elapsed < 3 * rtt, elapsed
    for proxy, count, seen in zip(grid.proxies, turns, bursts):
        assert count == 2, (proxy.port, [(b.direction.name, b.nbytes) for b in seen])


def test_named_file_urls_and_private_key(api: WebAPI) -> None:
    """/file and /named serve files under a name; private-key= fixes a new directory's cap."""
    contents = data("named", 900)
    cap = api.ok("PUT", "/uri", contents).text
    quoted = urllib.parse.quote(cap, safe="")
    answer = api.request("GET", f"/file/{quoted}/@@named=/page.html")
    assert (answer.status, answer.body) == (200, contents)
    assert answer.headers["content-type"].startswith("text/html")
    assert api.request("GET", f"/named/{quoted}/x/notes.txt").body == contents
    assert api.request("POST", f"/named/{quoted}/a.txt").status == 400
    root = api.mkdir()
    assert api.request("GET", f"/file/{urllib.parse.quote(root, safe='')}/x").status == 400
    assert api.request("GET", "/file").status == 404

    key = load("mutable-keys.json")["fixed_key"]
    der = bytes.fromhex(key["private_key_pkcs8_der_hex"])
    made = api.ok("POST", "/uri?t=mkdir&private-key="
                  + base64.urlsafe_b64encode(der).decode().rstrip("="))
    assert made.text == key["caps"]["dir2_writecap"]
    assert api.children(made.text) == {}

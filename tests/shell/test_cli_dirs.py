"""The directory commands of ``tahoe`` (aliases, mkdir, ls, cp, mv, ln, unlink, rm).

Run in-process through :func:`tahoe.cli.main.run` against an in-memory fake
gateway with directories (``fake_dir_gateway``): argument parsing, request
paths and sequences, output and exit statuses, and, for ``cp -r``, one
``set_children`` per existing directory, one ``mkdir-with-children`` per new
one, and uploads and downloads in flight together.  Facts:
``reference/frontends.md`` §2, §3.3-3.5, §3.10.
"""
from __future__ import annotations

import io
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tahoe.cli import main
from tahoe.cli.aliases import quote_output, resolve_local_or_remote
from tahoe.cli.dircaps import normalize_dircap, readonly_dircap
from tahoe.cli.listing import Columns, format_rows, listed_children, listing_rows
from tahoe.cli.workers import TaskPool
from tests.shell.fake_dir_gateway import FakeDirGateway

# From reference/vectors/dirnode-caps.json (the fixed key).
DIR2 = "URI:DIR2:xrlw4lbtotubjayhnbtfb4npri:lkf7z43nktjc4zv2c7erwo4wmqbnq3kqq63dvwznw5pxko7nclma"
DIR2_RO = ("URI:DIR2-RO:fg27mwanekqkeaivleowizfzyu:"
           "lkf7z43nktjc4zv2c7erwo4wmqbnq3kqq63dvwznw5pxko7nclma")
MDMF = ("URI:DIR2-MDMF:xrlw4lbtotubjayhnbtfb4npri:"
        "lkf7z43nktjc4zv2c7erwo4wmqbnq3kqq63dvwznw5pxko7nclma")
MDMF_RO = ("URI:DIR2-MDMF-RO:fg27mwanekqkeaivleowizfzyu:"
           "lkf7z43nktjc4zv2c7erwo4wmqbnq3kqq63dvwznw5pxko7nclma")
CHK = ("URI:CHK:aebagbafaydqqcikbmga2dqpca:cwdtsnqvmhnzqpi6nxrzcz6zua4cpdz5un4y6quup46ooh5gyoya"
       ":3:10:1234")


@pytest.fixture
def fake() -> Iterator[FakeDirGateway]:
    """A running fake gateway with directories."""
    gateway = FakeDirGateway()
    gateway.thread.start()
    yield gateway
    gateway.server.shutdown()
    gateway.server.server_close()
    gateway.thread.join()


@pytest.fixture
def nodedir(tmp_path: Path, fake: FakeDirGateway) -> Path:
    """A CLI directory whose node.url names the fake gateway."""
    directory = tmp_path / "node"
    (directory / "private").mkdir(parents=True)
    (directory / "node.url").write_text(fake.url + "\n")
    return directory


@pytest.fixture
def work(fake: FakeDirGateway, nodedir: Path) -> str:
    """A directory on the fake gateway named by the alias ``work``."""
    cap = fake.new_directory()
    (nodedir / "private" / "aliases").write_text(f"work: {cap}\n")
    return cap


def tahoe(nodedir: Path, *argv: str | os.PathLike[str],
          env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run ``tahoe -d NODEDIR ARGV`` in-process: (exit status, stdout, stderr)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main.run(["-d", str(nodedir), *map(os.fspath, argv)], stdout, stderr,
                    env or {"HOME": "/nonexistent"})
    return code, stdout.getvalue(), stderr.getvalue()


def make_tree(root: Path, files_per_directory: int = 5) -> dict[str, bytes]:
    """A small local tree; returns relative path -> contents of every file."""
    contents = {}
    for directory in ("", "a", "a/deep", "b"):
        (root / directory).mkdir(parents=True, exist_ok=True)
        for i in range(files_per_directory):
            relative = f"{directory}/f{i}".lstrip("/")
            data = f"{relative} ".encode() * (20 + i)
            (root / relative).write_bytes(data)
            contents[relative] = data
    (root / "empty").mkdir()
    return contents


def grid_tree(fake: FakeDirGateway, dircap: str, prefix: str = "") -> dict[str, bytes]:
    """relative path -> contents of every file under a fake directory ("/" ends directories)."""
    found: dict[str, bytes] = {}
    for name, cap in fake.children(dircap).items():
        cap = fake.readonly.get(cap, cap)
        if cap in fake.directories:
            found[prefix + name + "/"] = b""
            found.update(grid_tree(fake, cap, prefix + name + "/"))
        else:
            found[prefix + name] = fake.files[cap]
    return found


# ---------------------------------------------------------------- pure pieces


@pytest.mark.parametrize("text, quoted, bare", [
    ("x", "'x'", "x"), ("it's", '"it\'s"', '"it\'s"'), ("a\nb", '"a\\x0ab"', "a\nb"),
    ('$x"', "'$x\"'", '$x"'), ("\x01", '"\\x01"', '"\\x01"'), ("☃", "'☃'", "☃"),
    ("\U0001f600", '"\\U0001f600"', '"\\U0001f600"'), ('"a', "'\"a'", "'\"a'"),
    ("tab\there", '"tab\\x09here"', '"tab\\x09here"'),
])
def test_quote_output_matches_tahoe(text: str, quoted: str, bare: str) -> None:
    """Names are quoted as Tahoe 1.20's quote_output does (outputs recorded from it)."""
    assert quote_output(text) == quoted
    assert quote_output(text, quotemarks=False) == bare


def test_cp_arguments_local_or_remote() -> None:
    """In cp, arguments without an alias (or with a ':' after a '/') are local paths."""
    aliases = {"work": DIR2}
    assert resolve_local_or_remote(aliases, "work:a/b") == (DIR2, "a/b")
    assert resolve_local_or_remote(aliases, "./a:b") == (None, "./a:b")
    assert resolve_local_or_remote(aliases, "/tmp/x") == (None, "/tmp/x")
    assert resolve_local_or_remote(aliases, "plain") == (None, "plain")
    assert resolve_local_or_remote(aliases, CHK) == (CHK, "")


def test_directory_caps() -> None:
    """Read-only dircaps derive from write caps as in the reference vectors; checks are strict."""
    assert readonly_dircap(DIR2) == DIR2_RO and readonly_dircap(MDMF) == MDMF_RO
    assert readonly_dircap(DIR2_RO) == DIR2_RO
    assert normalize_dircap(" " + DIR2 + "\n") == DIR2
    assert normalize_dircap("ro." + DIR2_RO) == DIR2_RO
    for refused in (CHK, "ro." + DIR2, "URI:DIR2:short:cap", "garbage", DIR2 + ":extra"):
        assert normalize_dircap(refused) is None, refused
    assert normalize_dircap(MDMF + ":3:131073") == MDMF + ":3:131073"


def test_listing_layout() -> None:
    """ls -l lines: mode, size, link time, name (right-aligned); URIs left-aligned."""
    now = 1_700_000_000.0
    meta = {"tahoe": {"linkcrtime": now - 60, "linkmotime": now}}
    children = {
        "sub": ["dirnode", {"rw_uri": DIR2, "ro_uri": DIR2_RO, "mutable": True,
                            "metadata": meta}],
        "big.bin": ["filenode", {"ro_uri": CHK, "size": 1234, "mutable": False,
                                 "metadata": {"ctime": now - 400 * 86400}}],
        "m": ["filenode", {"rw_uri": "URI:SSK:w:x", "ro_uri": "URI:SSK-RO:r:x",
                           "mutable": True, "metadata": meta}],
        "odd": ["unknown", {"ro_uri": "ro.x-new:cap", "metadata": {}}],
    }
    rows, unknown = listing_rows(children, Columns(long=True, classify=True), now,
                                 lambda pattern, t: time.strftime(pattern, time.gmtime(t)))
    assert unknown
    assert format_rows(rows) == [
        "-r-- 1234 Oct 10  2022 big.bin",
        "-rw-    ? Nov 14 22:12      m*",
        "?r--    ?            -    odd?",
        "drwx    - Nov 14 22:12    sub/",
    ]
    rows, _ = listing_rows(children, Columns(uri=True, readonly_uri=True), now, time.strftime)
    assert format_rows(rows)[0] == f"big.bin {CHK} {CHK}"
    assert format_rows(rows)[3] == f"    sub {DIR2.ljust(len(CHK))} {DIR2_RO}"
    assert format_rows(listing_rows(children, Columns(), now, time.strftime)[0]) == \
        ["big.bin", "m", "odd", "sub"]
    single = listed_children(["filenode", {"ro_uri": CHK, "size": 5}], "dir/f.txt")
    assert list(single) == ["f.txt"] and single["f.txt"][1]["metadata"] == {}


def test_task_pool_bounds_and_errors() -> None:
    """The pool runs nested tasks with at most N at once and re-raises the first failure."""
    running, peak, lock = 0, 0, threading.Lock()
    all_started = threading.Event()
    done: list[int] = []

    def task(i: int) -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
            if running == 4:
                all_started.set()
        all_started.wait(5)
        with lock:
            running -= 1
            done.append(i)
        if i < 4:
            pool.submit(lambda: task(i + 10))

    pool = TaskPool(4)
    pool.run([lambda i=i: task(i) for i in range(8)])  # type: ignore[misc]
    assert peak == 4 and len(done) == 12
    failing = TaskPool(2)
    with pytest.raises(ZeroDivisionError):
        failing.run([lambda: None, lambda: 1 // 0] + [lambda: None] * 5)


# ---------------------------------------------------------------- aliases


def test_create_and_list_aliases(fake: FakeDirGateway, nodedir: Path) -> None:
    """create-alias POSTs t=mkdir and appends; list-aliases aligns and derives RO caps."""
    (nodedir / "private" / "aliases").write_text(f"# comment\nlonger-name: {DIR2}")
    assert tahoe(nodedir, "create-alias", "w:") == (0, "Alias 'w' created\n", "")
    assert [(r.method, r.raw_path) for r in fake.requests] == [("POST", "/uri?t=mkdir")]
    created = (nodedir / "private" / "aliases").read_text().splitlines()
    assert created[:2] == ["# comment", f"longer-name: {DIR2}"] and created[2].startswith(
        "w: URI:DIR2:")
    w_cap = created[2][3:]
    code, out, _ = tahoe(nodedir, "list-aliases")
    assert code == 0 and out == f"  longer-name: {DIR2}\n            w: {w_cap}\n"
    code, out, _ = tahoe(nodedir, "list-aliases", "--readonly-uri")
    assert out.splitlines()[0] == f"  longer-name: {DIR2_RO}"
    code, out, _ = tahoe(nodedir, "list-aliases", "--json")
    assert json.loads(out)["longer-name"] == {"readwrite": DIR2, "readonly": DIR2_RO}
    assert out.startswith('{\n    "longer-name": {\n        "readwrite": ')


def test_alias_errors(fake: FakeDirGateway, nodedir: Path) -> None:
    """Existing, colon and space names are refused with Tahoe's words; nothing is sent."""
    (nodedir / "private" / "aliases").write_text(f"w: {DIR2}\n")
    assert tahoe(nodedir, "create-alias", "w") == (1, "", "Alias 'w' already exists!\n")
    assert tahoe(nodedir, "add-alias", "w:", DIR2) == (1, "", "Alias 'w' already exists!\n")
    assert tahoe(nodedir, "create-alias", "a:b") == (
        1, "", "Alias names cannot contain colons.\n")
    assert tahoe(nodedir, "add-alias", "a b", DIR2) == (
        1, "", "Alias names cannot contain spaces.\n")
    code, _, err = tahoe(nodedir, "add-alias", "x", CHK)
    assert code == 1 and err == f"Error: '{CHK}' is not a directory cap\n"
    assert fake.requests == []
    assert tahoe(nodedir, "add-alias", "ro", "ro." + DIR2_RO) == (0, "Alias 'ro' added\n", "")
    assert (nodedir / "private" / "aliases").read_text().endswith(f"\nro: {DIR2_RO}\n")
    empty = nodedir.parent / "empty"
    (empty / "private").mkdir(parents=True)
    assert tahoe(empty, "list-aliases") == (0, "", "")
    assert tahoe(empty, "list-aliases", "--json") == (0, "{}\n", "")


# ---------------------------------------------------------------- mkdir, ls


def test_mkdir_requests(fake: FakeDirGateway, nodedir: Path, work: str) -> None:
    """mkdir builds Tahoe's URLs: unlinked, alias root, nested path (quoted), --format."""
    code, out, _ = tahoe(nodedir, "mkdir")
    assert code == 0 and out.startswith("URI:DIR2:")
    tahoe(nodedir, "mkdir", "work:")
    code, out, _ = tahoe(nodedir, "mkdir", "--format=mdmf", "work:a b/☃/")
    quoted = fake.requests[-1].raw_path
    assert quoted == f"/uri/{work.replace(':', '%3A')}/a%20b/%E2%98%83?t=mkdir&format=mdmf"
    assert [r.raw_path for r in fake.requests[:2]] == ["/uri?t=mkdir"] * 2
    assert out.strip() == fake.children(fake.children(work)["a b"])["☃"]
    code, _, err = tahoe(nodedir, "mkdir", "--format=CHK", "work:x")
    assert code == 1 and err.endswith("CHK is an invalid format\n")


def test_ls_output_and_statuses(fake: FakeDirGateway, nodedir: Path, work: str,
                                tmp_path: Path) -> None:
    """ls lists sorted names, one line for a file, raw --json; 404: 2, 410: 154, dead: 255."""
    fake.link(work, "b.txt", fake.new_file(b"B" * 100))
    fake.link(work, "a", fake.new_directory())
    assert tahoe(nodedir, "ls", "work:") == (0, "a\nb.txt\n", "")
    assert tahoe(nodedir, "ls", "-F") == (1, "", "error: No alias specified, and the default"
                                          " 'tahoe' alias doesn't exist. To create it, use"
                                          " 'tahoe create-alias tahoe'.\n")
    code, out, _ = tahoe(nodedir, "ls", "-l", "work:b.txt")
    assert code == 0 and out.startswith("-r-- 100 ") and out.endswith(" b.txt\n")
    assert fake.requests[-1].raw_path.endswith("/b.txt?t=json")
    code, out, _ = tahoe(nodedir, "ls", "--json", "work:a/")
    assert code == 0 and json.loads(out)[0] == "dirnode" and out.endswith("\n\n")
    assert tahoe(nodedir, "ls", "work:nope") == (2, "", "No such file or directory\n")
    gone = fake.new_directory()
    del fake.directories[gone]
    code, _, err = tahoe(nodedir, "ls", gone)
    assert code == 410 & 0xFF and err.startswith("Error during GET: 410 Gone\nUnrecoverable")
    dead = tmp_path / "dead"
    (dead / "private").mkdir(parents=True)
    (dead / "node.url").write_text("http://127.0.0.1:1/\n")
    code, _, err = tahoe(dead, "ls", work)
    assert code == 255 and err.startswith("Error during GET: -1 Error trying to connect to")


# ---------------------------------------------------------------- unlink, rm, mv, ln


def test_unlink_and_rm(fake: FakeDirGateway, nodedir: Path, work: str) -> None:
    """unlink and rm DELETE the link and print '200 OK'; no path or 404 is an error."""
    for name in ("x", "y"):
        fake.link(work, name, fake.new_file(b"data"))
    assert tahoe(nodedir, "unlink", "work:x") == (0, "200 OK\n", "")
    assert tahoe(nodedir, "rm", "work:y") == (0, "200 OK\n", "")
    assert [r.method for r in fake.requests] == ["DELETE", "DELETE"]
    assert fake.children(work) == {}
    assert tahoe(nodedir, "unlink", "work:") == (
        1, "", "\n'tahoe unlink' can only unlink directory entries, so a path must be given.\n")
    assert tahoe(nodedir, "rm", "work:")[2].startswith("\n'tahoe rm' can only")
    code, _, err = tahoe(nodedir, "unlink", "work:x")
    assert code == 1 and err == "ERROR: 404 Not Found\nNo such child: x\n"


def test_mv_and_ln(fake: FakeDirGateway, nodedir: Path, work: str) -> None:
    """mv: GET t=json, PUT t=uri&replace=only-files, DELETE; a trailing '/' keeps the name."""
    cap = fake.new_file(b"moving" * 20)
    fake.link(work, "f", cap)
    fake.link(work, "d", fake.new_directory())
    assert tahoe(nodedir, "mv", "work:f", "work:d/") == (0, "OK\n", "")
    assert [(r.method, r.path.rsplit("/", 1)[-1], r.query) for r in fake.requests] == [
        ("GET", "f", {"t": "json"}),
        ("PUT", "f", {"t": "uri", "replace": "only-files"}),
        ("DELETE", "f", {}),
    ]
    assert fake.requests[1].body == cap.encode()
    assert "f" not in fake.children(work)
    assert tahoe(nodedir, "ln", "work:d/f", "work:g") == (0, "OK\n", "")
    assert fake.requests[-1].method == "PUT" and fake.children(work)["g"] == cap
    assert tahoe(nodedir, "ln", "work:g", "work:d") == (
        1, "", "Error: You can't overwrite a directory with a file\n")
    code, _, err = tahoe(nodedir, "mv", "work:nope", "work:x")
    assert code == 1 and err.startswith("Error: 404 Not Found")


def test_mv_exits_2_when_the_original_stays(fake: FakeDirGateway, nodedir: Path) -> None:
    """When DELETE of the original fails after linking, mv says so and exits 2."""
    cap = fake.new_file(b"x" * 100)
    (nodedir / "private" / "aliases").write_text(f"w: {fake.new_directory()}\n")
    code, out, err = tahoe(nodedir, "mv", cap, "w:copy")  # a bare cap has no parent
    assert code == 2 and out == ""
    assert err.startswith("Error deleting original after move: 500 ")


# ---------------------------------------------------------------- cp


def test_cp_recursive_upload_batches_and_overlaps(fake: FakeDirGateway, nodedir: Path,
                                                  work: str, tmp_path: Path) -> None:
    """cp -r: uploads overlap; each new directory is one mkdir-with-children; one set_children."""
    contents = make_tree(tmp_path / "tree")
    fake.hold["upload"] = 4
    assert tahoe(nodedir, "cp", "-r", tmp_path / "tree", "work:") == (
        0, "Success: files copied\n", "")
    assert fake.max_in_flight["upload"] >= 4
    uploads = fake.requests_with("PUT")
    assert len(uploads) == len(contents) and {r.path for r in uploads} == {"/uri"}
    assert len(fake.requests_with("POST", "mkdir-with-children")) == 5  # tree a deep b empty
    set_children = fake.requests_with("POST", "set_children")
    assert len(set_children) == 1 and set_children[0].path.startswith("/uri/URI%3ADIR2%3A")
    assert list(json.loads(set_children[0].body)) == ["tree"]
    expected = {"tree/" + path: data for path, data in contents.items()}
    expected.update({f"tree/{d}/": b"" for d in ("a", "a/deep", "b", "empty")}, **{"tree/": b""})
    assert grid_tree(fake, work) == expected


def test_cp_one_request_at_a_time_when_asked(fake: FakeDirGateway, nodedir: Path, work: str,
                                             tmp_path: Path) -> None:
    """TAHOE_CLI_CP_WORKERS=1 serializes the uploads (the knob the benchmark turns)."""
    make_tree(tmp_path / "tree", files_per_directory=3)
    env = {"HOME": "/nonexistent", "TAHOE_CLI_CP_WORKERS": "1"}
    assert tahoe(nodedir, "cp", "-r", tmp_path / "tree", "work:t", env=env)[0] == 0
    assert fake.max_in_flight["upload"] == 1


def test_cp_merges_into_existing_directories(fake: FakeDirGateway, nodedir: Path, work: str,
                                             tmp_path: Path) -> None:
    """Existing directories get one set_children each; an existing mutable file is overwritten."""
    make_tree(tmp_path / "tree", files_per_directory=2)
    assert tahoe(nodedir, "cp", "-r", tmp_path / "tree", "work:")[0] == 0
    tree = fake.children(work)["tree"]
    mutable = fake.new_file(b"old", mutable=True)
    fake.link(fake.children(tree)["a"], "f0", mutable)
    (tmp_path / "tree" / "b" / "new").write_bytes(b"new file " * 10)
    del fake.requests[:]
    assert tahoe(nodedir, "cp", "-r", tmp_path / "tree", "work:")[0] == 0
    set_children = fake.requests_with("POST", "set_children")
    targets = [r.path for r in set_children]
    assert len(targets) == len(set(targets)) == 4  # tree, a, a/deep, b (work: nothing new)
    assert fake.files[mutable] == (tmp_path / "tree" / "a" / "f0").read_bytes()
    in_place = [r for r in fake.requests_with("PUT") if r.path != "/uri"]
    a_cap = fake.children(tree)["a"]
    assert [r.path for r in in_place] == ["/uri/" + a_cap.replace(":", "%3A") + "/f0"]
    assert fake.requests_with("POST", "mkdir-with-children") == []
    assert fake.children(fake.children(tree)["a"])["f0"] == mutable


def test_cp_recursive_download_overlaps(fake: FakeDirGateway, nodedir: Path, work: str,
                                        tmp_path: Path) -> None:
    """cp -r grid -> local fetches files concurrently and rebuilds the tree."""
    contents = make_tree(tmp_path / "tree")
    assert tahoe(nodedir, "cp", "-r", tmp_path / "tree", "work:")[0] == 0
    fake.hold["download"] = 4
    assert tahoe(nodedir, "cp", "-r", "work:tree", tmp_path / "out") == (
        0, "Success: files copied\n", "")
    assert fake.max_in_flight["download"] >= 4
    for relative, data in contents.items():
        assert (tmp_path / "out" / "tree" / relative).read_bytes() == data
    assert (tmp_path / "out" / "tree" / "empty").is_dir()
    code, _, _ = tahoe(nodedir, "cp", "-r", "--caps-only", work, tmp_path / "caps")
    assert code == 0  # an unnamed source: its contents go straight into the target
    assert (tmp_path / "caps" / "tree" / "f0").read_text().startswith("URI:CHK:")


def test_cp_grid_to_grid_links_immutable_copies_mutable(fake: FakeDirGateway, nodedir: Path,
                                                        work: str) -> None:
    """Immutable files are linked by cap (no upload); mutable ones become new files."""
    source = fake.new_directory()
    fake.link(work, "src", source)
    immutable = fake.new_file(b"i" * 100)
    fake.link(source, "imm", immutable)
    fake.link(source, "mut", fake.new_file(b"m" * 100, mutable=True))
    assert tahoe(nodedir, "cp", "-r", "work:src", "work:dst") == (0, "Success: files copied\n",
                                                                  "")
    assert [r.path for r in fake.requests_with("PUT")] == ["/uri"]
    copied = fake.children(fake.children(fake.children(work)["dst"])["src"])
    assert copied["imm"] == immutable and fake.files[copied["mut"]] == b"m" * 100
    assert tahoe(nodedir, "cp", "work:src/imm", "work:single") == (
        0, "Success: file copied\n", "")
    assert fake.requests[-1].query == {"t": "uri"} and fake.children(work)["single"] == immutable


def test_cp_single_files(fake: FakeDirGateway, nodedir: Path, work: str,
                         tmp_path: Path) -> None:
    """One file: local -> grid path (PUT, 201), grid -> local file, into a directory by name."""
    (tmp_path / "f").write_bytes(b"F" * 300)
    assert tahoe(nodedir, "cp", tmp_path / "f", "work:dir/g") == (0, "Success: file copied\n",
                                                                 "")
    assert fake.requests[-1].method == "PUT" and fake.requests[-1].path.endswith("/dir/g")
    assert tahoe(nodedir, "cp", "work:dir/g", tmp_path / "back")[0] == 0
    assert (tmp_path / "back").read_bytes() == b"F" * 300
    (tmp_path / "d").mkdir()
    assert tahoe(nodedir, "cp", "work:dir/g", tmp_path / "f", tmp_path / "d") == (
        0, "Success: files copied\n", "")
    assert sorted(os.listdir(tmp_path / "d")) == ["f", "g"]
    assert tahoe(nodedir, "-q", "cp", tmp_path / "f", "work:")[1] == ""
    code, _, err = tahoe(nodedir, "cp", "-v", "-r", tmp_path / "d", "work:")
    assert code == 0 and "starting copy, 2 files, 2 directories\n" in err


@pytest.mark.parametrize("arguments, message", [
    (["{tmp}/d", "work:"], "cannot copy directories without --recursive"),
    (["{tmp}/f", "{tmp}/d/x", "{tmp}/d/f"], "copying multiple things requires target be a"
                                          " directory"),
    (["-r", "{tmp}/d", "{tmp}/f"], "cannot copy directory into a file"),
    (["{tmp}/f", "{tmp}/g/"], "target is not a directory, but ends with a slash"),
    (["{tmp}/f/", "work:"], "source ''{tmp}/f/'' is not a directory, but ends with a slash"),
    (["{tmp}/missing", "work:"], "No such file or directory '{tmp}/missing'"),
    (["work:missing", "{tmp}/out"], "No such file or directory 'work:missing'"),
    (["{file_cap}", "work:"], "when copying into a directory, all source files must have"
                              " names, but '{file_cap}' is unnamed"),
    (["{tmp}/f", "{tmp}/d/f", "work:"], "cannot copy multiple files with the same name into"
                                        " the same target directory"),
    (["{tmp}/f"], "cp requires at least two arguments"),
])
def test_cp_refusals(fake: FakeDirGateway, nodedir: Path, work: str, tmp_path: Path,
                     arguments: list[str], message: str) -> None:
    """cp's rules give Tahoe's messages, exit status 1, and change nothing."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_bytes(b"x")
    (tmp_path / "d" / "f").write_bytes(b"other f")
    (tmp_path / "f").write_bytes(b"f")
    names: dict[str, Any] = {"tmp": tmp_path, "file_cap": fake.new_file(b"c" * 100)}
    code, out, err = tahoe(nodedir, "cp", *[a.format(**names) for a in arguments])
    assert code == 1 and out == ""
    assert err.splitlines()[-1] == message.format(**names)
    assert fake.children(work) == {} and not (tmp_path / "g").exists()
    assert not [r for r in fake.requests if r.method != "GET"]


def test_cp_failed_upload_links_nothing(fake: FakeDirGateway, nodedir: Path, work: str,
                                        tmp_path: Path) -> None:
    """A failing upload stops the copy with its status line; the target is left unchanged."""
    contents = make_tree(tmp_path / "tree")
    fake.fail_bodies.add(contents["a/f2"])
    code, out, err = tahoe(nodedir, "cp", "-r", tmp_path / "tree", "work:")
    assert (code, out) == (1, "")
    assert err.startswith("Error during PUT: 500 ")
    assert fake.children(work) == {}


def test_cp_local_file_onto_itself_is_refused(nodedir: Path, tmp_path: Path) -> None:
    """Copying a local file onto itself is an error, not a truncated file."""
    (tmp_path / "f").write_bytes(b"keep me")
    code, _, err = tahoe(nodedir, "cp", tmp_path / "f", tmp_path)
    assert code == 1 and err.endswith("would be copied onto itself\n")
    assert (tmp_path / "f").read_bytes() == b"keep me"


def test_cp_recursive_warns_of_what_it_skips(fake: FakeDirGateway, nodedir: Path, work: str,
                                            tmp_path: Path) -> None:
    """A dangling symlink, a FIFO and a socket in a local tree are skipped, as in Tahoe, but
    each with a warning (Tahoe says nothing); a FIFO is never opened (that would hang)."""
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "file").write_bytes(b"data")
    (tree / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(tree / "fifo")
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(tree / "sub" / "sock"))
        code, out, err = tahoe(nodedir, "cp", "-r", tree, "work:")
    finally:
        server.close()
    assert (code, out) == (0, "Success: files copied\n")
    assert err.splitlines() == [
        f"WARNING: cannot copy dangling symlink '{tree}/dangling', skipped",
        f"WARNING: cannot copy special file (FIFO) '{tree}/fifo', skipped",
        f"WARNING: cannot copy special file (socket) '{tree}/sub/sock', skipped"]
    assert grid_tree(fake, work) == {"tree/": b"", "tree/file": b"data", "tree/sub/": b""}

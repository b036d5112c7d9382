"""Our ``tahoe put`` / ``tahoe get`` against a Tahoe-LAFS 1.20 gateway, beside Tahoe's own CLI.

Our CLI (``.venv/bin/tahoe``) and Tahoe's run as separate programs against
the same Tahoe 1.20 client node (a convergence secret is per node, so caps
are compared only between uploads through one gateway).  Checked: same caps
for the same bytes (file and stdin forms, 1 kB and 5 MB), downloads to a
file and to stdout, mutable files (SDMF, MDMF, overwrite through the write
cap), ``alias:path`` uploads read back by Tahoe's CLI (URL quoting), the
``--private-key-path`` encoding (against Tahoe's own ``load_private_key``),
and the same first error line as Tahoe's. (Whole-process timings of ``tahoe
put`` are ``make bench``'s, not a test's.)

The Tahoe grid and client are shared by the session: every file uploaded
here is made from a seed unique to this module, so that no other test finds
its bytes (and so its shares) already stored.
"""
from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tahoe.cli.put import private_key_argument
from tests.support.grid import ClientFactory, Gateway, Grid
from tests.support.nodes import our_tahoe

pytestmark = pytest.mark.interop

CLI_TIMEOUT = 300.0
SIZES = {"1kB": 1000, "5MB": 5 * 1024 * 1024}


def run(exe: Path, *args: str | os.PathLike[str],
        input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``exe ARGS`` (a ``tahoe``), stdin from ``input`` or /dev/null."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(exe), *map(os.fspath, args)], input=input,
                          stdin=None if input is not None else subprocess.DEVNULL,
                          capture_output=True, timeout=CLI_TIMEOUT, env=env)


def ours(*args: str | os.PathLike[str],
         input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Our ``tahoe ARGS``."""
    return run(our_tahoe(), *args, input=input)


def ok(result: subprocess.CompletedProcess[bytes]) -> str:
    """The stdout of a successful command, as text (fails the test otherwise)."""
    assert result.returncode == 0, (result.args, result.stdout, result.stderr)
    return result.stdout.decode()


def first_error_line(stderr: bytes) -> str:
    """The first line of an error message, without the quote Tahoe 1.20 puts around it."""
    return stderr.decode().lstrip('"').splitlines()[0]


@pytest.fixture(scope="module")
def gateway(tahoe_grid: Grid, tahoe_client: ClientFactory) -> Gateway:
    """A Tahoe 1.20 client node joined to the Tahoe 1.20 grid."""
    return tahoe_client(tahoe_grid.introducer_furl)


@pytest.fixture
def cli_dir(tmp_path: Path, gateway: Gateway) -> Path:
    """A bare CLI directory (node.url and private/) pointing at the Tahoe gateway."""
    directory = tmp_path / "cli"
    (directory / "private").mkdir(parents=True)
    (directory / "node.url").write_text(gateway.url + "\n")
    return directory


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_same_caps_and_contents_as_tahoe(tmp_path: Path, gateway: Gateway, tahoe120: Path,
                                         size: int) -> None:
    """Our put (file, stdin) and Tahoe's put give one cap; our get returns the bytes."""
    data = random.Random(f"cli-same-caps-{size}").randbytes(size)
    source = tmp_path / "source.bin"
    source.write_bytes(data)
    nodedir = gateway.node.basedir

    by_file = ours("put", "-u", gateway.url, source)
    cap = ok(by_file).strip()
    assert by_file.stderr == b"200 OK\n"
    assert cap.startswith("URI:CHK:") and cap.endswith(f":{size}")
    by_stdin = ours("-d", nodedir, "put", input=data)
    assert ok(by_stdin).strip() == cap
    assert by_stdin.stderr == b"waiting for file data on stdin..\n200 OK\n"
    assert ok(run(tahoe120, "-d", nodedir, "put", source)).strip() == cap

    target = tmp_path / "copy.bin"
    got = ours("-d", nodedir, "get", cap, target)
    ok(got)
    assert target.read_bytes() == data
    assert got.stderr.decode() == f"{cap} retrieved and written to {target}\n"
    assert ours("get", "-u", gateway.url, cap, "-").stdout == data
    if size == SIZES["1kB"]:  # Tahoe's own message, for the record (1.4 s a call)
        theirs = run(tahoe120, "-d", nodedir, "get", cap, tmp_path / "theirs.bin")
        assert theirs.stderr.decode() == got.stderr.decode().replace("copy.bin", "theirs.bin")


def test_mutable_files(tmp_path: Path, gateway: Gateway) -> None:
    """-m gives an SDMF write cap, --format=MDMF an MDMF one; put to a write cap overwrites."""
    (tmp_path / "v1").write_bytes(b"version one " * 100)
    (tmp_path / "v2").write_bytes(b"version two, longer " * 100)
    sdmf = ok(ours("put", "-u", gateway.url, "-m", tmp_path / "v1")).strip()
    assert sdmf.startswith("URI:SSK:")
    mdmf = ok(ours("put", "-u", gateway.url, "-m", "--format=MDMF", tmp_path / "v1")).strip()
    assert mdmf.startswith("URI:MDMF:")
    for cap in (sdmf, mdmf):
        overwrite = ours("put", "-u", gateway.url, tmp_path / "v2", cap)
        assert ok(overwrite).strip() == cap and overwrite.stderr == b"200 OK\n"
        assert ours("get", "-u", gateway.url, cap).stdout == (tmp_path / "v2").read_bytes()


def test_alias_paths_match_tahoe(tmp_path: Path, gateway: Gateway, tahoe120: Path,
                                 cli_dir: Path) -> None:
    """A file put at alias:path (non-ASCII, spaces) is found there by Tahoe's own get."""
    request = urllib.request.Request(gateway.url + "uri?t=mkdir", method="POST", data=b"")
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request) as response:
        dircap = response.read().decode()
    (cli_dir / "private" / "aliases").write_text(f"work: {dircap}\n", encoding="utf-8")
    (tmp_path / "f").write_bytes(b"linked into a directory")
    remote = "work:sub dir/fïle ☃.txt"

    created = ours("-d", cli_dir, "put", tmp_path / "f", remote)
    cap = ok(created).strip()
    assert created.stderr == b"201 Created\n"
    theirs = run(tahoe120, "-d", cli_dir, "get", remote)
    assert theirs.returncode == 0 and theirs.stdout == b"linked into a directory"
    assert ours("-d", cli_dir, "get", remote).stdout == b"linked into a directory"
    assert ours("-d", cli_dir, "get", cap).stdout == b"linked into a directory"
    (tmp_path / "g").write_bytes(b"replaced")
    replaced = ours("-d", cli_dir, "put", tmp_path / "g", remote)
    assert replaced.returncode == 0 and replaced.stderr == b"200 OK\n"
    assert ours("--node-directory", cli_dir, "get", remote).stdout == b"replaced"


def test_private_key_encoding_matches_tahoe(tmp_path: Path, tahoe120: Path,
                                            gateway: Gateway) -> None:
    """Our private-key= value equals Tahoe's load_private_key for PKCS#1 and PKCS#8 PEM keys."""
    script = """
import json, sys
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from allmydata.scripts.tahoe_put import load_private_key
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
out = {}
for name, fmt in (("pkcs1", serialization.PrivateFormat.TraditionalOpenSSL),
                  ("pkcs8", serialization.PrivateFormat.PKCS8)):
    path = sys.argv[1] + "/" + name + ".pem"
    with open(path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, fmt,
                                  serialization.NoEncryption()))
    out[name] = load_private_key(path)
print(json.dumps(out))
"""
    result = subprocess.run([str(tahoe120.parent / "python"), "-c", script, str(tmp_path)],
                            capture_output=True, text=True, timeout=120, check=True)
    expected = json.loads(result.stdout)
    for name in ("pkcs1", "pkcs8"):
        assert private_key_argument((tmp_path / f"{name}.pem").read_bytes()) == expected[name]
    (tmp_path / "f").write_bytes(b"signed with my key")
    cap = ok(ours("put", "-u", gateway.url, "-m", "--private-key-path", tmp_path / "pkcs1.pem",
                  tmp_path / "f")).strip()
    assert cap.startswith("URI:SSK:")
    assert ours("get", "-u", gateway.url, cap).stdout == b"signed with my key"


def test_errors_read_like_tahoe(tmp_path: Path, gateway: Gateway, tahoe120: Path) -> None:
    """A missing file and an unreachable gateway give Tahoe's first error line and status 1."""
    missing = "URI:CHK:" + "a" * 26 + ":" + "b" * 51 + "a" + ":2:3:5000"  # well-formed
    ours_get = ours("get", "-u", gateway.url, missing)
    theirs_get = run(tahoe120, "-d", gateway.node.basedir, "get", missing)
    assert ours_get.returncode == theirs_get.returncode == 1
    assert first_error_line(ours_get.stderr) == first_error_line(theirs_get.stderr)
    assert first_error_line(ours_get.stderr).startswith("Error during GET: 410 Gone")

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dead = tmp_path / "dead"
    dead.mkdir()
    (dead / "node.url").write_text(f"http://127.0.0.1:{port}/\n")
    (tmp_path / "f").write_bytes(b"x")
    ours_put = ours("-d", dead, "put", tmp_path / "f")
    theirs_put = run(tahoe120, "-d", dead, "put", tmp_path / "f")
    assert ours_put.returncode == theirs_put.returncode == 1
    assert first_error_line(ours_put.stderr) == first_error_line(theirs_put.stderr)

"""``grid-manager`` and ``tahoe admin add-grid-manager-cert`` on real files, against 1.20's output."""
from __future__ import annotations

import io
import os
import shutil
import stat
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tahoe.cli import admin
from tahoe.cli.grid_manager import abbreviate_time, run
from tahoe.grid_manager.certificate import parse_certificate_body, parse_certificate_file
from tahoe.grid_manager.config import parse_config
from tests.vectors import VECTORS, load

V = load("grid-manager-vectors.json")
CERT_TEXT = (VECTORS / "grid-manager-certificate.json").read_text()


def gm(*argv: str, stdin: str = "", now: datetime | None = None) -> tuple[int, str, str]:
    """Run our grid-manager; (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out, err, {}, stdin=io.StringIO(stdin), now=now)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def tahoe_dir(tmp_path: Path) -> Path:
    """A manager directory as 1.20 left it: its config.json and storage0.cert.0."""
    directory = tmp_path / "gm"
    directory.mkdir()
    shutil.copy(VECTORS / "grid-manager-config.json", directory / "config.json")
    shutil.copy(VECTORS / "grid-manager-certificate.json", directory / "storage0.cert.0")
    return directory


def test_list_matches_tahoe(tahoe_dir: Path) -> None:
    """``list`` of 1.20's directory prints what 1.20 printed (at the same moment)."""
    expires = parse_certificate_body(parse_certificate_file(CERT_TEXT).certificate).expires
    code, out, _ = gm("--config", str(tahoe_dir), "list",
                      now=expires - timedelta(days=365) + timedelta(seconds=1))
    assert (code, out) == (0, V["list_stdout"])
    _, out, _ = gm("--config", str(tahoe_dir), "list", now=expires + timedelta(hours=5))
    assert "cert 0: expired " in out and "(5 hours ago)" in out


def test_public_identity_and_stdin(tahoe_dir: Path) -> None:
    """``public-identity`` reads a directory or stdin; ``add`` with ``-`` prints the config."""
    config = (tahoe_dir / "config.json").read_text()
    assert gm("-c", str(tahoe_dir), "public-identity")[1] == V["public_identity_stdout"]
    assert gm("-c", "-", "public-identity", stdin=config)[1] == V["public_identity_stdout"]
    code, out, _ = gm("-c", "-", "add", "storage2", V["servers"]["storage0"]["public"],
                      stdin=config)
    assert (code, out) == (0, V["stdin_add_stdout"])


def test_create_add_sign_remove(tmp_path: Path) -> None:
    """A whole life: files, modes, certificates numbered, removal of a server's certificates."""
    directory = tmp_path / "m"
    assert gm("--config", str(directory), "create") == (0, "", "")
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(directory / "config.json").st_mode) == 0o600
    key = V["servers"]["storage1"]["public"]
    assert gm("-c", str(directory), "add", "s1", key)[0] == 0
    now = datetime.fromisoformat(V["fixed_certificates"][0]["now"])
    code, out, _ = gm("-c", str(directory), "sign", "s1", "30", now=now)
    assert code == 0
    cert = parse_certificate_file(out)
    config = parse_config((directory / "config.json").read_text())
    config.private_key.public_key.verify(cert.certificate, cert.signature)
    assert (directory / "s1.cert.0").read_text() + "\n" == out
    gm("-c", str(directory), "sign", "s1", "1", now=now)
    assert (directory / "s1.cert.1").exists()
    assert stat.S_IMODE(os.stat(directory / "config.json").st_mode) == 0o600
    assert gm("-c", str(directory), "remove", "s1")[0] == 0
    assert sorted(p.name for p in directory.iterdir()) == ["config.json"]
    assert gm("-c", str(directory), "list")[1] == ""


@pytest.mark.parametrize("argv, status, words", [
    (["create"], 1, "Can't create"),
    (["add", "storage0", V["servers"]["storage0"]["public"]], 1, "already exists"),
    (["add", "x", "pub-v0-bad"], 1, "not a storage server's public key"),
    (["add", "a/b", V["servers"]["storage0"]["public"]], 1, "invalid storage-server name"),
    (["remove", "nobody"], 1, "No storage-server called 'nobody' exists"),
    (["sign", "nobody", "3"], 1, "No storage-server called 'nobody' exists"),
    (["sign", "storage0", "0"], 2, "0 is not in the range 1<=x<=1825"),
    (["sign", "storage0", "x"], 2, "'x' is not a valid integer"),
    (["frobnicate"], 2, "invalid choice"),
])
def test_wrong_input_is_a_clear_error(tahoe_dir: Path, argv: list[str], status: int,
                                      words: str) -> None:
    """Each wrong command line gets a message and 1.20's exit status, and changes nothing."""
    before = (tahoe_dir / "config.json").read_text()
    code, out, err = gm("--config", str(tahoe_dir), *argv)
    assert code == status and words in err and "Traceback" not in err
    assert (tahoe_dir / "config.json").read_text() == before


def test_missing_and_broken_configs(tmp_path: Path) -> None:
    """A missing directory, bad JSON on stdin and no --config are errors, not tracebacks."""
    code, _, err = gm("--config", str(tmp_path / "none"), "list")
    assert code == 1 and "Error loading Grid Manager" in err and "no such file" in err
    code, _, err = gm("--config", "-", "list", stdin="{")
    assert code == 1 and "not JSON" in err
    code, _, err = gm("list")
    assert code == 2 and "--config" in err


def test_abbreviate_time() -> None:
    """1.20's wording: seconds, minutes, hours, days, months, years; past and future."""
    assert abbreviate_time(1) == "1 second ago"
    assert abbreviate_time(-90) == "90 seconds in the future"
    assert abbreviate_time(-3 * 3600) == "3 hours in the future"
    assert abbreviate_time(3 * 86400) == "3 days ago"
    assert abbreviate_time(-365 * 86400) == "12 months in the future"
    assert abbreviate_time(5 * 365 * 86400) == "5 years ago"


def test_add_grid_manager_cert_writes_what_tahoe_writes(tmp_path: Path) -> None:
    """The node gets 1.20's NAME.cert bytes and tahoe.cfg entries; a second add is refused."""
    node = tmp_path / "node"
    node.mkdir()
    (node / "tahoe.cfg").write_text("[node]\nnickname = n\n\n[storage]\nenabled = true\n")
    source = tmp_path / "c"
    source.write_text(CERT_TEXT)
    err = io.StringIO()
    argv = ["--node-directory", str(node), "add-grid-manager-cert", "--name", "gm0",
            "--filename", str(source)]
    assert admin.run(argv, io.StringIO(), err, {}) == 0
    expected = V["add_grid_manager_cert"]
    assert err.getvalue() == expected["stderr"]
    assert (node / "gm0.cert").read_text() == expected["cert_file"]
    cfg = (node / "tahoe.cfg").read_text().splitlines()
    assert [line for line in cfg if "grid_manag" in line or line.startswith("gm0 =")] \
        == expected["tahoe_cfg_sections"]
    err = io.StringIO()
    assert admin.run(argv, io.StringIO(), err, {}) == 1
    assert "Already have certificate for 'gm0'" in err.getvalue()
    err = io.StringIO()
    code = admin.run(["--node-directory", str(node), "add-grid-manager-cert", "-n", "gm1",
                      "-f", "-"], io.StringIO(), err, {}, stdin=io.StringIO(CERT_TEXT))
    assert code == 0 and err.getvalue().endswith("There are now 2 certificates\n")


@pytest.mark.parametrize("name, text, words", [
    ("gm", '{"certificate": "x"}', "Error parsing certificate"),
    ("gm", "not json", "Error parsing certificate"),
    ("a=b", CERT_TEXT, "bad certificate name"),
    ("../x", CERT_TEXT, "bad certificate name"),
])
def test_add_grid_manager_cert_refuses(tmp_path: Path, name: str, text: str, words: str) -> None:
    """A malformed certificate or a bad name is an error; the node is left as it was."""
    (tmp_path / "tahoe.cfg").write_text("[node]\n")
    err = io.StringIO()
    code = admin.run(["--node-directory", str(tmp_path), "add-grid-manager-cert", "-n", name,
                      "-f", "-"], io.StringIO(), err, {}, stdin=io.StringIO(text))
    assert code == 1 and words in err.getvalue()
    assert (tmp_path / "tahoe.cfg").read_text() == "[node]\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tahoe.cfg"]

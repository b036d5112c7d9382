"""``tahoe create-node``, ``create-client``, ``create-introducer`` and reading node
directories, run in-process against temporary directories (frontends.md §1.1-1.2)."""
from __future__ import annotations

import io
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tahoe.cli.main import run
from tahoe.node.config import (CLIENT, INTRODUCER, parse_config, parse_introducers_yaml,
                               read_ini)
from tahoe.node.errors import (IntroducerConflict, MalformedConfigFile, NotANodeDirectory,
                               OldConfigError, UnknownOption, UnreadableConfig)
from tahoe.node.nodedir import (NodeOptions, create_node_directory, read_node_directory,
                                render_introducers_yaml)
from tahoe.util import base32
from tests.core.test_config import SAMPLE

ROOT = Path(__file__).parent.parent.parent
FURL = "pb://hhd22h6tdenca5yvtqm6hhwicweujnoo@tcp:127.0.0.1:41100/fd7yy3cg5e4yeyexhaetduma5wdoimyu"


def tahoe(*argv: str, home: Path | None = None) -> tuple[int, str, str]:
    """Run the CLI in-process; return (exit code, stdout, stderr)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    env = {"HOME": str(home)} if home else {"HOME": "/nonexistent-home"}
    code = run(list(argv), stdout, stderr, env)
    return code, stdout.getvalue(), stderr.getvalue()


def essential_lines(text: str) -> list[str]:
    """The lines of a tahoe.cfg that the reference sample shows: no header, no prose
    comments ('# …'), no blank lines; the '#key =' placeholders stay."""
    lines = text.splitlines()
    lines = lines[lines.index("[node]"):]
    return [line for line in lines if line.strip() and not line.startswith("# ")]


def test_create_node_matches_the_reference_sample(tmp_path: Path) -> None:
    """create-node --nickname=node1 --hostname=127.0.0.1 writes the sample of §1.2."""
    basedir = tmp_path / "node1"
    code, out, err = tahoe("create-node", "--nickname=node1", "--hostname=127.0.0.1",
                           str(basedir))
    assert (code, err) == (0, "")
    text = (basedir / "tahoe.cfg").read_text()
    port = int(re.search(r"^tub\.port = tcp:(\d+)$", text, re.M)[1])
    assert 1 <= port <= 65535
    assert essential_lines(text) == essential_lines(SAMPLE.replace("36761", str(port)))
    assert read_ini(text, "x") == read_ini(SAMPLE.replace("36761", str(port)), "x")
    assert text.startswith("# ")  # a header comment
    config = parse_config(text, str(basedir / "tahoe.cfg"))
    assert config.tub_port == (f"tcp:{port}",)
    assert config.tub_location == (f"tcp:127.0.0.1:{port}",)
    assert config.nickname == "node1" and config.storage.reserved_space == 10**9
    assert out == (f"Node created in '{basedir}'\n"
                   f" Please add introducers to '{basedir}/private/introducers.yaml'!\n"
                   " The node cannot connect to a grid without it.\n")


def test_create_node_files(tmp_path: Path) -> None:
    """The directory holds the .tac marker, private/ (0700), the secrets and no YAML."""
    basedir = tmp_path / "n"
    assert tahoe("create-node", "--hostname=localhost", str(basedir))[0] == 0
    assert sorted(os.listdir(basedir)) == ["private", "tahoe-client.tac", "tahoe.cfg"]
    assert stat.S_IMODE(os.stat(basedir / "private").st_mode) == 0o700
    assert sorted(os.listdir(basedir / "private")) == ["convergence", "secret"]
    secrets = [(basedir / "private" / name).read_text() for name in ("secret", "convergence")]
    for secret in secrets:
        assert secret.endswith("\n") and len(base32.a2b(secret.strip())) == 32
    assert secrets[0] != secrets[1]
    tac = (basedir / "tahoe-client.tac").read_text()
    result = subprocess.run([sys.executable, str(basedir / "tahoe-client.tac")],
                            capture_output=True, text=True)
    assert result.returncode == 1 and "tahoe run" in result.stdout and "import sys" in tac


def test_create_node_prints_nickname_hint(tmp_path: Path) -> None:
    """Without a nickname the success message asks for one; with -i not for introducers."""
    basedir = tmp_path / "n"
    code, out, _ = tahoe("create-node", "--hostname=h", "-i", FURL, str(basedir))
    assert code == 0
    assert out == (f"Node created in '{basedir}'\n"
                   f" Please set [node]nickname= in '{basedir}/tahoe.cfg'\n")


def test_introducers_yaml_written(tmp_path: Path) -> None:
    """--introducer writes private/introducers.yaml with petname default, not tahoe.cfg."""
    basedir = tmp_path / "n"
    assert tahoe("create-node", "--hostname=h", f"--introducer={FURL}", str(basedir))[0] == 0
    yaml_path = basedir / "private" / "introducers.yaml"
    assert parse_introducers_yaml(yaml_path.read_text(), str(yaml_path)) == {"default": FURL}
    assert "introducer.furl" not in (basedir / "tahoe.cfg").read_text()
    assert read_node_directory(str(basedir)).introducers == (("default", FURL),)


@pytest.mark.parametrize("furl", [FURL, "pb://x@tcp:h:1/s # odd", "it's \"quoted\": yes",
                                  "ünïcode"])
def test_introducers_yaml_round_trips(furl: str) -> None:
    """The YAML we write without PyYAML reads back exactly."""
    text = render_introducers_yaml({"default": furl, "other: one": furl})
    assert parse_introducers_yaml(text) == {"default": furl, "other: one": furl}
    assert parse_introducers_yaml(render_introducers_yaml({})) == {}


def test_create_client(tmp_path: Path) -> None:
    """create-client writes disabled/disabled and storage disabled."""
    basedir = tmp_path / "c"
    code, out, err = tahoe("create-client", "-n", "alice", "-p", "none", "--shares-needed=2",
                           "--shares-happy=3", "--shares-total=4", str(basedir))
    assert (code, err) == (0, "")
    text = (basedir / "tahoe.cfg").read_text()
    ini = read_ini(text, "x")
    assert ini["node"]["tub.port"] == ini["node"]["tub.location"] == "disabled"
    assert ini["storage"]["enabled"] == "false"
    config = parse_config(text, "tahoe.cfg")
    assert not config.tub_listening and not config.storage.enabled
    assert config.web_port is None and config.nickname == "alice"
    assert (config.client.shares_needed, config.client.shares_happy,
            config.client.shares_total) == (2, 3, 4)
    assert out.startswith(f"Node created in '{basedir}'\n")


@pytest.mark.parametrize("option", ["--listen=tcp", "--hostname=h", "--no-storage", "--helper",
                                    "--port=tcp:1", "--storage-dir=x"])
def test_create_client_has_fewer_options(tmp_path: Path, option: str) -> None:
    """create-client does not take the listening or storage options."""
    code, _, err = tahoe("create-client", option, str(tmp_path / "c"))
    assert code == 1 and "unrecognized arguments" in err
    assert not (tmp_path / "c").exists()


def test_create_introducer(tmp_path: Path) -> None:
    """create-introducer writes only [node], with an empty web.port."""
    basedir = tmp_path / "intro"
    code, out, err = tahoe("create-introducer", "--hostname=127.0.0.1", str(basedir))
    assert (code, err) == (0, "")
    assert out == f"Introducer created in '{basedir}'\n"
    text = (basedir / "tahoe.cfg").read_text()
    ini = read_ini(text, "x")
    assert list(ini) == ["node"]
    assert ini["node"]["web.port"] == "" and ini["node"]["nickname"] == ""
    config = parse_config(text, "tahoe.cfg", INTRODUCER)
    assert config.web_port is None and config.tub_listening
    assert sorted(os.listdir(basedir)) == ["private", "tahoe-introducer.tac", "tahoe.cfg"]
    assert os.listdir(basedir / "private") == []
    directory = read_node_directory(str(basedir))
    assert directory.node_type == INTRODUCER and directory.lease_secret is None


def test_create_introducer_needs_a_directory(tmp_path: Path) -> None:
    """create-introducer has no default directory, and no --webport or --nickname."""
    code, _, err = tahoe("create-introducer", "--hostname=h", home=tmp_path)
    assert code == 1 and "no node directory" in err
    assert not (tmp_path / ".tahoe").exists()
    for option in ("--webport=3456", "--nickname=x"):
        assert tahoe("create-introducer", option, str(tmp_path / "i"))[0] == 1
    assert tahoe("create-introducer", "--port=tcp:3458", "--location=tcp:h:3458",
                 "-C", str(tmp_path / "i"))[0] == 0


def test_port_and_location_are_written_as_given(tmp_path: Path) -> None:
    """--port and --location go to tub.port and tub.location unchanged."""
    basedir = tmp_path / "n"
    assert tahoe("create-node", "--port=tcp:3457:interface=127.0.0.1",
                 "--location=tcp:example.org:3457,AUTO", str(basedir))[0] == 0
    ini = read_ini((basedir / "tahoe.cfg").read_text(), "x")
    assert ini["node"]["tub.port"] == "tcp:3457:interface=127.0.0.1"
    assert ini["node"]["tub.location"] == "tcp:example.org:3457,AUTO"


def test_storage_and_web_options(tmp_path: Path) -> None:
    """--no-storage, --storage-dir, --helper and -p land in tahoe.cfg."""
    basedir = tmp_path / "n"
    assert tahoe("create-node", "--hostname=h", "--no-storage", "--storage-dir=/srv/shares",
                 "--helper", "-p", "8080", str(basedir))[0] == 0
    text = (basedir / "tahoe.cfg").read_text()
    assert "storage_dir = /srv/shares\n" in text and "#storage_dir" not in text
    config = parse_config(text, "tahoe.cfg")
    assert not config.storage.enabled and config.helper_enabled
    assert config.storage.storage_dir == "/srv/shares" and config.web_port == "tcp:8080"


def test_listen_none_creates_but_warns(tmp_path: Path) -> None:
    """create-node --listen=none writes disabled/disabled as Tahoe does, with a note."""
    basedir = tmp_path / "n"
    code, _, err = tahoe("create-node", "--listen=none", str(basedir))
    assert code == 0 and "Note:" in err and "[storage]enabled" in err
    ini = read_ini((basedir / "tahoe.cfg").read_text(), "x")
    assert ini["node"]["tub.port"] == "disabled"
    code, _, err = tahoe("create-node", "--listen=none", "--no-storage", str(tmp_path / "m"))
    assert (code, err) == (0, "")


def test_non_empty_directory_is_refused(tmp_path: Path) -> None:
    """A non-empty directory is refused with exit 255 and nothing is written."""
    basedir = tmp_path / "n"
    basedir.mkdir()
    (basedir / "precious").write_text("keep me")
    for command in (["create-node", "--hostname=h"], ["create-client"],
                    ["create-introducer", "--hostname=h"]):
        code, out, err = tahoe(*command, str(basedir))
        assert (code, out) == (255, "")
        assert err.startswith(f"The base directory '{basedir}' is not empty.\n")
    assert os.listdir(basedir) == ["precious"]


def test_empty_existing_directory_is_used(tmp_path: Path) -> None:
    """An existing empty directory is fine; missing parents are created."""
    (tmp_path / "empty").mkdir()
    assert tahoe("create-client", str(tmp_path / "empty"))[0] == 0
    assert tahoe("create-client", str(tmp_path / "a" / "b" / "c"))[0] == 0
    assert (tmp_path / "a" / "b" / "c" / "tahoe.cfg").exists()


CONFLICTS = [
    (["--port=tcp:1"], "--port must be used with --location"),
    (["--location=tcp:h:1"], "--location must be used with --port"),
    (["--port=tcp:1", "--location=tcp:h:1", "--hostname=h"], "--hostname cannot be used"),
    (["--listen=none", "--hostname=h"], "--hostname cannot be used when --listen=none"),
    (["--listen=none", "--port=tcp:1", "--location=tcp:h:1"], "cannot be used when --listen"),
    ([], "--listen=tcp requires --hostname="),
    (["--listen=bogus"], "--listen= must be one or more of"),
    (["--listen=tor"], "Tor"), (["--listen=i2p"], "I2P"),
    (["--hostname=h", "--tor-launch"], "Tor"),
    (["--hostname=h", "--hide-ip"], "--hide-ip"),
    (["--hostname=h", "--join=abc"], "--join: 'abc' is not an invite code"),
    (["--hostname=h", "--join=1-a", "--join-timeout=0"], "--join-timeout must be a positive"),
    (["--hostname=h", "--shares-needed=x"], "--shares-needed must be an integer"),
    (["--hostname=h", "--shares-happy=11"], "1 <= needed <= happy <= total <= 256"),
    (["--hostname=h", "--shares-total=300", "--shares-happy=300"], "<= 256"),
    (["--hostname=h", "--webport=bogus:1"], "--webport:"),
    (["--port=tcp:0", "--location=tcp:h:1"], "--port:"),
    (["--port=tcp:1", "--location=tcp:h"], "--location:"),
    (["--hostname=h", "--nickname=a\nb"], "single line"),
    (["--hostname=h", "--version"], "unrecognized arguments"),
    (["--hostname=h", "--bogus"], "unrecognized arguments"),
]


@pytest.mark.parametrize("options,message", CONFLICTS, ids=[m for _, m in CONFLICTS])
def test_option_conflicts(tmp_path: Path, options: list[str], message: str) -> None:
    """Bad or conflicting options exit 1 with a message and create nothing."""
    basedir = tmp_path / "n"
    code, out, err = tahoe("create-node", *options, str(basedir))
    assert code == 1 and out == ""
    assert message in err and "Usage: tahoe" in err
    assert not basedir.exists()


def test_only_one_way_to_name_the_directory(tmp_path: Path) -> None:
    """NODEDIR, -C/--basedir and the global -d exclude each other."""
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert "cannot both be used" in tahoe("create-client", "-C", a, b)[2]
    assert "cannot both be used" in tahoe("-d", a, "create-client", "-C", b)[2]
    assert "cannot both be used" in tahoe("-d", a, "create-client", b)[2]
    assert not os.path.exists(a) and not os.path.exists(b)


@pytest.mark.parametrize("form", [["-d", "{}"], ["-d{}"], ["--node-directory={}"],
                                  ["--node-directory", "{}"]])
def test_global_node_directory(tmp_path: Path, form: list[str]) -> None:
    """The global -d/--node-directory names the directory to create."""
    basedir = tmp_path / "via-d"
    argv = [part.format(basedir) for part in form]
    code, out, _ = tahoe(*argv, "create-client")
    assert code == 0 and out.startswith(f"Node created in '{basedir}'")


def test_default_directory_is_home_dot_tahoe(tmp_path: Path) -> None:
    """Without a directory, create-node and create-client use ~/.tahoe."""
    code, out, _ = tahoe("create-client", home=tmp_path)
    assert code == 0 and (tmp_path / ".tahoe" / "tahoe.cfg").exists()
    assert out.startswith(f"Node created in '{tmp_path / '.tahoe'}'")


def test_help_and_unknown_command(tmp_path: Path) -> None:
    """--help prints the options and exits 0; an unknown command exits 1."""
    code, out, _ = tahoe("create-node", "--help")
    assert code == 0 and "--nickname" in out and "--hostname" in out
    code, _, err = tahoe("no-such-command")
    assert code == 1 and "Unknown command: no-such-command" in err
    code, _, err = tahoe("--bogus-global", "create-node")
    assert code == 1 and "--bogus-global" in err


# ---------------------------------------------------------------------------
# Reading a node directory
# ---------------------------------------------------------------------------

def make_node(tmp_path: Path, **options: object) -> Path:
    """A fresh client node directory with a listening tub."""
    basedir = tmp_path / "node"
    options.setdefault("tub_port", "tcp:3457")
    options.setdefault("tub_location", "tcp:127.0.0.1:3457")
    create_node_directory(str(basedir), NodeOptions(**options))  # type: ignore[arg-type]
    return basedir


def test_read_node_directory(tmp_path: Path) -> None:
    """Reading gives the type, config, introducers and the secrets on disk."""
    basedir = make_node(tmp_path, nickname="n", introducer_furl=FURL)
    directory = read_node_directory(str(basedir))
    assert directory.node_type == CLIENT and directory.basedir == str(basedir)
    assert directory.config.nickname == "n"
    assert directory.introducers == (("default", FURL),)
    secret = (basedir / "private" / "secret").read_text().strip()
    assert directory.lease_secret == base32.a2b(secret)
    assert directory.config_path("storage") == str(basedir / "storage")
    assert directory.config_path("/abs") == "/abs"
    assert "lease_secret" not in repr(directory)


def test_missing_secrets_are_created(tmp_path: Path) -> None:
    """Missing secrets are generated; an empty convergence file means the empty secret."""
    basedir = make_node(tmp_path)
    os.remove(basedir / "private" / "secret")
    (basedir / "private" / "convergence").write_text("")
    directory = read_node_directory(str(basedir), random_bytes=lambda n: b"\x01" * n)
    assert directory.lease_secret == b"\x01" * 32 and directory.convergence_secret == b""
    assert (basedir / "private" / "secret").read_text() == base32.b2a(b"\x01" * 32) + "\n"
    (basedir / "private" / "secret").write_text("NOT BASE32\n")
    with pytest.raises(MalformedConfigFile, match="private/secret"):
        read_node_directory(str(basedir))


def test_missing_private_dir_is_recreated(tmp_path: Path) -> None:
    """A missing private/ is made (0700) with a README, as the node does."""
    basedir = make_node(tmp_path)
    for name in os.listdir(basedir / "private"):
        os.remove(basedir / "private" / name)
    os.rmdir(basedir / "private")
    read_node_directory(str(basedir))
    assert stat.S_IMODE(os.stat(basedir / "private").st_mode) == 0o700
    assert (basedir / "private" / "README").exists()


def test_read_errors_name_the_file(tmp_path: Path) -> None:
    """Bad files in the node directory are reported with their path."""
    basedir = make_node(tmp_path)
    cfg = basedir / "tahoe.cfg"
    cfg.write_text(cfg.read_text() + "[client]\nbogus.key = 1\n")
    with pytest.raises(UnknownOption) as info:
        read_node_directory(str(basedir))
    assert str(info.value) == f"'{cfg}' section [client] contains unknown option 'bogus.key'"
    os.remove(cfg)
    os.mkdir(cfg)
    with pytest.raises(UnreadableConfig, match="tahoe.cfg"):
        read_node_directory(str(basedir))
    os.rmdir(cfg)
    assert read_node_directory(str(basedir)).config.nickname == "<unspecified>"


def test_old_style_files_refuse_to_start(tmp_path: Path) -> None:
    """An old single-value config file stops the node from starting."""
    basedir = make_node(tmp_path)
    (basedir / "webport").write_text("3456\n")
    with pytest.raises(OldConfigError, match="'webport'"):
        read_node_directory(str(basedir))


def test_default_introducer_conflict_on_read(tmp_path: Path) -> None:
    """[client]introducer.furl and introducers.yaml must not both define 'default'."""
    basedir = make_node(tmp_path, introducer_furl=FURL)
    cfg = basedir / "tahoe.cfg"
    cfg.write_text(cfg.read_text().replace("helper.furl =", f"introducer.furl = {FURL}"))
    with pytest.raises(IntroducerConflict):
        read_node_directory(str(basedir))


def test_not_a_node_directory(tmp_path: Path) -> None:
    """A directory without a .tac marker, or no directory, is not a node directory."""
    with pytest.raises(NotANodeDirectory):
        read_node_directory(str(tmp_path))
    with pytest.raises(NotANodeDirectory):
        read_node_directory(str(tmp_path / "missing"))


# ---------------------------------------------------------------------------
# The CLI as a process
# ---------------------------------------------------------------------------

def python(code: str) -> subprocess.CompletedProcess[str]:
    """Run Python code in a fresh interpreter with the project importable."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True)


def test_create_node_imports_no_twisted_or_foolscap(tmp_path: Path) -> None:
    """Importing the CLI and running create-node loads neither Twisted nor Foolscap."""
    result = python(
        "import io, sys\n"
        "from tahoe.cli.main import run\n"
        f"code = run(['create-node', '--hostname=127.0.0.1', {str(tmp_path / 'n')!r}],"
        " io.StringIO(), sys.stderr, {})\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('twisted', 'foolscap'))\n"
        "print(code, bad)\n")
    assert result.stdout.strip() == "0 []"


def test_version_starts_light() -> None:
    """`tahoe --version` imports no subcommand, attrs or YAML."""
    result = python(
        "import io, sys\n"
        "from tahoe.cli.main import run\n"
        "run(['--version'], io.StringIO(), sys.stderr, {})\n"
        "print(sorted(m for m in ('attr', 'attrs', 'yaml', 'tahoe.node') if m in sys.modules))\n")
    assert result.stdout.strip() == "[]"


def test_console_script_and_module(tmp_path: Path) -> None:
    """The installed `tahoe` script and `python -m tahoe.cli.main` both work."""
    script = ROOT / ".venv" / "bin" / "tahoe"
    if script.exists():
        result = subprocess.run([str(script), "--version"], capture_output=True, text=True)
        assert result.returncode == 0 and "Tahoe-LAFS 1.20" in result.stdout
        result = subprocess.run([str(script), "create-client", str(tmp_path / "c")],
                                capture_output=True, text=True)
        assert result.returncode == 0 and (tmp_path / "c" / "tahoe-client.tac").exists()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    result = subprocess.run([sys.executable, "-m", "tahoe.cli.main", "--version"],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0 and "Tahoe-LAFS 1.20" in result.stdout

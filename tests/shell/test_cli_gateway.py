"""``tahoe put`` / ``tahoe get`` and their gateway client, against a fake gateway.

The fake gateway is a standard-library ``http.server`` on 127.0.0.1 in a
thread: it records every request (method, path, headers, body) and answers
with canned responses, so URL building, quoting, node-URL discovery, the
header set, streaming and error messages can be checked byte for byte.
Facts: ``reference/frontends.md`` §2.1-2.3.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.cli import get as get_command
from tahoe.cli import main as main_command
from tahoe.cli import put as put_command
from tahoe.cli.aliases import escape_path, parse_aliases, percent_quote, quote_cap, resolve_path
from tahoe.cli.errors import NodeURLError, UnknownAliasError, UsageError
from tahoe.cli.gateway import USER_AGENT, Gateway, check_node_url, node_directory, read_node_url
from tahoe.cli.localio import Body, spool_stream
from tahoe.cli.progress import THRESHOLD, TextBar, format_bytes, progress_bar
from tahoe.cli.upload_watch import upload_fraction

DIRCAP = "URI:DIR2:aaaaaaaaaaaaaaaaaaaaaaaaaa:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
SSK = "URI:SSK:cccccccccccccccccccccccccc:dddddddddddddddddddddddddddddddddddddddddddddddddddd"
CHK = ("URI:CHK:eeeeeeeeeeeeeeeeeeeeeeeeee:ffffffffffffffffffffffffffffffffffffffffffffffffffff"
       ":3:10:1000")


# ---------------------------------------------------------------- the fake gateway


class Recorded:
    """One request the fake gateway received."""

    def __init__(self, method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body


class FakeGateway:
    """A stdlib HTTP server that records requests and answers from ``responses`` or defaults.

    Defaults: ``PUT`` answers 200 with ``URI:CHK:<sha256 of the body>``; ``GET
    /uri/<cap>`` answers 200 with ``contents[cap]`` (404 if unknown).  A queued
    response is ``(status, reason, body, mode)`` where mode is ``"length"``,
    ``"chunked"``, ``"close"`` (no length, close at the end) or ``"truncated"``
    (announces more bytes than it sends).
    """

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.responses: list[tuple[int, str, bytes, str]] = []
        self.contents: dict[str, bytes] = {}
        #: Seconds a PUT waits before answering, and the /status?t=json body meanwhile.
        self.put_delay = 0.0
        self.status: dict[str, Any] = {"active": [], "recent": []}
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _record(self) -> Recorded:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                recorded = Recorded(self.command, self.path, dict(self.headers.items()), body)
                gateway.requests.append(recorded)
                return recorded

            def _answer(self, status: int, reason: str, body: bytes, mode: str) -> None:
                self.send_response(status, reason)
                if mode == "chunked":
                    self.send_header("Transfer-Encoding", "chunked")
                elif mode == "truncated":
                    self.send_header("Content-Length", str(len(body) + 1000))
                elif mode == "length":
                    self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                if mode == "chunked":
                    for start in range(0, len(body), 70000):
                        piece = body[start:start + 70000]
                        self.wfile.write(b"%x;ext=1\r\n" % len(piece) + piece + b"\r\n")
                    self.wfile.write(b"0\r\nX-Trailer: 1\r\n\r\n")
                else:
                    self.wfile.write(body)
                self.close_connection = True

            def do_PUT(self) -> None:  # noqa: N802 (http.server)
                recorded = self._record()
                time.sleep(gateway.put_delay)
                if gateway.responses:
                    self._answer(*gateway.responses.pop(0))
                    return
                cap = "URI:CHK:" + hashlib.sha256(recorded.body).hexdigest()[:26]
                gateway.contents[cap] = recorded.body
                self._answer(200, "OK", cap.encode(), "length")

            def do_GET(self) -> None:  # noqa: N802 (http.server)
                self._record()
                if self.path == "/status?t=json":
                    self._answer(200, "OK", json.dumps(gateway.status).encode(), "length")
                    return
                if gateway.responses:
                    self._answer(*gateway.responses.pop(0))
                    return
                cap = urllib.parse.unquote(self.path.removeprefix("/uri/"))
                if cap in gateway.contents:
                    self._answer(200, "OK", gateway.contents[cap], "length")
                else:
                    self._answer(410, "Gone", b"NoSharesError: no shares", "length")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,),
                                       daemon=True)

    @property
    def last(self) -> Recorded:
        """The most recent request."""
        return self.requests[-1]


@pytest.fixture
def fake() -> Iterator[FakeGateway]:
    """A running fake gateway, shut down after the test."""
    gateway = FakeGateway()
    gateway.thread.start()
    yield gateway
    gateway.server.shutdown()
    gateway.server.server_close()
    gateway.thread.join()


@pytest.fixture
def nodedir(tmp_path: Path, fake: FakeGateway) -> Path:
    """A node directory whose node.url names the fake gateway (without the final slash)."""
    directory = tmp_path / "node"
    (directory / "private").mkdir(parents=True)
    (directory / "node.url").write_text(fake.url.rstrip("/") + "\nsecond line ignored\n")
    return directory


class Terminal(io.StringIO):
    """A text stream that says it is a terminal (for the progress bar)."""

    encoding = "utf-8"

    def isatty(self) -> bool:
        return True


def run_cli(module: Any, argv: list[str], *, stdin: bytes | None = None,
            env: dict[str, str] | None = None,
            stderr: io.StringIO | None = None) -> tuple[int, bytes, str]:
    """Run a command in-process; return (exit status, stdout bytes, stderr text)."""
    out_bytes = io.BytesIO()
    stdout = io.TextIOWrapper(out_bytes, encoding="utf-8", write_through=True)
    err = stderr if stderr is not None else io.StringIO()
    kwargs: dict[str, Any] = {}
    if stdin is not None:
        kwargs["stdin"] = io.BytesIO(stdin)
    code = module.run(argv, stdout, err, env or {"HOME": "/nonexistent"}, **kwargs)
    stdout.flush()
    return code, out_bytes.getvalue(), err.getvalue()


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# ---------------------------------------------------------------- node URL discovery


@pytest.mark.parametrize("url, expected", [
    ("http://127.0.0.1:3456", "http://127.0.0.1:3456/"),
    ("http://127.0.0.1:3456/", "http://127.0.0.1:3456/"),
    ("https://gateway.example", "https://gateway.example/"),
    ("http://[::1]:8080", "http://[::1]:8080/"),
    ("http://host:3456/prefix", "http://host:3456/prefix/"),
])
def test_node_url_accepted(url: str, expected: str) -> None:
    """A well-formed -u URL is accepted and gets its final slash."""
    assert check_node_url(url) == expected


@pytest.mark.parametrize("url", ["127.0.0.1:3456", "ftp://host:21", "http://", "http://h:0",
                                 "http://h:99999", "http://h:12ab", "http://a b:80"])
def test_node_url_rejected(url: str) -> None:
    """A malformed -u URL is a usage error with Tahoe's message."""
    with pytest.raises(UsageError, match="--node-url is required to be a string and look like"):
        check_node_url(url)


def test_node_url_file(nodedir: Path, fake: FakeGateway) -> None:
    """node.url's first line is used, with a slash appended."""
    assert read_node_url(str(nodedir)) == fake.url


def test_node_url_file_missing(tmp_path: Path) -> None:
    """A missing node.url names the file and says how to fix it."""
    with pytest.raises(NodeURLError, match="node.url: No such file or directory"):
        read_node_url(str(tmp_path))


def test_node_url_file_garbage(tmp_path: Path) -> None:
    """A node.url without a URL is reported as such."""
    (tmp_path / "node.url").write_text("not a url\n")
    with pytest.raises(NodeURLError, match="does not hold a gateway URL"):
        read_node_url(str(tmp_path))


def test_node_directory_default_uses_home(tmp_path: Path) -> None:
    """Without -d the node directory is ~/.tahoe, with ~ from env["HOME"]."""
    assert node_directory(None, {"HOME": str(tmp_path)}) == str(tmp_path / ".tahoe")
    assert node_directory("~/n", {"HOME": str(tmp_path)}) == str(tmp_path / "n")
    assert node_directory("rel", {}) == os.path.abspath("rel")


# ---------------------------------------------------------------- aliases and quoting


def test_parse_aliases() -> None:
    """Comments and blank lines are skipped, lines split at the first colon and stripped."""
    text = "# comment\n\nwork: URI:DIR2:a:b \n  music :URI:DIR2-RO:c:d\nbad line\nwork: URI:X\n"
    assert parse_aliases(text, root_dir_cap="URI:DIR2:root\n") == {
        "tahoe": "URI:DIR2:root", "work": "URI:X", "music": "URI:DIR2-RO:c:d"}


@pytest.mark.parametrize("argument, expected", [
    (f"{DIRCAP}", (DIRCAP, "")),
    (f"{DIRCAP}/sub/file", (DIRCAP, "sub/file")),
    (f"{DIRCAP}:./sub/file", (DIRCAP, "sub/file")),
    (f"ro.{DIRCAP}/x", (f"ro.{DIRCAP}", "x")),
    ("work:docs/a.txt", ("URI:DIR2:work", "docs/a.txt")),
    ("work:", ("URI:DIR2:work", "")),
    ("docs/a.txt", ("URI:DIR2:root", "docs/a.txt")),
    ("foo/bar:7", ("URI:DIR2:root", "foo/bar:7")),
    ("  work:x  ", ("URI:DIR2:work", "x")),
])
def test_resolve_path(argument: str, expected: tuple[str, str]) -> None:
    """Each remote path form resolves to (root cap, path) as in Tahoe's get_alias."""
    aliases = {"tahoe": "URI:DIR2:root", "work": "URI:DIR2:work"}
    assert resolve_path(aliases, argument) == expected


def test_resolve_path_errors() -> None:
    """Unknown aliases and a missing default alias give Tahoe's messages."""
    with pytest.raises(UnknownAliasError) as unknown:
        resolve_path({}, "nope:file")
    assert str(unknown.value) == ("error: Unknown alias 'nope', please create it with"
                                  " 'tahoe add-alias' or 'tahoe create-alias'.")
    with pytest.raises(UnknownAliasError) as no_default:
        resolve_path({}, "file")
    assert str(no_default.value) == (
        "error: No alias specified, and the default 'tahoe' alias doesn't exist."
        " To create it, use 'tahoe create-alias tahoe'.")


def test_quoting_examples() -> None:
    """Caps are quoted whole; paths per segment with slashes kept (Tahoe's escape_path)."""
    assert quote_cap("URI:CHK:a:b:3:10:99") == "URI%3ACHK%3Aa%3Ab%3A3%3A10%3A99"
    assert escape_path("/føö/bar/☃") == "/f%C3%B8%C3%B6/bar/%E2%98%83"
    assert escape_path("a b/c?d#e%f") == "a%20b/c%3Fd%23e%25f"


@settings(deadline=None)
@given(text=st.text())
def test_percent_quote_matches_urllib(text: str) -> None:
    """percent_quote gives exactly urllib.parse.quote's output, for any text."""
    assert percent_quote(text) == urllib.parse.quote(text, safe="")
    assert percent_quote(text, safe="/") == urllib.parse.quote(text)


# ---------------------------------------------------------------- put


def test_put_file_headers_and_output(tmp_path: Path, nodedir: Path, fake: FakeGateway) -> None:
    """put FILE: PUT /uri with Tahoe's headers and the body; 200 OK on stderr, cap on stdout."""
    data = os.urandom(3000)
    (tmp_path / "f").write_bytes(data)
    code, out, err = run_cli(put_command, ["--node-directory", str(nodedir),
                                           str(tmp_path / "f")])
    assert code == 0, err
    request = fake.last
    assert (request.method, request.path, request.body) == ("PUT", "/uri", data)
    host = fake.url.removeprefix("http://").rstrip("/")
    assert {key: value for key, value in request.headers.items()} == {
        "Host": host, "Hostname": "127.0.0.1", "Accept-Encoding": "identity",
        "User-Agent": USER_AGENT, "Accept": "text/plain, application/octet-stream",
        "Connection": "close", "Content-Length": "3000"}
    assert USER_AGENT.startswith("tahoe-lafs-py/") and USER_AGENT.endswith(" (tahoe-client)")
    assert err == "200 OK\n"
    assert out.decode() == "URI:CHK:" + hashlib.sha256(data).hexdigest()[:26] + "\n"


@pytest.mark.parametrize("argv, path", [
    (["-m"], "/uri?mutable=true"),
    (["--format=mdmf"], "/uri?format=mdmf"),
    (["-m", "--format=MDMF"], "/uri?mutable=true&format=MDMF"),
])
def test_put_query_arguments(tmp_path: Path, fake: FakeGateway, argv: list[str],
                             path: str) -> None:
    """-m and --format become mutable=true and format=… in Tahoe's order, format as given."""
    (tmp_path / "f").write_bytes(b"x" * 100)
    code, _, err = run_cli(put_command, ["-u", fake.url, *argv, str(tmp_path / "f")])
    assert code == 0, err
    assert fake.last.path == path


def test_put_stdin(fake: FakeGateway) -> None:
    """put with no LOCAL (or -) reads stdin, saying so on stderr; -q prints only the cap."""
    for argv in ([], ["-"]):
        code, out, err = run_cli(put_command, ["-u", fake.url, *argv], stdin=b"from stdin")
        assert code == 0, err
        assert fake.last.body == b"from stdin"
        assert err == "waiting for file data on stdin..\n200 OK\n"
    code, out, err = run_cli(put_command, ["-u", fake.url, "-q"], stdin=b"quiet")
    assert (code, err) == (0, "") and out.startswith(b"URI:")


def test_put_to_mutable_writecap(tmp_path: Path, fake: FakeGateway) -> None:
    """A mutable write cap as REMOTE is overwritten in place: PUT /uri/<quoted cap>."""
    (tmp_path / "f").write_bytes(b"new contents")
    fake.responses.append((200, "OK", SSK.encode(), "length"))
    code, out, err = run_cli(put_command, ["-u", fake.url, str(tmp_path / "f"), SSK])
    assert code == 0, err
    assert fake.last.path == "/uri/" + urllib.parse.quote(SSK, safe="")
    assert out.decode() == SSK + "\n"


def test_put_to_alias_path(tmp_path: Path, nodedir: Path, fake: FakeGateway) -> None:
    """alias:path becomes PUT /uri/<root cap>/<path quoted per segment>; 201 Created shows."""
    (nodedir / "private" / "aliases").write_text(f"work: {DIRCAP}\n", encoding="utf-8")
    (tmp_path / "f").write_bytes(b"linked")
    fake.responses.append((201, "Created", CHK.encode(), "length"))
    code, _, err = run_cli(put_command, ["--node-directory", str(nodedir), str(tmp_path / "f"),
                                         "work:sub dir/fïle?.txt"])
    assert code == 0, err
    assert fake.last.path == f"/uri/{quote_cap(DIRCAP)}/sub%20dir/f%C3%AFle%3F.txt"
    assert err == "201 Created\n"


def test_put_dir_cap_option_is_the_tahoe_alias(tmp_path: Path, fake: FakeGateway) -> None:
    """--dir-cap stands for the tahoe: alias (and the default alias of a bare path)."""
    (tmp_path / "f").write_bytes(b"x")
    code, _, err = run_cli(put_command, ["-u", fake.url, "--dir-cap", DIRCAP,
                                         str(tmp_path / "f"), "a/b"])
    assert code == 0, err
    assert fake.last.path == f"/uri/{quote_cap(DIRCAP)}/a/b"


def test_put_errors_before_any_request(tmp_path: Path, fake: FakeGateway) -> None:
    """Bad format, private key without -m, a leading slash, unknown alias, missing file."""
    (tmp_path / "f").write_bytes(b"x")
    f = str(tmp_path / "f")
    cases = [
        (["--format=bogus", f], "tahoe put: error: bogus is an invalid format"),
        (["--private-key-path=k.pem", f], "--private-key-path can only be used for mutable"),
        (["--dir-cap", DIRCAP, f, "/abs"], "Error: The remote filename must not start with a"
                                           " slash\nPlease try again, perhaps with 'abs'"),
        ([f, "nope:x"], "error: Unknown alias 'nope'"),
        ([str(tmp_path / "missing")], "Error: cannot read"),
    ]
    for argv, message in cases:
        code, _, err = run_cli(put_command, ["-u", fake.url, *argv])
        assert code == 1 and message in err, (argv, err)
    assert fake.requests == []


def test_put_http_error(tmp_path: Path, fake: FakeGateway) -> None:
    """An error status gives 'Error: <status> <reason>', the body, and exit status 1."""
    (tmp_path / "f").write_bytes(b"x")
    fake.responses.append((400, "Bad Request", b"Unknown format: x, I know CHK, SDMF, MDMF",
                           "length"))
    code, out, err = run_cli(put_command, ["-u", fake.url, str(tmp_path / "f")])
    assert (code, out) == (1, b"")
    assert err == "Error: 400 Bad Request\nUnknown format: x, I know CHK, SDMF, MDMF\n"


def test_put_unreachable_gateway(tmp_path: Path) -> None:
    """No gateway listening: Tahoe's '-1 Error trying to connect' line and exit status 1."""
    port = closed_port()
    (tmp_path / "f").write_bytes(b"x")
    code, _, err = run_cli(put_command, ["-u", f"http://127.0.0.1:{port}", str(tmp_path / "f")])
    assert code == 1
    assert err.startswith(f"Error: -1 Error trying to connect to http://127.0.0.1:{port}/uri:"
                          " [Errno 111] Connection refused\n")


def test_put_bad_node_url_option(tmp_path: Path) -> None:
    """-u without a scheme is a usage error (exit status 1), as in Tahoe."""
    code, _, err = run_cli(put_command, ["-u", "127.0.0.1:3456", "f"])
    assert code == 1
    assert err.startswith("Usage: tahoe [global-options] put")
    assert "--node-url is required to be a string" in err


def test_main_dispatches_put_with_global_node_directory(tmp_path: Path, nodedir: Path,
                                                        fake: FakeGateway) -> None:
    """`tahoe -d NODEDIR put FILE` reaches the gateway named by NODEDIR/node.url."""
    (tmp_path / "f").write_bytes(b"via main")
    code, out, err = run_cli(main_command, ["-d", str(nodedir), "put", str(tmp_path / "f")])
    assert code == 0, err
    assert fake.last.body == b"via main"


# ---------------------------------------------------------------- request bodies


def test_spool_small_pipe_stays_in_memory() -> None:
    """Small piped input is held in memory."""
    body = spool_stream(io.BytesIO(b"abc"))
    assert (body.length, body.data) == (3, b"abc")


def test_spool_large_pipe_goes_to_a_temporary_file() -> None:
    """Input past the memory limit is spooled to a file and sent from there."""
    data = os.urandom(300_000)
    body = spool_stream(io.BytesIO(data), memory_limit=100_000)
    try:
        assert body.data is None and body.length == len(data)
        assert body.stream is not None
        body.stream.seek(0)
        assert body.stream.read() == data
    finally:
        body.close()


def test_spool_on_a_full_disk_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """A temporary file that refuses the input (``/dev/full``: ENOSPC) is a LocalFileError
    naming the directory and the cause, not "cannot read the input"."""
    import tempfile

    from tahoe.cli.errors import LocalFileError
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda: open("/dev/full", "w+b"))
    with pytest.raises(LocalFileError) as error:
        spool_stream(io.BytesIO(os.urandom(300_000)), memory_limit=100_000)
    assert str(error.value) == (f"Error: cannot keep the input in a temporary file in"
                                f" {tempfile.gettempdir()} (No space left on device);"
                                f" nothing was uploaded")


def test_spool_regular_file_is_sent_from_its_position(tmp_path: Path, fake: FakeGateway) -> None:
    """stdin redirected from a file is streamed from where it stands, without copying."""
    path = tmp_path / "f"
    path.write_bytes(b"HEADER" + b"payload" * 1000)
    with open(path, "rb", buffering=0) as stream:
        stream.read(6)
        body = spool_stream(stream)  # type: ignore[arg-type]
    assert body.data is None and body.length == 7000
    with Gateway(fake.url).request("PUT", "uri", body=body) as response:
        assert response.status == 200
    body.close()
    assert fake.last.body == b"payload" * 1000


def test_put_large_file_with_progress_bar(tmp_path: Path, fake: FakeGateway) -> None:
    """A file of THRESHOLD bytes or more on a terminal shows a bar ending at 100%."""
    data = os.urandom(THRESHOLD + 12345)
    (tmp_path / "big").write_bytes(data)
    terminal = Terminal()
    code, _, err = run_cli(put_command, ["-u", fake.url, str(tmp_path / "big")], stderr=terminal)
    assert code == 0, err
    assert fake.last.body == data
    assert "\rput 100% |" in err and err.endswith("200 OK\n")


def test_put_progress_follows_the_gateways_upload(tmp_path: Path, fake: FakeGateway) -> None:
    """Once the file is sent, a second bar follows the gateway's own upload of that size
    on /status until the cap comes back; with -q there is no bar at all."""
    size = THRESHOLD + 1
    (tmp_path / "big").write_bytes(b"x" * size)
    fake.put_delay = 1.2
    fake.status["active"] = [
        {"type": "upload", "total-size": size + 1, "progress-hash": 1.0,
         "progress-ciphertext": 1.0, "progress-encode-push": 1.0},
        {"type": "upload", "total-size": size, "progress-hash": 1.0,
         "progress-ciphertext": 0.25, "progress-encode-push": 0.25}]
    terminal = Terminal()
    code, _, err = run_cli(put_command, ["-u", fake.url, str(tmp_path / "big")], stderr=terminal)
    assert code == 0, err
    assert any(r.path == "/status?t=json" for r in fake.requests)
    assert "\rupload  50% |" in err and "\rupload 100% |" in err
    assert err.index("\rput 100% |") < err.index("\rupload  50% |")
    quiet = Terminal()
    fake.put_delay = 0.0
    code, out, err = run_cli(put_command, ["-u", fake.url, "-q", str(tmp_path / "big")],
                             stderr=quiet)
    assert (code, err) == (0, "") and out.startswith(b"URI:")


def test_upload_fraction_reads_tahoes_status() -> None:
    """The watched fraction is the mean of Tahoe's three upload phases, for the first active
    upload of the size; other sizes, kinds and malformed documents give None."""
    status = {"active": [{"type": "download", "total-size": 10, "progress": 0.5},
                         {"type": "upload", "total-size": 10, "progress-hash": 1.0,
                          "progress-ciphertext": 0.5, "progress-encode-push": 0.0}]}
    assert upload_fraction(status, 10) == 0.5
    assert upload_fraction(status, 11) is None
    assert upload_fraction({"active": [{"type": "upload", "total-size": 10}]}, 10) is None
    assert upload_fraction([], 10) is None


# ---------------------------------------------------------------- get


@pytest.mark.parametrize("mode", ["length", "chunked", "close"])
def test_get_to_file(tmp_path: Path, fake: FakeGateway, mode: str,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    """get CAP LOCAL writes the body (any framing) and says where, with LOCAL made absolute."""
    data = os.urandom(250_000)
    fake.responses.append((200, "OK", data, mode))
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(get_command, ["-u", fake.url, CHK, "out.bin"])
    assert code == 0, err
    assert fake.last.path == "/uri/" + quote_cap(CHK)
    assert (tmp_path / "out.bin").read_bytes() == data
    assert out == b""
    assert err == f"{CHK} retrieved and written to {tmp_path / 'out.bin'}\n"


def test_get_to_stdout(fake: FakeGateway) -> None:
    """get CAP (or get CAP -) writes the bytes to stdout and nothing to stderr."""
    fake.contents[CHK] = bytes(range(256)) * 100
    for argv in ([CHK], [CHK, "-"]):
        code, out, err = run_cli(get_command, ["-u", fake.url, *argv])
        assert (code, out, err) == (0, fake.contents[CHK], "")


def test_get_alias_path(nodedir: Path, fake: FakeGateway) -> None:
    """get alias:path asks for /uri/<root cap>/<quoted path>."""
    (nodedir / "private" / "aliases").write_text(f"tahoe: {DIRCAP}\n")
    fake.responses.append((200, "OK", b"x", "length"))
    code, _, err = run_cli(get_command, ["--node-directory", str(nodedir), "tahoe:a b/c"])
    assert code == 0, err
    assert fake.last.path == f"/uri/{quote_cap(DIRCAP)}/a%20b/c"


def test_get_http_error_creates_no_file(tmp_path: Path, fake: FakeGateway) -> None:
    """An error status: 'Error during GET: 410 Gone', the body, status 1, no LOCAL file."""
    code, _, err = run_cli(get_command, ["-u", fake.url, CHK, str(tmp_path / "out")])
    assert code == 1
    assert err == "Error during GET: 410 Gone\nNoSharesError: no shares\n"
    assert not (tmp_path / "out").exists()


def test_get_truncated_body_is_an_error(tmp_path: Path, fake: FakeGateway) -> None:
    """A body shorter than its Content-Length fails, and the partial new file is removed."""
    fake.responses.append((200, "OK", b"x" * 5000, "truncated"))
    code, _, err = run_cli(get_command, ["-u", fake.url, CHK, str(tmp_path / "out")])
    assert code == 1
    assert err.startswith("Error during GET: the gateway closed the connection in the middle")
    assert not (tmp_path / "out").exists()


def test_a_failed_get_leaves_an_existing_file_as_it_was(tmp_path: Path,
                                                        fake: FakeGateway) -> None:
    """A download cut short does not touch the file it would have replaced (before, the
    file was truncated and half written); one that succeeds replaces it whole, keeping its
    permission bits, through a symbolic link too; ``/dev/null`` is written as it is."""
    kept = tmp_path / "kept.bin"
    kept.write_bytes(b"precious old contents")
    kept.chmod(0o640)
    fake.responses.append((200, "OK", b"x" * 5000, "truncated"))
    code, _, err = run_cli(get_command, ["-u", fake.url, CHK, str(kept)])
    assert code == 1 and "in the middle" in err
    assert kept.read_bytes() == b"precious old contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.bin"]  # no temporary left

    link = tmp_path / "link.bin"
    link.symlink_to(kept)
    fake.responses.append((200, "OK", b"new", "length"))
    code, _, err = run_cli(get_command, ["-u", fake.url, CHK, str(link)])
    assert code == 0, err
    assert link.is_symlink() and kept.read_bytes() == b"new"
    assert kept.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.bin", "link.bin"]

    fake.responses.append((200, "OK", b"gone", "length"))
    code, _, err = run_cli(get_command, ["-u", fake.url, CHK, os.devnull])
    assert code == 0, err
    assert Path(os.devnull).is_char_device()


def test_get_unreachable_gateway(tmp_path: Path) -> None:
    """No gateway listening: 'Error during GET: -1 Error trying to connect …', status 1;
    the message never shows the cap (a write cap is the authority to write)."""
    port = closed_port()
    for cap in (CHK, SSK, SSK + "/sub/file"):
        code, _, err = run_cli(get_command, ["-u", f"http://127.0.0.1:{port}/", cap])
        assert code == 1
        tail = "/sub/file" if cap.endswith("/file") else ""
        assert err.startswith(f"Error during GET: -1 Error trying to connect to"
                              f" http://127.0.0.1:{port}/uri/[CENSORED]{tail}: [Errno 111]")
        assert "URI" not in err and SSK.split(":")[2] not in err


def test_get_large_with_progress_bar(tmp_path: Path, fake: FakeGateway) -> None:
    """A large download on a terminal shows a bar, also when the length is not announced."""
    data = os.urandom(THRESHOLD + 1)
    for mode, expected in (("length", "\rget 100% |"), ("chunked", "\rget: 4.0 MiB")):
        fake.responses.append((200, "OK", data, mode))
        terminal = Terminal()
        code, _, err = run_cli(get_command, ["-u", fake.url, CHK, str(tmp_path / "o")],
                               stderr=terminal)
        assert code == 0, err
        assert expected in err, err
        assert (tmp_path / "o").read_bytes() == data


# ---------------------------------------------------------------- private keys


def test_private_key_argument_is_pkcs8_der() -> None:
    """A PKCS#1 or PKCS#8 PEM RSA key becomes its PKCS#8 DER in urlsafe base64 (as Tahoe)."""
    from Crypto.PublicKey import RSA
    key = RSA.generate(1024)
    expected = base64.urlsafe_b64encode(key.export_key("DER", pkcs=8)).decode()
    assert put_command.private_key_argument(key.export_key("PEM", pkcs=1)) == expected
    assert put_command.private_key_argument(key.export_key("PEM", pkcs=8)) == expected


def test_private_key_argument_rejects_other_keys() -> None:
    """Encrypted keys, non-RSA keys and junk are refused with a reason."""
    from Crypto.PublicKey import ECC, RSA
    encrypted = RSA.generate(1024).export_key("PEM", pkcs=8, passphrase="pw",
                                               protection="PBKDF2WithHMAC-SHA1AndAES128-CBC")
    for pem, reason in ((encrypted, "encrypted"),
                        (ECC.generate(curve="P-256").export_key(format="PEM").encode(),
                         "no PEM private key|not an RSA"),
                        (b"junk", "no PEM private key")):
        with pytest.raises(ValueError, match=reason):
            put_command.private_key_argument(pem)


def test_put_with_private_key(tmp_path: Path, fake: FakeGateway) -> None:
    """-m --private-key-path adds private-key=<urlsafe b64 DER> after mutable=true."""
    from Crypto.PublicKey import RSA
    key = RSA.generate(1024)
    (tmp_path / "key.pem").write_bytes(key.export_key("PEM"))
    (tmp_path / "f").write_bytes(b"x")
    code, _, err = run_cli(put_command, ["-u", fake.url, "-m", "--private-key-path",
                                         str(tmp_path / "key.pem"), str(tmp_path / "f")])
    assert code == 0, err
    der = base64.urlsafe_b64encode(key.export_key("DER", pkcs=8)).decode()
    assert fake.last.path == f"/uri?mutable=true&private-key={der}"


# ---------------------------------------------------------------- progress bar, body


def test_progress_bar_only_on_terminals_and_large_transfers() -> None:
    """No bar for a non-terminal or a small transfer; the built-in bar otherwise."""
    plain = io.StringIO()
    progress_bar(plain, 10 * THRESHOLD, "put").update(10 * THRESHOLD)
    assert plain.getvalue() == ""
    small = Terminal()
    bar = progress_bar(small, THRESHOLD - 1, "put")
    bar.update(THRESHOLD - 1)
    bar.close()
    assert small.getvalue() == ""


def test_text_bar_rendering() -> None:
    """The built-in bar shows percentage, amounts, rate and time left."""
    now = [100.0]
    bar = TextBar(Terminal(), 100 * 2**20, "put", clock=lambda: now[0], width=80)
    bar.update(25 * 2**20)
    now[0] = 101.0
    text = bar.render(now[0])
    assert text.startswith("put  25% |█")
    assert text.endswith("| 25.0 MiB/100.0 MiB  25.0 MiB/s  ETA 0:03")
    assert len(text) <= 80
    assert format_bytes(999) == "999 B" and format_bytes(1536) == "1.5 KiB"


def test_body_from_bytes_sends_in_pieces() -> None:
    """An in-memory body reports progress per piece and sends every byte."""
    left, right = socket.socketpair()
    data = os.urandom(3 * 2**20 + 5)
    received = bytearray()
    reader = threading.Thread(target=lambda: [received.extend(chunk) for chunk in
                                              iter(lambda: right.recv(65536), b"")])
    reader.start()
    counts: list[int] = []
    Body.from_bytes(data).send(left, counts.append)
    left.close()
    reader.join()
    right.close()
    assert bytes(received) == data and sum(counts) == len(data) and len(counts) == 4


# ---------------------------------------------------------------- start-up cost


FORBIDDEN_IN_CLIENT = {"twisted", "foolscap", "attr", "attrs", "yaml", "http", "email", "ssl",
                       "tempfile", "urllib"}


def imported_modules(argv: list[str]) -> set[str]:
    """Every module a command-line run imports (from ``python -X importtime``)."""
    import subprocess
    import sys
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "tahoe.cli.main", *argv],
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
            if line.startswith("import time:") and "package" not in line}


def test_put_and_get_import_only_the_standard_library(tmp_path: Path, fake: FakeGateway) -> None:
    """A whole put and get load neither Twisted, Foolscap, attrs, yaml nor http.client,
    and no tahoe module outside tahoe.cli (the progress bar only on a terminal)."""
    (tmp_path / "f").write_bytes(b"x" * 1000)
    fake.contents[CHK] = b"y" * 1000
    for argv in (["put", "-u", fake.url, str(tmp_path / "f")],
                 ["put", "-u", fake.url, "-"],
                 ["get", "-u", fake.url, CHK, str(tmp_path / "o")]):
        modules = imported_modules(argv)
        assert not {name.split(".")[0] for name in modules} & FORBIDDEN_IN_CLIENT, argv
        ours = {name for name in modules if name.split(".")[0] == "tahoe"}
        assert ours <= {"tahoe", "tahoe._version", "tahoe.cli", "tahoe.cli.main",
                        "tahoe.cli.put", "tahoe.cli.get", "tahoe.cli.gateway",
                        "tahoe.cli.localio", "tahoe.cli.aliases", "tahoe.cli.errors"}, argv


def test_grid_command_does_not_import_twisted() -> None:
    """The grid command, and the create commands it runs in-process, load no Twisted."""
    import subprocess
    import sys
    code = ("import json, sys, tahoe.cli.grid, tahoe.cli.grid_processes, tahoe.cli.create_node;"
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=True)
    top_level = set(json.loads(result.stdout))
    assert not top_level & {"twisted", "foolscap"}

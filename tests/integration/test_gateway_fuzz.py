"""Hostile requests to a real gateway: every answer is below 500, never wrong bytes, no cap logged.

The gateway is the client of the session's local grid (``conftest.local_grid``).
Requests are written as raw bytes on a plain TCP connection, so paths,
arguments and headers reach the node exactly as drawn (``urllib`` would
quote or refuse some).  Found by this suite and fixed: a percent-encoded
non-ASCII query argument (``?name=%E2%98%83``) was a 500
(``UnicodeEncodeError``), ``DELETE`` of a bare cap (``/uri/%E2%98%83``,
``/uri/%2e%2e``) was a 500 as in Tahoe, methods other than GET/HEAD/POST on
a resource without them were Twisted's 501 "Huh?" page, and a HEAD answered
with a body made Twisted log the request URI (a cap) as a warning, and a POST
whose Content-Type held a byte Python splits lines at (``\x85``) was dropped
without an answer.
"""
from __future__ import annotations

import json
import re
import socket
import urllib.parse
from collections.abc import Iterator

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.dirapi import WebAPI, multipart
from tests.support.proxied_grid import ProxiedGrid
from tests.support.reliability import record_fuzz, record_limit, runs

FUZZ = settings(max_examples=runs(200), deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
REQUEST_TIMEOUT = 60.0
FILE_SIZE = 70_000
_STATUS_LINE = re.compile(rb"HTTP/1\.[01] (\d{3})")


@attrs.frozen
class Answer:
    """A raw answer: status, header lines (names lower-cased) and the rest of the bytes."""

    status: int
    headers: dict[str, str]
    body: bytes


def exchange(url: str, request: bytes, timeout: float = REQUEST_TIMEOUT) -> Answer:
    """Send ``request`` (which asks ``Connection: close``) and read the answer to its end."""
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    raw = b"".join(chunks)
    head, _, body = raw.partition(b"\r\n\r\n")
    match = _STATUS_LINE.match(head)
    assert match, f"no HTTP status line in {raw[:200]!r}"
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    return Answer(int(match.group(1)), headers, body)


def raw_request(method: bytes, target: bytes, headers: list[tuple[bytes, bytes]],
                body: bytes = b"") -> bytes:
    """Request bytes with ``Host``, ``Content-Length`` and ``Connection: close`` added."""
    lines = [method + b" " + target + b" HTTP/1.1", b"Host: 127.0.0.1",
             b"Connection: close", b"Content-Length: %d" % len(body)]
    lines += [name + b": " + value for name, value in headers]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


@attrs.frozen
class Objects:
    """Things on the grid the fuzzer aims at (every cap is fresh to this module)."""

    file_cap: str
    file_data: bytes = attrs.field(repr=False)
    dir_cap: str
    ro_dir_cap: str
    lit_cap: str
    sdmf_cap: str
    mdmf_cap: str

    def caps(self) -> list[str]:
        """Every cap, for the log check."""
        return [self.file_cap, self.dir_cap, self.ro_dir_cap, self.sdmf_cap, self.mdmf_cap]


@pytest.fixture(scope="module")
def objects(local_grid: ProxiedGrid) -> Objects:
    """A file, a directory with children, a literal file and two mutable files."""
    api = WebAPI(local_grid.client.url)
    data = bytes(range(256)) * (FILE_SIZE // 256) + b"tail"
    file_cap = api.ok("PUT", "/uri", data).text.strip()
    dir_cap = api.mkdir()
    api.ok("PUT", api.object_path(dir_cap, "sub/file"), b"abc")
    api.ok("PUT", api.object_path(dir_cap, "☃"), b"snowman")
    ro_dir_cap = api.json(dir_cap)[1]["ro_uri"]
    return Objects(file_cap, data, dir_cap, ro_dir_cap,
                   api.ok("PUT", "/uri", b"lit").text.strip(),
                   api.create_mutable(b"sdmf contents", "SDMF"),
                   api.create_mutable(b"mdmf contents", "MDMF"))


@pytest.fixture
def gateway(local_grid: ProxiedGrid) -> Iterator[str]:
    """The gateway's URL; after the test, it must still answer ``GET /?t=json``."""
    yield local_grid.client.url
    assert exchange(local_grid.client.url,
                    raw_request(b"GET", b"/?t=json", [(b"Accept", b"application/json")])
                    ).status == 200


T_VALUES = ["", "json", "uri", "readonly-uri", "info", "check", "mkdir", "mkdir-immutable",
            "mkdir-with-children", "upload", "rename", "relink", "unlink", "delete",
            "set_children", "set-children", "stream-manifest", "stream-deep-check",
            "start-deep-stats", "start-manifest", "start-deep-size", "start-deep-check",
            "rename-form", "html", "text", "openmetrics", "☃", "JSON", " json"]
ARG_NAMES = ["t", "name", "format", "mutable", "replace", "offset", "from_name", "to_name",
             "to_dir", "output", "ophandle", "retain-for", "filename", "children", "add-lease",
             "verify", "repair", "when_done", "return_to", "uri", "private-key", "sort",
             "order", "k", "n", "segsize", "☃"]
SEGMENTS = ["..", ".", "", "%2e%2e", "%2F", "%00", "%E2%98%83", "%ff", "sub", "file", "☃",
            "a" * 300, "URI:CHK:", "URI:DIR2:aaaa:bbbb", "%", "%zz"]
ROOTS = ["/uri/", "/cap/", "/file/", "/named/", "/uri", "/operations/", "/status/",
         "/statistics", "/storage", "/private/", "/", "/static/", "/nope/"]
METHODS = ["GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS", "PATCH", "PROPFIND", "get"]


def _quote(text: str) -> bytes:
    return urllib.parse.quote(text, safe="/:%").encode("ascii")


@st.composite
def targets(draw: st.DrawFn, objects: Objects) -> bytes:
    """A request target: a root, maybe a cap, path segments, arguments."""
    root = draw(st.sampled_from(ROOTS))
    path = root.encode()
    if root in ("/uri/", "/cap/", "/file/", "/named/"):
        cap = draw(st.sampled_from([objects.file_cap, objects.dir_cap, objects.ro_dir_cap,
                                    objects.lit_cap, objects.sdmf_cap, objects.mdmf_cap,
                                    objects.dir_cap + ":x", "URI:CHK:aa:bb:3:10:100",
                                    "URI:LIT:", "URI:SSK:a:b", "URI:DIR2-RO:a:b",
                                    "URI:MDMF-Verifier:a:b", "bogus", ""])
                   | st.text(max_size=30))
        path += urllib.parse.quote(cap, safe="").encode("ascii")
    for segment in draw(st.lists(st.sampled_from(SEGMENTS) | st.text(max_size=12),
                                 max_size=4)):
        path += b"/" + _quote(segment)
    arguments = draw(st.lists(st.tuples(
        st.sampled_from(ARG_NAMES),
        st.sampled_from(T_VALUES) | st.text(max_size=20)
        | st.sampled_from([objects.dir_cap, objects.file_cap, "-1", "99999999999999999999",
                           "true", "false", "only-files", "MDMF", "CHK", "xx"])),
        max_size=4))
    if arguments:
        path += b"?" + urllib.parse.urlencode(arguments).encode("ascii")
    return path


RANGES = st.one_of(
    st.builds(lambda a, b: f"bytes={a}-{b}", st.integers(-5, FILE_SIZE + 10),
              st.integers(-5, FILE_SIZE + 10)),
    st.builds(lambda a: f"bytes=-{a}", st.integers(0, FILE_SIZE + 10)),
    st.builds(lambda a: f"bytes={a}-", st.integers(0, FILE_SIZE + 10)),
    st.sampled_from(["bytes=0-0,2-3", "items=1-2", "bytes=", "bytes=-", "bytes=a-b",
                     "bytes=99999999999999999999999-", "bytes=1-2-3", "bytes= 1 - 2",
                     "bytes=0-1, 5-6", "☃"]),
    st.text(max_size=30))


def _header_value(text: str) -> bytes:
    return text.encode("utf-8").replace(b"\r", b"").replace(b"\n", b"")


HEADERS = st.lists(st.tuples(
    st.sampled_from([b"Range", b"Accept", b"Content-Type", b"Referer", b"If-Range",
                     b"If-None-Match", b"Authorization", b"Accept-Encoding", b"Cookie",
                     b"X-Tahoe-Authorization", b"Expect"]),
    (RANGES | st.sampled_from(["text/html", "application/json", "*/*",
                               "multipart/form-data; boundary=zz", "multipart/form-data",
                               "application/x-www-form-urlencoded", "tahoe-lafs abc"])
     | st.text(max_size=40)).map(_header_value)), max_size=4)

_JSON = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70)
                     | st.floats(allow_nan=False) | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=10), inner, max_size=4),
                     max_leaves=12)


@st.composite
def children_json(draw: st.DrawFn, objects: Objects) -> bytes:
    """A ``set_children``/``mkdir-with-children`` body, near-valid or not."""
    cap = st.sampled_from([objects.file_cap, objects.dir_cap, objects.ro_dir_cap,
                           objects.lit_cap, objects.sdmf_cap, "URI:CHK:x", "bogus",
                           "imm.URI:CHK:x", "ro.URI:SSK-RO:a:b", ""]) | st.text(max_size=10)
    child = st.tuples(st.sampled_from(["filenode", "dirnode", "unknown", "x"]),
                      st.fixed_dictionaries({}, optional={"rw_uri": cap, "ro_uri": cap,
                                                          "metadata": _JSON}))
    value = draw(st.dictionaries(st.text(max_size=12), child.map(list) | _JSON, max_size=4)
                 | _JSON)
    return json.dumps(value).encode("utf-8")


@st.composite
def bodies(draw: st.DrawFn, objects: Objects) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """A body and the headers it needs: bytes, JSON children, or a multipart form."""
    kind = draw(st.sampled_from(["none", "bytes", "json", "form"]))
    if kind == "none":
        return b"", []
    if kind == "bytes":
        return draw(st.binary(max_size=300)), []
    if kind == "json":
        return draw(children_json(objects)), []
    fields = draw(st.dictionaries(st.sampled_from(ARG_NAMES + ["file", "_charset"]),
                                  st.sampled_from(T_VALUES) | st.text(max_size=20),
                                  max_size=4))
    files = draw(st.dictionaries(st.sampled_from(["file", "t", "name"]),
                                 st.tuples(st.text(st.characters(blacklist_characters='"\r\n'),
                                                   max_size=12),
                                           st.binary(max_size=200)), max_size=2))
    body, headers = multipart(fields, files)
    if draw(st.booleans()):  # sometimes cut it short
        body = body[:draw(st.integers(0, len(body)))]
    return body, [(k.encode(), v.encode()) for k, v in headers.items()]


def check_answer(answer: Answer, what: object) -> None:
    """Below 500, no traceback, a well-formed Content-Range if any."""
    assert 100 <= answer.status < 500, (what, answer.status, answer.body[:500])
    assert b"Traceback" not in answer.body, (what, answer.body[:2000])


@FUZZ
@given(data=st.data())
def test_paths_arguments_and_methods(gateway: str, objects: Objects, data: st.DataObject) -> None:
    """Any method, path, cap and arguments get an answer below 500 without a traceback."""
    method = data.draw(st.sampled_from(METHODS)).encode()
    target = data.draw(targets(objects))
    body, body_headers = (b"", []) if method in (b"GET", b"HEAD") else data.draw(bodies(objects))
    answer = exchange(gateway, raw_request(method, target, body_headers, body))
    record_fuzz("gateway: methods, paths, caps, arguments")
    check_answer(answer, (method, target, body[:200]))


@FUZZ
@given(data=st.data())
def test_headers(gateway: str, objects: Objects, data: st.DataObject) -> None:
    """Hostile headers (Range, Accept, Content-Type, Referer, ...) on real objects: below 500."""
    method = data.draw(st.sampled_from(["GET", "HEAD", "POST", "PUT"])).encode()
    cap = data.draw(st.sampled_from([objects.file_cap, objects.dir_cap, objects.lit_cap,
                                     objects.mdmf_cap, objects.ro_dir_cap]))
    target = b"/uri/" + urllib.parse.quote(cap, safe="").encode()
    target += data.draw(st.sampled_from([b"", b"?t=json", b"?t=info", b"?t=uri",
                                         b"?t=check&output=json"]))
    headers = data.draw(HEADERS)
    body = data.draw(st.binary(max_size=100)) if method in (b"POST", b"PUT") else b""
    answer = exchange(gateway, raw_request(method, target, headers, body))
    record_fuzz("gateway: headers (Range, Accept, Content-Type, Referer)")
    check_answer(answer, (method, target, headers))


_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


@FUZZ
@given(value=RANGES)
def test_range_never_gives_wrong_bytes(gateway: str, objects: Objects, value: str) -> None:
    """Any Range on a real file: the whole file (200), the exact slice its Content-Range
    names (206), or 416; never other bytes."""
    target = b"/uri/" + urllib.parse.quote(objects.file_cap, safe="").encode()
    answer = exchange(gateway, raw_request(b"GET", target, [(b"Range", _header_value(value))]))
    record_fuzz("gateway: Range on a file, bytes compared")
    data = objects.file_data
    if answer.status == 200:
        assert answer.body == data
    elif answer.status == 206:
        match = _CONTENT_RANGE.fullmatch(answer.headers.get("content-range", ""))
        assert match, answer.headers
        first, last, size = map(int, match.groups())
        assert size == len(data) and first <= last < size
        assert answer.body == data[first:last + 1]
    elif answer.status == 400:  # Twisted refuses a header with control characters
        assert any(ord(c) < 32 or ord(c) == 127 for c in value), (value, answer.body[:300])
    else:
        assert answer.status == 416, (value, answer.status, answer.body[:300])
        assert answer.headers.get("content-range") == f"bytes */{len(data)}"


@FUZZ
@given(data=st.data())
def test_children_bodies(gateway: str, local_grid: ProxiedGrid, objects: Objects,
                         data: st.DataObject) -> None:
    """JSON children bodies for ``mkdir-with-children`` and ``set_children``: below 500, and a
    directory the gateway accepted lists as JSON afterwards."""
    body = data.draw(children_json(objects))
    if data.draw(st.booleans()):
        answer = exchange(gateway, raw_request(b"POST", b"/uri?t=mkdir-with-children", [], body))
        made = answer.body.strip().decode("ascii", "replace") if answer.status == 200 else None
    else:
        target = b"/uri/" + urllib.parse.quote(objects.dir_cap, safe="").encode()
        answer = exchange(gateway, raw_request(b"POST", target + b"/sub?t=set_children", [],
                                               body))
        made = objects.dir_cap + "/sub" if answer.status == 200 else None
    record_fuzz("gateway: JSON children bodies")
    check_answer(answer, body[:300])
    if made:
        api = WebAPI(local_grid.client.url)
        cap, _, path = made.partition("/")
        assert api.get(cap, path, "t=json").status == 200


@pytest.mark.parametrize(("method", "target"), [
    ("DELETE", "/uri/%E2%98%83?t=readonly-uri"),
    ("DELETE", "/uri/%2e%2e?t=start-deep-stats"),
    ("DELETE", "/uri/..?t=info&return_to=x&output=xx"),
    ("POST", "/statistics/file/%00?uri=bogus&name=%E2%98%83"),
    ("OPTIONS", "/cap/bogus/file/x?t=start-manifest&name=%E2%98%83"),
    ("HEAD", "/uri/%2F?t=uri&mutable=x&name=%E2%98%83"),
    ("GET", "/uri?t=%E2%98%83&name=%ff%fe"),
    ("DELETE", "/status/?t=readonly-uri"),
    ("PUT", "/operations/%E2%98%83"),
    ("PATCH", "/storage?t=bogus"),
])
def test_fuzz_findings_stay_fixed(gateway: str, method: str, target: str) -> None:
    """Requests that were 500s (or 501s) before this suite get an answer below 500 now."""
    answer = exchange(gateway, raw_request(method.encode(), target.encode(), []))
    assert answer.status < 500, (method, target, answer.status, answer.body[:300])


def test_a_content_type_with_a_line_break_character_is_answered(gateway: str,
                                                                objects: Objects) -> None:
    """A POST whose Content-Type holds ``\xc3\x85`` (U+0085 to Latin-1) was dropped without
    an answer (Twisted's form parsing raised); now it is answered below 500."""
    target = b"/uri/" + urllib.parse.quote(objects.file_cap, safe="").encode()
    for value in (b"\xc3\x850", b"multipart/form-data; boundary=\x1c", b"text/\x0bplain"):
        answer = exchange(gateway, raw_request(b"POST", target, [(b"Content-Type", value)],
                                               b"\x00"))
        assert answer.status < 500, (value, answer.status)


def test_delete_or_put_on_a_bare_cap_is_400(gateway: str, objects: Objects) -> None:
    """A cap has no parent: DELETE of it, or PUT over an immutable file, is the client's error."""
    for method, cap in (("DELETE", objects.dir_cap), ("DELETE", objects.file_cap),
                        ("PUT", objects.file_cap)):
        target = b"/uri/" + urllib.parse.quote(cap, safe="").encode()
        answer = exchange(gateway, raw_request(method.encode(), target, [], b"x"))
        assert answer.status == 400, (method, answer.status, answer.body)
        assert b"parent" in answer.body


def test_unimplemented_methods_are_405_with_allow(gateway: str) -> None:
    """DELETE on a page that only reads gets 405 and the methods it allows."""
    answer = exchange(gateway, raw_request(b"DELETE", b"/status/", []))
    assert answer.status == 405
    assert "GET" in answer.headers["allow"]


def test_no_cap_reaches_the_gateway_log(gateway: str, local_grid: ProxiedGrid,
                                        objects: Objects) -> None:
    """After the fuzzing (and a HEAD of a page with a body), the node's log holds no cap secret."""
    for cap in objects.caps():
        for target in (f"/uri/{cap}/nope", f"/cap/{cap}", f"/named/{cap}/x", f"/static/{cap}",
                       f"/nope/{cap}?uri={cap}"):
            exchange(gateway, raw_request(b"HEAD", target.encode(), []))
            exchange(gateway, raw_request(b"GET", target.encode(),
                                          [(b"Referer", f"http://x/uri/{cap}".encode())]))
    log = local_grid.client.node.process.log_path.read_text("utf-8", "replace")
    for cap in objects.caps():
        secret = cap.split(":")[2]
        assert secret not in log, f"a cap's key ({cap[:14]}...) is in {log_path_of(local_grid)}"
    record_limit("gateway: caps in the node log", "0 (access log censored, HEAD warnings off)")


def log_path_of(grid: ProxiedGrid) -> str:
    """The client's log file, for messages."""
    return str(grid.client.node.process.log_path)

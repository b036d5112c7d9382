"""Range parsing, content types, JSON shapes and the cap-censoring access log."""
from __future__ import annotations

import pytest

from tahoe.caps.parse import parse_cap
from tahoe.web.filenode import content_type_for, file_json, parse_range
from tahoe.web.logformat import censor_uri
from tests.vectors import load

CHK = load("immutable-caps.json")["valid"][0]["cap"]


@pytest.mark.parametrize("header,expected", [
    (None, None),
    (b"bytes=10-19", (10, 19)),
    (b"bytes=10-", (10, 99)),
    (b"bytes=-5", (95, 99)),
    (b"bytes=90-200", (90, 99)),
    (b"bytes=10-19,30-39", (10, 19)),
    (b"bytes=100-200", "unsatisfiable"),
    (b"bytes=999999-", None),
    (b"bytes=5-3", None),
    (b"items=1-2", None),
    (b"bytes=abc", None),
])
def test_parse_range(header: bytes | None, expected: object) -> None:
    """Only the first bytes= range is served; unparseable ones are ignored, as Tahoe does."""
    assert parse_range(header, 100) == expected


@pytest.mark.parametrize("name,expected", [
    ("photo.jpg", b"image/jpeg"), ("notes.txt", b"text/plain"), ("unknown", b"text/plain"),
    ("page.html", b"text/html"),
])
def test_content_type_for(name: str, expected: bytes) -> None:
    """The Content-Type follows the file name's extension, text/plain without one."""
    assert content_type_for(name) == expected


def test_file_json_shapes() -> None:
    """CHK files carry a verify cap; LIT files do not."""
    chk = parse_cap(CHK)
    kind, data = file_json(chk)  # type: ignore[arg-type]
    assert kind == "filenode"
    assert data["format"] == "CHK" and data["mutable"] is False and data["size"] == 56
    assert data["verify_uri"].startswith("URI:CHK-Verifier:")
    _, lit = file_json(parse_cap("URI:LIT:nbswy3dpeb3w64tmmq"))  # type: ignore[arg-type]
    assert "verify_uri" not in lit and lit["size"] == 11


@pytest.mark.parametrize("uri", [
    f"/uri/{CHK}".encode(),
    f"/uri/{CHK}?t=json".encode(),
    f"/cap/{CHK}/x".encode(),
    f"/file/{CHK}/@@named=/a.txt".encode(),
    f"/named/{CHK}".encode(),
    f"/uri?uri={CHK}&t=info".encode(),
    b"/uri?t=mkdir&private-key=secretkey",
])
def test_access_log_never_shows_caps(uri: bytes) -> None:
    """Every cap in a logged request line is replaced by [CENSORED]."""
    censored = censor_uri(uri)
    assert b"URI:" not in censored and b"secretkey" not in censored
    assert b"[CENSORED]" in censored


@pytest.mark.parametrize("uri", [
    b"http://127.0.0.1:3456/uri/URI:DIR2:secretkey:fp/sub?t=json",
    b"https://example.org/cap/URI%3ACHK%3Asecretkey%3Ax/f#frag",
    b"/static/URI:CHK:secretkey:x:3:10:100/x",
    b"/nope/URI:SSK:secretkey:fp",
])
def test_a_cap_in_a_referer_or_any_path_is_censored(uri: bytes) -> None:
    """A Referer (absolute URL) or a path outside /uri/ never brings a cap into the log."""
    censored = censor_uri(uri)
    assert b"secretkey" not in censored and b"[CENSORED]" in censored

"""The directory web API's pieces: JSON shapes, children JSON, arguments, errors, link decisions."""
from __future__ import annotations

import io
import json
from typing import Any

import pytest

from tahoe.caps.dirnode import DirectoryCap
from tahoe.caps.parse import parse_cap
from tahoe.dirnode.children import child_from_caps
from tahoe.dirnode.errors import (ExistingChildError, MustBeDeepImmutableError,
                                  MustNotBeUnknownRWError, NotWriteableError)
from tahoe.dirnode.packing import Entry
from tahoe.mutable.errors import UncoordinatedWriteError, UnrecoverableFile
from tahoe.web.common import (EXISTING_CHILD, ChildNotFound, FileInTheWay, WebError, arg,
                              format_arg, mkdir_format, multipart_filename, replace_arg,
                              status_for)
from tahoe.web.dirhtml import directory_page, rename_form
from tahoe.web.json_nodes import (ChildrenJSONError, GivenChild, directory_json,
                                  file_json, parse_children_json, unknown_json)
from tahoe.web.linking import Outcome, link_change
from tahoe.web.mutablefile import spliced
from tahoe.web.traversal import creates_intermediate, path_names
from tests.support.dirapi import multipart
from tests.vectors import load

CAPS = load("dirnode-caps.json")
SDMF, MDMF, CHK = CAPS["sdmf"], CAPS["mdmf"], CAPS["chk"]
LIT = "URI:LIT:nbswy3dpeb3w64tmmq"


class FakeRequest:
    """Just what the argument helpers read: uri, args (form), headers and content."""

    def __init__(self, uri: bytes = b"/", form: dict[bytes, list[bytes]] | None = None,
                 headers: dict[bytes, bytes] | None = None, body: bytes = b"") -> None:
        self.uri = uri
        self.args = dict(form or {})
        self._headers = {k.lower(): v for k, v in (headers or {}).items()}
        self.content = io.BytesIO(body)
        self.method = b"POST"

    def getHeader(self, name: bytes) -> bytes | None:  # noqa: N802 (Twisted's name)
        """A request header."""
        return self._headers.get(name.lower())


def entry(cap: str, metadata: dict[str, Any] | None = None) -> Entry:
    """A directory entry for a cap."""
    return Entry(child_from_caps(cap), metadata or {})


def test_file_json_of_every_file_kind() -> None:
    """CHK and LIT are immutable CHK; SSK/MDMF carry format, rw_uri only with write authority."""
    kind, chk = file_json(parse_cap(CHK["file_cap"]))  # type: ignore[arg-type]
    assert kind == "filenode"
    assert list(chk) == ["mutable", "format", "size", "ro_uri", "verify_uri"]
    assert (chk["mutable"], chk["format"], chk["size"]) == (False, "CHK", 1234)
    _, lit = file_json(parse_cap(LIT), metadata={"k": 1})  # type: ignore[arg-type]
    assert "verify_uri" not in lit and lit["metadata"] == {"k": 1} and lit["size"] == 11
    _, sdmf = file_json(parse_cap(SDMF["sdmf_writecap"]), 42)  # type: ignore[arg-type]
    assert sdmf == {"mutable": True, "format": "SDMF", "size": 42,
                    "ro_uri": SDMF["sdmf_readcap"], "rw_uri": SDMF["sdmf_writecap"],
                    "verify_uri": SDMF["sdmf_verifycap"]}
    _, mdmf = file_json(parse_cap(MDMF["mdmf_readcap"]))  # type: ignore[arg-type]
    assert mdmf == {"mutable": True, "format": "MDMF", "ro_uri": MDMF["mdmf_readcap"],
                    "verify_uri": MDMF["mdmf_verifycap"]}


def test_directory_json_and_children() -> None:
    """Directories have no format; file children have format and size (immutable only)."""
    cap = parse_cap(SDMF["dir2_writecap"])
    assert isinstance(cap, DirectoryCap)
    children = {
        "f": entry(CHK["file_cap"], {"tahoe": {"linkcrtime": 1.0, "linkmotime": 2.0}}),
        "m": entry(MDMF["mdmf_writecap"]),
        "d": entry(MDMF["dir2_mdmf_readcap"]),
        "odd": entry("ro.x-future:abc"),
    }
    kind, document = directory_json(cap, children)
    assert kind == "dirnode"
    assert list(document) == ["children", "ro_uri", "rw_uri", "verify_uri", "mutable"]
    assert document["rw_uri"] == SDMF["dir2_writecap"] and document["mutable"] is True
    kids = document["children"]
    assert kids["f"] == ["filenode", {"mutable": False, "format": "CHK", "size": 1234,
                                      "metadata": children["f"].metadata,
                                      "ro_uri": CHK["file_cap"],
                                      "verify_uri": CHK["file_verifycap"]}]
    assert kids["m"][1]["format"] == "MDMF" and "size" not in kids["m"][1]
    assert kids["m"][1]["rw_uri"] == MDMF["mdmf_writecap"]
    assert kids["d"] == ["dirnode", {"mutable": True, "metadata": {},
                                     "ro_uri": MDMF["dir2_mdmf_readcap"],
                                     "verify_uri": MDMF["dir2_mdmf_verifycap"]}]
    assert kids["odd"] == ["unknown", {"metadata": {}, "ro_uri": "ro.x-future:abc"}]
    readonly = directory_json(cap.readonly(), {})[1]
    assert "rw_uri" not in readonly and readonly["ro_uri"] == SDMF["dir2_readcap"]
    frozen = directory_json(DirectoryCap(parse_cap(LIT)), {})[1]  # type: ignore[arg-type]
    assert frozen["mutable"] is False and "verify_uri" not in frozen


def test_unknown_json() -> None:
    """mutable is true with a write cap, false when known immutable, absent otherwise."""
    assert unknown_json(child_from_caps("x-future:w", "x-future:r"), None, False) == \
        ["unknown", {"ro_uri": "ro.x-future:r", "rw_uri": "x-future:w", "mutable": True}]
    assert unknown_json(child_from_caps(None, "imm.x-future:r"), {"a": 1}, False) == \
        ["unknown", {"ro_uri": "imm.x-future:r", "mutable": False, "metadata": {"a": 1}}]
    assert unknown_json(child_from_caps(None, "x-future:r"), None, False) == \
        ["unknown", {"ro_uri": "ro.x-future:r"}]
    assert unknown_json(child_from_caps(None, "x-future:r"), None, True)[1]["mutable"] is False


def test_children_json_parsing() -> None:
    """Only rw_uri, ro_uri and metadata count; an empty body is no children; bad shapes fail."""
    body = json.dumps({"a": ["filenode", {"ro_uri": LIT, "size": 5, "metadata": {"x": 1}}],
                       "b": ["whatever", {"rw_uri": SDMF["dir2_writecap"], "ro_uri": ""}]})
    assert parse_children_json(body.encode()) == {
        "a": GivenChild(None, LIT, {"x": 1}),
        "b": GivenChild(SDMF["dir2_writecap"], None, None)}
    assert parse_children_json(b"") == {} and parse_children_json(b"  \n") == {}
    for bad in [b"[1]", b"{", b'{"a": "b"}', b'{"a": ["filenode"]}',
                b'{"a": ["filenode", {"metadata": 3}]}', b'{"a": ["f", {"ro_uri": 3}]}',
                b"\xff"]:
        with pytest.raises(ChildrenJSONError):
            parse_children_json(bad)


def test_path_names() -> None:
    """One trailing slash is allowed, empty components are not; names become NFC."""
    assert path_names([]) == [] and path_names([""]) == []
    assert path_names(["a", "b", ""]) == ["a", "b"]
    assert path_names(["cafe\u0301"]) == ["caf\u00e9"]
    for bad in (["", "x"], ["a", "", "b"], ["a", "", ""]):
        with pytest.raises(WebError) as info:
            path_names(bad)
        assert info.value.status == 400 and "double slash" in str(info.value)


def test_intermediate_directories_rule() -> None:
    """PUT and POST create missing directories, except for delete, rename and check."""
    assert creates_intermediate(b"PUT", "") and creates_intermediate(b"POST", "upload")
    assert creates_intermediate(b"POST", "unlink")
    assert not creates_intermediate(b"GET", "") and not creates_intermediate(b"DELETE", "")
    for t in ("delete", "rename", "rename-form", "check"):
        assert not creates_intermediate(b"POST", t)


def test_arguments() -> None:
    """The query wins over the form; replace= and format= are parsed as Tahoe does."""
    request = FakeRequest(b"/uri/x?t=uri&name=q", {b"t": [b"form"], b"name": [b"f"],
                                                  b"only": [b"form"]})
    assert (arg(request, "t"), arg(request, "name"), arg(request, "only")) == ("uri", "q",
                                                                             "form")
    assert arg(request, "missing", "d") == "d"
    for text, expected in [(b"true", True), (b"OFF", False), (b"Only-Files", "only-files")]:
        assert replace_arg(FakeRequest(b"/?replace=" + text)) == expected
    assert replace_arg(FakeRequest(b"/")) is True
    with pytest.raises(WebError) as info:
        replace_arg(FakeRequest(b"/?replace=maybe"))
    assert str(info.value) == "invalid replace= argument: 'maybe'"
    assert format_arg(FakeRequest(b"/?format=mdmf"), None) == "MDMF"
    assert format_arg(FakeRequest(b"/?mutable=true"), "CHK") == "SDMF"
    assert format_arg(FakeRequest(b"/"), "CHK") == "CHK"
    with pytest.raises(WebError) as info:
        format_arg(FakeRequest(b"/?format=zip"), None)
    assert str(info.value) == "Unknown format: zip, I know CHK, SDMF, MDMF"
    assert mkdir_format(FakeRequest(b"/?format=CHK")) is None
    assert mkdir_format(FakeRequest(b"/?format=MDMF")).name == "MDMF"  # type: ignore[union-attr]


def test_multipart_filename() -> None:
    """The file name of a form's file field, or None when the body is not multipart."""
    body, headers = multipart({"t": "upload"}, {"file": ("caf\u00e9.txt", b"data")})
    request = FakeRequest(b"/", headers={k.encode(): v.encode() for k, v in headers.items()},
                          body=body)
    assert multipart_filename(request, "file") == "caf\u00e9.txt"
    assert multipart_filename(request, "other") is None
    assert multipart_filename(FakeRequest(b"/", body=b"x"), "file") is None


@pytest.mark.parametrize("error,status,message", [
    (ChildNotFound("n\u00e4me"), 404, "No such child: n\u00e4me"),
    (ExistingChildError("x"), 409, EXISTING_CHILD),
    (FileInTheWay("Unable to create directory 'a': a file was in the way"), 409,
     "Unable to create directory 'a': a file was in the way"),
    (NotWriteableError("read-only"), 400, "NotWriteableError: read-only"),
    (UncoordinatedWriteError("lost"), 500, "UncoordinatedWriteError: lost"),
])
def test_error_table(error: Exception, status: int, message: str) -> None:
    """Directory and mutable errors get Tahoe's statuses and messages."""
    assert status_for(error) == (status, message)


def test_error_table_prefixes() -> None:
    """Unrecoverable objects are 410 UnrecoverableFileError; cap constraint errors are 400."""
    status, message = status_for(UnrecoverableFile("no shares"))
    assert status == 410 and message.startswith("UnrecoverableFileError:")
    for error in (MustNotBeUnknownRWError("x", "n"), MustBeDeepImmutableError("x", "n")):
        status, message = status_for(error)
        assert status == 400 and message.startswith(type(error).__name__ + ":")
        assert "'n'" in message


def _decide(children: dict[str, Entry], replace: Any, keep_mutable: bool = False) -> Any:
    change = link_change("n", child_from_caps(CHK["file_cap"]), replace, lambda: 7.0,
                         keep_mutable)
    return change(children, True)


def test_link_change_decisions() -> None:
    """A new name is linked; files are replaced; mutable files are overwritten in place."""
    table, (outcome, _) = _decide({}, True)
    assert outcome is Outcome.CREATED and table["n"].metadata["tahoe"]["linkcrtime"] == 7.0
    table, (outcome, _) = _decide({"n": entry(LIT, {"k": 1})}, "only-files")
    assert outcome is Outcome.REPLACED and table["n"].metadata["k"] == 1
    assert table["n"].child.read_uri == CHK["file_cap"].encode()
    with pytest.raises(ExistingChildError):
        _decide({"n": entry(LIT)}, False)
    table, (outcome, cap) = _decide({"n": entry(SDMF["sdmf_writecap"])}, True)
    assert table is None and outcome is Outcome.OVERWRITE
    assert cap.to_string() == SDMF["sdmf_writecap"]
    with pytest.raises(ExistingChildError):
        _decide({"n": entry(SDMF["sdmf_writecap"])}, False)
    assert _decide({"n": entry(SDMF["sdmf_writecap"])}, False, keep_mutable=True)[1][0] \
        is Outcome.OVERWRITE
    assert _decide({"n": entry(SDMF["sdmf_readcap"])}, True)[1][0] is Outcome.READONLY_MUTABLE
    assert _decide({"n": entry(SDMF["dir2_writecap"])}, False)[1][0] is Outcome.DIRECTORY


def test_spliced() -> None:
    """An update at an offset overwrites in place and may extend the file."""
    assert spliced(b"abcdef", b"XY", 2) == b"abXYef"
    assert spliced(b"abcdef", b"XYZ", 5) == b"abcdeXYZ"
    assert spliced(b"abc", b"XY", 3) == b"abcXY"
    assert spliced(b"", b"XY", 0) == b"XY"


def test_directory_pages() -> None:
    """The listing escapes names, links by cap, and shows forms only with write authority."""
    cap = parse_cap(SDMF["dir2_writecap"])
    assert isinstance(cap, DirectoryCap)
    children = {"<b>.txt": entry(CHK["file_cap"]), "sub": entry(MDMF["dir2_mdmf_writecap"])}
    page = directory_page(cap, children).decode()
    assert "Tahoe-LAFS - Directory SI=" in page and "(modifiable)" in page
    assert "&lt;b&gt;.txt" in page and "<b>.txt" not in page
    assert "/file/URI%3ACHK%3A" in page and 'rel="noreferrer"' in page
    assert 'value="upload"' in page and 'value="unlink"' in page
    readonly = directory_page(cap.readonly(), children).decode()
    assert "(read-only)" in readonly and 'value="upload"' not in readonly
    broken = directory_page(cap, None, "UnrecoverableFileError: gone").decode()
    assert "Error reading directory" in broken and "gone" in broken
    assert 'value="a&quot;b"' in rename_form(cap, 'a"b').decode()


def test_json_nodes_is_pure() -> None:
    """The JSON builders import no I/O module (STYLE.md §1)."""
    from tests.test_layers import FORBIDDEN, SRC, imported_top_level_names
    assert not imported_top_level_names(SRC / "web" / "json_nodes.py") & FORBIDDEN

"""The pieces of the web UI without a grid: numbers, charts, the page frame, each page's HTML.

Every page renderer is run on small values and its HTML checked for what a
strict Content-Security-Policy forbids (inline script, inline style, event
attributes), so a page cannot silently stop working in the browser.
"""
from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest
from twisted.web.test.requesthelper import DummyRequest

from tahoe.caps.dirnode import DirectoryCap
from tahoe.caps.parse import parse_cap
from tahoe.client.deep_stats import DeepStats
from tahoe.client.history import OperationHistory
from tahoe.dirnode.children import child_from_caps
from tahoe.dirnode.packing import Entry
from tahoe.web import assets
from tahoe.web.checkhtml import check_results_page
from tahoe.web.dirhtml import child_kind, directory_page, rename_form
from tahoe.web.errorpage import error_page, parent_directory
from tahoe.web.headers import wants_html
from tahoe.web.humanize import exact_bytes, human_duration, human_rate, human_size, human_time
from tahoe.web.infohtml import address_of, directory_info_page, file_info_page
from tahoe.web.json_shapes import ServerSummary
from tahoe.web.logformat import censor_uri
from tahoe.web.ophtml import deep_check_page, deep_size_page, deep_stats_page, manifest_page
from tahoe.web.root import introducer_page
from tahoe.web.statshtml import sample_windows, statistics_page
from tahoe.web.status import status_page
from tahoe.web.svgchart import WIDTH, Bar, BarGroup, Segment, bar_chart, meter
from tahoe.web.unlinked import upload_results_page
from tahoe.web.welcome import welcome_page
from tests.vectors import load

CAPS = load("dirnode-caps.json")
SDMF, MDMF, CHK = CAPS["sdmf"], CAPS["mdmf"], CAPS["chk"]
DIR, DIR_RO = SDMF["dir2_writecap"], SDMF["dir2_readcap"]
REPO = Path(__file__).resolve().parents[2]


def _entry(cap: str, metadata: dict[str, Any] | None = None) -> Entry:
    return Entry(child_from_caps(cap.encode()), metadata or {})


# -- numbers


@pytest.mark.parametrize(("size", "text"), [
    (None, "?"), (0, "0 B"), (999, "999 B"), (1000, "1.0 kB"), (1234, "1.2 kB"),
    (999_949, "999.9 kB"), (999_960, "1.0 MB"), (10 ** 9, "1.0 GB"), (3 * 10 ** 18, "3000.0 PB"),
])
def test_human_size(size: int | None, text: str) -> None:
    """Decimal units with one decimal; bytes below 1000; ``?`` when unknown."""
    assert human_size(size) == text


def test_other_numbers() -> None:
    """Exact bytes, rates, durations and UTC moments read as people expect."""
    assert exact_bytes(1) == "1 byte" and exact_bytes(3000) == "3000 bytes"
    assert human_rate(2_500_000) == "2.5 MB/s" and human_rate(None) == "?"
    assert [human_duration(s) for s in (0.00005, 0.0123, 1.25, 184, 7500, 3 * 86400)] == [
        "50 µs", "12.3 ms", "1.25 s", "3 min 4 s", "2 h 5 min", "3 days"]
    assert human_time(0) == "1970-01-01 00:00:00" and human_time("x") == "?"


# -- charts


def _svg(markup: str) -> ElementTree.Element:
    return ElementTree.fromstring(markup)


def test_bar_chart_heights_are_proportional_and_tooltips_escaped() -> None:
    """The tallest bar fills the plot; others are in proportion; tooltips are escaped."""
    groups = [BarGroup("a", (Bar(10.0, "upload", "ten <b>"),)),
              BarGroup("b", (Bar(5.0, "download", "five"), Bar(0.0, "other", "zero")))]
    root = _svg(bar_chart(groups, title="T & U", value_format=lambda v: f"{v:.0f}"))
    bars = [e for e in root.iter() if e.get("class", "").startswith("bar ")]
    heights = [float(e.get("height", "0")) for e in bars]
    assert heights[0] == pytest.approx(2 * heights[1]) and heights[2] == 0
    assert [e.get("class") for e in bars] == ["bar bar-upload", "bar bar-download", "bar bar-other"]
    titles = [e.findtext("{http://www.w3.org/2000/svg}title") for e in bars]
    assert titles == ["ten <b>", "five", "zero"]
    empty = bar_chart([], title="x", value_format=str, empty="Nothing & more")
    assert "Nothing &amp; more" in empty and "<rect" not in empty


def test_integer_axis_and_meter() -> None:
    """Counts get whole-number ticks; a meter's segments fill its width in proportion."""
    chart = bar_chart([BarGroup("", (Bar(1, "files", "one"),))], title="c",
                      value_format=lambda v: f"{v:g}", integer=True)
    labels = re.findall(r'text-anchor="end">([^<]*)<', chart)
    assert labels == ["0", "1"]
    root = _svg(meter([Segment(3, "used", "u"), Segment(1, "free", "f"), Segment(-2, "x", "n")],
                      title="m"))
    widths = [float(e.get("width", "0")) for e in root.iter()
              if e.get("class", "").startswith("seg")]
    assert widths == [pytest.approx(WIDTH * 0.75), pytest.approx(WIDTH * 0.25)]


# -- pages: nothing a strict CSP refuses


def _pages() -> dict[str, bytes]:
    dircap = parse_cap(DIR)
    assert isinstance(dircap, DirectoryCap)
    history = OperationHistory()
    op = history.start("upload", b"\x01" * 16, 2_000_000, now=10.0)
    history.finish(op, now=11.0)
    servers = [ServerSummary("v0-abc", "s1", "Connected to tcp:127.0.0.1:1 via tcp", 10 ** 9,
                             "tahoe-lafs-py/0.1.0", 5.0)]
    children = {"a <b>.txt": _entry(CHK["file_cap"]), "sub": _entry(DIR)}
    operation = _operation()
    results = {"storage-index": "abc", "summary": "Healthy",
               "results": {"healthy": True, "recoverable": True, "count-shares-good": 10,
                           "sharemap": {"0": ["v0-abc"]}, "servers-responding": ["v0-abc"]}}
    return {
        "welcome": welcome_page(("node", "v0-node"), [], servers, happy=7,
                                recent=history.recent(), now=20.0),
        "directory": directory_page(dircap, children, root=dircap.to_string(), names=["x"]),
        "directory-info": directory_info_page(dircap, here="/uri/X/", new_handle=lambda: "h"),
        "rename": rename_form(dircap, "a"),
        "check": check_results_page(results, here="/uri/X", return_to="/uri/X?t=info",
                                    arguments=[("verify", "true")], nicknames={"v0-abc": "s1"}),
        "deep-check": deep_check_page(operation, "h1", 5.0),
        "manifest": manifest_page(operation, "h1", 5.0),
        "deep-size": deep_size_page(operation, "h1", 5.0),
        "deep-stats": deep_stats_page(operation, "h1", 5.0),
        "status": status_page(history),
        "statistics": statistics_page({"counters": {}, "stats": {}}).encode(),
        "error": error_page(404, "No such child: x", "/uri/CAP/a/x"),
        "upload": upload_results_page("URI:LIT:nbswy3dp", "f.txt"),
        "introducer": introducer_page({"storage": 2}, {"storage": 3}),
    }


def _operation() -> Any:
    from tahoe.web.operations import Operation
    root = child_from_caps(DIR.encode())
    op = Operation("deep-stats", root, started=1.0)
    op.stats = DeepStats()
    op.stats.add_node("immutable", 5000)
    op.manifest = [[[], DIR], [["f"], "URI:LIT:nbswy3dp"]]
    return op


@pytest.fixture(scope="module")
def pages() -> dict[str, bytes]:
    return _pages()


def test_no_page_has_inline_script_or_style(pages: dict[str, bytes]) -> None:
    """Scripts only by src, no style attributes or elements, no event-handler attributes."""
    for name, body in pages.items():
        text = body.decode("utf-8")
        assert text.startswith("<!DOCTYPE html>"), name
        assert re.findall(r"<script(?![^>]*\ssrc=)", text) == [], name
        assert not re.search(r"<style|\sstyle=|\son[a-z]+=", text), name
        assert '<link rel="stylesheet" href="/tahoe.css">' in text, name
        assert 'name="referrer" content="no-referrer"' in text, name


def test_welcome_page_warns_below_happy() -> None:
    """Fewer connected servers than shares.happy gives a clear warning; enough gives none."""
    def servers(connected: int, known: int) -> list[ServerSummary]:
        return [ServerSummary(f"v0-{i}", f"s{i}", "Connected to x" if i < connected
                              else "Not connected", 10 ** 9, None, None) for i in range(known)]
    low = welcome_page(("n", "v0-n"), ["Connected to tcp:1"], servers(6, 10), happy=7).decode()
    assert "Only 6 storage servers are connected, fewer than" in low and "card-bad" in low
    assert "Connected to 6 of 10 known storage servers" in low
    ok = welcome_page(("n", "v0-n"), [], servers(7, 7), happy=7).decode()
    assert "fewer than" not in ok and "card-ok" in ok and "No introducer is configured" in ok
    assert "7.0 GB" in ok  # space of the connected servers, summed


def test_directory_listing_sorts_labels_and_links(pages: dict[str, bytes]) -> None:
    """Rows sort on the server; mutable files show their format and size; subdirectories by path."""
    dircap = parse_cap(DIR)
    assert isinstance(dircap, DirectoryCap)
    children = {"big": _entry(MDMF["mdmf_writecap"]), "small": _entry("URI:LIT:nbswy3dp"),
                "sub": _entry(DIR_RO)}
    page = directory_page(dircap, children, root="URI:DIR2:root", names=["a b"],
                          sizes={"big": 123_456}, sort="size", descending=True).decode()
    names = re.findall(r'<td class="name" data-sort="([^"]*)"', page)
    assert names == ["big", "small", "sub"]
    assert 'title="123456 bytes">123.5 kB<' in page
    assert '<a href="/uri/URI%3ADIR2%3Aroot/a%20b/sub/">sub</a>' in page
    assert '<li><a href="/uri/URI%3ADIR2%3Aroot/">' in page
    assert '<li aria-current="page">a b</li>' in page and "↑ Up" in page
    assert 'data-confirm="Unlink “big”?' in page and 'name="to_name" value="big"' in page
    kinds = {name: child_kind(entry.child, dircap)[:2] for name, entry in children.items()}
    assert kinds["small"] == ("FILE", "immutable file")
    assert kinds["sub"] == ("DIR-RO", "directory, read-only")
    assert kinds["big"] == ("SSK", "mutable file (MDMF)")
    assert '<span class="type type-mutable" title="SSK: mutable file (MDMF)">MDMF</span>' in page


def test_info_pages_have_tahoes_forms() -> None:
    """Check, deep and replace forms post Tahoe's fields to the object's own address."""
    dircap = parse_cap(DIR)
    assert isinstance(dircap, DirectoryCap)
    handles = iter(["h1", "h2", "h3", "h4"])
    page = directory_info_page(dircap, here="/uri/R/d/", new_handle=lambda: next(handles)).decode()
    for t, handle in (("start-deep-check", "h1"), ("start-manifest", "h2"),
                      ("start-deep-size", "h3"), ("start-deep-stats", "h4")):
        assert f'name="t" value="{t}"><input type="hidden" name="ophandle" value="{handle}"' in page
    assert page.count('action="/uri/R/d/" method="post"') == 5
    for field in ("verify", "repair", "add-lease"):
        assert f'name="{field}" value="true"' in page
    assert 'name="output" value="JSON"' in page
    mutable: Any = parse_cap(MDMF["mdmf_writecap"])
    info = file_info_page(mutable, here="/uri/R/m.txt", name="m.txt", size=14).decode()
    assert 'id="replace-form"' in info and 'name="when_done" value="?t=info"' in info
    assert 'title="14 bytes">14 B<' in info
    readonly = file_info_page(mutable.readonly(), here="/uri/X", name=None, size=None)
    assert b'id="replace-form"' not in readonly and b"Read-write cap" not in readonly
    assert address_of("/uri/URI%3ADIR2%3Aa/x%20y/z") == ("URI:DIR2:a", ["x y", "z"])
    assert address_of("/named/x") is None


def test_error_page_and_way_back() -> None:
    """The status, the message and a link to the directory above the failing path."""
    assert parent_directory("/uri/CAP/a/b") == "/uri/CAP/a/"
    assert parent_directory("/uri/CAP/a/") == "/uri/CAP/"
    assert parent_directory("/uri/CAP") is None and parent_directory("/status") is None
    page = error_page(409, "There was already a child <x>", "/uri/CAP/d/f").decode()
    assert "409 Conflict" in page and "child &lt;x&gt;" in page
    assert 'href="/uri/CAP/d/">Back to “d”</a>' in page


def test_browsers_and_api_clients_are_told_apart() -> None:
    """Only an Accept header naming text/html makes a browser (Tahoe's CLI sends text/plain)."""
    def accept(value: str | None) -> bool:
        request = DummyRequest([b""])
        if value is not None:
            request.requestHeaders.setRawHeaders(b"accept", [value.encode()])
        return wants_html(request)
    assert accept("text/html,application/xhtml+xml,*/*;q=0.8")
    assert not accept(None) and not accept("*/*")
    assert not accept("text/plain, application/octet-stream")


@pytest.mark.parametrize("uri", [
    b"/uri/x?t=relink&to_dir=URI:DIR2:aa:bb&from_name=x",
    b"/operations/h?when_done=%2Furi%2FURI%3ADIR2%3Aaa%3Abb%2F",
    b"/uri?t=check&return_to=/uri/URI%3ACHK%3Aa%3Ab%3A3%3A10%3A99?t=info",
])
def test_access_log_hides_caps_in_any_argument(uri: bytes) -> None:
    """A cap given in any argument (to_dir, when_done, return_to) is censored too."""
    censored = censor_uri(uri)
    assert not re.search(rb"URI(:|%3A)", censored, re.IGNORECASE) and b"[CENSORED]" in censored


def test_statistics_windows_are_grouped() -> None:
    """Sample-window keys are gathered per window, for latencies and for rates apart."""
    stats = {"storage_server.latencies.get.samplesize": 12,
             "storage_server.latencies.get.50_0_percentile": 0.002,
             "uploader.rates.upload.samplesize": 3, "node.uptime": 5}
    assert sample_windows(stats, "latencies") == {"storage_server.latencies.get": {
        "samplesize": 12, "50_0_percentile": 0.002}}
    assert list(sample_windows(stats, "rates")) == ["uploader.rates.upload"]


def test_assets_are_shipped_and_built(tmp_path: Path) -> None:
    """The stylesheet, script and icon are package data: ``setup.py build`` copies them."""
    subprocess.run([sys.executable, "setup.py", "-q", "build", "--build-base", str(tmp_path)],
                   cwd=REPO, check=True, capture_output=True)
    for name in assets.ASSETS:
        built = tmp_path / "lib" / "tahoe" / "web" / "static" / name
        assert built.read_bytes() == assets.read_asset(name), name
    script = assets.read_asset("tahoe.js").decode()
    assert "http://" not in script and "https://" not in script  # nothing fetched elsewhere
    assert "url(" not in assets.read_asset("tahoe.css").decode()

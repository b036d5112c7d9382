"""The web UI in headless Chromium on the session's local grid: what a person does with it.

Every page visited is checked the same way (:func:`clean`): no console
error (script errors, refused resources and Content-Security-Policy
violations all show there) and no request that left 127.0.0.1, read from
Chromium's DevTools network events. Each page is also saved for the gallery
in ``docs/web-ui.md``.
"""
from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tahoe.storage import paths
from tahoe.util import base32
from tests.support.browser import chromium, console_errors, foreign, gone, requested_urls, screenshot
from tests.support.dirapi import WebAPI
from tests.support.proxied_grid import ProxiedGrid

#: Seconds a page may take after a click (a loaded two-core machine is slow).
WAIT = 90.0


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """One Chromium for this module's tests."""
    with chromium() as browser:
        yield browser


@pytest.fixture
def api(local_grid: ProxiedGrid) -> WebAPI:
    return WebAPI(local_grid.client.url)


# What Chromium says, besides a stale element reference, when the page it
# was reading is replaced by the next one between two commands.
PAGE_REPLACED = ("does not belong to the document", "document unloaded",
                 "Execution context was destroyed", "Cannot find context with specified id")


def wait_for(driver: Any, condition: Any, timeout: float = WAIT) -> Any:
    """Poll ``condition`` until it holds (a page being replaced meanwhile is polled again)."""
    from selenium.common.exceptions import (
        NoSuchElementException, StaleElementReferenceException, WebDriverException)
    from selenium.webdriver.support.wait import WebDriverWait

    def polled(d: Any) -> Any:
        try:
            return condition(d)
        except (NoSuchElementException, StaleElementReferenceException):
            raise
        except WebDriverException as e:
            if any(phrase in (e.msg or "") for phrase in PAGE_REPLACED):
                return False
            raise
    return WebDriverWait(driver, timeout, poll_frequency=0.1, ignored_exceptions=(
        NoSuchElementException, StaleElementReferenceException)).until(polled)


def css(driver: Any, selector: str) -> Any:
    from selenium.webdriver.common.by import By
    return driver.find_element(By.CSS_SELECTOR, selector)


def css_all(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By
    return list(driver.find_elements(By.CSS_SELECTOR, selector))


def submit(driver: Any, form_selector: str) -> None:
    """Click a form's submit button and wait until the next page has replaced this one."""
    form = css(driver, form_selector)
    form.find_element("css selector", "input[type=submit]").click()
    wait_for(driver, gone(form))
    wait_for(driver, lambda d: d.execute_script("return document.readyState") == "complete")


def clean(driver: Any, gallery_name: str | None = None) -> None:
    """No console error and no request beyond 127.0.0.1 since the last check; then a screenshot."""
    urls = requested_urls(driver)
    assert urls, "the DevTools network log saw no request at all"
    assert not foreign(urls), foreign(urls)
    assert not console_errors(driver)
    if gallery_name:
        screenshot(driver, gallery_name)


def visit(driver: Any, url: str, gallery_name: str | None = None) -> None:
    """Load ``url`` and check it (:func:`clean`)."""
    driver.get(url)
    clean(driver, gallery_name)


def row_names(driver: Any) -> list[str]:
    """The listing's names, read in one script so that a page replaced meanwhile cannot split them."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('table.listing tbody td.name'),"
        " cell => cell.innerText.trim());")


def pattern_bytes(size: int) -> bytes:
    """The bytes the page's drop script makes: ``(7 i + 3) mod 256``."""
    return bytes((7 * i + 3) & 255 for i in range(size))


DROP = """
const [selector, name, size] = arguments;
const bytes = new Uint8Array(size);
for (let i = 0; i < size; i++) { bytes[i] = (7 * i + 3) & 255; }
const transfer = new DataTransfer();
transfer.items.add(new File([bytes], name, {type: "application/octet-stream"}));
const zone = document.querySelector(selector);
for (const type of ["dragenter", "dragover", "drop"]) {
  zone.dispatchEvent(new DragEvent(type, {bubbles: true, cancelable: true,
                                         dataTransfer: transfer}));
}
"""


def test_make_a_directory_upload_by_drag_and_drop_and_walk_the_breadcrumbs(
        driver: Any, local_grid: ProxiedGrid, api: WebAPI, tmp_path: Path) -> None:
    """Welcome page, new directory, subdirectory, dropped file with progress, crumbs, sorting."""
    visit(driver, local_grid.client.url)
    assert driver.title == "Tahoe-LAFS - Welcome"
    assert "10" in css(driver, "#health-servers .big").text
    assert "Connected to 10 of 10 known storage servers" in driver.page_source
    assert not css_all(driver, "#health-servers .notice-bad")  # 10 connected ≥ happy 7

    submit(driver, "#mkdir-form")
    assert "/uri/URI%3ADIR2%3A" in driver.current_url and "(modifiable)" in driver.title
    root_url = driver.current_url
    clean(driver)
    css(driver, "#dir-mkdir input[name=name]").send_keys("documents")
    submit(driver, "#dir-mkdir")
    assert row_names(driver) == ["documents"]
    clean(driver)

    driver.find_element("link text", "documents").click()
    wait_for(driver, lambda d: d.current_url.endswith("/documents/"))
    crumbs = [li.text for li in css_all(driver, "nav.crumbs li")]
    assert len(crumbs) == 2 and crumbs[0].startswith("⌂ ") and crumbs[1] == "documents"
    clean(driver)

    size = 2_000_000
    for proxy in local_grid.proxies:  # slow the grid so the progress can be watched
        proxy.delay = 0.3
    try:
        driver.execute_script(DROP, ".dropzone", "dropped.bin", size)
        progress = wait_for(driver, lambda d: re.search(
            r"dropped\.bin: (\d+)% of 2\.0 MB", css(d, ".progress-text").text))
        assert css(driver, ".progress").is_displayed()
        assert int(css(driver, ".progress progress").get_attribute("value")) >= 0
        screenshot(driver, "directory-upload-progress")
        wait_for(driver, lambda d: "dropped.bin" in row_names(d))
    finally:
        for proxy in local_grid.proxies:
            proxy.delay = 0.0
    assert int(progress.group(1)) <= 100
    size_cell = css(driver, "table.listing tbody td.num .size")
    assert size_cell.text == "2.0 MB" and size_cell.get_attribute("title") == "2000000 bytes"
    documents_cap = driver.current_url.split("/uri/")[1].split("/")[0]
    cap = urllib.parse.unquote(documents_cap)
    assert api.read(cap, "documents/dropped.bin") == pattern_bytes(size)
    clean(driver, "directory")

    small = tmp_path / "a note.txt"
    small.write_bytes(b"a small note\n")
    css(driver, "#dir-upload input[type=file]").send_keys(str(small))
    css(driver, "#dir-upload input[type=submit]").click()  # the script uploads it, then reloads
    wait_for(driver, lambda d: "a note.txt" in row_names(d))
    assert row_names(driver) == ["a note.txt", "dropped.bin"]
    clean(driver)

    css(driver, "th[data-key=size] a").click()  # sorted in place by the script
    assert row_names(driver) == ["a note.txt", "dropped.bin"]
    css(driver, "th[data-key=size] a").click()
    assert row_names(driver) == ["dropped.bin", "a note.txt"]
    assert driver.current_url.endswith("?sort=size&order=desc")
    driver.refresh()  # the same order, now from the server
    assert row_names(driver) == ["dropped.bin", "a note.txt"]
    assert css(driver, "th[data-key=size]").get_attribute("aria-sort") == "descending"
    clean(driver)

    css_all(driver, "nav.crumbs li a")[0].click()
    wait_for(driver, lambda d: d.current_url.rstrip("/") == root_url.rstrip("/"))
    assert row_names(driver) == ["documents"]
    clean(driver)


def _share_files(grid: ProxiedGrid, si_b32: str) -> list[Path]:
    si = base32.a2b(si_b32)
    return [path for node in grid.storage_nodes
            for path in (node.node.basedir / "storage" /
                         paths.as_text(paths.share_dir_parts(si))).glob("[0-9]*")]


def test_check_repair_replace_and_unlink_from_the_pages(driver: Any, local_grid: ProxiedGrid,
                                                        api: WebAPI, tmp_path: Path) -> None:
    """A file missing a share is found unhealthy and repaired; a mutable file is replaced."""
    root = api.mkdir()
    data = pattern_bytes(30_000)
    api.put(root, "data.bin", data)
    api.put(root, "notes.txt", b"first version\n", "format=MDMF")
    si = api.post(root, "data.bin", "t=check&output=JSON").json()["storage-index"]
    _share_files(local_grid, si)[0].unlink()
    listing = local_grid.client.url.rstrip("/") + api.object_path(root) + "/"

    visit(driver, listing)
    types = {row.find_element("css selector", "td.name").text:
             row.find_element("css selector", ".type").text
             for row in css_all(driver, "table.listing tbody tr")}
    assert types == {"data.bin": "file", "notes.txt": "MDMF"}
    assert "14 B" in driver.page_source  # the mutable file's size, read from the grid
    driver.get(listing + "data.bin?t=info")
    assert css(driver, "h1").text.startswith("data.bin")
    clean(driver, "file-info")

    submit(driver, "#check-form")
    assert "File Check Results" in driver.page_source
    assert css(driver, ".badge").text == "Not Healthy"
    assert "9 of 10 expected" in driver.page_source
    clean(driver, "check-results")

    driver.find_element("link text", "Return to file/directory.").click()
    wait_for(driver, lambda d: d.current_url.endswith("?t=info"))
    css(driver, "#check-form input[name=repair]").click()
    submit(driver, "#check-form")
    assert "Repair successful." in driver.page_source
    assert css(driver, "p > .badge").text == "Healthy"  # after the repair
    assert css(driver, "details.before summary .badge").text == "Not Healthy"  # before, folded
    assert len(_share_files(local_grid, si)) == 10
    clean(driver, "repair-results")

    driver.get(listing + "notes.txt?t=info")
    assert "14 B" in css(driver, "table.facts").text
    clean(driver, "mutable-file-info")
    replacement = tmp_path / "replacement.txt"
    replacement.write_bytes(b"the second version, longer\n")
    css(driver, "#replace-form input[type=file]").send_keys(str(replacement))
    submit(driver, "#replace-form")
    assert driver.current_url.endswith("notes.txt?t=info")
    assert "27 B" in css(driver, "table.facts").text
    assert api.read(root, "notes.txt") == b"the second version, longer\n"
    clean(driver)

    driver.get(listing)
    unlink = "form.unlink:has(input[value='data.bin']) input[type=submit]"
    css(driver, unlink).click()
    wait_for(driver, lambda d: d.switch_to.alert).dismiss()  # asked first; "no" keeps it
    assert "data.bin" in row_names(driver)
    css(driver, unlink).click()
    wait_for(driver, lambda d: d.switch_to.alert).accept()
    wait_for(driver, lambda d: row_names(d) == ["notes.txt"])
    assert set(api.children(root)) == {"notes.txt"}
    clean(driver)


def _run_deep(driver: Any, info_url: str, form: str, title: str, gallery_name: str) -> None:
    driver.get(info_url)
    submit(driver, form)
    assert driver.current_url.split("?")[0].rsplit("/", 2)[-2] == "operations"
    wait_for(driver, lambda d: css_all(d, ".badge-ok") and "finished" in d.page_source)
    assert title in driver.title
    clean(driver, gallery_name)


def test_deep_operations_and_node_pages(driver: Any, local_grid: ProxiedGrid,
                                        api: WebAPI) -> None:
    """Deep-check, manifest, deep-size and deep-stats pages, status, statistics and storage."""
    root = api.mkdir()
    api.put(root, "photos/beach.jpg", pattern_bytes(120_000))
    api.put(root, "photos/sunset.jpg", pattern_bytes(40_000))
    api.put(root, "readme.txt", b"hello\n")
    api.put(root, "todo.md", b"- write the docs\n" * 20, "format=SDMF")
    base = local_grid.client.url.rstrip("/")
    info = base + api.object_path(root) + "/?t=info"
    visit(driver, info, "directory-info")
    _run_deep(driver, info, "#deep-check-form", "Deep-Check Results", "deep-check")
    assert "Everything checked is healthy." in driver.page_source
    _run_deep(driver, info, "#manifest-form", "Manifest", "manifest")
    paths_shown = {a.text for a in css_all(driver, "table.grid td:first-child a")}
    assert {"(the root)", "photos", "photos/beach.jpg", "todo.md"} <= paths_shown
    _run_deep(driver, info, "#deep-size-form", "Deep Size", "deep-size")
    _run_deep(driver, info, "#deep-stats-form", "Deep Stats", "deep-stats")
    assert len(css_all(driver, "svg.chart rect.bar")) == 3  # three size buckets
    json_link = driver.find_element("link text", "JSON").get_attribute("href")
    assert api.request("GET", urllib.parse.urlsplit(json_link).path + "?output=JSON"
                       ).json()["count-files"] == 4

    driver.get(base + api.object_path(root) + "/?t=rename-form&name=readme.txt")
    clean(driver, "rename-form")
    visit(driver, base + "/", "welcome")  # now with recent operations
    assert 3 <= len(css_all(driver, "#health-recent li")) <= 5  # at least this test's uploads
    visit(driver, base + "/status", "status")
    assert css_all(driver, "svg.chart rect.bar")  # the rates of this session's operations
    visit(driver, base + "/statistics", "statistics")
    assert "Immutable files uploaded" in driver.page_source
    visit(driver, local_grid.storage_nodes[0].url + "storage", "storage")
    assert "Accepting new shares" in driver.page_source and css_all(driver, "svg.meter rect")
    driver.set_window_size(390, 844)
    try:
        visit(driver, base + api.object_path(root) + "/", "directory-phone")
        assert driver.execute_script(
            "return document.documentElement.scrollWidth <= window.innerWidth + 1")
    finally:
        driver.set_window_size(1100, 800)


def test_upload_results_and_error_pages(driver: Any, local_grid: ProxiedGrid,
                                        tmp_path: Path) -> None:
    """The welcome page's upload shows the new cap; an error has a styled page with a way back."""
    sample = tmp_path / "welcome-upload.txt"
    sample.write_bytes(b"uploaded from the welcome page\n" * 10)
    driver.get(local_grid.client.url)
    css(driver, "#upload-form input[type=file]").send_keys(str(sample))
    submit(driver, "#upload-form")
    assert driver.title == "Tahoe-LAFS - Upload Results"
    cap = css(driver, "#new-cap").text
    assert cap.startswith("URI:CHK:") and css(driver, "button.copy").is_displayed()
    clean(driver, "upload-results")

    driver.get(local_grid.client.url + "uri/" + urllib.parse.quote(cap, safe="") + "/nothing")
    assert driver.title == "400 - Bad Request"
    assert "Files have no children named" in css(driver, "pre.message").text
    errors = console_errors(driver)  # the page itself answered 400: Chromium says so, once
    assert len(errors) == 1 and "status of 400" in errors[0]
    assert not foreign(requested_urls(driver))
    screenshot(driver, "error")
    driver.find_element("link text", "Welcome page").click()
    wait_for(driver, lambda d: d.title == "Tahoe-LAFS - Welcome")

    # The gateway's access log (the node's output) holds none of the caps used so far.
    log = local_grid.client.node.process.log_path.read_text(errors="replace")
    access = [line for line in log.splitlines() if ' "127.0.0.1" - - [' in line]
    assert any('"GET /uri/[CENSORED] HTTP/1.1" 400' in line for line in access)
    assert not [line for line in access if re.search(r"URI(:|%3A)", line, re.IGNORECASE)]


def test_copy_button_copies_the_cap(driver: Any, local_grid: ProxiedGrid, api: WebAPI) -> None:
    """The copy button puts the cap on the clipboard (Chromium grants it on 127.0.0.1)."""
    cap = api.mkdir()
    driver.execute_cdp_cmd("Browser.grantPermissions", {
        "origin": local_grid.client.url.rstrip("/"),
        "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    driver.get(local_grid.client.url.rstrip("/") + api.object_path(cap) + "/?t=info")
    css(driver, "button.copy[data-copy=cap-0]").click()
    wait_for(driver, lambda d: css(d, "button.copy[data-copy=cap-0]").text == "Copied")
    copied = driver.execute_async_script(
        "navigator.clipboard.readText().then(arguments[0], () => arguments[0](null));")
    assert copied == cap
    clean(driver)

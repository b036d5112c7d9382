"""Security headers on every kind of answer, and browsers told apart from API clients.

On the session's local grid, over plain HTTP (no browser): pages, JSON,
static files, errors and file contents all carry the headers; a browser's
``Accept`` gets styled pages where API clients keep Tahoe's bodies byte for
byte.
"""
from __future__ import annotations

import time

import pytest

from tahoe.web.headers import CONTENT_SECURITY_POLICY, FILE_CONTENT_POLICY
from tests.support.dirapi import Response, WebAPI, multipart
from tests.support.proxied_grid import ProxiedGrid

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
TAHOE_CLI = {"Accept": "text/plain, application/octet-stream"}


@pytest.fixture
def api(local_grid: ProxiedGrid) -> WebAPI:
    return WebAPI(local_grid.client.url)


def _secured(answer: Response, policy: str = CONTENT_SECURITY_POLICY) -> None:
    assert answer.headers["x-frame-options"] == "DENY"
    assert answer.headers["referrer-policy"] == "no-referrer"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["content-security-policy"] == policy


def test_every_kind_of_answer_carries_the_security_headers(api: WebAPI) -> None:
    """Pages, JSON, assets, a 404 outside the API, errors and file contents."""
    root = api.mkdir()
    api.put(root, "page.html", b"<script>alert(1)</script>")
    for path in ("/", "/?t=json", "/status", "/statistics?t=json", "/tahoe.css", "/tahoe.js",
                 "/icon.svg", "/no/such/page", api.object_path(root) + "/",
                 api.object_path(root, "nosuch")):
        _secured(api.request("GET", path))
    contents = api.get(root, "page.html")
    assert contents.body == b"<script>alert(1)</script>"
    _secured(contents, FILE_CONTENT_POLICY)  # sandboxed: an uploaded page runs no script
    assert "sandbox" in FILE_CONTENT_POLICY and "'unsafe-inline'" not in CONTENT_SECURITY_POLICY
    css = api.request("GET", "/tahoe.css")
    assert css.headers["content-type"] == "text/css; charset=utf-8"
    again = api.request("GET", "/tahoe.css", headers={"If-None-Match": css.headers["etag"]})
    assert again.status == 304 and again.body == b""


def test_api_clients_keep_tahoes_error_bodies(api: WebAPI) -> None:
    """The same status for both; plain text for API clients, a page for browsers."""
    root = api.mkdir()
    for headers in ({}, TAHOE_CLI, {"Accept": "*/*"}):
        answer = api.get(root, "nosuch", headers=headers)
        assert (answer.status, answer.body) == (404, b"No such child: nosuch\n")
        assert answer.headers["content-type"] == "text/plain; charset=utf-8"
    page = api.get(root, "nosuch", headers=BROWSER)
    assert page.status == 404 and page.headers["content-type"] == "text/html; charset=utf-8"
    assert "No such child: nosuch" in page.text and "Back to the directory above" in page.text
    bad = api.request("GET", "/uri", headers=BROWSER)
    assert bad.status == 400 and "GET /uri requires uri=" in bad.text
    assert bad.text.startswith("<!DOCTYPE html>")
    assert api.request("GET", "/uri").body == b"GET /uri requires uri=\n"
    missing = api.request("GET", "/no/such/page")
    assert missing.status == 404 and "No Such Resource" in missing.text
    assert "Welcome page" in api.request("GET", "/no/such/page", headers=BROWSER).text


def test_result_pages_for_browsers_json_for_scripts(api: WebAPI) -> None:
    """deep-stats and deep-size and mutable uploads: a page for browsers, Tahoe's bodies else."""
    root = api.mkdir()
    api.put(root, "a.bin", b"x" * 5000)
    started = api.post(root, "", "t=start-deep-stats&ophandle=ui-stats", follow=False)
    assert started.status == 302
    for _ in range(200):
        if api.request("GET", "/operations/ui-stats?output=JSON").json()["finished"]:
            break
        time.sleep(0.05)
    as_script = api.request("GET", "/operations/ui-stats?output=html")
    assert as_script.json()["count-immutable-files"] == 1  # Tahoe answers JSON here
    as_browser = api.request("GET", "/operations/ui-stats", headers=BROWSER)
    assert as_browser.headers["content-type"].startswith("text/html")
    assert "Deep Stats" in as_browser.text and "?output=JSON" in as_browser.text

    body, headers = multipart({"t": "upload", "format": "mdmf"}, {"file": ("m.txt", b"hi" * 40)})
    cap = api.ok("POST", "/uri", body, headers=headers).text
    assert cap.startswith("URI:MDMF:")
    page = api.ok("POST", "/uri", body, headers={**headers, **BROWSER}).text
    assert "Upload Results" in page and "URI:MDMF:" in page
    listing = api.get(root, "", headers=BROWSER)
    assert 'href="/tahoe.css"' in listing.text and 'src="/tahoe.js"' in listing.text

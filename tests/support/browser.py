"""Headless Debian Chromium for the web UI tests, with what a test must see of it.

Chromium and chromedriver come from Debian's ``chromium`` and
``chromium-driver`` packages (``misc/ci/install-system-packages.sh``);
nothing downloads a browser or a driver. The browser runs with a fresh
profile and without its background connections (this closed network refuses
them), and keeps two logs a test reads:

* the console (``browser`` log): errors from scripts, refused resources and
  Content-Security-Policy violations all land there;
* the DevTools network events (``performance`` log): every request the page
  made, so a test can check that none left 127.0.0.1.

Screenshots for ``docs/web-ui.md`` are saved as small palette PNGs.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
INSTALLER = Path(__file__).resolve().parents[2] / "misc" / "ci" / "install-system-packages.sh"
#: Where the screenshots go: ``docs/web-ui/`` (the gallery ``docs/web-ui.md`` shows) when
#: ``TAHOE_WEB_UI_GALLERY`` names it (``make screenshots``), else a temporary directory, so
#: that a test run leaves the clone as it found it.
GALLERY = Path(os.environ.get("TAHOE_WEB_UI_GALLERY")
               or Path(tempfile.gettempdir()) / f"tahoe-web-ui-{os.getuid()}")
#: The flags the house rules ask for (no sandbox in containers, no background traffic).
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic",
         "--disable-default-apps", "--disable-extensions", "--hide-scrollbars")


def ensure_browser() -> None:
    """Install Chromium and chromedriver from Debian if they are missing (skip if impossible)."""
    if os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK):
        return
    result = subprocess.run(["sh", str(INSTALLER)], capture_output=True, text=True)
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        message = f"chromium/chromedriver missing and could not be installed: {result.stderr}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@contextmanager
def chromium(width: int = 1100, height: int = 800) -> Iterator[Any]:
    """A Selenium driver of headless Chromium with console and network logging."""
    ensure_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="tahoe-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(90)
    driver.get("about:blank")
    requested_urls(driver)  # forget the start page's own (chrome://) loads
    console_errors(driver)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def gone(element: Any) -> Any:
    """A condition: ``element`` has left the document.

    Selenium's ``staleness_of`` asks the element a question; when the page is
    being replaced at that moment, Chromium may answer "node does not belong to
    the document" (a plain WebDriverException) rather than a stale-element
    error. Both mean the old page is gone.
    """
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    def check(_driver: Any) -> bool:
        try:
            element.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as e:
            if "does not belong to the document" in str(e):
                return True
            raise
        return False
    return check


def console_errors(driver: Any) -> list[str]:
    """The console messages of level SEVERE since the last call."""
    return [entry["message"] for entry in driver.get_log("browser")
            if entry["level"] == "SEVERE"]


def requested_urls(driver: Any) -> list[str]:
    """Every URL the browser requested since the last call (DevTools network events)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def foreign(urls: list[str]) -> list[str]:
    """The URLs among ``urls`` that go anywhere but 127.0.0.1 (``data:``, ``about:`` stay in)."""
    return [url for url in urls if urlsplit(url).scheme not in ("data", "about")
            and urlsplit(url).hostname != "127.0.0.1"]


def screenshot(driver: Any, name: str, *, max_height: int = 1600) -> Path:
    """Save the page (as tall as its content, up to ``max_height``) as ``GALLERY/<name>.png``.

    The window is resized to the content's height first and restored after;
    the PNG is reduced to a palette of 96 colours to stay small.
    """
    GALLERY.mkdir(parents=True, exist_ok=True)
    path = GALLERY / f"{name}.png"
    taken = GALLERY / f".{name}.{os.getpid()}.png"  # written whole, then renamed into place
    size = driver.get_window_size()
    content = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(size["width"], min(max_height, max(400, int(content) + 90)))
    try:
        assert driver.save_screenshot(str(taken))
    finally:
        driver.set_window_size(size["width"], size["height"])
    try:
        from PIL import Image
    except ImportError:  # Pillow comes with the bench extra; without it the PNG stays as taken
        taken.replace(path)
        return path
    with Image.open(taken) as image:
        small = image.convert("RGB").quantize(colors=96, method=Image.Quantize.MEDIANCUT)
    small.save(taken, format="PNG", optimize=True)
    taken.replace(path)
    return path

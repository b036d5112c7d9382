"""The browsable web UI in headless Chromium: welcome page, new directory, upload form, listing.

Chromium and chromedriver come from Debian's ``chromium`` and
``chromium-driver`` packages (``misc/ci/install-system-packages.sh``);
nothing downloads a browser or a driver. A screenshot of the final
directory page is saved under ``test-artifacts/``.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.browser import chromium, gone
from tests.support.proxied_grid import ProxiedGrid

#: Seconds a page may take to load after a form is submitted.
NAVIGATION_TIMEOUT = 60.0
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture
def browser() -> Iterator[object]:
    """A headless Chromium driven by Debian's chromedriver, with a fresh profile."""
    with chromium(1200, 900) as driver:
        yield driver


def test_welcome_mkdir_upload_and_listing(local_grid: ProxiedGrid, browser: object,
                                          tmp_path: Path) -> None:
    """Create a directory from the welcome page, upload a file with the form, see it listed."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait
    driver = browser
    driver.get(local_grid.client.url)  # type: ignore[attr-defined]
    assert driver.title == "Tahoe-LAFS - Welcome"  # type: ignore[attr-defined]
    assert "Connected to 10 of 10 known storage servers" in driver.page_source  # type: ignore[attr-defined]

    driver.find_element(By.CSS_SELECTOR, "#mkdir-form input[type=submit]").click()  # type: ignore[attr-defined]
    # A click returns before the new page has loaded; wait for it (a loaded machine is slow).
    WebDriverWait(driver, NAVIGATION_TIMEOUT).until(  # type: ignore[arg-type]
        lambda d: "/uri/URI%3ADIR2%3A" in d.current_url and "Directory" in d.title)
    directory_url = driver.current_url  # type: ignore[attr-defined]

    sample = tmp_path / "hello from the browser.txt"
    sample.write_bytes(b"uploaded through the upload form\n" * 100)
    upload_form = driver.find_element(  # type: ignore[attr-defined]
        By.XPATH, "//form[.//input[@name='t' and @value='upload']]")
    upload_form.find_element(By.NAME, "file").send_keys(str(sample))
    upload_form.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    WebDriverWait(driver, NAVIGATION_TIMEOUT).until(  # type: ignore[arg-type]
        gone(upload_form))  # the upload's answer has replaced the page

    driver.get(directory_url)  # type: ignore[attr-defined]
    assert sample.name in driver.page_source  # type: ignore[attr-defined]
    link = driver.find_element(By.LINK_TEXT, sample.name)  # type: ignore[attr-defined]
    assert link.get_attribute("href")
    ARTIFACTS.mkdir(exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / "directory-after-upload.png"))  # type: ignore[attr-defined]

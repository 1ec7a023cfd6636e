"""Headless Chromium from the system's packages (/usr/bin/chromium, /usr/bin/chromedriver), driven
with selenium, for the tests of the search page of `fanfuse serve`; screenshots are kept under
test-artifacts/search-page/ (gitignored). The fixtures `browser` (one a module) and `page` (the
browser checked for console errors around a test) are imported by the page tests.

Where Chromium is absent the browser tests skip and say why, except in CI (CI=true), where
scripts/ensure-chromium.sh installs it and its absence is a failure."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "search-page"
WAIT_SECONDS = 60.0


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (Path(path).is_file() and os.access(path, os.X_OK)):
            return (
                f"{path} is absent: `bash scripts/ensure-chromium.sh` installs Debian's chromium "
                "and chromium-driver"
            )
    return None


def require_browser() -> None:
    reason = missing()
    if reason is None:
        return
    if _in_ci():
        pytest.fail(f"the browser tests must run in CI: {reason}")
    pytest.skip(reason)


@contextlib.contextmanager
def chromium(width: int = 1280, height: int = 1000) -> Iterator[Any]:
    """A headless Chromium with its console log readable (`driver.get_log("browser")`)."""
    require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",  # the tests may run as root, where Chromium's sandbox refuses to start
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-extensions",
        "--no-first-run",
        "--hide-scrollbars",
        f"--window-size={width},{height}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for a test module."""
    with chromium() as driver:
        yield driver


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    """The browser at its first size, its console read before the test and checked after it: no
    error (a CSP violation, a script error, a failed request) in any test that does not expect one."""
    browser.set_window_size(1280, 1000)
    console_errors(browser)
    yield browser
    assert console_errors(browser) == []


def wait_for(driver: Any, condition: Any, message: str) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_SECONDS).until(condition, message)


def wait_searched(driver: Any, searches: int = 1) -> None:
    """Until the page has shown the answer of its `searches`-th search."""
    wait_for(
        driver,
        lambda d: d.execute_script("return document.body.dataset.searches") == str(searches),
        f"the page did not finish search {searches}",
    )


def wait_ready(driver: Any) -> None:
    """Until the page has read the server's options and built its form."""
    wait_for(
        driver,
        lambda d: d.execute_script("return document.body.dataset.ready") == "true",
        "the page did not read the server's options",
    )


def console_errors(driver: Any) -> list[dict[str, Any]]:
    """The console's errors since the last call (the log is read once)."""
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def screenshot(driver: Any, name: str) -> Path:
    """The whole page as test-artifacts/search-page/NAME.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    width = driver.get_window_size()["width"]
    driver.set_window_size(width, max(600, min(int(height) + 120, 6000)))
    path = ARTIFACTS / f"{name}.png"
    assert driver.save_screenshot(str(path)), path
    return path

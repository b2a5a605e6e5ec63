"""Fixtures for the browser tests: the built site served on 127.0.0.1,
one headless Chromium per session, a recording context per test, and
screenshots of the page in both palettes when a page test fails."""

import pytest
from playwright.sync_api import sync_playwright

from course import browser
from tests.browser.checks import Visit


@pytest.fixture(scope="session")
def site():
    try:
        return browser.require_site()
    except browser.SiteMissing as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture(scope="session")
def base_url(site):
    with browser.serve(site) as url:
        yield url


# Module scope: Playwright's sync API keeps an event loop running while it
# is open, which breaks asyncio.run() in the tests that come after
# (nbclient in tests/test_notebooks.py); closing it per module ends it.
@pytest.fixture(scope="module")
def chromium():
    with sync_playwright() as p:
        try:
            launched = browser.launch(p)
        except browser.BrowserMissing as error:
            pytest.fail(str(error), pytrace=False)
        yield launched
        launched.close()


@pytest.fixture
def visit(chromium, base_url):
    """A fresh, recording browser context: visit(path) -> Visit."""
    opened = []

    def open_(path):
        v = Visit(chromium, base_url)
        opened.append(v)
        v.goto(path)
        return v

    yield open_
    for v in opened:
        v.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when != "call" or not report.failed:
        return report
    callspec = getattr(item, "callspec", None)
    path = callspec.params.get("page_path") if callspec else None
    chromium = item.funcargs.get("chromium")
    base_url = item.funcargs.get("base_url")
    if path is None or chromium is None or base_url is None:
        return report
    written = []
    for scheme in browser.PALETTES:
        try:
            written.append(
                browser.screenshot_page(
                    chromium, base_url, path, browser.SCREENSHOTS, scheme
                )
            )
        except Exception as error:  # keep the real failure visible
            report.sections.append(
                ("screenshot", f"could not take a screenshot: {error}")
            )
    if written:
        names = ", ".join(
            p.relative_to(browser.ROOT).as_posix() for p in written
        )
        report.sections.append(("screenshots", names))
    return report

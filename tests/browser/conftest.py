"""The browser tests: the built site (make build) served on 127.0.0.1,
driven in Debian's headless Chromium (course/tools/chromium.py) by
pytest-playwright.

Every test's page aborts and records any request to another host, and
records console errors, uncaught exceptions and HTTP errors; a test
with any of them fails. On a failure pytest-playwright keeps a
screenshot in test-results/ (--screenshot only-on-failure).
"""

from pathlib import Path

import pytest

from course.build import runner
from course.tools.chromium import ARGS, EXECUTABLE
from course.tools.serve import serve
from tests.browser.helpers import LAPTOP, SITE, watch


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": EXECUTABLE,
        "args": ARGS,
    }


@pytest.fixture(scope="session")
def site():
    """The built site, if it holds the labs of this checkout."""
    name, _ = runner.archive()
    if not (SITE / runner.RUN_DIR / name).is_file():
        pytest.fail(
            f"{SITE} is missing or was built from other labs (no {name}): "
            "run `make build` first",
            pytrace=False,
        )
    return SITE


@pytest.fixture(scope="session")
def base_url(site):
    with serve(site) as url:
        yield url


@pytest.fixture
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": LAPTOP}


@pytest.fixture
def page(page, base_url):
    """pytest-playwright's page, kept on 127.0.0.1, with what went wrong
    in `page.problems`: the test fails if any remain."""
    problems = page.problems = watch(page, base_url)
    yield page
    assert not problems, "\n".join(problems)


@pytest.fixture
def detect(page):
    """detect(name, *args): the problems tests/browser/detectors.js's
    function `name` finds on the page."""
    source = (Path(__file__).with_name("detectors.js")).read_text()

    def run(name, *args):
        script = f"(args) => {{ {source}\nreturn {name}(...args); }}"
        return page.evaluate(script, list(args))

    return run

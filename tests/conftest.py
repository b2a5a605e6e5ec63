"""`pytest --update-outputs` (make update-outputs) re-records what the
code blocks in docs/ print instead of checking it; tests marked slow
(browser, torch, full builds) are left out of `make check`."""

import pytest

from course.fences import ROOT
from tests import docblocks


def pytest_addoption(parser):
    parser.addoption(
        "--update-outputs",
        action="store_true",
        help="rewrite the recorded outputs in docs/ instead of checking them",
    )


@pytest.fixture(scope="session")
def updates(request):
    """None, or the list of (block, output) to record at the end."""
    if not request.config.getoption("--update-outputs"):
        yield None
        return
    changes = []
    yield changes
    for path in docblocks.apply_updates(changes):
        print(f"\nupdated recorded outputs in {path.relative_to(ROOT)}")


def pytest_collection_modifyitems(config, items):
    """The browser tests are slow, and run last: Playwright's event loop,
    once started, would break asyncio.run() in the tests after them."""
    browser = [item for item in items if "browser" in item.path.parts]
    for item in browser:
        item.add_marker(pytest.mark.slow)
    ids = {id(item) for item in browser}
    items[:] = [item for item in items if id(item) not in ids] + browser

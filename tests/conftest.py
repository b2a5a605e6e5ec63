"""`pytest --update-outputs` (make update-outputs) re-records what the
code blocks in docs/ print instead of checking it; tests marked slow
(browser, torch, full builds) are left out of `make check`."""

import pytest

from course import ROOT
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


def pytest_runtest_setup(item):
    """Under `--dist loadgroup` an xdist_group must reach one worker,
    which pytest-xdist marks with "@group" on the test's id. Where it
    cannot (pytest 9.2, pytest-dev/pytest-xdist#1386) the group's tests
    fail rather than make their launches once per worker."""
    if (
        getattr(item.config.option, "loadgroup", False)
        and item.get_closest_marker("xdist_group")
        and "@" not in item.nodeid
    ):
        pytest.fail(
            "--dist loadgroup did not keep this test's xdist_group on one "
            "worker: pytest-xdist does not work with this pytest "
            "(pyproject.toml pins the pair)",
            pytrace=False,
        )

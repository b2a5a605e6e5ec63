"""`pytest --update-outputs` (make update-outputs) re-records what the
code blocks in docs/ print instead of checking it; tests marked slow
(browser, torch, lab processes, every chart drawn afresh, full builds)
are left out of `make check`.

Time limits: each test has pyproject.toml's `timeout` (pytest-timeout),
600 s if marked slow, unless it sets its own; importing a test file
(and the labs it imports) has `collect_timeout` seconds, so that a lab
that hangs at import fails that file, not the whole run."""

import signal

import pytest

from course import ROOT
from tests import docblocks

SLOW_TIMEOUT_S = 600  # torchrun launches, whole builds, a browser


def pytest_addoption(parser):
    parser.addoption(
        "--update-outputs",
        action="store_true",
        help="rewrite the recorded outputs in docs/ instead of checking them",
    )
    parser.addini(
        "collect_timeout",
        "seconds that importing one test file may take",
        default="60",
    )


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    """A test file still importing after collect_timeout seconds is a
    collection error that names it (signal-based, as pytest-timeout's
    default: it interrupts Python code and sleeps, not a C call)."""
    if not isinstance(collector, pytest.Module):
        return (yield)
    limit = float(collector.config.getini("collect_timeout"))
    path = str(collector.path)

    def stop(signum, frame):
        """Raise where the file's own import runs, if it still does."""
        while frame is not None:
            code = frame.f_code
            if code.co_filename == path and code.co_name == "<module>":
                raise TimeoutError(
                    f"importing {collector.nodeid} still running after "
                    f"{limit:g} s (collect_timeout): does a module it "
                    "imports hang?"
                )
            frame = frame.f_back

    before = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return (yield)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


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
    """The browser tests are slow: they are marked so, and listed last
    (under --dist loadgroup xdist may still send a page's group first)."""
    browser = [item for item in items if "browser" in item.path.parts]
    for item in browser:
        item.add_marker(pytest.mark.slow)
    ids = {id(item) for item in browser}
    items[:] = [item for item in items if id(item) not in ids] + browser
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker(
            "timeout"
        ):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))


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

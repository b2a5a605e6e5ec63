"""`pytest --update-outputs` (make update-outputs) re-records what the
code blocks in docs/ print instead of checking it."""

from course.fences import ROOT
from tests import docblocks


def pytest_addoption(parser):
    parser.addoption(
        "--update-outputs",
        action="store_true",
        help="rewrite the recorded outputs in docs/ instead of checking them",
    )


def pytest_configure(config):
    if config.getoption("--update-outputs"):
        docblocks.updates = []


def pytest_sessionfinish(session, exitstatus):
    for path in docblocks.apply_updates(docblocks.updates or []):
        print(f"\nupdated recorded outputs in {path.relative_to(ROOT)}")

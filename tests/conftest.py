"""Test-wide setup: sybil over docs/, and the `--update-outputs` switch."""

from pathlib import Path

import pytest
from sybil import Sybil

from course.fences import ROOT
from tests.docblocks import DocBlockParser, UpdateLog, apply_updates

DOCS = ROOT / "docs"
sybil = Sybil(parsers=[DocBlockParser()], path=str(DOCS), patterns=["**/*.md"])


def pytest_addoption(parser):
    parser.addoption(
        "--update-outputs",
        action="store_true",
        help="rewrite the recorded outputs in docs/ instead of checking them",
    )


def pytest_configure(config):
    UpdateLog.enabled = config.getoption("--update-outputs")


def pytest_sessionfinish(session, exitstatus):
    if UpdateLog.enabled and UpdateLog.changes:
        for path in apply_updates():
            print(f"\nupdated recorded outputs in {path.relative_to(ROOT)}")


def doc_pages():
    return sorted(DOCS.rglob("*.md"))


def parsed_documents():
    documents = []
    for path in doc_pages():
        document = sybil.parse(Path(path))
        document.namespace["blocks"] = [e.parsed for e in document]
        documents.append(document)
    return documents


@pytest.fixture(scope="session")
def documents():
    return parsed_documents()

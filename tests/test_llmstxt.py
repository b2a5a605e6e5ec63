"""llms.txt and llms-full.txt, which mkdocs-llmstxt writes from the built
pages: every page of the nav is listed with a line saying what it holds,
its Markdown copy is published, and the recorded outputs of the labs
are in the full text."""

import re

import pytest

from course import ROOT
from tests.site_text import SITE, built, nav_sources, outputs, squeeze

pytestmark = pytest.mark.slow
SOURCES = nav_sources()
LINK = re.compile(r"^- \[(?P<title>[^\]]+)\]\((?P<url>[^)]+)\): (?P<line>.+)$")


@pytest.fixture(scope="module")
def listed():
    path = SITE / "llms.txt"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make build`", pytrace=False)
    text = path.read_text(encoding="utf-8")
    return [m.groupdict() for m in map(LINK.match, text.splitlines()) if m]


def test_every_page_is_listed_with_a_summary(listed):
    assert len(listed) == len(SOURCES)
    for entry, source in zip(listed, SOURCES, strict=True):
        stem = source.rsplit(".", 1)[0].removesuffix("index")
        page = stem if not stem or stem.endswith("/") else stem + "/"
        assert entry["url"].endswith(f"/{page}index.md"), (source, entry)
        assert 20 <= len(entry["line"]) <= 100, entry
        copy = SITE / page / "index.md"
        assert copy.is_file(), f"{copy} is not published"


def test_the_full_text_carries_the_recorded_outputs():
    full = squeeze((SITE / "llms-full.txt").read_text(encoding="utf-8"))
    checked = 0
    for source in SOURCES:
        for output in outputs(built(source)):
            line = next(s for s in output.splitlines() if s.strip())
            assert squeeze(line) in full, f"{source}: {line!r} not in it"
            checked += 1
    assert checked >= 40


def test_formulas_reach_the_full_text_as_tex():
    """MathML converted tag by tag loses its structure (s^2 would read
    "s2"): each formula of a page is in the full text as its TeX."""
    full = squeeze((SITE / "llms-full.txt").read_text(encoding="utf-8"))
    tex = re.compile(r"`#!math ([^`]+)`")
    checked = 0
    for source in SOURCES:
        for formula in tex.findall((ROOT / "docs" / source).read_text()):
            assert f"`{squeeze(formula)}`" in full, f"{source}: {formula}"
            checked += 1
    assert checked >= 20
    assert "```math" in full

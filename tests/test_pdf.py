"""site/course.pdf, which `make pdf` (and `make test`, before the tests)
prints from the built site: read back with PDFium (pypdfium2), it holds
every page of the nav in order with its title, the title page says what
it was built from, its table of contents links into it, the labs'
recorded outputs and a chart's labels are in its text, and every worked
answer moved to the end of its page."""

import ctypes
import re

import pypdfium2
import pytest
from pypdfium2 import raw

from course.tools import pdf
from tests.site_text import SITE, built, h1, nav_sources, outputs, squeeze

# One worker reads the PDF (its fixtures take most of this file's time)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("pdf")]
PDF = SITE / "course.pdf"
# pages of paper: 216 at the time of writing; a layout that loses its
# scale or its print rules moves far from it
PAPER_PAGES = range(150, 320)


@pytest.fixture(scope="module")
def reader():
    if not PDF.is_file():
        pytest.fail(f"{PDF} is missing: run `make pdf`", pytrace=False)
    return pypdfium2.PdfDocument(PDF)


@pytest.fixture(scope="module")
def pages(reader):
    return [squeeze(page.get_textpage().get_text_range()) for page in reader]


@pytest.fixture(scope="module")
def sources():
    return nav_sources()


def test_page_count(reader, sources):
    assert len(sources) >= 20
    assert len(reader) in PAPER_PAGES, len(reader)


def test_every_page_is_in_the_outline_in_nav_order(reader, sources):
    """Each nav page's title (its h1, as the site shows it) is a
    bookmark of the PDF, in the order of the nav."""
    marks = [
        (mark.get_title().strip(), mark.get_dest().get_index())
        for mark in reader.get_toc()
    ]
    at = []
    for source in sources:
        title = h1(built(source))
        where = [page for name, page in marks if name == title]
        assert where, f"{source}: no bookmark {title!r}"
        at.append(max(where))
    assert at == sorted(at), list(zip(sources, at, strict=True))


def test_title_page_says_what_it_was_built_from(pages):
    assert "MLSystemsInternals" in pages[0]
    assert re.search(r"Builtfromcommit[0-9a-f]{7,}of\d{4}-\d\d-\d\d", pages[0])


def test_contents_link_into_the_pdf(reader):
    """The table of contents (page 2) links to places in the PDF."""
    at, link, inner = ctypes.c_int(0), raw.FPDF_LINK(), 0
    page = reader[1]  # kept: PDFium closes a page Python no longer holds
    while raw.FPDFLink_Enumerate(
        page.raw, ctypes.byref(at), ctypes.byref(link)
    ):
        inner += bool(raw.FPDFLink_GetDest(reader.raw, link))
    assert inner >= 20, inner


def test_every_lab_output_is_in_it(pages, sources):
    """The first line of each lab's recorded output (its Output tab)."""
    whole = "".join(pages)
    checked = []
    for source in sources:
        for output in outputs(built(source)):
            line = next(s for s in output.splitlines() if s.strip())
            assert squeeze(line) in whole, f"{source}: {line!r} not in it"
            checked.append(line)
    assert len(checked) >= 40, checked


def test_a_chart_is_drawn(pages):
    """Every word of the zero-bubble chart's labels is text on one page:
    the chart was drawn as vectors, not left out or rasterised."""
    html = built("zero-bubble.md")
    start = html.index('<figure class="diagram chart"')
    chart = html[start : html.index("</figure>", start)]
    labels = set(re.findall(r"<text[^>]*>([^<]*[A-Za-z][^<]*)</text>", chart))
    assert len(labels) >= 5, labels
    assert any(all(squeeze(x) in page for x in labels) for page in pages)


def test_worked_answers_are_at_the_end_of_their_page(pages, sources):
    kinds = r'<details class="(?:question|success)"'
    folded = sum(len(re.findall(kinds, built(s))) for s in sources)
    assert folded >= 20
    links = sum(
        p.count(squeeze("The answer is at the end of this page."))
        for p in pages
    )
    assert links == folded
    # Knowledge check 1: its question, its answer on the page of answers
    ask, answer, end = (
        next(n for n, p in enumerate(pages) if squeeze(x) in p)
        for x in (
            "1. ZeRO-3 as the first move?",
            "No: start with DDP.",
            "Answers: Knowledge checks",
        )
    )
    assert ask < end == answer, (ask, end, answer)


def test_built_from_names_the_commit():
    assert re.fullmatch(
        r"Built from commit [0-9a-f]{7,} of \d{4}-\d\d-\d\d"
        r"(, with uncommitted edits to docs/)?\.",
        pdf.built_from(),
    )


def test_the_home_page_links_to_it():
    home = (SITE / "index.html").read_text(encoding="utf-8")
    assert '<a href="course.pdf" download>' in home

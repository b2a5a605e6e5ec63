"""Every page of the built site, in Chromium: it loads cleanly, shows its
lab outputs, figures and formulas, its hidden answers open, its copy
buttons copy, the palette toggle works, its links resolve, it passes
axe-core and it stays within the page weight budget."""

import pytest

from course import browser
from tests.browser import checks

ROOT = browser.ROOT
DOCS = ROOT / "docs"
PAGES = browser.pages()
# Pages that must have figures and hidden answers (so that the checks
# below cannot pass by finding nothing).
FIGURE_PAGES = {"parallelism", "ddp", "zero", "pipeline", "comms"}
ANSWER_PAGES = {"knowledge-checks", "ladder"}


# Module scope groups the tests by page, so that `loaded` opens each page
# once for all of its checks.
@pytest.fixture(
    scope="module", params=PAGES, ids=[browser.page_id(p) for p in PAGES]
)
def page_path(request, site):
    path = request.param
    if browser.page_file(site, path) is None:
        pytest.fail(
            f"{browser.page_id(path)}: in the nav but not built "
            f"(no file serves /{path} in site/)",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="module")
def loaded(chromium, base_url, page_path):
    """The page, opened once and left to settle, with clipboard access;
    every test of the page uses it (see `view`)."""
    v = checks.Visit(chromium, base_url)
    v.context.grant_permissions(
        ["clipboard-read", "clipboard-write"], origin=base_url.rstrip("/")
    )
    v.goto(page_path, wait_until="networkidle")
    v.settle()
    checks.mark_closed_details(v.page)
    yield v
    v.close()


@pytest.fixture
def view(loaded):
    """The shared page, put back on the light palette after each test.
    `new_problems(view)` lists what went wrong during the test (console
    errors, failed or off-host requests)."""
    loaded.mark = len(loaded.problems)
    yield loaded
    try:
        if checks.scheme(loaded.page) != "default":
            checks.toggle_palette(loaded.page)
    except Exception:  # the test has already failed; keep its message
        pass


def source_of(path):
    """docs/ Markdown file of a site path, or None (notebook pages)."""
    stem = path.rstrip("/") or "index"
    for candidate in (f"{stem}.md", f"{stem}/index.md"):
        if (DOCS / candidate).is_file():
            return DOCS / candidate
    return None


def new_problems(v):
    return v.problems[v.mark :]


def fail_on(path, problems):
    if problems:
        pytest.fail(
            checks.report(browser.page_id(path), problems), pytrace=False
        )


def test_loads_cleanly(loaded, page_path):
    """No console error, failed request, HTTP error or other host."""
    fail_on(page_path, list(loaded.problems))


def test_lab_outputs_are_shown(view, page_path):
    page = view.page
    problems, records = checks.lab_output_problems(page)
    source = source_of(page_path)
    if source is not None:
        expected = source.read_text(encoding="utf-8").count("<!-- output")
        if records != expected:
            problems.append(
                f"{expected} recorded outputs in {source.relative_to(ROOT)}"
                f", {records} on the built page"
            )
    fail_on(page_path, problems)


def test_figures_are_shown_and_named(view, page_path):
    page = view.page
    problems, count = checks.figure_problems(page)
    if browser.page_id(page_path) in FIGURE_PAGES and count == 0:
        problems.append("no figure (inline SVG) found on a figure page")
    fail_on(page_path, problems)


def test_formulas_render_as_mathml(view, page_path):
    page = view.page
    problems, _ = checks.math_problems(page)
    fail_on(page_path, problems)


def test_hidden_answers_open(view, page_path):
    page = view.page
    problems, count = checks.details_problems(page)
    if browser.page_id(page_path) in ANSWER_PAGES and count == 0:
        problems.append("no hidden answer (??? details) found")
    fail_on(page_path, problems + new_problems(view))


def test_copy_buttons_copy_the_code(view, page_path):
    problems, _ = checks.copy_problems(view.page)
    problems += new_problems(view)
    fail_on(page_path, problems)


def test_palette_toggle_and_figure_contrast(view, page_path):
    page = view.page
    problems = checks.palette_problems(page)
    if browser.page_id(page_path) in FIGURE_PAGES:
        _, checked = checks.contrast_problems(page)
        if not checked:
            problems.append("no figure text found to check for contrast")
    fail_on(page_path, problems + new_problems(view))


def test_internal_links_resolve(site, page_path):
    fail_on(page_path, checks.link_problems(site, page_path))


def test_accessibility(view, page_path):
    problems = checks.axe_problems(view.page)
    view.settle()
    # axe.min.js is injected from the installed package: it fetches
    # nothing (a request would be recorded here).
    problems += new_problems(view)
    fail_on(page_path, problems)


def test_page_weight(loaded, site, page_path):
    """The weight helper counts every file the browser loads, and the
    page stays under the budget (bytes, not time)."""
    v = loaded
    counted = browser.page_resources(site, page_path)
    missed = sorted(
        {u.split("?")[0].split("#")[0] or "index.html" for u in v.loaded}
        - {
            p[: -len("index.html")]
            for p in counted
            if p.endswith("index.html")
        }
        - set(counted)
        - {"search/search_index.json"}
    )
    problems = [f"loaded but not counted by page_weight: {u}" for u in missed]
    weight = browser.page_weight(site, page_path)
    if weight["total"] > browser.WEIGHT_BUDGET:
        problems.append(
            f"weighs {weight['total'] / 1000:.1f} kB, over the "
            f"{browser.WEIGHT_BUDGET / 1000:.0f} kB budget ({weight})"
        )
    fail_on(page_path, problems)

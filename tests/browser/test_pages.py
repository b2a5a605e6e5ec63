"""Every page of the built site in Chromium, at laptop and phone width
and in both palettes: it loads from 127.0.0.1 alone without an error;
nothing is wider than its box (and at laptop width no output needs its
scroll box); text in boxes and figures is not too small; figures and
formulas are named and drawn; no copy button covers code; axe-core
finds nothing serious (its colour rules on one element of each kind of
text), nor do its colour rules after the palette toggle; the page stays
within its weight; each "Run in your browser" runner, opened as a
reader opens it, shows its lab's code and a Run button, and nothing of
Python loads before a Run. Search finds the lesson's words. The
detectors are in detectors.js."""

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.browser.helpers import (
    LAPTOP,
    PHONE,
    lesson_pages,
    open_runner,
    runners,
    site_pages,
)

PAGES = site_pages()
VIEWS = {"laptop": LAPTOP, "phone": PHONE}
BOX_TEXT_PX = 15  # admonitions, answers and tables at laptop width
FIGURE_TEXT_PX = 11  # figure text at phone width
WEIGHT_BYTES = 1_000_000  # what a page loads before any Run, but the
# search index, which every page shares
AXE = Axe()
# Resolves once the layout of a resize has been drawn twice over.
SETTLED = (
    "() => new Promise((r) => requestAnimationFrame(() => "
    "requestAnimationFrame(r)))"
)


def test_the_site_has_its_pages():
    assert len(PAGES) >= 19 and lesson_pages() <= set(PAGES), PAGES


# What the palette changes, the colours, is all the dark pass checks.
COLOUR_RULES = ["color-contrast", "link-in-text-block"]
CODE = ".highlight code"  # a code block's text, in tokens


def axe(page, detect, every_rule=True):
    """axe-core's serious and critical findings on the page: by every
    rule, or (every_rule=False) by its colour rules alone. A page repeats
    a few kinds of text, and its code a few pairs of colours, thousands
    of times: the colour rules check one element of each kind
    (detectors.js, sampleText); the other rules check every element but
    code tokens, to which none of them applies."""
    options = {"resultTypes": ["violations"]}  # no details of the passes
    colours = {**options, "runOnly": {"type": "rule", "values": COLOUR_RULES}}
    off = {rule: {"enabled": False} for rule in COLOUR_RULES}
    runs = [({"exclude": [[CODE]]}, {**options, "rules": off})]
    runs = runs if every_rule else []
    if detect("sampleText"):
        runs.append(({"include": [["[data-axe-sample]"]]}, colours))
    return [
        f"axe {v['id']} ({v['impact']}): {v['help']}, {len(v['nodes'])}x"
        for context, chosen in runs
        for v in AXE.run(page, context, chosen).response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize("path", PAGES)
def test_page(page, base_url, detect, path):
    """At laptop width in the light palette, then in the dark one the
    toggle switches to; then at phone width, the window resized (the
    layout checks do not depend on the palette); then, at laptop width
    again, each runner opened."""
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    page.emulate_media(color_scheme="light", reduced_motion="reduce")
    page.goto(base_url + path, wait_until="networkidle")
    problems = []
    if path in lesson_pages() and not page.locator("figure svg").count():
        problems.append("a lesson page without a figure")
    for view in VIEWS:
        page.set_viewport_size(VIEWS[view])
        page.evaluate(SETTLED)
        laptop = view == "laptop"
        found = detect("wide", laptop) + detect("covered") + detect("unnamed")
        if path.startswith("exercises/ms"):
            found += detect("notebook")
        if not laptop:
            found += detect("small", "figures", FIGURE_TEXT_PX)
        else:
            found += detect("small", "boxes", BOX_TEXT_PX) + axe(page, detect)
            loaded = page.evaluate(
                "performance.getEntries().filter((e) => !e.name.endsWith("
                "'search_index.json')).reduce((n, e) => n + (e.decodedBodySize"
                " || 0), 0)"
            )
            if loaded > WEIGHT_BYTES:
                found.append(f"loads {loaded:,} bytes, over {WEIGHT_BYTES:,}")
            page.locator(
                "form[data-md-component=palette] label:not([hidden])"
            ).click()
            page.wait_for_selector("body[data-md-color-scheme=slate]")
            found += [
                f"dark: {p}" for p in axe(page, detect, every_rule=False)
            ]
        problems += [f"{view}: {p}" for p in found]
    page.set_viewport_size(LAPTOP)
    problems += runners_shown(page, path)
    if any("pyodide" in url for url in requested):
        problems.append("Python loaded before a Run")
    assert not problems, f"/{path}:\n" + "\n".join(problems)


def runners_shown(page, path):
    """What is wrong with the page's runners, each opened as a reader
    opens it: each must show its lab's code and a Run button."""
    wrong = []
    for n, lab in enumerate(runners(path)):
        box = open_runner(page, n)
        shown = box.locator(".course-runner__editor").text_content()
        if shown.rstrip("\n") != lab["source"].rstrip("\n"):
            wrong.append(f"runner {n + 1} shows other code: {shown[:80]!r}")
        if not box.get_by_role("button", name="Run", exact=True).is_enabled():
            wrong.append(f"runner {n + 1}: its Run button is disabled")
    return wrong


TOP_RESULTS = (  # the paths of the first three search results
    "() => [...document.querySelectorAll('.md-search-result__list > li > a')]"
    ".slice(0, 3).map((a) => new URL(a.href).pathname)"
)
SEARCH_MS = 15_000


# (query, the page among its first three results)
SEARCHES = [
    ("all-reduce", "ddp/"),
    ("ZeRO-3", "zero/"),
    ("bubble", "pipeline/"),
]


def test_search_finds_the_pages(page, base_url):
    """Each query, typed into the home page's search box, has its page
    among the first three results. The list is redrawn as each typed
    key's search comes back, so the test waits for the page to be there
    rather than reading the first list shown."""
    page.goto(base_url)
    box = page.locator("input.md-search__input")  # in the laptop header
    missing = []
    for query, found in SEARCHES:
        box.click()
        box.fill("")  # the last query's results go: none is read twice
        page.wait_for_function(f"() => !({TOP_RESULTS})().length")
        box.press_sequentially(query)
        try:
            page.wait_for_function(
                f"(want) => ({TOP_RESULTS})().includes(want)",
                arg=f"/{found}",
                timeout=SEARCH_MS,
            )
        except PlaywrightTimeoutError:
            shown = page.evaluate(TOP_RESULTS)
            missing.append(
                f"{query!r}: /{found} is not in the top three, {shown}"
            )
    assert not missing, "\n".join(missing)

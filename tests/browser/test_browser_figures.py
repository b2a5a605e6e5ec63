"""Figures and notebook pages, at laptop and phone width, light and dark.

- Every lesson page (the home page, the Lesson section of the nav and
  the torchrun page) shows a figure with a text alternative and a
  caption.
- No figure text is smaller than 11 CSS px at phone width, unless the
  figure sits in its own horizontal scroll box.
- Notebook outputs never break words (`word-break: break-all`).
- Notebook pages never scroll sideways as a whole, and do not show the
  plain copy of each cell's code that the copy buttons use.

Each detector is run on a small page built to break it first, and on a
clean one, so that a pass on the site means something.
"""

import pytest

from course import browser
from tests.browser import checks

VIEWPORTS = {"laptop": (1280, 800), "phone": (390, 844)}
MIN_TEXT_PX = 11


def lesson_files():
    """The home page, the Lesson section of the nav and torchrun."""
    nav = browser.mkdocs_config().nav
    lesson = next(e["Lesson"] for e in nav if "Lesson" in e)
    return ["index.md", *(next(iter(e.values())) for e in lesson)] + [
        "torchrun.md"
    ]


def lesson_pages():
    """Their site paths: 'walls.md' -> 'walls/', 'index.md' -> ''."""
    return [
        "" if f == "index.md" else f.removesuffix(".md") + "/"
        for f in lesson_files()
    ]


LESSONS = lesson_pages()
PAGES = browser.pages()
NOTEBOOKS = [p for p in PAGES if p.startswith("exercises/ms")]

_FIGURE_JS = r"""() => {
  const root = document.querySelector('@CONTENT@') || document.body;
  const found = [...root.querySelectorAll('figure')].filter((f) => {
    const img = f.querySelector('svg[role="img"], img');
    if (!img) return false;
    const alt = img.getAttribute('aria-label') || img.getAttribute('alt')
      || (img.getAttribute('aria-labelledby') || '').split(/\s+/)
        .map((id) => (document.getElementById(id) || {}).textContent)
        .join(' ').trim();
    const cap = f.querySelector('figcaption');
    return alt.trim().length > 0 && cap && cap.textContent.trim();
  });
  return found.length;
}"""

_SMALL_TEXT_JS = """(minimum) => {
  const root = document.querySelector('@CONTENT@') || document.body;
  const scrolls = (el) => {
    for (let e = el.parentElement; e && e !== root; e = e.parentElement) {
      if (['auto', 'scroll'].includes(getComputedStyle(e).overflowX))
        return true;
    }
    return false;
  };
  const problems = [];
  const figures = [...root.querySelectorAll('svg')].filter((s) =>
    !s.closest('@ICONS@') && !s.parentElement.closest('svg'));
  figures.forEach((svg, i) => {
    if (scrolls(svg)) return;
    const small = [];
    for (const t of svg.querySelectorAll('text')) {
      if (!t.textContent.trim()) continue;
      const m = t.getScreenCTM();
      if (!m) continue;
      const px = parseFloat(getComputedStyle(t).fontSize) *
        Math.hypot(m.a, m.b);
      if (px < minimum - 0.05) small.push(
        `"${t.textContent.trim().slice(0, 20)}" ${px.toFixed(1)} px`);
    }
    if (small.length) problems.push(
      `figure #${i + 1} (${svg.id || 'svg'}): ${small.length} text(s) ` +
      `under ${minimum} px, not in a scroll box: ` +
      small.slice(0, 3).join(', '));
  });
  return problems;
}"""

_BREAK_ALL_JS = """() => {
  const root = document.querySelector('@CONTENT@') || document.body;
  const problems = [];
  root.querySelectorAll('.jp-OutputArea-output, .jp-OutputArea-output *')
    .forEach((el) => {
      const s = getComputedStyle(el);
      if (s.wordBreak === 'break-all' || s.overflowWrap === 'anywhere')
        problems.push(`<${el.localName} class="${el.className}"> ` +
          `breaks words (word-break: ${s.wordBreak}, overflow-wrap: ` +
          `${s.overflowWrap})`);
    });
  return problems.slice(0, 5);
}"""

_OVERFLOW_JS = """() => {
  const doc = document.documentElement;
  const width = doc.clientWidth;
  if (doc.scrollWidth <= width + 1) return [];
  const wide = [...document.body.querySelectorAll('*')].filter((e) => {
    const r = e.getBoundingClientRect();
    return r.right > width + 1 && r.width > 0;
  }).slice(0, 3).map((e) => `<${e.localName} class="${e.className}">`);
  return [`the page scrolls sideways: ${doc.scrollWidth} px wide in a ` +
    `${width} px window; too wide: ${wide.join(', ')}`];
}"""


_COPY_TEXT_JS = """() => [...document.querySelectorAll('.clipboard-copy-txt')]
  .filter((e) => e.getBoundingClientRect().height > 0)
  .map((e) => `the copy button's text of ${e.id} is shown under the cell`)
  .slice(0, 3)"""


def _run(page, script, *args):
    script = script.replace("@CONTENT@", checks.CONTENT)
    return page.evaluate(
        script.replace("@ICONS@", checks.ICON_SVG_ANCESTORS), *args
    )


def figure_count(page):
    """Figures in the content with a text alternative and a caption."""
    return _run(page, _FIGURE_JS)


def small_text_problems(page, minimum=MIN_TEXT_PX):
    return _run(page, _SMALL_TEXT_JS, minimum)


def break_all_problems(page):
    return _run(page, _BREAK_ALL_JS)


def overflow_problems(page):
    return _run(page, _OVERFLOW_JS)


def copy_text_problems(page):
    """mkdocs-jupyter's plain copy of each cell's code, for its copy
    button, must stay hidden (JupyterLab's stylesheet hid it)."""
    return _run(page, _COPY_TEXT_JS)


def open_page(chromium, base_url, path, viewport, scheme):
    width, height = VIEWPORTS[viewport]
    context = chromium.new_context(
        viewport={"width": width, "height": height},
        color_scheme=scheme,
        reduced_motion="reduce",
    )
    page = context.new_page()
    page.goto(base_url + path, wait_until="load")
    return context, page


# --- the site ---------------------------------------------------------


@pytest.fixture(scope="module", params=list(VIEWPORTS))
def viewport(request):
    return request.param


@pytest.mark.parametrize("scheme", list(browser.PALETTES))
@pytest.mark.parametrize("path", PAGES, ids=map(browser.page_id, PAGES))
def test_figures_and_notebooks(
    chromium, base_url, site, path, viewport, scheme
):
    if browser.page_file(site, path) is None:
        pytest.fail(f"{path}: not built", pytrace=False)
    context, page = open_page(chromium, base_url, path, viewport, scheme)
    try:
        problems = []
        if path in LESSONS and figure_count(page) == 0:
            problems.append(
                "a lesson page without a figure that has alt "
                "text and a caption"
            )
        if viewport == "phone":
            problems += small_text_problems(page)
        if path in NOTEBOOKS:
            problems += break_all_problems(page)
            problems += overflow_problems(page)
            problems += copy_text_problems(page)
    finally:
        context.close()
    assert not problems, checks.report(
        f"{browser.page_id(path)} ({viewport}, {scheme})", problems
    )


def test_the_page_lists_are_not_empty():
    assert len(LESSONS) >= 10, LESSONS
    assert len(NOTEBOOKS) == 2, NOTEBOOKS
    assert set(LESSONS) <= set(PAGES)


# --- the detectors fire -------------------------------------------------

ARTICLE = '<article class="md-content__inner md-typeset">{}</article>'
SVG = (
    '<svg role="img" aria-label="a chart" viewBox="0 0 400 100" '
    'style="width: {width}"><text x="10" y="50" '
    'style="font-size: {size}px">label</text></svg>'
)


@pytest.fixture
def tiny(tmp_path, chromium):
    """open_(body, viewport) -> page of a small site built in tmp_path."""
    contexts = []
    with browser.serve(tmp_path) as base_url:

        def open_(body, viewport="phone"):
            name = f"p{len(contexts)}.html"
            (tmp_path / name).write_text(
                '<!doctype html><html lang="en"><head><meta charset="utf-8">'
                '<meta name="viewport" content="width=device-width">'
                f"<title>t</title></head><body style='margin:0'>"
                f"{ARTICLE.format(body)}</body></html>",
                encoding="utf-8",
            )
            context, page = open_page(
                chromium, base_url, name, viewport, "light"
            )
            contexts.append(context)
            return page

        yield open_
        for c in contexts:
            c.close()


def test_figure_detector(tiny):
    chart = SVG.format(width="100%", size=20)
    good = f"<figure>{chart}<figcaption>What to see.</figcaption></figure>"
    assert figure_count(tiny(good)) == 1
    assert figure_count(tiny(f"<figure>{chart}</figure>")) == 0  # no caption
    unnamed = good.replace('aria-label="a chart"', "")
    assert figure_count(tiny(unnamed)) == 0
    labelled = unnamed.replace("<text", '<title id="t">A chart</title><text')
    labelled = labelled.replace("<svg", '<svg aria-labelledby="t"')
    assert figure_count(tiny(labelled)) == 1
    assert figure_count(tiny("<p>prose only</p>")) == 0


def test_small_text_detector(tiny):
    # 10 user units on a 400-unit-wide chart drawn 360 px wide: 9 px.
    small = SVG.format(width="360px", size=10)
    found = small_text_problems(tiny(small))
    assert len(found) == 1 and "9.0 px" in found[0], found
    # The same chart in its own scroll box, or big enough, passes.
    box = f'<div style="overflow-x: auto">{small}</div>'
    assert small_text_problems(tiny(box)) == []
    assert small_text_problems(tiny(SVG.format(width="360px", size=13))) == []


def test_break_all_detector(tiny):
    out = (
        '<div class="jp-OutputArea-output"><pre{}>zero3 InfiniBand</pre></div>'
    )
    broken = out.format(' style="word-break: break-all"')
    assert len(break_all_problems(tiny(broken))) == 1
    assert break_all_problems(tiny(out.format(""))) == []


def test_overflow_detector(tiny):
    wide = '<pre style="width: 600px">a long line of code</pre>'
    found = overflow_problems(tiny(wide))
    assert len(found) == 1 and "scrolls sideways" in found[0], found
    boxed = f'<div style="overflow-x: auto">{wide}</div>'
    assert overflow_problems(tiny(boxed)) == []


def test_copy_text_detector(tiny):
    cell = '<div class="clipboard-copy-txt" id="cell-1"{}>x = 1</div>'
    assert len(copy_text_problems(tiny(cell.format("")))) == 1
    assert copy_text_problems(tiny(cell.format(" hidden"))) == []

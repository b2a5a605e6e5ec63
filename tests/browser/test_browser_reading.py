"""Pages read output first, and fit the screen (issue 12, "Reader first").

For every page, at a laptop and a phone width, in both palettes: the
page never scrolls sideways; an output or table wider than its box
scrolls in a box of its own (and at laptop width no output needs to);
every lab shows its output before its full code; admonition and table
text is at least 15 px at laptop width; no copy button covers text.
Each detector is shown to fire on a small page built to break it.

`python -m tests.browser.test_browser_reading [SITE]` prints the share
of each page's height that is code at 1280 px (the issue's measure).
"""

import sys
from pathlib import Path

import pytest

from course import browser
from tests.browser import checks

PAGES = browser.pages()
LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
SIZES = {"laptop": LAPTOP, "phone": PHONE}
MIN_PX = 15  # admonition and table text at laptop width

# Shared by the detectors: the content root and what counts as shown.
_BASE = """
const root = document.querySelector('@CONTENT@') || document.body;
const shown = (e) => {
  const r = e.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && e.checkVisibility({
    opacityProperty: true, visibilityProperty: true});
};
const name = (e) => (e.innerText || e.textContent || '').trim()
  .replace(/\\s+/g, ' ').slice(0, 40);
const OUTPUTS = '.lab-output pre > code, .result pre > code';
"""

_OVERFLOW_JS = r"""(desktop) => {
@BASE@
const problems = [];
const doc = document.documentElement;
if (doc.scrollWidth > doc.clientWidth + 1) {
  const wide = [...root.querySelectorAll('*')].filter((e) =>
    e.getBoundingClientRect().right > doc.clientWidth + 1 &&
    !e.parentElement.closest('pre, table, .md-typeset__scrollwrap'));
  problems.push(`the page scrolls sideways: ${doc.scrollWidth} px wide ` +
    `in a ${doc.clientWidth} px window` + (wide.length ?
    ` (widest: <${wide[0].localName} class="${wide[0].className}">)` : ''));
}
const scrolls = (e) => ['auto', 'scroll']
  .includes(getComputedStyle(e).overflowX);
root.querySelectorAll(OUTPUTS + ', table').forEach((e) => {
  if (!shown(e)) return;
  const what = `${e.localName === 'table' ? 'table' : 'output'} ` +
    `"${name(e)}"`;
  // A table's own box is as wide as its content: look from its parent.
  let box = e.localName === 'table' ? e.parentElement : e;
  while (box && box !== root && getComputedStyle(box).overflowX ===
         'visible') box = box.parentElement;
  const content = e.scrollWidth;
  if (box && box !== root && !scrolls(box) &&
      content > box.clientWidth + 1) {
    problems.push(`${what} is clipped: ${content} px of content in a ` +
      `${box.clientWidth} px box that does not scroll`);
  } else if ((!box || box === root) &&
      e.getBoundingClientRect().right > root.getBoundingClientRect()
        .right + 1) {
    problems.push(`${what} sticks out of the page column`);
  }
  // At laptop width nothing needs its scroll box.
  const wrap = e.localName === 'table' && box && box !== root ? box : e;
  if (desktop && wrap.scrollWidth > wrap.clientWidth + 1) {
    problems.push(`${what} is wider than its box at this width ` +
      `(${wrap.scrollWidth} px in ${wrap.clientWidth} px)`);
  }
});
return problems;
}"""

_ORDER_JS = r"""() => {
@BASE@
const problems = [];
let n = 0;
const walker = document.createTreeWalker(root, NodeFilter.SHOW_COMMENT);
const norm = (s) => s.replace(/[|*`]/g, ' ').replace(/\s+/g, ' ').trim();
while (walker.nextNode()) {
  const c = walker.currentNode;
  if (!/^\s*output\b/.test(c.data)) continue;
  n += 1;
  const first = c.data.replace(/^\s*output\b/, '').split('\n')
    .map((l) => norm(l.split('|').filter((x) => x.trim())[0] || l))
    .find((l) => l && !/^-+$/.test(l));
  if (!first || first.startsWith('html sha256')) continue;
  // The elements the block rendered: back from the record to the prose.
  const region = [];
  let el = c.previousElementSibling;
  while (el && el.matches('div.highlight, div.result, div.lab, ' +
                          'div.tabbed-set')) {
    region.unshift(el);
    el = el.previousElementSibling;
  }
  // Python is highlighted into tokens; what a block printed is not.
  const codes = region.flatMap((r) => [...r.querySelectorAll('pre > code')])
    .filter((k) => k.querySelector('span.k, span.kn, span.nf, span.nb'));
  if (!codes.length) continue;  // a figure or a table: no code shown
  const texts = [];
  region.forEach((r) => {
    const w = document.createTreeWalker(r, NodeFilter.SHOW_TEXT);
    while (w.nextNode()) texts.push(w.currentNode);
  });
  const out = texts.find((t) => norm(t.parentElement.closest(
    'pre, table, .lab-output, .result, p') ? t.parentElement.closest(
    'pre, table, .lab-output, .result, p').textContent : '')
    .includes(first) && !codes.some((k) => k.contains(t)));
  if (!out) {
    problems.push(`lab #${n}: its output ("${first.slice(0, 40)}") ` +
      'is not on the page');
    continue;
  }
  const code = codes.find((k) => k.textContent.length > 0);
  if (code.compareDocumentPosition(out) &
      Node.DOCUMENT_POSITION_FOLLOWING) {
    problems.push(`lab #${n}: its code comes before its output ` +
      `("${first.slice(0, 40)}")`);
  }
}
return problems;
}"""

_SMALL_TEXT_JS = r"""(minimum) => {
@BASE@
root.querySelectorAll('details').forEach((d) => { d.open = true; });
const problems = new Map();
const boxes = root.querySelectorAll('.admonition, details, table');
boxes.forEach((box) => {
  const w = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  while (w.nextNode()) {
    const t = w.currentNode;
    if (!t.data.trim() || !shown(t.parentElement)) continue;
    if (t.parentElement.closest('.md-code__nav, .headerlink')) continue;
    // a formula's exponents and indices are smaller by design
    if (t.parentElement.closest(':is(msup, msub, msubsup, munder, mover,' +
        ' munderover) > :not(:first-child)')) continue;
    const px = parseFloat(getComputedStyle(t.parentElement).fontSize);
    if (px < minimum - 0.01) {
      const what = `${box.localName === 'table' ? 'table' :
        'admonition'} "${name(box)}"`;
      const key = `${what}: text at ${px.toFixed(1)} px ` +
        `(<${t.parentElement.localName}>)`;
      problems.set(key, (problems.get(key) || 0) + 1);
    }
  }
});
return [...problems.keys()];
}"""

_COPY_OVERLAP_JS = r"""() => {
@BASE@
root.querySelectorAll('details').forEach((d) => { d.open = true; });
const problems = [];
const meet = (a, b) => Math.min(a.right, b.right) - Math.max(a.left,
  b.left) > 0.5 && Math.min(a.bottom, b.bottom) - Math.max(a.top,
  b.top) > 0.5;
root.querySelectorAll('.md-code__nav, .md-clipboard').forEach((nav) => {
  if (!shown(nav)) return;
  const pre = nav.closest('pre') || nav.parentElement;
  const code = pre.querySelector('code');
  if (!code) return;
  const b = nav.getBoundingClientRect();
  const view = code.getBoundingClientRect();
  const w = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
  while (w.nextNode()) {
    const t = w.currentNode;
    if (!t.data.trim()) continue;
    const range = document.createRange();
    range.selectNodeContents(t);
    const whole = range.getBoundingClientRect();
    if (whole.bottom < b.top || whole.top > b.bottom) continue;
    // each character: a line's trailing spaces are not text
    for (let i = 0; i < t.data.length; i++) {
      if (!t.data[i].trim()) continue;
      range.setStart(t, i);
      range.setEnd(t, i + 1);
      const r = range.getBoundingClientRect();
      if (r.bottom < b.top || r.top > b.bottom) continue;
      if (!meet(r, view)) continue;  // scrolled out of its box
      if (meet(r, b)) {
        problems.push(`the copy button covers "${t.data.trim()
          .slice(0, 30)}" in "${name(code)}"`);
        return;
      }
    }
  }
});
return problems;
}"""

_CODE_SHARE_JS = r"""() => {
@BASE@
let code = 0;
root.querySelectorAll('pre > code').forEach((c) => {
  if (shown(c)) code += c.getBoundingClientRect().height;
});
return {code, page: root.getBoundingClientRect().height};
}"""


def _js(source):
    return (
        source.replace("@BASE@", _BASE)
        .replace("@CONTENT@", checks.CONTENT)
        .strip()
    )


def overflow_problems(page, desktop):
    return page.evaluate(_js(_OVERFLOW_JS), desktop)


def order_problems(page):
    return page.evaluate(_js(_ORDER_JS))


def small_text_problems(page, minimum=MIN_PX):
    return page.evaluate(_js(_SMALL_TEXT_JS), minimum)


def copy_overlap_problems(page):
    return page.evaluate(_js(_COPY_OVERLAP_JS))


def code_share(page):
    """Visible code height over the content's height, 0..1."""
    found = page.evaluate(_js(_CODE_SHARE_JS))
    return found["code"] / found["page"] if found["page"] else 0.0


# --- every page --------------------------------------------------------------


def open_page(chromium, base_url, path, viewport, palette="light"):
    """A recording Visit of `path` at this window size and palette."""
    v = checks.Visit(chromium, base_url)
    v.page.set_viewport_size(viewport)
    v.page.emulate_media(color_scheme=palette)
    v.goto(path)
    return v


@pytest.fixture
def opened(chromium, base_url):
    """opened(path, viewport, palette) -> Visit, closed after the test."""
    visits = []

    def open_(path, viewport, palette):
        visits.append(open_page(chromium, base_url, path, viewport, palette))
        return visits[-1]

    yield open_
    for v in visits:
        v.close()


@pytest.fixture(params=list(SIZES), ids=list(SIZES))
def size(request):
    return request.param


@pytest.fixture(params=list(browser.PALETTES), ids=list(browser.PALETTES))
def palette(request):
    return request.param


@pytest.mark.parametrize(
    "path", PAGES, ids=[browser.page_id(p) for p in PAGES]
)
def test_page_reads(opened, path, size, palette):
    v = opened(path, SIZES[size], palette)
    page = v.page
    page.wait_for_function(
        "s => document.body.dataset.mdColorScheme === s",
        arg=browser.PALETTES[palette],
    )
    desktop = size == "laptop"
    problems = overflow_problems(page, desktop)
    problems += order_problems(page)
    problems += copy_overlap_problems(page)
    if desktop:
        problems += small_text_problems(page)
    problems += v.problems
    if problems:
        pytest.fail(
            checks.report(
                f"{browser.page_id(path)} ({size}, {palette})", problems
            ),
            pytrace=False,
        )


# --- each detector fires -----------------------------------------------------

ARTICLE = '<article class="md-content__inner md-typeset">{}</article>'
STYLE = (
    "<style>body{margin:0;font:16px sans-serif} article{width:300px;"
    "margin:0 20px} pre{margin:0} .md-code__nav{position:absolute;"
    "top:0;right:0;width:40px;height:24px;background:#eee}"
    "pre{position:relative}</style>"
)


def _tiny(visit_page, body, viewport=PHONE):
    page = visit_page
    page.set_viewport_size(viewport)
    page.set_content(
        f"<!doctype html><html><head>{STYLE}</head><body>"
        f"{ARTICLE.format(body)}</body></html>"
    )
    return page


@pytest.fixture
def blank(chromium):
    context = chromium.new_context()
    yield context.new_page()
    context.close()


WIDE = "x" * 120


def test_detector_page_scrolls_sideways(blank):
    page = _tiny(blank, f'<p style="width:900px">{WIDE}</p>')
    assert any("scrolls sideways" in p for p in overflow_problems(page, 0))
    page = _tiny(blank, "<p>fits</p>")
    assert overflow_problems(page, False) == []


def test_detector_clipped_output_and_table(blank):
    clipped = (
        '<div class="lab-output" style="overflow:hidden"><pre>'
        f'<code style="display:block;overflow:visible">{WIDE}</code>'
        '</pre></div><div style="overflow-x:hidden">'
        f"<table><tr><td>{WIDE}</td></tr></table></div>"
    )
    found = overflow_problems(_tiny(blank, clipped), False)
    assert any(p.startswith("output") and "clipped" in p for p in found)
    assert any(p.startswith("table") and "clipped" in p for p in found)
    scrolled = (
        '<div class="lab-output"><pre><code style="display:block;'
        f'overflow-x:auto">{WIDE}</code></pre></div>'
    )
    assert overflow_problems(_tiny(blank, scrolled), False) == []
    # at laptop width, an output that needs its scroll box is a problem
    found = overflow_problems(_tiny(blank, scrolled, LAPTOP), True)
    assert any("wider than its box" in p for p in found)
    table = (
        '<div style="overflow-x:auto"><table><tr><td>'
        f"{WIDE}</td></tr></table></div>"
    )
    assert overflow_problems(_tiny(blank, table), False) == []
    found = overflow_problems(_tiny(blank, table, LAPTOP), True)
    assert any(p.startswith("table") and "wider" in p for p in found)


def test_detector_code_before_output(blank):
    code = (
        '<div class="highlight"><pre><code><span class="nb">print</span>'
        "('the answer is 42')</code></pre></div>"
    )
    output = (
        '<div class="result"><div class="highlight"><pre><code>'
        "the answer is 42</code></pre></div></div>"
    )
    record = "<!-- output\nthe answer is 42\n-->"
    page = _tiny(blank, code + output + record)
    assert any("code comes before" in p for p in order_problems(page))
    page = _tiny(blank, output + code + record)
    assert order_problems(page) == []


def test_detector_small_admonition_text(blank):
    small = (
        '<div class="admonition"><p style="font-size:12.8px">small</p></div>'
    )
    assert small_text_problems(_tiny(blank, small, LAPTOP))
    ok = '<div class="admonition"><p style="font-size:16px">ok</p></div>'
    assert small_text_problems(_tiny(blank, ok, LAPTOP)) == []


def test_detector_copy_button_over_text(blank):
    covered = (
        "<pre><nav class='md-code__nav'></nav><code style='display:block'>"
        "a first line long enough to run under the button</code></pre>"
    )
    found = copy_overlap_problems(_tiny(blank, covered))
    assert any("covers" in p for p in found)
    clear = (
        "<pre><nav class='md-code__nav'></nav><code style='display:block;"
        "padding-top:30px'>a first line long enough to run under it</code>"
        "</pre>"
    )
    assert copy_overlap_problems(_tiny(blank, clear)) == []


# --- the measure -----------------------------------------------------


def measure(site):
    """{page id: share of the page's height that is code} at 1280 px."""
    from playwright.sync_api import sync_playwright

    shares = {}
    with sync_playwright() as p, browser.serve(site) as base_url:
        chromium = browser.launch(p)
        try:
            for path in browser.pages(site):
                v = open_page(chromium, base_url, path, LAPTOP)
                shares[browser.page_id(path)] = code_share(v.page)
                v.close()
        finally:
            chromium.close()
    return shares


if __name__ == "__main__":
    site = Path(sys.argv[1] if len(sys.argv) > 1 else browser.SITE)
    for page_id, share in measure(site).items():
        print(f"{page_id:<24} {share:6.1%}")

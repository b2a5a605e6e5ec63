"""Detectors for the browser tests: each returns a list of problems.

A problem is a short sentence; the tests prefix it with the page. The
same functions run on the real site (tests/browser/test_browser_*.py)
and on small broken pages (test_browser_checkers.py), which proves that
they fire.
"""

from pathlib import Path
from urllib.parse import urljoin, urlsplit

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from course import browser

SERIOUS = ("serious", "critical")
MIN_TEXT_CONTRAST = 4.5  # WCAG AA for normal-size text
CONTENT = "article.md-content__inner"

# SVGs that are interface icons, not figures.
ICON_SVG_ANCESTORS = (
    ".md-icon, .twemoji, .md-code__nav, .md-annotation, button, "
    ".md-source, .headerlink, .md-content__button, .md-tag"
)


def report(page, problems):
    """One assertion message naming the page."""
    return f"{page}: " + "\n  ".join(
        [f"{len(problems)} problem(s)"] + list(problems)
    )


# --- loading: console, requests, hosts ------------------------------------


class Visit:
    """A browser context on the served site that records what goes wrong.

    Every request to a host other than the local server is aborted and
    recorded, and so are console errors, uncaught exceptions, failed
    requests and HTTP errors. `loaded` lists the local files fetched.
    """

    def __init__(self, browser_, base_url):
        self.base_url = base_url
        self.context = browser_.new_context(
            viewport=browser.VIEWPORT,
            color_scheme="light",
            reduced_motion="reduce",
        )
        self.problems = []
        self.off_host = []
        self.loaded = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", self._console)
        self.page.on("pageerror", self._page_error)
        self.page.on("requestfailed", self._failed)
        self.page.on("response", self._response)

    def _local(self, url):
        return url.startswith(self.base_url)

    def _route(self, route):
        url = route.request.url
        if self._local(url) or urlsplit(url).scheme in ("data", "blob"):
            route.continue_()
            return
        self.off_host.append(url)
        self.problems.append(
            f"request to another host: {url} (the site must be "
            "self-contained: no CDN, font or API calls)"
        )
        route.abort()

    def _console(self, message):
        if message.type != "error":
            return
        where = (message.location or {}).get("url", "")
        if where in self.off_host:
            return  # already reported as a request to another host
        self.problems.append(f"console error: {message.text} ({where})")

    def _page_error(self, error):
        self.problems.append(f"uncaught exception: {error}")

    def _failed(self, request):
        if request.url in self.off_host:
            return
        self.problems.append(
            f"request failed: {request.url} ({request.failure})"
        )

    def _response(self, response):
        if response.status >= 400:
            self.problems.append(f"HTTP {response.status} for {response.url}")
        elif self._local(response.url):
            self.loaded.append(response.url[len(self.base_url) :])

    def goto(self, path, wait_until="load"):
        self.page.goto(self.base_url + path, wait_until=wait_until)
        # Material's bundle mounts its components on DOMContentLoaded.
        self.page.wait_for_function(
            "() => document.body.dataset.mdColorScheme !== undefined"
            " || !document.querySelector('script[src*=bundle]')",
            timeout=10_000,
        )
        return self.page

    def settle(self):
        """Wait until the network is idle (late fetches, the search
        worker) so that they are recorded too."""
        self.page.wait_for_load_state("networkidle")

    def close(self):
        self.context.close()


# --- what the page shows --------------------------------------------------

_HELPERS = """
const root = document.querySelector('@CONTENT@') || document.body;
const shown = (e) => {
  const r = e.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && e.checkVisibility({
    opacityProperty: true, visibilityProperty: true,
    contentVisibilityAuto: true});
};
const label = (e) => (e.textContent || '').trim().replace(/\\s+/g, ' ')
  .slice(0, 60);
const isFigure = (s) => {
  if (s.closest('@ICONS@') || s.parentElement.closest('svg')) return false;
  if (/icon/i.test(s.getAttribute('class') || '')) return false;
  const r = s.getBoundingClientRect();
  return !(s.getAttribute('aria-hidden') === 'true' && r.width <= 32 &&
    r.height <= 32);
};
const openAll = () => root.querySelectorAll('details')
  .forEach((d) => { d.open = true; });
"""


def _evaluate(page, body, arg=None):
    """Run the JavaScript `body` on the page, with `arg` and the helpers
    above in scope; return what it returns."""
    source = "(arg) => {" + _HELPERS + body + "}"
    source = source.replace("@CONTENT@", CONTENT)
    return page.evaluate(source.replace("@ICONS@", ICON_SVG_ANCESTORS), arg)


def open_details(page):
    """Open every <details> of the content."""
    _evaluate(page, "openAll();")


_OUTPUTS_JS = r"""
openAll();
const problems = [];
const seen = new Set();
// The recorded output (an HTML comment) follows what the block printed.
const walker = document.createTreeWalker(root, NodeFilter.SHOW_COMMENT);
let n = 0;
while (walker.nextNode()) {
  const c = walker.currentNode;
  if (!/^\s*output\b/.test(c.data)) continue;
  n += 1;
  let el = c.previousSibling;
  while (el && el.nodeType !== 1) {
    if (el.nodeType === 3 && el.data.trim()) break;
    el = el.previousSibling;
  }
  if (!el || el.nodeType !== 1) {
    problems.push(`lab output #${n}: nothing rendered before its record`);
    continue;
  }
  seen.add(el);
  if (!shown(el)) {
    problems.push(`lab output #${n} ("${label(el)}") is not visible`);
    continue;
  }
  const graphic = el.querySelector('svg, img, canvas') ||
    ['svg', 'img'].includes(el.localName);
  if (!graphic && !el.textContent.trim()) {
    problems.push(`lab output #${n} is empty`);
  }
  if (el.matches('.result')) {
    const norm = (s) => s.replace(/\s+/g, ' ').trim();
    const want = norm(c.data.replace(/^\s*output\b/, ''));
    if (want && norm(el.innerText) !== want) {
      problems.push(`lab output #${n} ("${label(el)}") differs from ` +
        `its record ("${want.slice(0, 60)}")`);
    }
  }
}
root.querySelectorAll('.result').forEach((el, i) => {
  if (seen.has(el)) return;
  if (!shown(el)) problems.push(`result block #${i + 1} ("${label(el)}")` +
    ' is not visible');
  else if (!el.textContent.trim() && !el.querySelector('svg, img'))
    problems.push(`result block #${i + 1} is empty`);
});
return {problems, count: n};
"""

_FIGURES_JS = r"""
openAll();
const problems = [];
const figures = [...root.querySelectorAll('svg')]
  .filter(isFigure);
figures.forEach((svg, i) => {
  const name = svg.getAttribute('aria-label') ||
    (svg.getAttribute('aria-labelledby') || '').split(/\s+/)
      .map((id) => document.getElementById(id))
      .filter(Boolean).map((e) => e.textContent).join(' ').trim() ||
    (svg.querySelector(':scope > title') || {}).textContent;
  const what = `figure #${i + 1} (inline SVG${svg.id ? ' #' + svg.id : ''})`;
  if (!shown(svg)) problems.push(`${what} is not visible`);
  if (svg.getAttribute('aria-hidden') === 'true')
    problems.push(`${what} is hidden from screen readers (aria-hidden)`);
  if (svg.getAttribute('role') !== 'img')
    problems.push(`${what} has no role="img"`);
  if (!name || !name.trim())
    problems.push(`${what} has no text alternative (aria-label, ` +
      'aria-labelledby or <title>)');
});
root.querySelectorAll('img').forEach((img, i) => {
  if (img.closest('@ICONS@')) return;
  const what = `image #${i + 1} (${img.getAttribute('src')})`;
  if (!img.complete || img.naturalWidth === 0)
    problems.push(`${what} did not load`);
  else if (!shown(img)) problems.push(`${what} is not visible`);
  const decorative = img.getAttribute('role') === 'presentation' ||
    img.getAttribute('role') === 'none';
  if (!decorative && !(img.getAttribute('alt') || '').trim())
    problems.push(`${what} has no alt text`);
});
return {problems, count: figures.length};
"""

_MATH_JS = r"""
openAll();
const problems = [];
root.querySelectorAll('.arithmatex').forEach((a, i) => {
  if (!a.querySelector('math'))
    problems.push(`formula #${i + 1} ("${label(a)}") is not MathML`);
});
const maths = [...document.querySelectorAll('math')];
maths.forEach((m, i) => {
  const what = `formula #${i + 1} ("${label(m)}")`;
  if (!shown(m)) problems.push(`${what} has no size or is hidden`);
  // Rendered as MathML, not as unknown inline elements.
  const display = getComputedStyle(m).display;
  if (!display.includes('math'))
    problems.push(`${what} is not laid out as math (display: ${display})`);
});
document.querySelectorAll('script[src]').forEach((s) => {
  if (/mathjax|katex/i.test(s.src)) problems.push(`math script ${s.src}`);
});
return {problems, count: maths.length};
"""


def lab_output_problems(page):
    """Every recorded lab output and result block is shown, non-empty and
    (for text results) equal to its record. Returns (problems, how many
    recorded outputs the page has)."""
    found = _evaluate(page, _OUTPUTS_JS)
    return found["problems"], found["count"]


def figure_problems(page):
    """Figures (inline SVGs) and images are visible and named."""
    found = _evaluate(page, _FIGURES_JS)
    return found["problems"], found["count"]


def math_problems(page):
    """Formulas are MathML that the browser lays out, with a size."""
    found = _evaluate(page, _MATH_JS)
    return found["problems"], found["count"]


# --- hidden answers -------------------------------------------------------


def mark_closed_details(page):
    """Remember which <details> the page starts with closed (the other
    checks open them all); details_problems closes and clicks those."""
    page.evaluate(
        f"""() => {{
          if (document.body.dataset.testDetails) return;
          document.body.dataset.testDetails = 'marked';
          document.querySelectorAll('{CONTENT} details:not([open])')
            .forEach((d) => {{ d.dataset.testClosed = ''; }});
        }}"""
    )


def details_problems(page):
    """Each <details> that starts closed opens on a click on its summary
    and then shows its content. Returns (problems, how many were tried)."""
    mark_closed_details(page)
    page.evaluate(
        "document.querySelectorAll('details[data-test-closed]')"
        ".forEach((d) => { d.open = false; })"
    )
    problems = []
    closed = page.locator(f"{CONTENT} details[data-test-closed]")
    count = closed.count()
    handles = closed.element_handles()
    for i, details in enumerate(handles, 1):
        summary = details.query_selector(":scope > summary")
        title = (summary.inner_text() if summary else "").strip()[:50]
        what = f'details #{i} ("{title}")'
        if summary is None:
            problems.append(f"{what} has no summary to click")
            continue
        # Document order: an outer <details> was opened before this one.
        summary.scroll_into_view_if_needed()
        summary.click()
        state = details.evaluate(
            """d => {
              const kids = [...d.children].filter(
                (c) => c.localName !== 'summary');
              const shown = kids.filter((c) => {
                const r = c.getBoundingClientRect();
                return r.width > 0 && r.height > 0 && c.checkVisibility(
                  {opacityProperty: true, visibilityProperty: true});
              });
              return {open: d.open, kids: kids.length,
                      shown: shown.length,
                      text: shown.map((c) => c.textContent).join('').trim()
                        .length};
            }"""
        )
        if not state["open"]:
            problems.append(f"{what} did not open on click")
        elif not state["kids"] or not state["text"]:
            problems.append(f"{what} opened but shows no content")
        elif state["shown"] < state["kids"]:
            problems.append(f"{what} opened but some content is hidden")
    return problems, count


# --- copy buttons ---------------------------------------------------------

SENTINEL = "clipboard before the copy button was clicked"


_CODE_BLOCKS_JS = r"""
openAll();
// The radio input of each content tab around `el`, outermost first.
const tabsOf = (el) => {
  const tabs = [];
  for (let b = el.closest('.tabbed-block'); b;
       b = b.parentElement.closest('.tabbed-block')) {
    const blocks = [...b.parentElement.children]
      .filter((c) => c.matches('.tabbed-block'));
    const inputs = [...b.closest('.tabbed-set').children]
      .filter((c) => c.localName === 'input');
    tabs.unshift(inputs[blocks.indexOf(b)].id);
  }
  return tabs;
};
return [...root.querySelectorAll('pre > code')].map((code, i) => {
  const pre = code.parentElement;
  const sel = `#${pre.id} > code`;
  const button = pre.id && [...document.querySelectorAll(
    'button[data-md-type=copy]')].find(
      (b) => b.dataset.clipboardTarget === sel);
  return {index: i, id: pre.id, button: !!button, tabs: tabsOf(pre),
          text: code.innerText};
});
"""


def copy_problems(page):
    """Every code block has a copy button, and clicking it puts the code
    on the clipboard; a block in a content tab is clicked after its tab,
    as a reader would. Returns (problems, code blocks checked)."""
    blocks = _evaluate(page, _CODE_BLOCKS_JS)
    problems = []
    for block in blocks:
        what = f"code block #{block['index'] + 1}"
        first = block["text"].strip().splitlines()[:1]
        if first:
            what += f' ("{first[0][:40]}")'
        if not block["button"]:
            problems.append(f"{what} has no copy button")
            continue
        for tab in block["tabs"]:
            page.locator(f'label[for="{tab}"]').click()
        page.evaluate("t => navigator.clipboard.writeText(t)", SENTINEL)
        button = page.locator(
            f'button[data-md-type=copy][data-clipboard-target="#'
            f'{block["id"]} > code"]'
        )
        try:
            button.scroll_into_view_if_needed(timeout=10_000)
        except PlaywrightTimeoutError:
            problems.append(f"{what}: its copy button cannot be seen")
            continue
        button.click()
        copied = page.evaluate("navigator.clipboard.readText()")
        if copied == SENTINEL:
            problems.append(f"{what}: the copy button copied nothing")
        elif _lines(copied) != _lines(block["text"]):
            problems.append(
                f"{what}: the clipboard holds {copied[:40]!r}, not the code"
            )
    return problems, len(blocks)


def _lines(text):
    return [line.rstrip() for line in text.strip("\n").splitlines()]


# --- palette and figure contrast ------------------------------------------

_CONTRAST_JS = r"""
openAll();
const minimum = arg;
const rgba = (s) => {
  const m = (s || '').match(/rgba?\(([^)]+)\)/);
  if (!m) return null;
  const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(parseFloat);
  return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1};
};
const lum = (c) => {
  const f = (v) => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
};
const ratio = (a, b) => {
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
};
const SHAPES = ['rect', 'path', 'circle', 'ellipse', 'polygon', 'use'];
const backdrop = (el, x, y) => {
  for (const e of document.elementsFromPoint(x, y)) {
    if (e === el || el.contains(e) || e.contains(el) && e.closest('svg')
        && e.localName !== 'svg') continue;
    const s = getComputedStyle(e);
    if (e instanceof SVGElement && e.localName !== 'svg') {
      if (!SHAPES.includes(e.localName)) continue;
      const fill = rgba(s.fill);
      const alpha = parseFloat(s.fillOpacity) * parseFloat(s.opacity);
      if (fill && fill.a * alpha >= 0.5) return fill;
      continue;
    }
    const bg = rgba(s.backgroundColor);
    if (bg && bg.a >= 0.5) return bg;
  }
  return rgba(getComputedStyle(document.body).backgroundColor) ||
    {r: 255, g: 255, b: 255, a: 1};
};
const low = new Map();  // one problem per figure, colour pair
let checked = 0;
const figures = [...root.querySelectorAll('svg')]
  .filter(isFigure);
const inView = (b) => b.top >= 0 && b.left >= 0 &&
  b.bottom <= innerHeight && b.right <= innerWidth;
figures.forEach((svg, f) => {
  svg.scrollIntoView({block: 'center', behavior: 'instant'});
  // <text>, or matplotlib's glyph groups (text drawn as paths).
  const texts = [...svg.querySelectorAll('text, g[id^="text_"]')]
    .filter((t) => !t.parentElement.closest('text, g[id^="text_"]'));
  for (const t of texts) {
    const paint = t.localName === 'text' ? t :
      (t.querySelector('use, path') || t);
    const fill = rgba(getComputedStyle(paint).fill);
    if (!fill || fill.a === 0) continue;
    let b = t.getBoundingClientRect();
    if (!b.width || !b.height) continue;
    if (!inView(b)) {  // a figure taller than the window
      t.scrollIntoView({block: 'center', behavior: 'instant'});
      b = t.getBoundingClientRect();
    }
    const bg = backdrop(t, b.left + b.width / 2, b.top + b.height / 2);
    checked += 1;
    const r = ratio(fill, bg);
    if (r < minimum) {
      const key = `figure #${f + 1}: text rgb(${fill.r}, ${fill.g}, ` +
        `${fill.b}) on rgb(${bg.r}, ${bg.g}, ${bg.b}), contrast ` +
        `${r.toFixed(2)} < ${minimum}`;
      if (!low.has(key)) low.set(key, []);
      low.get(key).push(t.textContent.trim().slice(0, 30));
    }
  }
});
window.scrollTo({top: 0, behavior: 'instant'});
const problems = [...low].map(([key, texts]) => `${key}: ` +
  texts.slice(0, 4).map((x) => `"${x}"`).join(', ') +
  (texts.length > 4 ? ` and ${texts.length - 4} more` : ''));
return {problems, count: checked};
"""


def scheme(page):
    return page.evaluate("document.body.dataset.mdColorScheme")


def contrast_problems(page, minimum=MIN_TEXT_CONTRAST):
    """Text in figures contrasts with what is behind it (WCAG ratio)."""
    found = _evaluate(page, _CONTRAST_JS, minimum)
    return found["problems"], found["count"]


def toggle_palette(page):
    """Click the visible light/dark toggle; return the new scheme."""
    before = scheme(page)
    page.locator(
        "form[data-md-component=palette] label:not([hidden])"
    ).first.click()
    page.wait_for_function(
        "s => document.body.dataset.mdColorScheme !== s",
        arg=before,
        timeout=5000,
    )
    return scheme(page)


def palette_problems(page):
    """The toggle switches default <-> slate, the background follows, and
    figure text stays legible in both palettes."""
    problems = []
    start = scheme(page)
    if start != "default":
        problems.append(f"page opened in palette {start!r}, not 'default'")
    light_bg = page.evaluate("getComputedStyle(document.body).background")
    found, _ = contrast_problems(page)
    problems += [f"light palette: {p}" for p in found]
    try:
        dark = toggle_palette(page)
    except Exception as error:  # a timeout: nothing changed
        return problems + [f"the palette toggle did nothing ({error})"]
    if dark != "slate":
        problems.append(f"the toggle switched to {dark!r}, not 'slate'")
    dark_bg = page.evaluate("getComputedStyle(document.body).background")
    if dark_bg == light_bg:
        problems.append("the background did not change with the palette")
    found, _ = contrast_problems(page)
    problems += [f"dark palette: {p}" for p in found]
    # Text contrast of the whole page on slate (axe runs on the light
    # palette in test_accessibility).
    found = axe_problems(page, options={"runOnly": ["color-contrast"]})
    problems += [f"dark palette: {p}" for p in found]
    back = toggle_palette(page)
    if back != "default":
        problems.append(f"toggling back gave {back!r}, not 'default'")
    return problems


# --- accessibility --------------------------------------------------------

_AXE = Axe()


def axe_problems(page, options=None, context=None):
    """Serious and critical axe-core violations, one line per rule, in
    the whole page or in what the CSS selector `context` picks.

    axe.min.js is the copy bundled with axe-playwright-python; it is
    injected into the page, so running it fetches nothing (the Visit
    records any request it would make)."""
    open_details(page)
    results = _AXE.run(
        page,
        context=context,
        options=options or {"resultTypes": ["violations"]},
    )
    problems = []
    for v in results.response["violations"]:
        if v["impact"] not in SERIOUS:
            continue
        nodes = v["nodes"]
        targets = ", ".join(" ".join(map(str, n["target"])) for n in nodes[:3])
        more = len(nodes) - 3
        problems.append(
            f"axe {v['impact']} {v['id']}: {v['help']} "
            f"[{targets}{f' and {more} more' if more > 0 else ''}]"
        )
    return problems


# --- links ----------------------------------------------------------------


def link_problems(site, path, site_url=None):
    """Every internal href/src of the page resolves to a file in site/,
    and every fragment to an id (or <a name>) in its target page."""
    site = Path(site)
    if site_url is None:
        site_url = browser.mkdocs_config().site_url or ""
    own = browser.page_file(site, path)
    if own is None:
        return [f"no file in site/ serves /{path}"]
    problems = []
    for tag, attribute, url in browser.parse(own).links:
        target = browser.resolve(path, url, site_url)
        if target is None:
            continue  # another site, mailto:, data:
        where, fragment = target
        file = browser.page_file(site, where)
        if file is None:
            problems.append(f"<{tag} {attribute}={url!r}>: no such file")
            continue
        if fragment and file.suffix == ".html":
            ids = browser.parse(file).ids
            if fragment not in ids and fragment != "top":
                problems.append(
                    f"<{tag} {attribute}={url!r}>: no id {fragment!r} "
                    f"in {file.relative_to(site).as_posix()}"
                )
    return problems


# --- search ---------------------------------------------------------------


def search(page, query):
    """Type `query` into the search box; return the result pages in
    order (site paths, without query or fragment)."""
    box = page.locator("input.md-search__input")
    if not box.is_visible():
        page.locator("label[for=__search]").first.click()
    box.click()
    box.press_sequentially(query)
    page.wait_for_selector(
        ".md-search-result__item, .md-search-result__meta", timeout=10_000
    )
    page.wait_for_function(
        "q => { const m = document.querySelector("
        "'.md-search-result__meta'); return document.querySelector("
        "'.md-search-result__item') || (m && /no match/i.test("
        "m.textContent)); }",
        arg=query,
        timeout=10_000,
    )
    hrefs = page.evaluate(
        """() => [...document.querySelectorAll(
          '.md-search-result__list > .md-search-result__item')]
          .map((li) => li.querySelector('a').getAttribute('href'))"""
    )
    here = page.url
    found = []
    for href in hrefs:
        absolute = urlsplit(urljoin(here, href))
        path = absolute.path.lstrip("/")
        if path not in found:
            found.append(path)
    return found

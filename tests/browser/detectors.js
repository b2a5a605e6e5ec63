// What the browser tests look for on a page. Each function returns a
// list of problems, short sentences; tests/browser/test_detectors.py
// shows each one firing on a small page built to break it.
// (conftest.py's `detect` fixture evaluates this file on the page.)

const root = document.querySelector("article.md-content__inner") ?? document.body;
const shown = (e) => {
  const r = e.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && e.checkVisibility();
};
const name = (e) => (e.textContent ?? "").trim().replace(/\s+/g, " ").slice(0, 40);
const scrolls = (e) => ["auto", "scroll"].includes(getComputedStyle(e).overflowX);
// Inline SVG figures, not interface icons.
const ICONS = ".md-icon, .twemoji, .md-code__nav, button, clipboard-copy, .headerlink";
const figures = () =>
  [...root.querySelectorAll("svg:not([aria-hidden=true])")].filter(
    (s) => !s.closest(ICONS) && !s.parentElement.closest("svg"),
  );
const openAll = () => root.querySelectorAll("details").forEach((d) => (d.open = true));
const OUTPUTS = ".lab-output, .result, .jp-OutputArea-output, .planner-answer";

// The page scrolls sideways, or an output or a table is clipped, sticks
// out of the column, or (at laptop width) needs its own scroll box.
function wide(laptop) {
  openAll();
  const problems = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth + 1) {
    problems.push(`the page scrolls sideways: ${doc.scrollWidth} px in ${doc.clientWidth}`);
  }
  const column = root.getBoundingClientRect().right;
  for (const e of root.querySelectorAll("pre > code, .jp-OutputArea-output pre, table")) {
    if (!shown(e) || e.closest(".course-runner")) continue;
    const what = `${e.localName === "table" ? "table" : "code or output"} "${name(e)}"`;
    // a table's own box is as wide as its content: look from its parent
    let box = e.localName === "table" ? e.parentElement : e;
    while (box !== root && !scrolls(box) && getComputedStyle(box).overflowX === "visible") {
      box = box.parentElement;
    }
    if (box === root) {
      if (e.getBoundingClientRect().right > column + 1) problems.push(`${what} sticks out of the column`);
    } else if (!scrolls(box) && e.scrollWidth > box.clientWidth + 1) {
      problems.push(`${what} is clipped: ${e.scrollWidth} px in a ${box.clientWidth} px box`);
    } else if (laptop && (e.closest(OUTPUTS) || e.localName === "table") && box.scrollWidth > box.clientWidth + 1) {
      problems.push(`${what} is wider than its box at laptop width (${box.scrollWidth} px in ${box.clientWidth})`);
    }
  }
  return problems;
}

// Text smaller than `minimum` px: in admonitions, answers and tables
// (`where` "boxes"), or in figures not in a scroll box ("figures").
function small(where, minimum) {
  openAll();
  const found = new Set();
  const texts =
    where === "figures"
      ? figures()
          .filter((s) => ![...ancestors(s)].some(scrolls))
          .flatMap((s) => [...s.querySelectorAll("text")])
      : [...root.querySelectorAll(".admonition, details, table")].flatMap((b) => [
          ...b.querySelectorAll("*"),
        ]);
  for (const t of texts) {
    const own = [...t.childNodes].some((n) => n.nodeType === 3 && n.data.trim());
    if (!own || !shown(t) || t.closest("msup > :not(:first-child), msub > :not(:first-child)")) continue;
    let px = parseFloat(getComputedStyle(t).fontSize);
    const m = t instanceof SVGElement && t.getScreenCTM();
    if (m) px *= Math.hypot(m.a, m.b);
    if (px < minimum - 0.05) found.add(`"${name(t)}" is ${px.toFixed(1)} px, under ${minimum}`);
  }
  return [...found].slice(0, 5);
}

function* ancestors(e) {
  for (let a = e.parentElement; a && a !== root; a = a.parentElement) yield a;
}

// Figures without a text alternative or a caption, formulas that are not
// MathML, images that did not load.
function unnamed() {
  openAll();
  const problems = [];
  figures().forEach((svg, i) => {
    const label =
      svg.getAttribute("aria-label") ||
      (svg.getAttribute("aria-labelledby") ?? "")
        .split(/\s+/)
        .map((id) => document.getElementById(id)?.textContent ?? "")
        .join(" ")
        .trim();
    if (svg.getAttribute("role") !== "img" || !label) {
      problems.push(`figure #${i + 1} has no role="img" with a name`);
    }
    if (!svg.closest("figure")?.querySelector("figcaption")?.textContent.trim()) {
      problems.push(`figure #${i + 1} has no caption`);
    }
  });
  root.querySelectorAll(".arithmatex").forEach((a, i) => {
    const math = a.querySelector("math");
    if (!math || !shown(math) || !getComputedStyle(math).display.includes("math")) {
      problems.push(`formula #${i + 1} ("${name(a)}") is not laid out as MathML`);
    }
  });
  root.querySelectorAll("img").forEach((img) => {
    if (!img.complete || !img.naturalWidth || !img.alt.trim()) {
      problems.push(`image ${img.getAttribute("src")} did not load or has no alt text`);
    }
  });
  return problems;
}

// A copy button over a code block's text.
function covered() {
  openAll();
  const problems = [];
  const meet = (a, b) =>
    Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 &&
    Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5;
  for (const nav of root.querySelectorAll(".md-code__nav")) {
    const code = nav.closest("pre")?.querySelector("code");
    if (!code || !shown(nav)) continue;
    const button = nav.getBoundingClientRect();
    const box = code.getBoundingClientRect();
    const range = document.createRange();
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const t = walker.currentNode;
      range.selectNodeContents(t);
      if (!meet(range.getBoundingClientRect(), button)) continue;
      for (let i = 0; i < t.data.length; i++) {
        if (!t.data[i].trim()) continue;
        range.setStart(t, i);
        range.setEnd(t, i + 1);
        const r = range.getBoundingClientRect();
        if (meet(r, box) && meet(r, button)) {
          problems.push(`a copy button covers "${t.data.trim().slice(0, 30)}"`);
          break;
        }
      }
    }
  }
  return problems;
}

// Notebook outputs that break words, or the plain copy of each cell's
// code (for its copy button) left visible.
function notebook() {
  const problems = [];
  for (const e of root.querySelectorAll(".jp-OutputArea-output, .jp-OutputArea-output *")) {
    const s = getComputedStyle(e);
    if (s.wordBreak === "break-all" || s.overflowWrap === "anywhere") {
      problems.push(`<${e.localName} class="${e.className}"> breaks words`);
    }
  }
  for (const e of document.querySelectorAll(".clipboard-copy-txt")) {
    if (shown(e)) problems.push(`the copy text of ${e.id} is shown`);
  }
  return problems.slice(0, 5);
}

// Not a detector: a page shows a few kinds of text many times over, and
// its code blocks a few pairs of colours thousands of times. Mark the
// smallest shown element of each kind of text with data-axe-sample, so
// that axe's colour rules check each kind once (test_pages.py). A kind
// is the tag, the class, the colour, size and weight, the parent's
// colour (for links in text) and every background and opacity between
// the text and the first opaque background behind it. Returns how many
// it marked.
function sampleText() {
  document.querySelectorAll("[data-axe-sample]").forEach((e) => e.removeAttribute("data-axe-sample"));
  const behind = (e) => {
    const layers = [];
    for (let a = e; a; a = a.parentElement) {
      const s = getComputedStyle(a);
      layers.push(s.backgroundColor, s.backgroundImage, s.opacity, s.filter, s.mixBlendMode);
      if (s.backgroundColor.startsWith("rgb(") || s.backgroundImage !== "none") break;
    }
    return layers.join(",");
  };
  const kinds = new Map();
  for (const e of document.body.querySelectorAll("*")) {
    if (![...e.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim())) continue;
    if (!shown(e)) continue;
    const s = getComputedStyle(e);
    const parent = e.parentElement ? getComputedStyle(e.parentElement).color : "";
    const key = [e.localName, e.className, s.color, s.fontSize, s.fontWeight, s.textShadow, parent, behind(e)].join("|");
    const size = e.getElementsByTagName("*").length;
    if (!kinds.has(key) || size < kinds.get(key).size) kinds.set(key, { e, size });
  }
  kinds.forEach(({ e }) => e.setAttribute("data-axe-sample", ""));
  return kinds.size;
}

// "Run in your browser": an editor, Run, Stop and Reset buttons and the
// output, for one lab block. The page loads this module (a few KB);
// Python (assets/pyodide/: 13.5 MB, 6.3 MB gzipped) loads in a worker
// on the first Run click only, from the site's own files.
//
//   import { mountRunner, mountAll } from "<site>/assets/run/run.js";
//   mountRunner(element, { source, session, page, archive });
//   mountAll();  // every <script type="application/json"
//                // data-course-runner> of the page (course/runner.py)
//
// `source` is the block's code as the build ran it, `session` its
// markdown-exec session (blocks of one session share their globals, as
// on the page), `archive` the name of the labs' zip in assets/run/.
// Options: `limit` (seconds a run may take, default 30).
//
// The editor is a <textarea> over a highlighted copy of its text: the
// colours are Material's own code colours (its Pygments classes), so it
// needs no editor library and follows the light and dark palettes.

const HERE = new URL(".", import.meta.url);
const PYODIDE = new URL("../pyodide/", HERE).href;
const DEFAULT_LIMIT_S = 30;

// --- highlighting -----------------------------------------------------------

const KEYWORDS = new Set(
  (
    "and as assert async await break class continue def del elif else " +
    "except finally for from global if import in is lambda nonlocal not " +
    "or pass raise return try while with yield match case"
  ).split(" "),
);
const CONSTANTS = new Set(["True", "False", "None"]);
const BUILTINS = new Set(
  (
    "abs all any bool dict enumerate float format getattr int isinstance " +
    "len list map max min print range repr round set sorted str sum " +
    "tuple type zip ValueError TypeError KeyError"
  ).split(" "),
);
// One token per match: comment, string (triple-quoted first, with any
// prefix), number, name, operator, anything else.
const TOKEN = new RegExp(
  [
    /(#[^\n]*)/,
    /([rRbBuUfF]{0,2}(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?))/,
    /(\b(?:0[xX][\da-fA-F_]+|\d[\d_]*\.?[\d_]*(?:[eE][+-]?\d+)?j?|\.\d[\d_]*(?:[eE][+-]?\d+)?)\b)/,
    /([A-Za-z_]\w*)/,
    /([-+*/%=<>!&|^~@:]+)/,
  ]
    .map((r) => r.source)
    .join("|"),
  "g",
);

function escapeHTML(text) {
  return text.replace(
    /[&<>]/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c],
  );
}

function span(cls, text) {
  return `<span class="${cls}">${escapeHTML(text)}</span>`;
}

export function highlight(code) {
  let html = "";
  let last = 0;
  let previous = "";
  for (const m of code.matchAll(TOKEN)) {
    html += escapeHTML(code.slice(last, m.index));
    const [text, comment, string, number, name, operator] = m;
    if (comment) html += span("c1", text);
    else if (string) html += span("s2", text);
    else if (number) html += span("mi", text);
    else if (name && KEYWORDS.has(name)) html += span("k", text);
    else if (name && CONSTANTS.has(name)) html += span("kc", text);
    else if (name && (previous === "def" || previous === "class"))
      html += span("nf", text);
    else if (name && BUILTINS.has(name)) html += span("nb", text);
    else if (operator) html += span("o", text);
    else html += escapeHTML(text);
    if (name) previous = name;
    last = m.index + text.length;
  }
  // A final newline needs a character after it to give the line height.
  return `${html}${escapeHTML(code.slice(last))}\n`;
}

// --- the page's Python: one worker, shared by the page's runners -----------

const runners = []; // every mounted runner of the page
let worker = null;
let ran = new Set(); // runners whose code ran in the current worker
let nextId = 0;
let queue = Promise.resolve(); // one run at a time
let pageArchive = null; // the labs' archive the page's runners name

function newWorker() {
  worker = new Worker(new URL("worker.js", HERE), { type: "module" });
  ran = new Set();
}

// Stop the worker (a run that never ends, or the Stop button) and start
// a fresh one: the sessions' globals are gone, so the next run of a
// block first runs the earlier blocks of its session again.
function restart() {
  if (worker) worker.terminate();
  worker = null;
  ran = new Set();
}

function send(message, onEvent) {
  if (worker === null) newWorker();
  const id = ++nextId;
  const current = worker;
  return new Promise((resolve) => {
    const listen = (event) => {
      if (event.data.id !== id) return;
      onEvent(event.data);
      if (event.data.type === "done") {
        current.removeEventListener("message", listen);
        resolve(event.data);
      }
    };
    current.addEventListener("message", listen);
    current.postMessage({
      id,
      ...message,
      pyodideURL: PYODIDE,
      archiveURL: new URL(message.archive, HERE).href,
    });
    current.stopped = () => {
      current.removeEventListener("message", listen);
      resolve({ type: "done", stopped: true });
    };
  });
}

// Earlier blocks of the same session, in page order, not yet run in
// this worker: what the page gives a block before it runs.
function earlier(runner) {
  if (!runner.session) return [];
  return runners
    .filter(
      (r) =>
        r.session === runner.session &&
        r !== runner &&
        !ran.has(r) &&
        r.element.compareDocumentPosition(runner.element) &
          Node.DOCUMENT_POSITION_FOLLOWING,
    )
    .sort((a, b) =>
      a.element.compareDocumentPosition(b.element) &
      Node.DOCUMENT_POSITION_FOLLOWING
        ? -1
        : 1,
    );
}

// Run `code` in the page's Python, after whatever runs now, for other
// parts of a page than the runners (planner.js). `archive` defaults to
// the one the page's runners name. Resolves to {output, error}, or
// {stopped: why} when the time limit (seconds) ended it; `onEvent`
// hears "loading" and "started" as a runner does.
export function runCode(code, options = {}) {
  const { session = null, archive = pageArchive } = options;
  const onEvent = options.onEvent ?? (() => {});
  const limit = (options.limit ?? DEFAULT_LIMIT_S) * 1000;
  const job = async () => {
    if (!archive) {
      return { output: "", error: "This page has no Python to run." };
    }
    let timer = null;
    let stopped = null;
    const result = await send({ code, session, archive }, (event) => {
      if (event.type === "started") {
        timer = setTimeout(() => {
          stopped = `time limit of ${limit / 1000} s`;
          const current = worker;
          restart();
          if (current && current.stopped) current.stopped();
        }, limit);
      }
      onEvent(event);
    });
    clearTimeout(timer);
    return stopped ? { stopped } : result;
  };
  const done = queue.then(job, job);
  queue = done;
  return done;
}

// --- one runner ----------------------------------------------------------------

function button(label, title) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "md-button course-runner__button";
  b.textContent = label;
  b.title = title;
  return b;
}

function loadStyle() {
  // the site lists run.css in extra_css; a page without it gets it here
  const linked = 'link[data-course-runner-css], link[href$="run/run.css"]';
  if (document.querySelector(linked)) return;
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = new URL("run.css", HERE).href;
  link.dataset.courseRunnerCss = "";
  document.head.append(link);
}

export function mountRunner(element, options) {
  const { source, session = null, page = "", archive } = options;
  const limit = (options.limit ?? DEFAULT_LIMIT_S) * 1000;
  pageArchive ??= archive;
  loadStyle();
  const root = document.createElement("div");
  root.className = "course-runner";
  root.dataset.session = session ?? "";
  root.dataset.page = page;

  const editor = document.createElement("div");
  editor.className = "course-runner__editor highlight";
  const shown = document.createElement("pre");
  shown.setAttribute("aria-hidden", "true");
  const code = document.createElement("code");
  shown.append(code);
  const text = document.createElement("textarea");
  text.spellcheck = false;
  text.autocapitalize = "off";
  text.setAttribute("autocorrect", "off");
  text.setAttribute("aria-label", "Python code of this block (editable)");
  text.value = source;
  editor.append(shown, text);

  const bar = document.createElement("div");
  bar.className = "course-runner__bar";
  const run = button("Run", "Run this code in your browser (Ctrl+Enter)");
  const stop = button("Stop", "Stop the running code");
  const reset = button("Reset", "Put back the code of the page");
  stop.disabled = true;
  const status = document.createElement("span");
  status.className = "course-runner__status";
  status.setAttribute("role", "status");
  bar.append(run, stop, reset, status);

  const output = document.createElement("pre");
  output.className = "course-runner__output";
  output.setAttribute("aria-live", "polite");
  output.hidden = true;

  root.append(editor, bar, output);
  element.replaceChildren(root);

  const paint = () => {
    code.innerHTML = highlight(text.value);
  };
  text.addEventListener("input", paint);
  paint();

  const runner = { element: root, session, code: () => text.value };
  runners.push(runner);

  const show = (result, seconds) => {
    output.hidden = false;
    output.classList.toggle("course-runner__output--error", !!result.error);
    output.textContent = (result.output || "") + (result.error || "");
    status.textContent = result.error
      ? "Error"
      : `Done in ${seconds.toFixed(1)} s`;
    root.dataset.state = result.error ? "error" : "done";
  };

  async function execute() {
    const clicked = performance.now();
    run.disabled = true;
    stop.disabled = false;
    root.dataset.state = "waiting";
    status.textContent = "Waiting…";
    let timer = null;
    const onEvent = (event) => {
      if (event.type === "loading") {
        root.dataset.state = "loading";
        status.textContent = "Loading Python (first run only)…";
      } else if (event.type === "started") {
        root.dataset.state = "running";
        status.textContent = "Running…";
        clearTimeout(timer);
        timer = setTimeout(() => halt(`time limit of ${limit / 1000} s`), limit);
      }
    };
    const halt = (why) => {
      const current = worker;
      restart();
      if (current && current.stopped) current.stopped();
      stopped = why;
    };
    let stopped = null;
    stop.onclick = () => halt("Stop");
    let result = null;
    for (const before of [...earlier(runner), runner]) {
      result = await send(
        { code: before.code(), session, archive },
        onEvent,
      );
      if (result.stopped) break;
      ran.add(before);
      if (result.error && before !== runner) {
        result = {
          output: "",
          error:
            "An earlier block of this session failed, so this one " +
            `was not run:\n${result.error}`,
        };
        break;
      }
    }
    clearTimeout(timer);
    const seconds = (performance.now() - clicked) / 1000;
    if (stopped) {
      output.hidden = false;
      output.classList.add("course-runner__output--error");
      output.textContent = `Stopped (${stopped}). Python was restarted.`;
      status.textContent = "Stopped";
      root.dataset.state = "stopped";
    } else {
      show(result, seconds);
    }
    root.dataset.seconds = seconds.toFixed(3);
    run.disabled = false;
    stop.disabled = true;
  }

  run.addEventListener("click", () => {
    queue = queue.then(execute, execute);
  });
  text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      run.click();
    }
  });
  reset.addEventListener("click", () => {
    text.value = source;
    paint();
    output.hidden = true;
    output.textContent = "";
    status.textContent = "";
    delete root.dataset.state;
  });
  return runner;
}

// Mount a runner in place of every runner data element of `root`.
export function mountAll(root = document) {
  const found = root.querySelectorAll(
    'script[type="application/json"][data-course-runner]',
  );
  for (const data of found) {
    const holder = document.createElement("div");
    data.replaceWith(holder);
    mountRunner(holder, JSON.parse(data.textContent));
  }
}

// As the page's script (mkdocs.yml, extra_javascript), mount every
// runner at once; Pyodide itself waits for the first Run. A second
// mountAll() finds nothing left to mount.
mountAll();

// "Run in your browser": an editor, Run, Stop and Reset, and the output,
// for every lab block the build offered. The page loads this module
// (a few KB); Python (assets/pyodide/) loads in a worker on the first
// Run, from the site's own files.
//
// The build decides everything and writes it into each block's
// <script type="application/json" data-course-runner> (course/build/runner.py):
// `source` (the code), `setup` (the earlier blocks of its session, run
// first in the same fresh globals, as the page ran them), `limit` (in
// seconds), `page` and `archive` (the labs' zip in assets/run/).
// The editor is CodeJar, coloured by highlight.js (assets/run/vendor/).

import { CodeJar } from "./vendor/codejar.js";
import hljs from "./vendor/highlight.js";
import python from "./vendor/python.js";

hljs.registerLanguage("python", python);

const HERE = new URL(".", import.meta.url);
const PYODIDE = new URL("../pyodide/", HERE).href;

let worker = null; // the page's Python, started on the first run
let running = null; // {id, resolve} of the run in flight
let nextId = 0;
let queue = Promise.resolve(); // one run at a time
let page = null; // {archive, limit} of the page's first runner

// End the run in flight (Stop, or its time limit): the worker is
// terminated, and the next run starts a fresh one.
function halt(why) {
  if (worker) worker.terminate();
  worker = null;
  if (running) running.resolve({ stopped: why });
  running = null;
}

function send(message, onEvent) {
  if (worker === null) {
    worker = new Worker(new URL("worker.js", HERE), { type: "module" });
    worker.onmessage = (event) => {
      if (!running || event.data.id !== running.id) return;
      if (event.data.type !== "done") running.onEvent(event.data);
      else {
        running.resolve(event.data);
        running = null;
      }
    };
  }
  return new Promise((resolve) => {
    running = { id: ++nextId, resolve, onEvent };
    worker.postMessage({ id: running.id, pyodideURL: PYODIDE, ...message });
  });
}

// Run `code` after `setup` (a list of code) in fresh globals, once the
// runs before it are done. Resolves to {output, error} or {stopped};
// `onEvent` hears {type: "loading"} and {type: "started"}. planner.js
// runs its code so too, with the archive and time limit of the page's
// runners.
export function runCode({ code, setup = [], limit, archive, onEvent }) {
  limit ??= page.limit;
  archive ??= page.archive;
  const job = () => {
    let timer = null;
    const started = send(
      { code, setup, archiveURL: new URL(archive, HERE).href },
      (event) => {
        if (event.type === "started") {
          timer = setTimeout(() => halt(`time limit of ${limit} s`), limit * 1e3);
        }
        (onEvent ?? (() => {}))(event);
      },
    );
    return started.finally(() => clearTimeout(timer));
  };
  queue = queue.then(job, job);
  return queue;
}

function button(label, title) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "md-button course-runner__button";
  b.textContent = label;
  b.title = title;
  return b;
}

export function mountRunner(holder, data) {
  page ??= { archive: data.archive, limit: data.limit };
  const root = document.createElement("div");
  root.className = "course-runner";
  root.dataset.page = data.page;

  const editor = document.createElement("div");
  editor.className = "course-runner__editor";
  editor.setAttribute("role", "textbox");
  editor.setAttribute("aria-multiline", "true");
  editor.setAttribute("aria-label", "Python code of this block (editable)");
  editor.spellcheck = false;
  // Tab leaves the editor, as everywhere else on the page; what is typed
  // is what is run (no closing brackets added).
  const jar = CodeJar(
    editor,
    (e) => {
      e.innerHTML = hljs.highlight(e.textContent, { language: "python" }).value;
    },
    { catchTab: false, addClosing: false },
  );
  jar.updateCode(data.source);

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
  holder.replaceChildren(root);

  const show = (state, text, label) => {
    root.dataset.state = state;
    status.textContent = label;
    output.hidden = false;
    output.classList.toggle("course-runner__output--error", state !== "done");
    output.textContent = text;
  };

  run.addEventListener("click", async () => {
    const clicked = performance.now();
    run.disabled = true;
    stop.disabled = false;
    root.dataset.state = "waiting";
    status.textContent = "Waiting…";
    const result = await runCode({
      code: jar.toString(),
      setup: data.setup,
      limit: data.limit,
      archive: data.archive,
      onEvent: (event) => {
        root.dataset.state = event.type === "loading" ? "loading" : "running";
        status.textContent =
          event.type === "loading"
            ? "Loading Python (first run only)…"
            : "Running…";
      },
    });
    const seconds = (performance.now() - clicked) / 1000;
    if (result.stopped) {
      show("stopped", `Stopped (${result.stopped}). Python was restarted.`, "Stopped");
    } else if (result.error) {
      show("error", (result.output || "") + result.error, "Error");
    } else {
      show("done", result.output, `Done in ${seconds.toFixed(1)} s`);
    }
    root.dataset.seconds = seconds.toFixed(3);
    run.disabled = false;
    stop.disabled = true;
  });
  stop.addEventListener("click", () => halt("Stop"));
  editor.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      run.click();
    }
  });
  reset.addEventListener("click", () => {
    jar.updateCode(data.source);
    output.hidden = true;
    output.textContent = "";
    status.textContent = "";
    delete root.dataset.state;
  });
}

// A runner in place of every runner data element of the page.
for (const data of document.querySelectorAll("script[data-course-runner]")) {
  const holder = document.createElement("div");
  data.replaceWith(holder);
  mountRunner(holder, JSON.parse(data.textContent));
}

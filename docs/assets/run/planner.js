// The planner's form (docs/planner.md): Plan hands the form's inputs to
// the page's Python (run.js; Python loads on the first Plan only) and
// shows what `python -m snippets.planner` prints for the same inputs:
// snippets.planner.report.plan returns it in sections, which this file
// lays out as paragraphs, a table and code blocks. An input that Python
// refuses shows its message, which names the field.
//
// The form: <form data-course-planner> with fields named after plan()'s
// arguments (config, seq_len, gpu, nodes, global_batch_tokens,
// micro_batch, and under "Cluster details" the cluster's own values,
// CLUSTER below), a [data-planner-status] and a [data-planner-result].
// After each Plan, the form's data-state is "done" or "error",
// data-seconds the time from the click, data-python-seconds the time
// Python took (without loading it), and data-plans counts the plans.

import { runCode } from "./run.js";

// Python that calls the command line's own function and prints its
// sections, or the message of what it refused, as JSON.
const CODE = `
import json
from snippets.planner.report import plan

try:
    answer = {"sections": plan(**json.loads(ARGUMENTS))}
except (TypeError, ValueError) as error:
    answer = {"error": str(error)}
print(json.dumps(answer))
`;

const INTEGER = /^\s*-?\d+\s*$/;
const DECIMAL = /^\s*-?(\d+\.\d*|\.\d+)\s*$/;

// The cluster's values that replace the GPU preset's when given.
const CLUSTER = new Set([
  "gpus_per_node",
  "gpu_memory_GB",
  "peak_TFLOPs",
  "nvlink_GBps",
  "nics_per_node",
  "nic_GBps",
]);

// The form's inputs as plan()'s keyword arguments. A number goes as a
// number (a whole one as an int, as the command line reads it),
// anything else as typed, for Python to refuse by name; an empty
// sequence length means the config's own, an empty cluster value the
// GPU preset's.
function argumentsOf(form) {
  const args = {};
  for (const [name, value] of new FormData(form)) {
    if (name === "config" || name === "gpu") args[name] = value;
    else if (CLUSTER.has(name) && value.trim() === "") continue;
    else if (name === "seq_len" && value.trim() === "") args[name] = null;
    else if (INTEGER.test(value) || DECIMAL.test(value)) {
      args[name] = Number(value);
    } else args[name] = value;
  }
  return args;
}

function element(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

// A Markdown table (the planner's own: no "|" inside a cell) as an
// HTML table, wrapped as Material wraps the page's tables.
function table(markdown) {
  const rows = markdown
    .split("\n")
    .filter((line) => !/^\|[\s|-]+\|$/.test(line))
    .map((line) => line.slice(2, -2).split(" | "));
  const t = document.createElement("table");
  const head = t.createTHead().insertRow();
  for (const cell of rows[0]) head.append(element("th", "", cell));
  const body = t.createTBody();
  for (const cells of rows.slice(1)) {
    const row = body.insertRow();
    for (const cell of cells) row.append(element("td", "", cell));
  }
  // a box that may scroll sideways: reachable with the keyboard
  const wrap = element("div", "md-typeset__scrollwrap");
  wrap.tabIndex = 0;
  wrap.setAttribute("role", "region");
  wrap.setAttribute("aria-label", "The layouts, ranked");
  const inner = element("div", "md-typeset__table");
  inner.append(t);
  wrap.append(inner);
  return wrap;
}

let codeBlocks = 0;

// A code block with Material's copy button (its clipboard handler
// serves any button that names a target, even one added later).
function code(text) {
  const id = `course-planner-code-${++codeBlocks}`;
  const block = element("div", "highlight");
  const pre = element("pre");
  pre.id = id;
  const nav = element("nav", "md-code__nav");
  const copy = element("button", "md-code__button");
  copy.type = "button";
  copy.title = "Copy to clipboard";
  copy.dataset.clipboardTarget = `#${id} > code`;
  copy.dataset.mdType = "copy";
  nav.append(copy);
  pre.append(nav, element("code", "", text));
  block.append(pre);
  return block;
}

function show(result, sections) {
  result.replaceChildren(
    ...sections.map(([kind, text]) => {
      if (kind === "table") return table(text);
      if (kind === "code") return code(text);
      return element("p", "", text);
    }),
  );
}

export function mountPlanner(form) {
  const status = form.querySelector("[data-planner-status]");
  const result = form.querySelector("[data-planner-result]");
  const button = form.querySelector("button[type=submit]");
  let plans = 0;

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const clicked = performance.now();
    // the arguments as a Python string literal of JSON text (a function
    // as the replacement: "$&" in a config stays as typed)
    const literal = JSON.stringify(JSON.stringify(argumentsOf(form)));
    const code = CODE.replace("ARGUMENTS", () => literal);
    button.disabled = true;
    form.dataset.state = "waiting";
    status.textContent = "Planning…";
    let answer;
    let started = clicked;
    try {
      const ran = await runCode({
        code,
        onEvent: (e) => {
          if (e.type === "loading") {
            status.textContent = "Loading Python (first plan only)…";
          } else if (e.type === "started") {
            started = performance.now();
            status.textContent = "Planning…";
          }
        },
      });
      if (ran.stopped) answer = { error: `Stopped: ${ran.stopped}.` };
      else if (ran.error) answer = { error: ran.error };
      else answer = JSON.parse(ran.output);
    } catch (error) {
      answer = { error: String(error) };
    }
    const now = performance.now();
    const seconds = (now - clicked) / 1000;
    if (answer.error) {
      const message = element("p", "course-planner__error", answer.error);
      message.setAttribute("role", "alert");
      result.replaceChildren(message);
      status.textContent = "Not planned: see the message below.";
    } else {
      show(result, answer.sections);
      status.textContent = `Planned in ${seconds.toFixed(1)} s.`;
    }
    form.dataset.state = answer.error ? "error" : "done";
    form.dataset.seconds = seconds.toFixed(3);
    form.dataset.pythonSeconds = ((now - started) / 1000).toFixed(3);
    form.dataset.plans = String(++plans);
    button.disabled = false;
  });
}

for (const form of document.querySelectorAll("form[data-course-planner]")) {
  mountPlanner(form);
}

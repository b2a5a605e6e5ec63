// The planner's form (docs/planner.md): Plan hands the form's fields to
// the page's Python (run.js; it loads on the first Plan only), which
// plans with snippets.planner.report.plan, the command line's function,
// and lays the answer out with report.html, the renderer the page's own
// answer comes from. A field Python refuses shows its message, which
// names the field.
//
// The form: <form data-course-planner> with fields named after plan()'s
// arguments (an empty field means plan()'s default), a
// [data-planner-status] and a [data-planner-result]. After each Plan the
// form's data-state is "done" or "error", data-seconds the time from the
// click, data-python-seconds the time Python took once loaded.

import { runCode } from "./run.js";

const CODE = `
import json
from snippets.planner.report import html, plan

try:
    print(json.dumps({"html": html(plan(**json.loads(ARGUMENTS)))}))
except (TypeError, ValueError) as error:
    print(json.dumps({"error": str(error)}))
`;

// A number goes as a number (a whole one as an int, as the command line
// reads it), anything else as typed, for Python to refuse by name.
const NUMBER = /^\s*-?(\d+\.?\d*|\.\d+)\s*$/;

function argumentsOf(form) {
  const args = {};
  for (const [name, value] of new FormData(form)) {
    if (value.trim() === "") continue;
    const text = name === "config" || name === "gpu" || !NUMBER.test(value);
    args[name] = text ? value : Number(value);
  }
  return args;
}

export function mountPlanner(form) {
  const status = form.querySelector("[data-planner-status]");
  const result = form.querySelector("[data-planner-result]");
  const button = form.querySelector("button[type=submit]");

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const clicked = performance.now();
    let started = clicked;
    // the arguments as a Python string literal of JSON text
    const literal = JSON.stringify(JSON.stringify(argumentsOf(form)));
    button.disabled = true;
    form.dataset.state = "waiting";
    status.textContent = "Planning…";
    const ran = await runCode({
      code: CODE.replace("ARGUMENTS", () => literal),
      onEvent: (e) => {
        if (e.type === "started") started = performance.now();
        status.textContent =
          e.type === "loading" ? "Loading Python (first plan only)…" : "Planning…";
      },
    });
    const done = performance.now();
    const answer = ran.stopped
      ? { error: `Stopped: ${ran.stopped}.` }
      : ran.error
        ? { error: ran.error }
        : JSON.parse(ran.output);
    if (answer.error) {
      const message = document.createElement("p");
      message.className = "course-planner__error";
      message.setAttribute("role", "alert");
      message.textContent = answer.error;
      result.replaceChildren(message);
      status.textContent = "Not planned: see the message below.";
    } else {
      result.innerHTML = answer.html;
      status.textContent = `Planned in ${((done - clicked) / 1000).toFixed(1)} s.`;
    }
    form.dataset.state = answer.error ? "error" : "done";
    form.dataset.seconds = ((done - clicked) / 1000).toFixed(3);
    form.dataset.pythonSeconds = ((done - started) / 1000).toFixed(3);
    button.disabled = false;
  });
}

for (const form of document.querySelectorAll("form[data-course-planner]")) {
  mountPlanner(form);
}

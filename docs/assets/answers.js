// The answer fields under the exercises (course/build/answers.py writes
// them, with the answer a lab computed at build). Check, or Enter in the
// box, reads what the reader typed and says right, close or wrong, with a
// hint; an entry it cannot read as a number gets a message that says why,
// never "wrong". The form's data-state is then right, close, wrong or
// unread; an edit clears it.
//
// What it reads: one number, a point for decimals, commas only between
// groups of three digits, an exponent if you like (24.5, 2,048, .25,
// -2.25, 1e9), then, optionally, the question's unit (24.5 GB). A share
// is a fraction from 0 to 1 (0.25) or a percentage with its sign (25%).

const NUMBER = /^([-+]?[\d.,]*\d(?:e[-+]?\d+)?)\s*(.*)$/i;
const THOUSANDS = /^[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?:e[-+]?\d+)?$/i;
const SLIP = 0.005; // a common slip, within 0.5% of what it gives
const percent = (x) => `${parseFloat((x * 100).toPrecision(12))}%`;

// {value} of what was typed, or {error} saying why it cannot be read.
function read(text, d) {
  const typed = text.trim().replace(/\u2212/g, "-");
  const share = d.unit === "share";
  const example = share ? "0.25 or 25%" : "24.5, 2,048 or 1e9";
  if (!typed) return { error: `Type a number first, such as ${example}.` };
  const found = NUMBER.exec(typed);
  if (!found) return { error: `"${typed}" does not start with a number: type digits, such as ${example}.` };
  const [, digits, unit] = found;
  if (/^\d/.test(unit)) {
    return { error: `"${typed}" reads as two numbers: group thousands with commas (2,048), or not at all.` };
  }
  if (digits.includes(",") && !THOUSANDS.test(digits)) {
    return { error: `In "${digits}", commas must group thousands, as in 2,048: write decimals with a point, as in 2.5.` };
  }
  if (digits.split(".").length > 2) return { error: `"${digits}" has more than one decimal point.` };
  const value = Number(digits.replaceAll(",", ""));
  if (unit === "%" && share) return { value: value / 100 };
  if (share && unit === "" && (value < 0 || value > 1)) {
    return { error: `A share is a fraction from 0 to 1, or a percentage with its % sign: type ${example}.` };
  }
  if (unit !== "" && !d.units.split(" ").includes(unit)) {
    const want = share ? `type ${example}` : d.unit ? `type the number in ${d.unit}` : "type the number alone";
    return { error: `This answer does not take "${unit}": ${want}.` };
  }
  return { value };
}

// [state, word, message] for a number read from the box.
function verdict(value, d) {
  const [answer, right, close] = [+d.answer, +d.right, +d.close];
  const off = (target) => Math.abs(value - target) / Math.abs(target);
  if (off(answer) <= Math.max(right, 1e-9)) return ["right", "Right:", `${d.shown}.`];
  for (const [target, message] of JSON.parse(d.mistakes)) {
    if (off(target) <= SLIP) return ["wrong", "Wrong.", message];
  }
  if (off(answer) <= close) {
    const not = right ? `not within ${percent(right)}` : "not exact";
    return ["close", "Close:", `within ${percent(close)}, ${not}. ${d.hint}`];
  }
  const side = value > answer ? "high" : "low";
  return ["wrong", "Wrong:", `too ${side}. ${d.hint}`];
}

function check(form) {
  const input = form.elements.answer;
  const got = read(input.value, form.dataset);
  const [state, word, message] = got.error
    ? ["unread", "Cannot read that.", got.error]
    : verdict(got.value, form.dataset);
  if (state === "unread") input.setAttribute("aria-invalid", "true");
  else input.removeAttribute("aria-invalid");
  const strong = document.createElement("strong");
  strong.textContent = word;
  form.querySelector(".course-answer__result").replaceChildren(strong, ` ${message}`);
  form.dataset.state = state;
}

for (const form of document.querySelectorAll("form[data-course-answer]")) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    check(form);
  });
  form.elements.answer.addEventListener("input", () => {
    delete form.dataset.state;
    form.elements.answer.removeAttribute("aria-invalid");
    form.querySelector(".course-answer__result").replaceChildren();
  });
}

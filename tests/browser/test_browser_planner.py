"""The planner's form, in Chromium on the built site: Plan shows what
`python -m snippets.planner` prints for the same inputs, byte for byte;
bad input shows the message the command line gives, which names the
field, and the form plans again after it; the cluster's own values,
folded under "Cluster details", give the command line's answer for the
same flags; Python loads on the first
Plan only; the form, with its answer or its message, passes axe-core in
both palettes; no request leaves 127.0.0.1 (the Visit of
tests/browser/checks.py aborts and records any).

The shown answer is read back as text: each paragraph's text, the table
as the Markdown table it was made from, each code block's code, a blank
line between two. The first Plan after the page loads (Python loads
then) and a second one are timed and printed (`pytest -s`).
"""

import json
import subprocess
import sys

import pytest

from course import runner
from course.fences import ROOT
from snippets.planner.__main__ import CLUSTER as CLUSTER_FLAGS
from snippets.planner.model import GPUS
from tests.browser import checks
from tests.browser.checks import Visit

EXAMPLE = ROOT / "snippets" / "planner" / "llama-3.2-1b.json"
FORM = "form[data-course-planner]"
COLD_S = 60  # loading Python the first time: generous for a slow CI
ANSWER_S = 3  # a plan over the full search, once Python has loaded

# The answer as text, as the command line prints it.
SHOWN_JS = r"""(form) => {
const result = form.querySelector('[data-planner-result]');
return [...result.children].map((part) => {
  const table = part.querySelector('table');
  if (table) {
    const rows = [...table.rows].map((row) => '| ' +
      [...row.cells].map((cell) => cell.textContent).join(' | ') + ' |');
    const rule = Array(table.rows[0].cells.length).fill('---');
    rows.splice(1, 0, '| ' + rule.join(' | ') + ' |');
    return rows.join('\n');
  }
  const code = part.querySelector('pre > code');
  return code ? code.textContent : part.textContent;
}).join('\n\n');
}"""


def cli(tmp_path, config, *args):
    """What the command line prints for `config` (config.json's text)
    and `args`: (exit status, stdout, stderr)."""
    path = tmp_path / "config.json"
    path.write_text(config, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "snippets.planner", "--config", str(path)]
        + [str(a) for a in args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def planner(chromium, base_url):
    """The planner page, fresh: no Python loaded yet."""
    visit = Visit(chromium, base_url)
    visit.context.grant_permissions(
        ["clipboard-read", "clipboard-write"], origin=base_url.rstrip("/")
    )
    visit.goto("planner/")
    visit.page.wait_for_selector(f"{FORM} button[type=submit]")
    yield visit
    assert not visit.problems, "\n".join(visit.problems)
    assert not visit.off_host
    visit.close()


def fill(visit, **fields):
    """Type into the form's fields, by name (the select is chosen)."""
    form = visit.page.locator(FORM)
    for name, value in fields.items():
        box = form.locator(f"[name={name}]")
        if name == "gpu":
            box.select_option(value)
        else:
            box.fill(str(value))


def plan(visit, timeout_s=COLD_S):
    """Click Plan and wait for this click's answer (data-plans counts
    the answers shown); returns (state, shown text, seconds, Python's
    seconds)."""
    form = visit.page.locator(FORM)
    before = int(form.get_attribute("data-plans") or 0)
    form.get_by_role("button", name="Plan").click()
    visit.page.wait_for_function(
        "([form, n]) => Number(form.dataset.plans || 0) === n",
        arg=[form.element_handle(), before + 1],
        timeout=timeout_s * 1000,
    )
    shown = form.evaluate(SHOWN_JS)
    state = form.get_attribute("data-state")
    seconds = float(form.get_attribute("data-seconds"))
    return (
        state,
        shown,
        seconds,
        float(form.get_attribute("data-python-seconds")),
    )


def axe(visit):
    """axe-core's serious findings in the form (its answer or message
    included), with Plan focused, as a click may leave it (the mouse
    moved away, the colour transitions ended)."""
    visit.page.mouse.move(0, 0)
    visit.page.locator(f"{FORM} button[type=submit]").focus()
    visit.page.wait_for_function("() => document.getAnimations().length === 0")
    return checks.axe_problems(visit.page, context=FORM)


def test_the_form_offers_the_example_and_every_gpu(planner):
    form = planner.page.locator(FORM)
    config = form.locator("textarea[name=config]").input_value()
    assert config.strip() == EXAMPLE.read_text(encoding="utf-8").strip()
    values = form.locator("select[name=gpu] option").evaluate_all(
        "options => options.map((o) => o.value)"
    )
    assert values == sorted(GPUS)


def test_plan_shows_what_the_command_line_prints(planner, tmp_path):
    before = list(planner.loaded)
    assert not [u for u in before if "assets/pyodide/" in u], before
    assert not [u for u in before if u.endswith(".zip")], before
    config = planner.page.locator(f"{FORM} textarea").input_value()
    args = ("--seq-len", 4096, "--gpu", "h100-80gb", "--nodes", 2)
    args += ("--global-batch-tokens", 4194304, "--micro-batch", 1)
    status, want, _ = cli(tmp_path, config, *args)
    assert status == 0
    state, shown, cold, cold_python = plan(planner)
    assert state == "done"
    assert shown + "\n" == want
    assert "assets/pyodide/pyodide.asm.wasm" in planner.loaded
    assert f"assets/run/{runner.archive()[0]}" in planner.loaded
    # the same plan again, Python loaded
    state, shown, warm, warm_python = plan(planner, ANSWER_S)
    assert state == "done" and shown + "\n" == want
    print(
        f"\nplanner, first Plan (loads Python): {cold:.2f} s from the "
        f"click, {cold_python:.2f} s of it planning; second Plan: "
        f"{warm:.2f} s"
    )
    assert cold_python < ANSWER_S and warm < ANSWER_S

    # Each code block's copy button copies its code.
    result = planner.page.locator(f"{FORM} [data-planner-result]")
    codes = result.locator("pre > code")
    assert codes.count() == 2  # the command and the mesh of #1
    for i in range(codes.count()):
        planner.page.evaluate(
            "t => navigator.clipboard.writeText(t)", checks.SENTINEL
        )
        result.locator("button[data-md-type=copy]").nth(i).click()
        copied = planner.page.evaluate("navigator.clipboard.readText()")
        assert copied.strip() == codes.nth(i).text_content().strip()
    problems = axe(planner)
    assert checks.toggle_palette(planner.page) == "slate"
    problems += [f"dark: {p}" for p in axe(planner)]
    assert not problems, checks.report("planner form", problems)


def test_other_inputs_give_the_command_line_answer(planner, tmp_path):
    """Another GPU, more nodes, two sequences a micro-batch, and the
    config's own sequence length (max_position_embeddings: 131072
    tokens): still the command line's answer."""
    batch = 131072 * 2 * 32
    fill(
        planner,
        seq_len="",
        gpu="a100-80gb",
        nodes=4,
        global_batch_tokens=batch,
        micro_batch=2,
    )
    status, want, _ = cli(
        tmp_path,
        EXAMPLE.read_text(encoding="utf-8"),
        *("--gpu", "a100-80gb", "--nodes", 4, "--micro-batch", 2),
        *("--global-batch-tokens", batch),
    )
    assert status == 0
    state, shown, _, _ = plan(planner)
    assert state == "done" and shown + "\n" == want


# the form's cluster fields are the command line's cluster flags
CLUSTER = [key for key, _, _ in CLUSTER_FLAGS]


def test_cluster_details_give_the_command_line_answer(planner, tmp_path):
    """Closed at first; six fields named after plan()'s keywords; with
    some filled, the command line's answer for the same flags; a
    negative bandwidth is refused by name, and emptied again the field
    means the GPU's own value."""
    form = planner.page.locator(FORM)
    details = form.locator("details.course-planner__cluster")
    assert details.get_attribute("open") is None
    names = details.locator("input").evaluate_all(
        "inputs => inputs.map((i) => i.name)"
    )
    assert names == CLUSTER
    details.locator("summary").click()
    assert details.get_attribute("open") is not None
    example = EXAMPLE.read_text(encoding="utf-8")
    good = ("--seq-len", 4096, "--nodes", 2)
    status, want, _ = cli(
        tmp_path, example, *good, "--gpus-per-node", 4, "--nic-gbps", 25
    )
    assert status == 0
    _, preset_answer, _ = cli(tmp_path, example, *good)
    assert want != preset_answer
    fill(planner, gpus_per_node=4, nic_GBps=25)
    state, shown, _, _ = plan(planner)
    assert state == "done" and shown + "\n" == want

    fill(planner, gpus_per_node="", nic_GBps=-5)
    state, shown, _, _ = plan(planner)
    assert (state, shown) == (
        "error",
        "cluster.nic_GBps must be > 0.0, got -5",
    )
    status, _, stderr = cli(tmp_path, example, *good, "--nic-gbps=-5")
    assert status == 2 and stderr.endswith(f"error: {shown}\n")
    fill(planner, nic_GBps="")
    state, shown, _, _ = plan(planner)
    assert state == "done" and shown + "\n" == preset_answer
    problems = axe(planner)
    assert checks.toggle_palette(planner.page) == "slate"
    problems += [f"dark: {p}" for p in axe(planner)]
    assert not problems, checks.report("planner form, cluster", problems)


def without(key):
    config = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    del config[key]
    return json.dumps(config, indent=2)


def changed(**values):
    config = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    return json.dumps({**config, **values}, indent=2)


# (config.json's text, the form's other fields, words the message holds)
BAD = [
    ('{\n  "hidden_size": 2048,\n', {}, "config.json is not valid JSON"),
    (without("vocab_size"), {}, "config.json is missing vocab_size"),
    (
        changed(num_attention_heads=30),
        {},
        "model.heads (num_attention_heads) must divide model.hidden "
        "(hidden_size)",
    ),
    (EXAMPLE.read_text(encoding="utf-8"), {"nodes": 0}, "nodes must be >= 1"),
    (
        EXAMPLE.read_text(encoding="utf-8"),
        {"micro_batch": -1},
        "training.micro_batch must be >= 1",
    ),
]


def test_bad_input_names_the_field_and_the_form_plans_after(planner, tmp_path):
    good = {"seq_len": 4096, "nodes": 2, "micro_batch": 1}
    example = EXAMPLE.read_text(encoding="utf-8")
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in good.items()]
    _, good_answer, _ = cli(tmp_path, example, *flags)
    for config, fields, words in BAD:
        planner.page.locator(f"{FORM} textarea").fill(config)
        fill(planner, **{**good, **fields})
        state, shown, _, _ = plan(planner)
        assert state == "error", shown
        assert words in shown
        # the command line refuses it with the same message
        bad = [f"--{k.replace('_', '-')}={v}" for k, v in fields.items()]
        status, _, stderr = cli(tmp_path, config, *flags, *bad)
        assert status == 2
        assert stderr.rstrip("\n").endswith(f"error: {shown}")
        # and a good plan still works
        planner.page.locator(f"{FORM} textarea").fill(example)
        fill(planner, **good)
        state, shown, _, _ = plan(planner)
        assert state == "done" and shown + "\n" == good_answer
    # A value that is not a whole number, named by the field.
    fill(planner, nodes="two")
    state, shown, _, _ = plan(planner)
    assert (state, shown) == ("error", "nodes must be an int, got str 'two'")
    problems = axe(planner)
    assert checks.toggle_palette(planner.page) == "slate"
    problems += [f"dark: {p}" for p in axe(planner)]
    assert not problems, checks.report("planner form, error", problems)

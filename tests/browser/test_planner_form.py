"""The planner's form on the built site, as a reader uses it: Plan
shows exactly what the command line answers for the same inputs (its
--json, laid out by the renderer the page uses); a bad field is
refused by name and the next Plan works; the form passes axe-core.
One page, so Python loads once."""

import json
import subprocess
import sys

import pytest

from course import ROOT
from snippets.planner.report import html
from tests.browser.helpers import serious_axe

PLAN_MS = 90_000  # the first Plan loads Pyodide
CHANGED = {"nodes": "4", "global_batch_tokens": "2097152", "nic_GBps": "25"}


def command_line(fields, tmp_path):
    """What `python -m snippets.planner --json` answers for the form's
    fields (field name -> its flag; an empty field is left out)."""
    config = tmp_path / "config.json"
    config.write_text(fields.pop("config"), encoding="utf-8")
    flags = [f"--config={config}", "--json"]
    flags += [
        f"--{name.lower().replace('_', '-')}={value}"
        for name, value in fields.items()
        if value.strip()
    ]
    done = subprocess.run(
        [sys.executable, "-m", "snippets.planner", *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def plan(form, expect="done|error"):
    form.get_by_role("button", name="Plan").click()
    form.page.wait_for_function(
        f"f => /^({expect})$/.test(f.dataset.state)",
        arg=form.element_handle(),
        timeout=PLAN_MS,
    )
    return form.get_attribute("data-state")


@pytest.fixture
def form(page, base_url):
    page.goto(base_url + "planner/")
    return page.locator("form[data-course-planner]")


def fields(form):
    return form.evaluate(
        "f => Object.fromEntries([...new FormData(f)].map(([k, v]) => [k, v]))"
    )


def answer_matches_the_command_line(form, tmp_path):
    shown = form.locator("[data-planner-result]").inner_html()
    # the command line's answer, as the browser serializes it
    want = form.evaluate(
        "(f, h) => Object.assign(document.createElement('div'),"
        " {innerHTML: h}).innerHTML",
        html(command_line(fields(form), tmp_path)),
    )
    return shown == want


def test_the_form_answers_as_the_command_line_and_refuses_a_bad_field(
    form, tmp_path
):
    """The page's inputs are planned as the command line plans them; a
    bad field is then refused by name; with it mended, the cluster
    changed and eager PyTorch chosen, the next Plan again answers as the
    command line. The form
    and its answer pass axe-core."""
    assert plan(form) == "done"
    assert answer_matches_the_command_line(form, tmp_path), "the page's inputs"
    form.locator("[name=nodes]").fill("two")
    assert plan(form) == "error"
    message = form.get_by_role("alert").text_content()
    assert "nodes" in message, message
    form.locator("details > summary").click()  # the cluster's own
    for name, value in CHANGED.items():
        form.locator(f"[name={name}]").fill(value)
    form.locator("[name=stack]").select_option("eager")
    assert plan(form) == "done"
    assert answer_matches_the_command_line(form, tmp_path), CHANGED
    serious = serious_axe(form.page, "form[data-course-planner]")
    assert not serious, "\n".join(serious)

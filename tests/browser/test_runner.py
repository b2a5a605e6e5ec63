"""Run in your browser, in Chromium, on the built site.

Every lab the site offers prints, under Pyodide, exactly what its page
records, and after a reader's edit exactly what CPython prints for the
edited code: all of them in one Python, through run.js's runCode as
the Run button calls it. On the ZeRO page the buttons and the editor
run, edit and Reset its labs. Python loads on the first Run only, from
the site's own files. An error shows its traceback; Stop and the time
limit end a loop, and the next Run starts a fresh Python. The runner
passes axe-core. (That each runner shows its lab's code, and that
nothing of Python loads before a Run, tests/browser/test_pages.py
checks on the page load it makes anyway.)
"""

import difflib
import itertools
from types import SimpleNamespace

import pytest
from sybil import Document

from course import ROOT
from course.build import execute, runner
from tests.browser.helpers import (
    LAPTOP,
    open_runner,
    runners,
    serious_axe,
    site_pages,
    watch,
)
from tests.docblocks import PAGES, code, parse

RUN_MS = 90_000  # a page's first Run loads Pyodide: generous on 2 cores
SESSIONS = itertools.count()
EDIT = 'print(sorted(n for n in globals() if n[0] != "_")[-3:])'


def records():
    """{(page, code): recorded output} of every lab block of docs/."""
    found = {}
    for path in PAGES:
        for example in Document.parse(str(path), parse):
            block = example.parsed
            if block.options.get("source") == "lab":
                page = path.relative_to(ROOT / "docs").as_posix()
                found[page, code(block)] = block.record
    return found


RECORDS = records()
LAB_PAGES = [p for p in site_pages() if runners(p)]


def diff(want, shown, want_name, shown_name):
    lines = difflib.unified_diff(
        want.split("\n"), shown.split("\n"), want_name, shown_name, lineterm=""
    )
    return "\n".join(lines) or f"{want!r}\n{shown!r}"


def in_cpython(setup, source):
    """What the build's runner prints for `source` after `setup`."""
    session = f"browser-{next(SESSIONS)}"  # fresh globals, as in the browser
    for earlier in setup:
        execute.run(earlier, where=session, session=session)
    return execute.run(source, where=session, session=session)


def type_over(box, text):
    """Select the editor's code and type `text` over it, as a reader."""
    editor = box.locator(".course-runner__editor")
    editor.click()
    editor.press("Control+a")
    editor.press("Delete")
    editor.press_sequentially(text)


def run(box, expect="done|error|stopped"):
    """Click Run; (state, output text) once the run has ended."""
    box.get_by_role("button", name="Run", exact=True).click()
    box.page.wait_for_function(
        f"box => /^({expect})$/.test(box.dataset.state)",
        arg=box.element_handle(),
        timeout=RUN_MS,
    )
    output = box.locator(".course-runner__output").text_content()
    return box.get_attribute("data-state"), output


def test_the_site_offers_every_lab_it_can():
    """A lab gets a runner unless it or an earlier block of its session
    imports what the browser's Python lacks; none may go missing."""
    offered = sum(len(runners(p)) for p in site_pages())
    labs = [key for key in RECORDS]
    assert offered >= 40 and offered <= len(labs), (offered, len(labs))
    for path in LAB_PAGES:
        for data in runners(path):
            assert (data["page"], data["source"]) in RECORDS, data["page"]


def wrong_run(lab, text, state, shown):
    """What is wrong with a run of `text` in `lab`'s runner, or None:
    the lab's own code must give its record, an edit what CPython
    prints."""
    if text == lab["source"]:
        want = RECORDS[lab["page"], text]
        if (state, shown.rstrip("\n")) != ("done", want):
            return f"({state}):\n" + diff(
                want, shown.rstrip("\n"), "record", "Run"
            )
        return None
    if (state, shown) != ("done", in_cpython(lab["setup"], text)):
        return f"edited ({state}):\n{shown}"
    return None


RUN_CODE = """async ([module, lab, code]) => {
  const { runCode } = await import(module);
  const result = await runCode({ ...lab, code });
  if (result.stopped) return ["stopped", result.stopped];
  if (result.error) return ["error", (result.output || "") + result.error];
  return ["done", result.output];
}"""
LABS = [(path, n) for path in LAB_PAGES for n in range(len(runners(path)))]
CHAINS = {}  # page -> (its CPython session, the code run there so far)


def edited_in_cpython(lab):
    """What CPython prints for the lab's edited code after its setup.
    The labs of a page are taken in page order, so the runner's session
    that ran the page's earlier labs (edited: EDIT only prints) needs
    only the setup blocks it has not run yet; any other order starts a
    fresh session, as in_cpython does."""
    text, limit = f"{EDIT}\n{lab['source']}", lab["limit"]
    session, done = CHAINS.pop(lab["page"], (None, []))
    if not done or lab["setup"][: len(done)] != done:
        session, done = f"browser-{next(SESSIONS)}", []
    for earlier in lab["setup"][len(done) :]:  # within the Run's limit
        execute.run(earlier, where=session, session=session, limit=limit)
    shown = execute.run(text, where=session, session=session, limit=limit)
    CHAINS[lab["page"]] = (session, [*lab["setup"], lab["source"]])
    return shown


@pytest.fixture(scope="session")
def python(browser, base_url):
    """One page whose Python stays loaded for a worker's whole run, as a
    reader's stays loaded on a page: its `page`, the URLs it `loaded`,
    what went wrong on it (`problems`) and whether its Python is `up`.
    Nothing of Python loads before the first Run. (A worker takes the
    pages' labs a page at a time, with other files' tests between them:
    a fixture of this module's scope would close the page each time and
    load Python again, about 8 s on a busy machine.)"""
    context = browser.new_context(viewport=LAPTOP)
    page = context.new_page()
    tab = SimpleNamespace(page=page, loaded=[], up=False)
    tab.problems = watch(page, base_url)
    page.on("request", lambda r: tab.loaded.append(r.url))
    page.goto(base_url + "zero/")
    assert not any("pyodide" in url for url in tab.loaded), tab.loaded
    yield tab
    context.close()


@pytest.mark.parametrize(
    ("path", "n"),
    # a page's labs on one worker, in page order, as a reader runs them
    [pytest.param(p, n, marks=pytest.mark.xdist_group(p)) for p, n in LABS],
    ids=[f"{path}{n + 1}" for path, n in LABS],
)
def test_every_lab_prints_its_record_and_an_edit_what_cpython_prints(
    python, base_url, path, n
):
    """Each lab of each page, run as its Run button runs it (run.js's
    runCode, with the page's setup, limit and archive) after a reader's
    edit: a first line that prints the last three of its globals. What
    follows that line is the lab's record, and all of it what CPython
    prints for the edited code. Python loads on a worker's first Run
    only (or after a Run that was stopped), from the site's own files.
    (The ZeRO page's test below runs its labs unedited, with the
    buttons.)"""
    lab = runners(path)[n]
    text = f"{EDIT}\n{lab['source']}"
    module = base_url + "assets/run/run.js"  # the page's own run.js
    wasm = [u for u in python.loaded if u.endswith("pyodide.asm.wasm")]
    try:
        state, shown = python.page.evaluate(RUN_CODE, [module, lab, text])
        loads = [u for u in python.loaded if u.endswith("pyodide.asm.wasm")]
        was_up, python.up = python.up, state != "stopped"  # Stop ends it
        assert len(loads) - len(wasm) == (0 if was_up else 1), loads
        assert state == "done", f"({state}):\n{shown}"
        _, _, rest = shown.partition("\n")
        want = RECORDS[lab["page"], lab["source"]]
        assert rest.rstrip("\n") == want, diff(
            want, rest.rstrip("\n"), "record", "Run"
        )
        cpython = edited_in_cpython(lab)
        assert shown == cpython, diff(cpython, shown, "CPython", "Run")
        name, _ = runner.archive()
        assert any(url.endswith(name) for url in python.loaded)
        assert not python.problems, "\n".join(python.problems)
    finally:
        python.problems.clear()


@pytest.mark.xdist_group("zero/")  # after the page's labs, on their page
def test_a_reader_runs_edits_and_resets_the_labs_of_a_page(python):
    """On the ZeRO page, with the buttons and the editor: each lab prints
    its record; after an edit, what CPython prints; Reset brings the
    lab's code back. An error shows the Python traceback. The runners,
    one showing an output and one an error, then pass axe-core. The
    page is the one the labs above ran on, its Python still loaded, as
    a reader's stays loaded."""
    page = python.page

    def clicked(box):
        state, shown = run(box)
        python.up = state != "stopped"  # Stop ends it
        return state, shown

    try:
        wrong = []
        for n, lab in enumerate(runners("zero/")):
            box = open_runner(page, n)
            if why := wrong_run(lab, lab["source"], *clicked(box)):
                wrong.append(f"lab {n + 1} {why}")
            editor = box.locator(".course-runner__editor")
            editor.click()
            editor.press("Control+Home")
            page.keyboard.insert_text(EDIT)  # as a paste: type_over types
            editor.press("Enter")
            edited = editor.text_content()
            assert edited.startswith(EDIT + "\n"), edited[:200]
            if why := wrong_run(lab, edited, *clicked(box)):
                wrong.append(f"lab {n + 1} {why}")
            box.get_by_role("button", name="Reset").click()
            restored = editor.text_content()
            if restored.rstrip("\n") != lab["source"].rstrip("\n"):
                wrong.append(f"lab {n + 1}: Reset left {restored!r}")
        assert not wrong, "\n\n".join(wrong)
        first, second = (open_runner(page, n) for n in (0, 1))
        type_over(first, "total = 1\ntotal / 0")
        state, shown = clicked(first)
        assert state == "error", shown
        assert shown.rstrip().endswith("ZeroDivisionError: division by zero")
        assert clicked(second)[0] == "done"
        serious = serious_axe(page, ".course-runner")
        assert not serious, "\n".join(serious)
        assert not python.problems, "\n".join(python.problems)
    finally:
        python.problems.clear()


def test_stop_and_the_time_limit_end_a_loop(page, base_url):
    """The limit is the build's (course/build/execute.py); here the page is
    served with a limit of 2 s to watch it act."""
    page.route(
        f"{base_url}zero/",
        lambda route: route.fulfill(
            response=route.fetch(),
            body=route.fetch().text().replace('"limit": 60.0', '"limit": 2'),
        ),
    )
    page.goto(base_url + "zero/")
    box = open_runner(page, 0)
    type_over(box, "while True:\n    pass")
    box.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_function(
        "box => box.dataset.state === 'running'",
        arg=box.element_handle(),
        timeout=RUN_MS,
    )
    box.get_by_role("button", name="Stop").click()
    assert (
        "Stopped (Stop)"
        in box.locator(".course-runner__output").text_content()
    )
    state, shown = run(box)
    assert state == "stopped" and "time limit of 2 s" in shown, shown
    box.get_by_role("button", name="Reset").click()
    state, _ = run(box)
    assert state == "done"

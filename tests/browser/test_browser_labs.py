"""Every lab of the built site, run in Chromium by its own Run button.

One visit per page with labs (Pyodide loads once per page), and on it:

1. every lab, in page order: open its "Run in your browser" tab (and
   the answer it sits in, if closed), click Run; what the runner shows
   must equal the output the page records for the build, byte for byte
   (but for the trailing newlines, which a record never keeps);
2. every lab again, in page order: Reset, type over one literal as a
   reader would, Run; what the runner shows must equal what CPython
   gives (markdown-exec's runner, as in the build) for what the page's
   Python ran in that session, in the same order, in a fresh
   namespace: the session's labs as in step 1, this step's earlier
   edits, then the edited lab. An edit that raises must show CPython's
   exception line(s). The edit is chosen here, in CPython (`edits`),
   and must change what the lab prints, so no lab can pass by printing
   its record again;
3. no request left 127.0.0.1, and Python and the labs came from the
   site's own files.

The labs are the blocks tests/test_pyodide.py runs, less those that
are not laid out as labs (source="lab"): the page gives only labs a
runner, and a session in the browser holds only its labs.
"""

import ast
import difflib
import io
import itertools
import tokenize
import traceback
from pathlib import PurePosixPath

import pytest

from course import browser, execute, runner
from course.fences import ROOT
from tests.test_pyodide import executed_blocks

RUN_TAB = "Run in your browser"
RUN_S = 60  # one run; the first of a page loads Pyodide (slow CI)
TABS = "contains(concat(' ', @class, ' '), ' tabbed-set ')"  # XPath
ENDED = "['done', 'error', 'stopped'].includes(box.dataset.state)"


def lab_blocks():
    """{'docs/page.md': [(block, code)]} of the blocks that get a
    runner, in page order; `code` as the runner's editor holds it: the
    code the build ran, less its outer blank lines (as the lab layout
    shows it, course/execute.py)."""
    pages, refused = {}, {}
    for block, code in executed_blocks():
        page = block.path.relative_to(ROOT).as_posix()
        session = block.options.get("session")
        sessions = refused.setdefault(page, set())
        offered = runner.refused(code, session, sessions) is None
        if offered and block.options.get("source") == "lab":
            pages.setdefault(page, []).append((block, code.strip("\n")))
    return pages


LABS = lab_blocks()


def site_path(page):
    """'docs/zero.md' -> 'zero/', 'docs/index.md' -> ''."""
    parts = PurePosixPath(page).relative_to("docs").with_suffix("").parts
    if parts[-1] == "index":
        parts = parts[:-1]
    return "".join(f"{part}/" for part in parts)


# --- the edit and CPython's answer ------------------------------------------

_sessions = itertools.count()


def in_cpython(history):
    """(output, error) of the last code of `history`, run after the
    others in a fresh session by the build's runner. `error` is the
    exception's last line(s) as a traceback ends, None if it did not
    raise; an earlier code that raises leaves its partial state, as in
    the browser."""
    session = f"test-browser-labs-{next(_sessions)}"
    for code in history:
        output, error = None, None
        try:
            output = execute.run(
                code, limit=RUN_S, where=lambda: session, session=session
            )
        except execute.SnippetError as raised:
            cause = raised.__cause__ and raised.__cause__.__cause__
            if cause is None:  # not an exception of the code: a time-out
                raise
            error = "".join(traceback.format_exception_only(cause))
    return output, error


def edits(code):
    """(start, end, new text) of every one-literal edit of `code`, in
    the order tried: a number doubled, then True and False swapped,
    then "!" added at the end of a string; last literal first. (A few
    labs print no number that a literal sets; and on Python 3.11 a
    number inside an f-string is part of the string's token.)"""
    lines = code.splitlines(keepends=True)
    found = []
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        text = token.string
        if token.type == tokenize.NUMBER:
            kind, value = 0, ast.literal_eval(text) * 2
            new = f"{value:_}" if "_" in text else repr(value)
        elif text in ("True", "False"):
            kind, new = 1, str(text == "False")
        elif token.type == tokenize.STRING:
            quotes = 3 if text.lstrip("rRbBuUfF")[:3] in ('"""', "'''") else 1
            kind, new = 2, text[:-quotes] + "!" + text[-quotes:]
        else:
            continue
        (row, col), (end_row, end_col) = token.start, token.end
        start = sum(map(len, lines[: row - 1])) + col
        end = sum(map(len, lines[: end_row - 1])) + end_col
        found.append((kind, -start, end, new))
    return [(-start, end, new) for _, start, end, new in sorted(found)]


def choose_edit(history, code, record):
    """The first edit of `edits(code)` after which CPython, running
    `history` then the edited code, prints something other than
    `record`: (start, end, new, edited code, (output, error))."""
    for start, end, new in edits(code):
        edited = code[:start] + new + code[end:]
        output, error = in_cpython([*history, edited])
        if error is not None or output.rstrip("\n") != record:
            return start, end, new, edited, (output, error)
    return None


# --- the page ----------------------------------------------------------------


def open_lab(page, n):
    """The n-th runner of the page, its Run tab opened as a reader
    opens it: the closed answers it sits in first, then the tab."""
    box = page.locator(".course-runner").nth(n)
    folds = box.locator("xpath=ancestor::details")
    for i in range(folds.count()):  # outermost first
        fold = folds.nth(i)
        if fold.get_attribute("open") is None:
            fold.locator(":scope > summary").click()
    tabs = box.locator(f"xpath=ancestor::div[{TABS}][1]")  # the nearest
    tabs.locator(":scope > .tabbed-labels > label", has_text=RUN_TAB).click()
    return box


def run(box):
    """Click Run, wait until the runner says the run ended (run.js sets
    data-state to done, error or stopped; a fresh or Reset runner has
    none, so no earlier run's state can end the wait) and return
    (state, the text of its output)."""
    assert box.get_attribute("data-state") is None
    box.get_by_role("button", name="Run", exact=True).click()
    box.page.wait_for_function(
        f"box => {ENDED}", arg=box.element_handle(), timeout=RUN_S * 1000
    )
    shown = box.locator(".course-runner__output").text_content()
    return box.get_attribute("data-state"), shown


def type_over(box, code, start, end, new):
    """Select code[start:end] in the editor and type `new` over it."""
    utf16 = [len(code[:i].encode("utf-16-le")) // 2 for i in (start, end)]
    box.locator("textarea").evaluate(
        "(t, [a, b]) => { t.focus(); t.setSelectionRange(a, b); }", utf16
    )
    box.page.keyboard.type(new)


def diff(expected, shown, expected_name, shown_name):
    """A unified diff of two outputs (of their lines: reprs when only
    their trailing newlines differ)."""
    lines = [text.rstrip("\n").split("\n") for text in (expected, shown)]
    found = difflib.unified_diff(
        *lines, expected_name, shown_name, lineterm=""
    )
    return "\n".join(found) or f"{expected_name}: {expected!r}\n{shown!r}"


def edit_and_run(box, block, code, history):
    """Reset the runner, make the chosen edit, Run: [] if the runner
    shows what CPython gives, else [what differs]. `history` is what
    the session ran before; the edited code is added to it."""
    edit = choose_edit(history, code, block.record)
    assert edit, f"{block.id}: no one-literal edit changes its output"
    start, end, new, edited, (output, error) = edit
    box.get_by_role("button", name="Reset", exact=True).click()
    type_over(box, code, start, end, new)
    assert box.locator("textarea").input_value() == edited, block.id
    if block.options.get("session"):
        history.append(edited)
    state, shown = run(box)
    if error is None and state == "done" and shown == output:
        return []
    if error is not None and state == "error" and shown.endswith(error):
        return []
    line = code[:start].count("\n") + 1
    edit = f"{block.id}, line {line} of the lab, {code[start:end]} -> {new}"
    if error is None:
        return [diff(output, shown, f"{edit} (CPython)", f"(Run, {state})")]
    return [f"{edit}: CPython raises\n{error}Run ended {state}:\n{shown}"]


@pytest.fixture(scope="module")
def current_site(site):
    """The built site, if its labs' archive holds the current snippets/."""
    runner.check_site(site)
    return site


def test_every_page_with_a_runner_is_tested(current_site):
    """The pages of the build that hold runners, and how many each,
    are the pages and labs tested below: none is left out."""
    built = {}
    for path in browser.site_pages(current_site):
        html = browser.page_file(current_site, path).read_text("utf-8")
        runners = html.count(
            '<script type="application/json" data-course-runner>'
        )
        if runners:
            built[path] = runners
    expected = {site_path(page): len(labs) for page, labs in LABS.items()}
    assert built == expected
    assert sum(expected.values()) >= 30, "too few labs: is a runner missing?"


@pytest.mark.parametrize("lab_page", sorted(LABS), ids=sorted(LABS))
def test_each_lab_runs_in_the_browser_as_recorded_and_as_edited(
    current_site, visit, lab_page
):
    """Run prints the record; an edit prints what CPython prints for it;
    nothing is fetched from another host (see the module's docstring)."""
    labs = LABS[lab_page]
    v = visit(site_path(lab_page))
    page = v.page
    assert page.locator(".course-runner").count() == len(labs)
    wrong = []
    ran = {}  # session: the code its Python has run, in order
    for n, (block, code) in enumerate(labs):
        box = open_lab(page, n)
        assert box.locator("textarea").input_value() == code, block.id
        state, shown = run(box)
        if state != "done" or shown.rstrip("\n") != block.record:
            ended = f"{block.id} (Run, {state})"
            wrong.append(diff(block.record, shown, block.id, ended))
        ran.setdefault(block.options.get("session"), []).append(code)
    for n, (block, code) in enumerate(labs):
        session = block.options.get("session")
        history = ran[session] if session else []
        box = page.locator(".course-runner").nth(n)
        wrong += edit_and_run(box, block, code, history)
    if wrong:
        pytest.fail("\n".join(wrong), pytrace=False)
    assert "assets/pyodide/pyodide.asm.wasm" in v.loaded
    assert f"assets/run/{runner.archive()[0]}" in v.loaded
    assert not v.off_host, f"requests that left 127.0.0.1: {v.off_host}"
    assert not v.problems, "\n".join(v.problems)

"""Run in your browser, in Chromium: a tiny site built by MkDocs with
this project's hook (course/pyodide.py) and runner (docs/assets/run/),
whose one page mounts runners with course.runner.block_html.

Run prints what the page records; an edit that raises shows the Python
error; Stop, and the time limit, end a loop that never returns; the
runtime loads on the first Run only; no request leaves 127.0.0.1 (the
Visit of tests/browser/checks.py aborts and records any).
"""

import os
import shutil
import subprocess
import sys
import time

import pytest
from sybil import Document

from course import browser, runner
from course.fences import ROOT, expand
from tests.browser import checks
from tests.browser.checks import Visit
from tests.docblocks import parse

MKDOCS = shutil.which("mkdocs", path=os.path.dirname(sys.executable))
BUILD_TIMEOUT_S = 120
COLD_S = 60  # loading Pyodide the first time: generous for a slow CI
LIMIT_S = 3  # the time limit of the page's looping block
ZERO = ROOT / "docs" / "zero.md"
LOOP = "while True:\n    pass\n"


def zero_block():
    """The ZeRO page's first lab block: (code, session, record)."""
    for example in Document.parse(str(ZERO), parse):
        block = example.parsed
        code = expand(block.source)
        if block.executed and "memory_per_gpu(" in code:
            return code, block.options["session"], block.record
    raise AssertionError(f"{ZERO}: no block runs memory_per_gpu")


PAGE = """# Runner

{zero}

{define}

{use}

{loop}

<script type="module">
import {{ mountAll }} from "./assets/run/run.js";
mountAll();
</script>
"""


@pytest.fixture(scope="module")
def tiny_site(tmp_path_factory):
    """The built tiny site's folder."""
    project = tmp_path_factory.mktemp("runner-site")
    docs = project / "docs"
    shutil.copytree(ROOT / "docs" / "assets" / "run", docs / "assets" / "run")
    # the site's own stylesheet: the runner is seen as on the real pages
    shutil.copyfile(ROOT / "docs" / "assets" / "extra.css", docs / "extra.css")
    code, session, _ = zero_block()
    html = runner.block_html
    (docs / "index.md").write_text(
        PAGE.format(
            zero=html(code, session=session, page="index.md"),
            define=html("x = 21\n", session="demo", page="index.md"),
            use=html("print(x * 2)\n", session="demo", page="index.md"),
            # (str: Markup.replace would escape its arguments)
            loop=str(html(LOOP, page="index.md")).replace(
                '{"archive"', f'{{"limit": {LIMIT_S}, "archive"'
            ),
        ),
        encoding="utf-8",
    )
    (project / "mkdocs.yml").write_text(
        "site_name: Runner\n"
        "theme:\n  name: material\n  font: false\n"
        "  palette:\n    scheme: default\n"
        "    primary: indigo\n    accent: indigo\n"
        "extra_css: [extra.css]\n"
        "plugins: []\n"
        f"hooks:\n  - {ROOT / 'course' / 'pyodide.py'}\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [MKDOCS, "build", "--strict", "-d", "site"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    site = project / "site"
    runner.check_site(site)
    return site


@pytest.fixture(scope="module")
def tiny_url(tiny_site):
    with browser.serve(tiny_site) as url:
        yield url


@pytest.fixture
def page(chromium, tiny_url):
    visit = Visit(chromium, tiny_url)
    visit.goto("")
    visit.page.wait_for_selector(".course-runner textarea")
    yield visit
    assert not visit.problems, "\n".join(visit.problems)
    assert not visit.off_host
    visit.close()


def _runner(visit, n):
    return visit.page.locator(".course-runner").nth(n)


def _run(box, state="done", timeout_s=COLD_S):
    box.get_by_role("button", name="Run").click()
    box.page.wait_for_function(
        "([box, state]) => box.dataset.state === state",
        arg=[box.element_handle(), state],
        timeout=timeout_s * 1000,
    )
    return box.locator(".course-runner__output").text_content()


def test_run_prints_the_recorded_output_and_loads_python_on_click(page):
    assert page.page.locator(".course-runner").count() == 4
    before = list(page.loaded)
    assert not [u for u in before if "assets/pyodide/" in u], before
    assert not [u for u in before if u.endswith(".zip")], before
    box = _runner(page, 0)
    started = time.monotonic()
    output = _run(box)
    cold = time.monotonic() - started
    assert output.rstrip("\n") == zero_block()[2]
    loaded = page.loaded
    assert "assets/pyodide/pyodide.asm.wasm" in loaded
    assert f"assets/run/{runner.archive()[0]}" in loaded
    print(f"\nfirst Run, cold, click to output: {cold:.1f} s")
    started = time.monotonic()
    assert _run(box).rstrip("\n") == zero_block()[2]
    print(f"second Run, warm: {time.monotonic() - started:.2f} s")


def test_an_edit_that_raises_shows_the_python_error(page):
    box = _runner(page, 0)
    code = box.locator("textarea")
    edited = code.input_value() + '\nmemory_per_gpu("ddp", 7e9, 0)\n'
    code.fill(edited)
    output = _run(box, state="error")
    last = output.rstrip("\n").splitlines()[-1]
    assert last.startswith("ValueError: world_size"), output
    assert output.startswith("GB per GPU")  # what it printed before
    box.get_by_role("button", name="Reset").click()
    assert code.input_value() == zero_block()[0]


def test_a_block_sees_what_earlier_blocks_of_its_session_defined(page):
    # Run the second block first: its session's first block runs before
    # it, as on the page.
    assert _run(_runner(page, 2)) == "42\n"


def test_stop_and_the_time_limit_end_a_loop(page):
    box = _runner(page, 3)
    _run(box, state="running")  # Python has loaded; the loop runs
    time.sleep(0.5)
    started = time.monotonic()
    box.get_by_role("button", name="Stop").click()
    box.page.wait_for_function(
        "box => box.dataset.state === 'stopped'",
        arg=box.element_handle(),
        timeout=2000,
    )
    assert time.monotonic() - started < 2
    assert "Stopped (Stop)" in box.text_content()
    # Nobody presses Stop: the limit ends it, from the loop's start.
    output = _run(box, state="stopped", timeout_s=COLD_S + LIMIT_S)
    assert output.startswith(f"Stopped (time limit of {LIMIT_S} s)")
    # A fresh Python runs the next block.
    assert _run(_runner(page, 2)) == "42\n"


def test_the_request_check_sees_what_the_worker_fetches(chromium, tiny_url):
    """The Visit's off-host check covers requests made by the worker:
    Python that fetches another host is caught and aborted."""
    visit = Visit(chromium, tiny_url)
    try:
        visit.goto("")
        box = _runner(visit, 2)
        box.locator("textarea").fill(
            "import js\njs.fetch('http://192.0.2.1/probe')\nprint(1)\n"
        )
        _run(box)
        deadline = time.monotonic() + 10
        while not visit.off_host and time.monotonic() < deadline:
            visit.page.wait_for_timeout(100)
        assert visit.off_host == ["http://192.0.2.1/probe"]
    finally:
        visit.close()


def test_the_runner_passes_axe(page):
    """The editor, the buttons and an error output, as axe-core sees
    them (its serious rules include text contrast), with Run focused, as
    a click leaves it, and with the pointer over Reset."""
    box = _runner(page, 2)
    box.locator("textarea").fill("raise ValueError('shown')\n")
    _run(box, state="error")
    box.get_by_role("button", name="Run").focus()
    box.get_by_role("button", name="Reset").hover()
    problems = checks.axe_problems(page.page)
    assert not problems, checks.report("runner", problems)

"""A hang ends with its page, notebook cell or test named, in bounded
time, and leaves no process behind: each case runs on a copy of the
project (tests/project.py) in which a lab or a cell sleeps for ever."""

import os
import subprocess
import sys
import time

import pytest

from tests.project import build, copy_project, processes_in

pytestmark = pytest.mark.slow
FOREVER = "\nimport time\n\ntime.sleep(100_000)\n"
# The time limits the cases set: what they test is that the hang ends,
# named, and each case waits this long for it. Nothing else in them
# runs under a limit but a test that passes and a cell that prints.
LIMIT_S = 2


def hang(path):
    """`path` (a lab) sleeps for ever when imported."""
    path.write_text(path.read_text(encoding="utf-8") + FOREVER)


def test_a_lab_that_hangs_at_import_fails_its_tests_by_name(tmp_path):
    project = copy_project(tmp_path, with_docs=False)
    hang(project / "snippets" / "ddp" / "allreduce.py")
    tests = project / "tests"
    (tests / "test_sleeps.py").write_text(
        "import time\n\n\ndef test_sleeps():\n    time.sleep(100_000)\n"
    )
    (tests / "test_ends.py").write_text("def test_ends():\n    pass\n")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + ["-o", f"collect_timeout={LIMIT_S}", "-o", f"timeout={LIMIT_S}"]
        + [f"tests/test_{name}.py" for name in ("ddp", "sleeps", "ends")],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project)},
        capture_output=True,
        text=True,
        timeout=240,
    )
    took = time.monotonic() - started
    out = done.stdout
    assert done.returncode == 1, out[-3000:]
    assert "ERROR tests/test_ddp.py - TimeoutError: importing" in out, out
    assert f"still running after {LIMIT_S} s (collect_timeout)" in out, out
    assert "FAILED tests/test_sleeps.py::test_sleeps - Failed: Timeout" in out
    assert "1 failed, 1 passed, 1 error" in out.splitlines()[-1], out[-3000:]
    assert took < 180, f"the run took {took:.0f} s"  # two limits of hangs
    assert processes_in(project) == []


# A page (or notebook) that needs the hanging lab, alone in a site.
NAV = "INHERIT: mkdocs.yml\nnav: [index.md, {page}]\n"
LAB = "from snippets.ddp import allreduce\n"
PAGES = {
    "block": (
        "page.md",
        f'# Page\n\n```python exec="on"\n{LAB}```\n',
        f"docs/page.md:3: code block still running after {LIMIT_S} s",
    ),
    "chart": (
        "page.md",
        '# Page\n\n```python exec="on" html="true"\n'
        'from course.charts import figure\n\nprint(figure("ring"))\n```\n',
        f"docs/page.md:3: chart 'ring' still drawing after {LIMIT_S} s",
    ),
    "notebook cell": (
        "exercises/nb.py",
        f'# %%\nprint("first cell")\n\n# %%\n{LAB}',
        "A cell timed out while it was being executed, after "
        f"{LIMIT_S} seconds",
    ),
}


@pytest.mark.parametrize("kind", list(PAGES))
def test_a_hang_in_the_build_stops_it_naming_where(tmp_path, kind):
    page, text, message = PAGES[kind]
    project = copy_project(tmp_path, with_docs=False)
    hang(project / "snippets" / "ddp" / "allreduce.py")
    (project / "docs" / page).parent.mkdir(parents=True)
    (project / "docs" / "index.md").write_text("# Home\n")
    (project / "docs" / page).write_text(text)
    (project / "test.yml").write_text(NAV.format(page=page))
    started = time.monotonic()
    done = build(project, "test.yml", env={"SNIPPET_TIMEOUT": str(LIMIT_S)})
    took = time.monotonic() - started
    assert done.returncode != 0
    assert message in done.stderr, done.stderr[-3000:]
    if kind == "notebook cell":
        assert "Error reading page 'exercises/nb.py'" in done.stderr
        assert LAB in done.stderr  # the cell
    assert took < 150, f"the build took {took:.0f} s"  # a limit of it hung
    assert processes_in(project) == []

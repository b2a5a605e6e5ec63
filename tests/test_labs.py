"""Every module in snippets/<page>/ (bar torchrun/, which needs torch;
tests/test_train.py runs it) imports without printing, and every lab
runs as readers run it, `python -m snippets.<page>.<name>` (a process
for each lab: `make test` runs them, `make check` leaves them out).

The tests of each page's labs are in tests/test_<page>.py.
"""

import json
import subprocess
import sys

import pytest

from course import ROOT

# Needs the engines group (Ray Train), which `make test` does not
# install: tests/test_engines.py imports and runs it (make test-engines).
ENGINES = {"snippets.beyond.ray_train"}


def discovered_modules():
    for path in sorted((ROOT / "snippets").glob("*/*.py")):
        if path.parent.name != "torchrun" and path.stem != "__init__":
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            if module not in ENGINES:
                yield module


def is_lab(module):
    """A lab has a demo section that readers run with python -m."""
    path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
    return "[start:demo]" in path.read_text(encoding="utf-8")


# Imports each module in turn, in one fresh Python: what it printed, or
# its traceback; the report is all this process prints.
IMPORT_EACH = """
import contextlib, importlib, io, json, sys, traceback
report, out = {}, sys.stdout
for module in sys.argv[1:]:
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            importlib.import_module(module)
        report[module] = {"printed": printed.getvalue(), "error": ""}
    except BaseException:
        report[module] = {"printed": "", "error": traceback.format_exc()}
out.write(json.dumps(report))
"""


@pytest.fixture(scope="module")
def imported():
    """{module: {"printed", "error"}}: each module of discovered_modules()
    imported in a fresh Python, one for all of them. (Reloading here
    would make second copies of the labs' classes, which other tests'
    isinstance checks then refuse.)"""
    modules = list(discovered_modules())
    run = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH, *modules],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,  # a lab imports in well under a second
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)  # anything printed besides fails here


@pytest.mark.parametrize("module", list(discovered_modules()))
def test_module_imports_quietly(module, imported):
    assert imported[module]["error"] == "", imported[module]["error"]
    assert imported[module]["printed"] == "", f"importing {module} printed"


@pytest.mark.slow  # a process for each lab
@pytest.mark.parametrize(
    "module", [m for m in discovered_modules() if is_lab(m)]
)
def test_lab_runs_as_a_script(module):
    run = subprocess.run(
        [sys.executable, "-m", module],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,  # a lab runs in seconds
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip(), f"python -m {module} printed nothing"

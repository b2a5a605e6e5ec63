"""The runs the launching tests train start to finish, without a fault
or a restart, gathered into one sweep per world size
(course/instruments/sweep.py): each world size's processes start, import
torch and meet once per pytest run, whichever test files use them.

A test module adds its runs as it is imported, `add(name, nproc, flags)`
(a `{tmp}` in a flag becomes the sweep's own folder, for checkpoints);
a test that reads them carries `group(nproc)`, the xdist_group that
`--dist loadgroup` keeps on one worker (tests/conftest.py checks it
does), and gets them with `made(tmp_path_factory, nproc)`: the first
call on a worker launches every run added for that world size, in the
order added, and later calls get the same Sweep. A run's figures do not
depend on the runs beside it: each builds its model from its seed.
"""

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from course.tools.stress import launch_command, what_failed
from course.tools.stress import run as run_command
from snippets.measured import report
from snippets.measured.report import Run

ADDED: dict[int, dict[str, tuple[str, ...]]] = {}  # nproc -> name -> flags
MADE: dict[int, "Sweep | str"] = {}  # nproc -> the sweep, or why it failed
TIMEOUT_S = 500  # a sweep is made inside one test: under its 600 s


@dataclass(frozen=True)
class Sweep:
    runs: dict[str, Run]  # by the name it was added under
    log: str  # the launch's stdout: every rank's lines
    folder: Path  # what `{tmp}` stood for


def add(name, nproc, flags):
    """Train `flags` on `nproc` ranks in that world size's sweep; the
    name reads its Run back. The same name twice must mean one run."""
    flags = tuple(flags)
    runs = ADDED.setdefault(nproc, {})
    if runs.setdefault(name, flags) != flags:
        raise ValueError(f"run {name!r} added twice with other flags")
    return name


def group(nproc):
    """The mark of the tests that read the sweep of `nproc` ranks."""
    return pytest.mark.xdist_group(f"ranks-{nproc}")


def made(tmp_path_factory, nproc):
    """The Sweep of `nproc` ranks, launched on first use; a failed one
    fails every test that reads it, with the launch's own error."""
    if nproc not in MADE:
        MADE[nproc] = launch(tmp_path_factory.mktemp(f"sweep{nproc}"), nproc)
    if isinstance(MADE[nproc], str):
        pytest.fail(f"the sweep on {nproc} ranks failed:\n{MADE[nproc]}")
    return MADE[nproc]


def launch(folder, nproc):
    """Every run added for `nproc` ranks, in one launch: its Sweep, or
    what went wrong."""
    names = list(ADDED[nproc])
    flags = [
        [f.replace("{tmp}", str(folder)) for f in ADDED[nproc][name]]
        for name in names
    ]
    out = folder / "runs.json"
    command = launch_command("sweep", nproc, flags, out)
    try:
        done = run_command(command, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"still running after {TIMEOUT_S} s"
    if done.returncode:
        return what_failed(done.stderr)
    runs = dict(zip(names, report.load(out), strict=True))
    return Sweep(runs, done.stdout, folder)

"""The training script and the course's instruments: which imports
which, and what makes a recorded result stale."""

import subprocess
import sys

import pytest

from course import ROOT
from course.instruments import results
from course.instruments import train as measured
from course.tools.stress import environment
from snippets.torchrun import config

LESSON = sorted(
    f"snippets.torchrun.{p.stem}"
    for p in (ROOT / "snippets" / "torchrun").glob("*.py")
    if p.stem != "__init__"
)


@pytest.mark.parametrize("module", LESSON)
def test_the_script_imports_nothing_of_its_instruments(module):
    """Everything a reader of snippets/torchrun/ follows stays there:
    a setting goes from the command line to the step in the lesson's
    own modules (and the labs' shared checks)."""
    reached = results.closure(module)
    assert all(name.startswith("snippets") for name in reached), reached


def test_the_instruments_import_the_script():
    reached = set(results.closure("course.instruments.train"))
    assert {"snippets.torchrun.train", "snippets.torchrun.parallel"} <= reached


def test_the_script_has_no_measuring_flags():
    flags = set(config.parser()._option_string_actions)
    assert not flags & {f"--{name}" for name in measured.MEASURING}
    assert {"--strategy", "--tp", "--pp", "--steps"} <= flags


@pytest.mark.slow  # a process that imports torch
def test_a_measuring_flag_given_to_the_script_is_refused():
    done = subprocess.run(
        [sys.executable, "-m", "snippets.torchrun.train", "--check"],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "unrecognized arguments: --check" in done.stderr


def test_a_result_depends_on_what_its_launch_runs():
    """A module the launch imports, at any depth, is in its digest; how
    results are shown (charts, the page's tables) is not."""
    trained = results.closure(results.ENTRIES["train"])
    assert {"snippets.torchrun.model", "snippets.zero.memory"} <= set(trained)
    timed = results.closure(results.ENTRIES["collectives"])
    assert "snippets.measured.report" not in timed
    assert not [m for m in trained + timed if m.startswith("course.charts")]


def test_a_digest_moves_with_a_source_it_runs(monkeypatch, tmp_path):
    before = results.digest("collectives2")
    original = results.source

    def edited(module):
        path = original(module)
        if module != "snippets.torchrun.processes":
            return path
        copy = tmp_path / "processes.py"
        copy.write_text(path.read_text() + "\n# an edit\n")
        return copy

    monkeypatch.setattr(results, "source", edited)
    assert results.digest("collectives2") != before
    assert results.digest("solo") != results.digest("compare")


COMPARE = [
    (["--compare", "--strategy=ddp"], "drop --strategy"),
    (["--compare", "--tp=2"], "drop --tp"),
    (["--compare", "--pp=2"], "drop --pp"),
    (["--compare", "--checkpoint-dir=x"], "drop --checkpoint-dir"),
]


@pytest.mark.parametrize("args,allowed", COMPARE, ids=lambda a: str(a))
def test_a_bad_compare_is_named(capsys, args, allowed):
    with pytest.raises(SystemExit) as stop:
        measured.parse(args, env={"WORLD_SIZE": "4"})
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--compare" in err and allowed in err, err

"""--pp-schedule zbv and interleaved-zb in snippets/torchrun/, on the CPU
with gloo: ZBV's V placement, each rank's order of F, B and W against
the zero-bubble lab (snippets/pipeline/zero_bubble.py), loss and
gradient parity with one process, and a checkpoint that resumes. Orders
and counts are asserted exactly; idle shares follow the machine and are
only shown (docs/zero-bubble.md). The tests that launch are marked slow.
"""

import json
import shutil
from collections import Counter

import pytest

from course.instruments import results
from course.tools.stress import CLEAN_EXIT, launch_command, what_failed
from course.tools.stress import run as run_command
from snippets.measured import report, timelines
from snippets.pipeline.schedule import pipeline_schedule
from snippets.pipeline.zero_bubble import zero_bubble_schedule
from snippets.torchrun.parallel import stages_of
from tests import sweeps

PARITY_RTOL = 1e-5  # fp32 losses of one batch, summed in another order


def lab(run):
    """The lab's slots for the schedule, p and m of `run`."""
    p, m = run.config.pp, run.config.pp_microbatches
    if run.config.pp_schedule == "interleaved":
        return pipeline_schedule(
            p, m, "interleaved", chunks=run.config.pp_chunks
        )
    return zero_bubble_schedule(p, m, run.config.pp_schedule)


def passes(run, step):
    """How many passes of each (stage, kind) `step` ran."""
    return Counter((e[1], e[2]) for e in run.measured.timeline if e[0] == step)


def check_schedule(run):
    """Every traced step runs the lab's order on every rank, each pass
    once per micro-batch: F and B on every stage, W where the backward
    is split, the loss on the last stage."""
    p, m, v = run.config.pp, run.config.pp_microbatches, run.config.pp_chunks
    split = run.config.pp_schedule == "zbv"
    expected = Counter()
    for stage in range(p * v):
        for kind in "FBW" if split else "FB":
            expected[(stage, kind)] = m
    expected[(p * v - 1, "L")] = m
    steps = timelines.traced_steps(run)
    assert steps, run.config
    for step in steps:
        assert passes(run, step) == expected, (run.config.pp_schedule, m)
        assert timelines.order(timelines.slots(run, step)) == (
            timelines.order(lab(run))
        ), (run.config.pp_schedule, m, step)


def test_zbv_places_the_stages_in_a_v():
    """Rank r holds stages r and 2p - 1 - r: rank 0 the first and the
    last, so it computes the loss; round robin holds r, r + p, ..."""
    assert [stages_of(r, 2, 2, "zbv") for r in range(2)] == [[0, 3], [1, 2]]
    assert [stages_of(r, 4, 2, "zbv") for r in range(4)] == [
        [0, 7],
        [1, 6],
        [2, 5],
        [3, 4],
    ]
    for schedule in ("interleaved", "interleaved-zb"):
        assert [stages_of(r, 2, 2, schedule) for r in range(2)] == [
            [0, 2],
            [1, 3],
        ]


def test_pytorch_runs_the_zero_bubble_labs_schedules():
    """1F1B, interleaved 1F1B and ZBV, as torch.distributed.pipelining
    ran them on 2 ranks: every rank in the lab's order, pass by pass."""
    runs = [r for r in results.runs("zerobubble2") if r.measured.timeline]
    shapes = {(r.config.pp_schedule, r.config.pp_microbatches) for r in runs}
    assert shapes == {
        (s, m) for s in results.ZERO_BUBBLE for m in results.ZB_MICROBATCHES
    }
    for run in runs:
        check_schedule(run)


def test_zero_bubble_schedules_train_as_one_process():
    """ZBV and interleaved zero bubble on 2 ranks: the losses of one
    process, and gradients that pass the check against it."""
    solo = results.runs("solo")[0]
    runs = [r for r in results.runs("zerobubble2") if not r.measured.timeline]
    assert {r.config.pp_schedule for r in runs} == {"zbv", "interleaved-zb"}
    for run in runs:
        assert run.config.model == solo.config.model and run.config.pp == 2
        assert run.losses == pytest.approx(solo.losses, rel=PARITY_RTOL)
        assert run.measured.grad_check.ok, run.measured.grad_check


def train(tmp_path, name, *flags):
    """One launch of course/instruments/train.py on 2 ranks; its Run."""
    out = tmp_path / f"{name}.json"
    command = launch_command("train", 2, flags, out)
    done = run_command(command, timeout=300)
    assert done.returncode == 0, what_failed(done.stderr)
    assert len(set(CLEAN_EXIT.findall(done.stdout))) == 2, done.stdout
    [run] = report.load(out)
    return run, done.stdout


# Three steps of ZBV with a checkpoint after each, in the sweep on 2
# ranks (tests/sweeps.py).
ZBV = (
    *results.parity(1, "--pp=2", "--pp-schedule=zbv", "--check"),
    "--trace",
    "--checkpoint-every=1",
)
sweeps.add("zero-bubble/zbv", 2, (*ZBV, "--checkpoint-dir={tmp}/zbv"))


@sweeps.group(2)
@pytest.mark.slow  # torchrun launches
def test_a_zbv_job_checkpoints_and_resumes_as_if_never_stopped(
    tmp_path, tmp_path_factory
):
    """Three steps of ZBV with --check, --trace and a checkpoint after
    each: the lab's order, the gradients of one process. Then the third
    checkpoint is removed and the job started again: it resumes from
    the second (each rank saves the two stages of its V) and ends with
    the same loss and, bit for bit, the same weights."""
    sweep = sweeps.made(tmp_path_factory, 2)
    assert len(set(CLEAN_EXIT.findall(sweep.log))) == 2, sweep.log
    whole = sweep.runs["zero-bubble/zbv"]
    check_schedule(whole)
    assert whole.measured.grad_check.ok, whole.measured.grad_check
    saved = tmp_path / "checkpoints"  # a copy: the sweep's stays as made
    shutil.copytree(sweep.folder / "zbv", saved)
    last = saved / "step_000003"
    trainer = json.loads((last / "trainer.json").read_text())
    assert trainer["step"] == 3
    shutil.rmtree(last)
    flags = (*ZBV, f"--checkpoint-dir={saved}")
    again, log = train(tmp_path, "again", *flags)
    assert again.resumed_from_step == 2, log
    assert "resumed from the checkpoint of step 2" in log
    assert again.losses == whole.losses
    assert again.measured.weights_sha256 == whole.measured.weights_sha256

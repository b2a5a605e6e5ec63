"""--cp: snippets/torchrun/context.py under torchrun, on the CPU with gloo.

The record of launch "context4" (course/instruments/results.py) holds
what the ring sent and scored, counted by course/instruments/probes.py;
it must equal the lab's formulas exactly (integers), and the losses
those of one process. The tests that launch are marked slow.
"""

import shutil

import pytest

from course.instruments import results
from course.tools.stress import SMALL, launch_command, what_failed
from course.tools.stress import run as run_command
from snippets.context.balance import _positions
from snippets.measured import context, report
from snippets.torchrun.context import chunks, positions
from tests import sweeps

PARITY_RTOL = 1e-5  # fp32 losses of one seed and batch, any layout


def ring_runs():
    return results.runs("context4")


# --- the recorded runs against the lab --------------------------------------


def test_the_record_holds_both_balances_and_dp_beside_cp():
    runs = ring_runs()
    layouts = {
        (r.config.cp, r.config.cp_balance, r.dp // r.config.cp) for r in runs
    }
    assert {(4, "none", 1), (4, "zigzag", 1), (2, "zigzag", 2)} <= layouts
    assert all(len(r.measured.ring) == r.world_size for r in runs)


def test_each_rank_sends_what_cp_bytes_per_layer_says():
    for r in ring_runs():
        expected = context.predicted_sent(r)
        assert context.sent_per_layer(r) == [expected] * r.world_size, r.config
        # every call is counted once per layer and micro-batch
        c = r.config
        calls = c.model.n_layers * c.accum_steps * c.steps
        assert {rank["calls"] for rank in r.measured.ring} == {calls}


def test_each_ring_step_scores_the_pairs_the_lab_counts():
    for r in ring_runs():
        assert context.pairs(r) == context.predicted_pairs(r), r.config
        for rank in r.measured.ring:  # a whole number of pairs per call
            assert all(n % rank["calls"] == 0 for n in rank["pairs"])


def test_zigzag_evens_out_the_work_that_none_leaves_uneven():
    by = {
        (r.config.cp_balance, r.config.model.seq_len): r
        for r in ring_runs()
        if r.config.cp == 4
    }
    for (balance, _), r in by.items():
        work = [sum(col) for col in zip(*context.pairs(r), strict=True)]
        if balance == "zigzag":
            assert len(set(work)) == 1, work
        else:
            assert work == sorted(work) and work[-1] > 4 * work[0], work


def test_cp_trains_the_losses_of_one_process():
    solo = results.runs("solo")[0]
    parity = [r for r in ring_runs() if r.config.model == solo.config.model]
    assert len(parity) == 3
    for r in parity:
        assert r.losses == pytest.approx(solo.losses, rel=PARITY_RTOL)
        assert r.measured.grad_check.ok, r.measured.grad_check


def test_the_positions_are_the_labs_chunks():
    for balance, layout in context.LAYOUT.items():
        for rank in range(4):
            mine = positions(32, 4, rank, balance).tolist()
            assert mine == _positions(32, 4, rank, layout)
            # the last rank's two zig-zag chunks meet in the middle
            split = balance == "zigzag" and rank < 3
            assert len(chunks(mine)) == (2 if split else 1)


# --- launches ----------------------------------------------------------------

# The record's ring runs of the parity model (cp 4 without and with
# zig-zag, dp 2 x cp 2), trained again in the sweep on 4 ranks
# (tests/sweeps.py); dp 2 x tp 2 x cp 2 in the sweep on 8, one step of
# a small model; and the dp 2 x cp 2 run again, stopped after two steps
# with a checkpoint each, for a launch that resumes it.
AGAIN = [0, 1, 2]
for _i in AGAIN:
    sweeps.add(f"context4-{_i}", 4, results.run_flags("context4")[_i])
DP2_CP2 = results.run_flags("context4")[2]
SAVED = ("--checkpoint-dir={tmp}/context-cp", "--checkpoint-every=1")
sweeps.add("context/first-two-steps", 4, (*DP2_CP2, *SAVED, "--steps=2"))
sweeps.add(
    "context/dp2-tp2-cp2",
    8,
    (*SMALL, "--steps=1", "--check", "--cp=2", "--tp=2", "--strategy=fsdp"),
)


def train(tmp_path, nproc, *flags, name="run"):
    """Train under torchrun with the instruments; the report.Run."""
    out = tmp_path / f"{name}.json"
    command = launch_command("train", nproc, flags, out)
    done = run_command(command, timeout=300)
    assert done.returncode == 0, what_failed(done.stderr)
    [run] = report.load(out)
    return run, done.stdout


@pytest.mark.slow  # torchrun launches
@pytest.mark.parametrize(
    "nproc,name,layout",
    [
        pytest.param(
            4, "context4-2", "dp 2 x cp 2 x tp 1", marks=sweeps.group(4)
        ),
        pytest.param(
            4, "context4-0", "dp 1 x cp 4 x tp 1", marks=sweeps.group(4)
        ),
        pytest.param(
            8,
            "context/dp2-tp2-cp2",
            "dp 2 x cp 2 x tp 2",
            marks=sweeps.group(8),
        ),
    ],
    ids=["dp2-cp2", "cp4-none", "dp2-tp2-cp2"],
)
def test_a_cp_layout_has_the_gradients_of_one_process(
    tmp_path_factory, nproc, name, layout
):
    """dp 2 x cp 2 and cp 4 (no balance) are the record's runs of the
    parity model, trained again; dp 2 x tp 2 x cp 2 one step of a small
    model: the gradient check and the ring's counts hold at any size."""
    sweep = sweeps.made(tmp_path_factory, nproc)
    run = sweep.runs[name]
    assert run.measured.grad_check.ok, run.measured.grad_check
    assert context.pairs(run) == context.predicted_pairs(run)
    assert context.sent_per_layer(run)[0] == context.predicted_sent(run)
    assert f"{layout} on {nproc} rank(s)" in sweep.log, sweep.log


@sweeps.group(4)
@pytest.mark.slow  # torchrun launches
def test_a_resumed_cp_run_ends_as_an_unbroken_one(tmp_path, tmp_path_factory):
    """The record's dp 2 x cp 2 run, three steps at once, against two
    steps with a checkpoint each (both in the sweep), then a launch that
    resumes from the second: the same losses and, made on this machine
    in this test run, the same weights bit for bit."""
    sweep = sweeps.made(tmp_path_factory, 4)
    whole = sweep.runs["context4-2"]
    assert sweep.runs["context/first-two-steps"].losses == whole.losses[:2]
    saved = tmp_path / "checkpoints"  # a copy: the sweep's stays as made
    shutil.copytree(sweep.folder / "context-cp", saved)
    part = (*DP2_CP2, f"--checkpoint-dir={saved}", "--checkpoint-every=1")
    resumed, log = train(tmp_path, 4, *part, "--steps=3", name="resumed")
    assert "resumed from the checkpoint of step 2" in log
    assert resumed.resumed_from_step == 2
    assert resumed.losses == whole.losses
    assert resumed.measured.weights_sha256 == whole.measured.weights_sha256


@sweeps.group(4)
@pytest.mark.slow  # a torchrun launch
def test_the_recorded_cp_runs_made_again_give_the_same_figures(
    tmp_path_factory,
):
    """The record's ring runs of the parity model, trained again: the
    counts exactly, the losses to 1e-5 (another CPU's kernels)."""
    sweep = sweeps.made(tmp_path_factory, 4)
    again = [sweep.runs[f"context4-{i}"] for i in AGAIN]
    recorded = [ring_runs()[i] for i in AGAIN]
    for new, old in zip(again, recorded, strict=True):
        assert new.config == old.config
        assert context.pairs(new) == context.pairs(old)
        assert context.sent_per_layer(new) == context.sent_per_layer(old)
        assert new.losses == pytest.approx(old.losses, rel=PARITY_RTOL)

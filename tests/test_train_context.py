"""--cp: snippets/torchrun/context.py under torchrun, on the CPU with gloo.

The record of launch "context4" (course/instruments/results.py) holds
what the ring sent and scored, counted by course/instruments/probes.py;
it must equal the lab's formulas exactly (integers), and the losses
those of one process. The tests that launch are marked slow.
"""

import pytest

from course.instruments import results
from course.tools.stress import SMALL, launch_command, what_failed
from course.tools.stress import run as run_command
from snippets.context.balance import _positions
from snippets.measured import context, report
from snippets.torchrun.context import chunks, positions

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
    "nproc,layout",
    [(4, ("--cp=2", "--strategy=fsdp")), (4, ("--cp=4", "--cp-balance=none"))]
    + [(8, ("--cp=2", "--tp=2", "--strategy=fsdp"))],
    ids=["dp2-cp2", "cp4-none", "dp2-tp2-cp2"],
)
def test_a_cp_layout_has_the_gradients_of_one_process(tmp_path, nproc, layout):
    run, log = train(tmp_path, nproc, *SMALL, "--steps=1", "--check", *layout)
    assert run.measured.grad_check.ok, run.measured.grad_check
    assert context.pairs(run) == context.predicted_pairs(run)
    assert context.sent_per_layer(run)[0] == context.predicted_sent(run)
    assert "cp 2" in log or "cp 4" in log, log


@pytest.mark.slow  # torchrun launches
def test_a_resumed_cp_run_ends_as_an_unbroken_one(tmp_path):
    """Three steps at once against two, then one more from the
    checkpoint: the same losses and, made on this machine in this test,
    the same weights bit for bit."""
    flags = (*SMALL, "--cp=2", "--strategy=fsdp", "--check")
    whole, _ = train(tmp_path, 4, *flags, "--steps=3", name="whole")
    saved = f"--checkpoint-dir={tmp_path / 'checkpoints'}"
    part = (*flags, saved, "--checkpoint-every=1")
    train(tmp_path, 4, *part, "--steps=2", name="first")
    resumed, log = train(tmp_path, 4, *part, "--steps=3", name="resumed")
    assert "resumed from the checkpoint of step 2" in log
    assert resumed.resumed_from_step == 2
    assert resumed.losses == whole.losses
    assert resumed.measured.weights_sha256 == whole.measured.weights_sha256


@pytest.mark.slow  # a torchrun launch
def test_the_recorded_cp_runs_made_again_give_the_same_figures(tmp_path):
    """The record's ring runs of the parity model, trained again: the
    counts exactly, the losses to 1e-5 (another CPU's kernels)."""
    picked = [0, 1, 2]
    flags = [results.run_flags("context4")[i] for i in picked]
    out = tmp_path / "again.json"
    done = run_command(launch_command("sweep", 4, flags, out), timeout=400)
    assert done.returncode == 0, what_failed(done.stderr)
    again = report.load(out)
    recorded = [ring_runs()[i] for i in picked]
    for new, old in zip(again, recorded, strict=True):
        assert context.pairs(new) == context.pairs(old)
        assert context.sent_per_layer(new) == context.sent_per_layer(old)
        assert new.losses == pytest.approx(old.losses, rel=PARITY_RTOL)

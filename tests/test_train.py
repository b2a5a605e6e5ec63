"""snippets/torchrun/ under torchrun, on the CPU with gloo.

The launches the pages read (course/instruments/results.py) run again
here and must give what `make measure` recorded, on whatever processor
they run: bytes, counts, shapes and the schedules' order exactly (they
are integers), losses to 1e-5 relative (fp32 sums in another order, as
another CPU's kernels take them). Weights are compared bit for bit only
between two runs this machine made in the same pytest run; timings are
held to the lesson's models, never to a record. Every subprocess has a
time limit, so a hang fails the test instead of blocking CI. The tests
that launch are marked slow; the ones that read the record run in `make
check` too. The runs that start and finish without a fault are trained
in one sweep per world size, shared with the other test files
(tests/sweeps.py).
"""

import re
import shlex
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from course.instruments import results
from course.instruments import train as measured
from course.tools.stress import (
    CLEAN_EXIT,
    ROOT,
    SMALL,
    environment,
    launch,
    what_failed,
)
from course.tools.stress import run as run_command
from snippets.ddp.allreduce import allreduce_bytes
from snippets.measured import report, timelines, tp
from snippets.measured.report import LOSS_TOLERANCE
from snippets.pipeline.bubble import bubble_fraction
from snippets.pipeline.schedule import (
    idle_fraction,
    peak_in_flight,
    pipeline_schedule,
)
from snippets.pipeline.tensor import tp_bytes_per_layer
from snippets.planner.command import (
    launch_command as launch_command_of_the_planner,
)
from snippets.torchrun import config
from tests import sweeps
from tests.cpu_cluster import CPU  # a cluster sized for the CPU

ENV = environment()
PARITY_RTOL = 1e-5  # fp32 losses of one seed and batch, any layout
# A record made on another processor: AVX-512, AVX2 and plain kernels add
# fp32 terms in other orders. Over the runs' few steps the losses move
# by ~1e-7 relative (fp32 epsilon); 1e-5 leaves a hundredfold margin and
# still fails on any real change (a wrong gradient moves the loss ~1e-2).
RECORD_RTOL = 1e-5


# The recorded runs the tests train again, by processes, each added to
# the sweep of its world size (tests/sweeps.py) as "LAUNCH-INDEX".
# (launch, run)
AGAIN = {
    1: [("solo", 0)],
    2: [("compare", 0), ("compare", 1), ("ranks2", 0), ("ranks2", 2)]
    + [("ranks2", 5), ("accum2", 0), ("accum2", 1)],
    4: [("ranks4", 2), ("ranks4", 3), ("ranks4", 5), ("timelines4", 4)],
    8: [("ranks8", 0), ("ranks8", 1)],
}
for _nproc, _runs in AGAIN.items():
    for _name, _i in _runs:
        sweeps.add(f"{_name}-{_i}", _nproc, results.run_flags(_name)[_i])


def fresh(tmp_path_factory, nproc):
    """(the runs of AGAIN[nproc] trained again, the launch's output)."""
    sweep = sweeps.made(tmp_path_factory, nproc)
    return [sweep.runs[f"{n}-{i}"] for n, i in AGAIN[nproc]], sweep.log


def by_nproc(counts):
    """The process counts as parameters, each in its sweep's group."""
    return [pytest.param(n, marks=sweeps.group(n)) for n in counts]


def recorded(name):
    return results.runs(name)


# --- the recorded results ---------------------------------------------------


@pytest.mark.parametrize("name", list(results.LAUNCHES))
def test_recorded_results_were_made_by_this_code_and_torch(name):
    data = results.load(name)  # refuses a digest of other sources
    assert data["torch"] == torch.__version__, (
        f"results/{name}.json was measured with torch {data['torch']}, "
        f"this is {torch.__version__}: run `make measure`"
    )


def test_a_stale_result_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "FOLDER", tmp_path)
    (tmp_path / "solo.json").write_text(
        (results.HERE / "results" / "solo.json").read_text()
    )
    results.load("solo")
    entry, nproc, args = results.LAUNCHES["solo"]
    changed = (entry, nproc, (*args, "--lr=0.01"))
    monkeypatch.setitem(results.LAUNCHES, "solo", changed)
    with pytest.raises(results.StaleResult, match=r"solo\.json.*make measure"):
        results.load("solo")
    with pytest.raises(results.StaleResult, match=r"ranks2\.json is missing"):
        results.load("ranks2")


def same_figures(a):
    """What is exact on every machine, of run a: bytes, counts, shapes
    and order. Not the weights' digest: its last bits follow the CPU's
    kernels (tests/test_train.py compares it within one machine only)."""
    m = a.measured
    keep = ("state", "traffic", "traffic_per_micro", "syncs_per_step")
    keep += ("activations", "tp_block", "tp_step", "grads_held")
    figures = {k: getattr(m, k) for k in keep}
    if m.peak_in_flight:
        figures["peak"] = timelines.peak_in_flight(a)
    if m.timeline:
        figures["order"] = [
            timelines.order(timelines.slots(a, s))
            for s in timelines.traced_steps(a)
        ]
    return figures, m.grad_check and m.grad_check.ok, a.params


@pytest.mark.slow  # torchrun launches
@pytest.mark.parametrize("nproc", by_nproc(AGAIN))
def test_runs_made_again_give_the_recorded_figures(tmp_path_factory, nproc):
    """Bytes, counts, the pipelines' order and micro-batches held, and
    the gradient check passed, exactly; losses to RECORD_RTOL; and a
    clean exit on every rank."""
    again, log = fresh(tmp_path_factory, nproc)
    before = [results.runs(n)[i] for n, i in AGAIN[nproc]]
    for a, b in zip(again, before, strict=True):
        assert a.config == b.config
        assert same_figures(a) == same_figures(b), a.config
        assert a.losses == pytest.approx(b.losses, rel=RECORD_RTOL)
    assert len(set(CLEAN_EXIT.findall(log))) == nproc, log[-3000:]


@pytest.mark.slow  # torchrun launches
@pytest.mark.parametrize("nproc", by_nproc([2, 4]))
def test_fresh_pipelines_hold_to_the_models(tmp_path_factory, nproc):
    """The timing of the fresh pipelines, as the recorded ones are held
    below: no step idles less than its bubble."""
    pipes = [
        r for r in fresh(tmp_path_factory, nproc)[0] if r.measured.timeline
    ]
    assert pipes
    for run in pipes:
        check_schedule(run)
        check_idle(run)


# --- DDP, FSDP and HSDP against memory_per_gpu and the ring ----------------


def pure_dp(name):
    return [r for r in recorded(name) if r.config.tp == r.config.pp == 1]


@pytest.mark.parametrize("name", ["compare", "ranks4"])
def test_measured_figures_match_the_models(name):
    runs = pure_dp(name)
    assert {r.config.strategy for r in runs} >= {"ddp", "fsdp"}
    for run in runs:
        m = report.predict(run)
        for state in run.measured.state:
            assert state.total == m.state_bytes, run.config
        assert run.measured.traffic == m.traffic
        assert run.measured.traffic_per_micro == m.traffic_per_micro
        syncs = 1 if run.config.accum_sync == "last" else m.syncs_per_step
        assert (
            set(run.measured.syncs_per_step) == {syncs} == {m.syncs_per_step}
        )
        assert report.problems([run]) == []


def test_fsdp_holds_half_and_moves_one_and_a_half_times():
    ddp, fsdp = recorded("compare")
    for state in fsdp.measured.state:
        assert 2 * state.total == ddp.measured.state[0].total
    grads = allreduce_bytes(ddp.params, bytes_per_grad=4, world_size=2)
    assert ddp.measured.traffic["all_reduce"] == round(grads["grad_GB"] * 1e9)
    # ZeRO-3 on the micro-batch that reduces gradients: 3 psi vs 2 psi
    sent = [
        report.sent_by(r, r.measured.traffic_per_micro[-1])
        for r in (ddp, fsdp)
    ]
    assert sent[1] / sent[0] == pytest.approx(1.5)
    assert report.max_loss_gap(ddp, fsdp) <= LOSS_TOLERANCE
    for r in (ddp, fsdp):  # N ranks x B rows x K micro-batches: one batch
        assert r.measured.grad_check.ok, r.measured.grad_check
        a = r.measured.activations
        assert (a["block"], a["model"]) == (
            a["block_predicted"],
            a["model_predicted"],
        )


def test_accumulation_trades_gradient_memory_for_traffic():
    """--accum-sync last: FSDP2 holds the whole gradient, as DDP does,
    and reduce-scatters once; every: half of it on two ranks, and one
    reduce-scatter per micro-batch. Each as report.predict says, and
    the same losses all four ways."""
    runs = {
        (r.config.strategy, r.config.accum_sync): r for r in recorded("accum2")
    }
    assert report.problems(list(runs.values())) == []
    last, every = runs["fsdp", "last"].measured, runs["fsdp", "every"].measured
    ddp, ddp_every = runs["ddp", "last"], runs["ddp", "every"].measured
    params = ddp.params
    assert set(last.grads_held) == set(ddp.measured.grads_held) == {params * 4}
    assert set(every.grads_held) == {params * 4 // 2}
    k, steps = ddp.config.accum_steps, ddp.config.steps
    assert k == 4 and every.syncs_per_step == [k] * steps
    assert (
        every.traffic["reduce_scatter"] == k * last.traffic["reduce_scatter"]
    )
    assert every.traffic["all_gather"] == last.traffic["all_gather"]
    assert (
        ddp_every.traffic["all_reduce"]
        == k * ddp.measured.traffic["all_reduce"]
    )


def test_hsdp_defers_only_its_all_reduce_with_accum_sync_every():
    [r] = [r for r in recorded("ranks4") if r.config.accum_sync == "every"]
    assert r.config.strategy == "hsdp" and r.config.accum_steps == 4
    per_micro = r.measured.traffic_per_micro
    assert all(t["reduce_scatter"] for t in per_micro)
    assert [bool(t["all_reduce"]) for t in per_micro] == [0, 0, 0, 1]
    assert report.problems([r]) == []


def test_hsdp_shards_in_groups_and_all_reduces_across_them():
    """4 ranks as 2 replicas x 2 shards: half of DDP's state per rank,
    and the replicas all-reduce half the gradient (their shard)."""
    [r] = [
        r
        for r in recorded("ranks4")
        if r.config.strategy == "hsdp" and r.config.accum_sync == "last"
    ]
    assert (r.world_size, r.shard_size) == (4, 2)
    gradient = r.params * r.measured.state[0].bytes_grad
    assert r.measured.state[0].total == 16 * r.params // 2
    assert r.measured.traffic["all_reduce"] == gradient // 2
    assert r.measured.traffic["reduce_scatter"] == gradient
    assert r.measured.grad_check.ok, r.measured.grad_check


def test_the_compare_table_sets_measured_beside_predicted():
    rows = report.table(*recorded("compare")).splitlines()
    assert "DDP measured | DDP predicted | FSDP measured" in rows[0]
    [state] = [r for r in rows if r.startswith("| state")]
    cells = [c.strip() for c in state.split("|")[2:-1]]
    assert cells[0] == cells[1] and cells[2] == cells[3], state
    assert float(cells[0]) == 2 * float(cells[2]) > 0


# --- tensor parallelism against tp_bytes_per_layer --------------------------


def tp_runs():
    names = ("ranks2", "ranks4", "ranks8")
    return [r for n in names for r in recorded(n) if r.measured.tp_block]


def test_a_layer_sends_what_tp_bytes_per_layer_says():
    runs = tp_runs()
    assert {(r.config.tp, r.config.pp) for r in runs} == {
        (2, 1),
        (4, 1),
        (2, 2),
    }
    for run in runs:
        m, b, t = run.config.model, run.config.micro_batch, run.config.tp
        predicted = tp_bytes_per_layer(m.seq_len, b, m.d_model, t, 4)
        assert tp.sent_per_layer(run) == pytest.approx(predicted, rel=1e-12)
        # sequence parallelism: each all-reduce is an all-gather and a
        # reduce-scatter of the whole b x s x h activation
        whole = b * m.seq_len * m.d_model * 4
        two = [("all_gather", whole), ("reduce_scatter", whole)] * 2
        assert tp.layer_calls(run) == [
            (phase, kind, size)
            for phase in ("forward", "backward")
            for kind, size in two
        ]


def test_what_else_pytorch_sends_in_a_tensor_parallel_step():
    """Outside the blocks, per micro-batch: the embeddings' reduce-scatter
    forward and all-gather backward (tokens b x s x h, positions s x h)
    and the head's all-gather of its input; once a step, an all-reduce
    of each LayerNorm weight and bias gradient, which sequence
    parallelism leaves partial."""
    runs = [r for r in tp_runs() if r.config.pp == 1]
    assert {r.config.tp for r in runs} == {2, 4}
    for r in runs:
        m, micro = r.config.model, r.config.accum_steps
        s, h = m.seq_len, m.d_model
        tokens, positions = r.config.micro_batch * s * h * 4, s * h * 4
        expected = Counter(
            {
                ("reduce_scatter", positions): micro,
                ("all_gather", positions): micro,
                ("all_reduce", h * 4): 4 * m.n_layers,
            }
        )
        expected[("reduce_scatter", tokens)] += micro
        expected[("all_gather", tokens)] += 2 * micro
        assert tp.others(r) == expected


# --- pipelines against the schedule lab -------------------------------------


def pipelines(name):
    return [r for r in recorded(name) if r.measured.timeline]


def label(r):
    c = r.config
    return f"{c.pp_schedule}-p{c.pp}-m{c.pp_microbatches}-tp{c.tp}"


@pytest.mark.parametrize("name", ["ranks2", "timelines4", "ranks8"])
def test_pytorch_runs_the_labs_schedule(name):
    """Every rank runs the forwards and backwards in the lab's order, and
    holds as many micro-batches as the lab says: p - stage under 1F1B
    (p on the first stage), m under GPipe."""
    runs = pipelines(name)
    assert runs
    for run in runs:
        check_schedule(run)


def check_schedule(run):
    p, m = run.config.pp, run.config.pp_microbatches
    lab = pipeline_schedule(p, m, run.config.pp_schedule)
    for step in timelines.traced_steps(run):
        assert timelines.order(timelines.slots(run, step)) == (
            timelines.order(lab)
        )
    held = [peak_in_flight(lab, stage) for stage in range(p)]
    first = {"gpipe": [m] * p, "1f1b": list(range(p, 0, -1))}
    assert held == first[run.config.pp_schedule]
    assert timelines.peak_in_flight(run) == [
        [n] * len(timelines.traced_steps(run)) for n in held
    ]


@pytest.mark.parametrize("name", ["ranks2", "timelines4", "ranks8"])
def test_no_step_idles_less_than_its_bubble(name):
    """The wall clock, and the step replayed with each stage's CPU time:
    neither beats bubble_fraction by more than IDLE_TOLERANCE; the replay
    exceeds it by no more than its slowest stages explain."""
    for run in pipelines(name):
        check_idle(run)


# bubble_fraction assumes stages whose forwards and backwards are all
# alike. Where one stage's backward is longer against its forward than
# another's, part of the bubble overlaps work: a replayed 1F1B step at
# p 2, m 2 idled 0.306 against 0.333. CPU timings allow 0.05 of a step.
IDLE_TOLERANCE = 0.05


def check_idle(run):
    b = (
        bubble_fraction(run.config.pp, run.config.pp_microbatches)
        - IDLE_TOLERANCE
    )
    assert timelines.median_idle(run) >= b, label(run)
    for step in timelines.traced_steps(run):
        idle = idle_fraction(timelines.replayed(run, step))
        assert b <= idle <= timelines.slowest(run, step), label(run)


# --- loss parity -------------------------------------------------------------


def parity_rows():
    solo = recorded("solo")
    return solo + [
        r
        for n in ("ranks4", "ranks8")
        for r in recorded(n)
        if r.config.model == solo[0].config.model
    ]


def test_every_layout_trains_the_same_losses_as_one_process():
    solo, *layouts = parity_rows()
    assert len(layouts) == 9 and solo.world_size == 1
    names = {
        (r.config.strategy, r.config.tp, r.config.pp, r.world_size)
        for r in layouts
    }
    assert {("ddp", 1, 1, 4), ("hsdp", 1, 1, 4), ("fsdp", 2, 2, 8)} <= names
    for r in layouts:
        assert r.losses == pytest.approx(solo.losses, rel=PARITY_RTOL), (
            r.config
        )
        if r.measured.grad_check:
            assert r.measured.grad_check.ok, r.measured.grad_check


# --- bad flags ---------------------------------------------------------------

BAD = [
    (["--strategy=zero"], "--strategy", "'ddp', 'fsdp'"),
    (["--accum-steps=0"], "--accum-steps", ">= 1"),
    (["--micro-batch=-1"], "--micro-batch", ">= 1"),
    (["--global-batch=7", "--micro-batch=2"], "--global-batch", "multiple"),
    (["--d-model=30", "--n-heads=4"], "--d-model", "--n-heads"),
    (["--checkpoint-every=2"], "--checkpoint-every", "--checkpoint-dir"),
    (["--strategy=hsdp", "--shard-size=3"], "--shard-size", "divide"),
    (["--shard-size=2"], "--shard-size", "--strategy hsdp only"),
    (["--tp=3"], "--tp x --pp", "products that fit: 1, 2, 4"),
    (["--pp=8"], "--tp x --pp", "world size (4)"),
    (["--tp=4", "--n-heads=2", "--d-model=32"], "--n-heads", "fit: 1, 2"),
    (["--tp=4", "--d-ff=6"], "--d-ff", "--tp that fit: 1, 2, 3, 6"),
    (["--tp=4", "--seq-len=6"], "--seq-len", "multiple of --tp (4)"),
    (["--tp=4", "--vocab=6"], "--vocab", "multiple of --tp (4)"),
    (["--pp=4", "--n-layers=6"], "--n-layers", "--pp x --pp-chunks"),
    (["--pp=2", "--pp-microbatches=1"], "--pp-microbatches", ">= --pp (2)"),
    (
        ["--pp=2", "--pp-schedule=interleaved", "--pp-microbatches=3"],
        "--pp-microbatches",
        "multiple of --pp (2)",
    ),
    (
        ["--pp=2", "--pp-schedule=interleaved", "--pp-chunks=1"],
        "--pp-chunks",
        ">= 2",
    ),
    (["--pp=2", "--pp-chunks=2"], "--pp-chunks", "must be 1 for"),
    (
        ["--pp=2", "--pp-schedule=zbv", "--pp-chunks=3", "--n-layers=12"],
        "--pp-chunks",
        "must be 2 for --pp-schedule zbv",
    ),
    (
        ["--pp=2", "--pp-schedule=zbv", "--n-layers=6"],
        "--n-layers",
        "(2 x 2 = 4)",
    ),
    (
        ["--pp=2", "--pp-schedule=interleaved-zb", "--pp-chunks=1"],
        "--pp-chunks",
        ">= 2 for --pp-schedule interleaved-zb",
    ),
    (
        ["--pp=2", "--pp-schedule=interleaved-zb", "--pp-microbatches=5"],
        "--pp-microbatches",
        "counts that fit up to 8: 1, 2, 3, 4, 6, 8",
    ),
    (["--pp-schedule=zbv"], "--pp-schedule", "--pp > 1 only"),
    (["--pp=2", "--accum-steps=2"], "--accum-steps", "must be 1 with --pp"),
    (["--pp-microbatches=4"], "--pp-microbatches", "--pp > 1 only"),
    (["--pp-schedule=gpipe"], "--pp-schedule", "--pp > 1 only"),
    (["--pp-schedule=zb"], "--pp-schedule", "'interleaved-zb', 'zbv'"),
    (["--recompute=some"], "--recompute", "'none', 'full'"),
    (["--accum-sync=some"], "--accum-sync", "'last', 'every'"),
    (["--pp=2", "--accum-sync=every"], "--accum-sync every", "without --pp"),
    (["--experts=-1"], "--experts", ">= 0"),
    (["--top-k=2"], "--top-k", "--experts > 0 only"),
    (["--capacity-factor=2"], "--capacity-factor", "--experts > 0 only"),
    (["--ep=2"], "--ep", "--experts > 0 only"),
    (["--experts=4", "--top-k=5"], "--top-k", "<= --experts (4)"),
    (["--experts=4", "--top-k=0"], "--top-k", ">= 1"),
    (["--experts=4", "--capacity-factor=0"], "--capacity-factor", "> 0"),
    (["--experts=6", "--ep=4"], "--ep (4)", "--ep that fit: 1, 2"),
    (["--experts=8", "--ep=8"], "--ep (8)", "data-parallel size (4)"),
    (["--experts=4", "--ep=0"], "--ep", ">= 1"),
    (["--experts=4", "--tp=2"], "--experts with --tp", "drop --tp"),
    (["--experts=4", "--cp=2"], "--experts with --cp", "drop --cp"),
    (
        ["--experts=4", "--pp=2", "--pp-schedule=zbv", "--n-layers=4"],
        "--pp-schedule zbv",
        "gpipe, 1f1b",
    ),
    (
        ["--experts=4", "--ep=2", "--strategy=hsdp", "--shard-size=2"],
        "--ep > 1",
        "ddp or fsdp",
    ),
    (
        [
            "--pp=2",
            "--pp-microbatches=2",
            "--global-batch=16",
            "--micro-batch=2",
        ],
        "--pp-microbatches",
        "needs --pp-microbatches 4",
    ),
    (["--cp=0"], "--cp", ">= 1"),
    (["--cp=3"], "--tp x --pp x --cp", "products that fit: 1, 2, 4"),
    (["--cp=2", "--seq-len=6"], "--seq-len", "multiple of 2 x --cp (4)"),
    (
        ["--cp=4", "--cp-balance=none", "--seq-len=6"],
        "--seq-len",
        "multiple of --cp (4)",
    ),
    (
        ["--cp=2", "--tp=2", "--cp-balance=none", "--seq-len=6"],
        "--seq-len",
        "(6) / --cp (2) must be a multiple of --tp (2)",
    ),
    (["--cp-balance=none"], "--cp-balance", "--cp > 1 only"),
    (["--cp=2", "--cp-balance=ring"], "--cp-balance", "'none', 'zigzag'"),
    (["--cp=2", "--pp=2"], "--cp", "without --pp"),
    (["--cp=2", "--strategy=hsdp"], "--cp", "ddp or fsdp"),
]


@pytest.mark.parametrize(
    "args,name,allowed", BAD, ids=[" ".join(b[0]) for b in BAD]
)
def test_a_bad_flag_is_named_with_what_it_accepts(capsys, args, name, allowed):
    with pytest.raises(SystemExit) as stop:
        config.parse(args, env={"WORLD_SIZE": "4"})
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert name in err and allowed in err, err


@pytest.fixture
def store():
    """A TCPStore that this test process hosts on a port the kernel
    picked (port 0): nothing can take the port between choosing it and
    binding it, as it could with a port found free and bound later."""
    hosted = dist.TCPStore(
        "127.0.0.1",
        0,
        is_master=True,
        wait_for_workers=False,
        timeout=timedelta(seconds=60),
    )
    yield hosted
    del hosted


def rank(number, world, port, *args):
    """Rank `number` of `world`, started by hand as torchrun would."""
    env = dict(
        ENV,
        RANK=str(number),
        LOCAL_RANK=str(number),
        WORLD_SIZE=str(world),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        TORCHELASTIC_USE_AGENT_STORE="True",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "snippets.torchrun.train", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow  # torchrun launches
def test_a_bad_layout_fails_on_every_rank(store):
    """Both ranks reject the layout before any process group exists, so
    neither waits for the other. (Under torchrun the first rank to fail
    gets the other killed, so the ranks are started by hand here.)"""
    ranks = [rank(r, 2, store.port, "--tp=2", "--pp=2") for r in (0, 1)]
    errors = [p.communicate(timeout=60)[1] for p in ranks]
    assert [p.returncode for p in ranks] == [2, 2], errors
    for err in errors:
        assert "must divide the world size (2)" in err, err


@pytest.mark.slow  # torchrun launches
def test_a_missing_peer_is_an_error_not_a_hang(store):
    """Rank 0 of 2 starts alone, on the store an agent would host."""
    alone = rank(0, 2, store.port, "--timeout=2")
    err = alone.communicate(timeout=60)[1]
    assert alone.returncode == 1, err
    assert "did not start within 2 s" in err, err
    assert "2 ranks running" in err


# --- checkpoints and faults --------------------------------------------------


def test_latest_skips_half_written_checkpoints(tmp_path):
    from snippets.torchrun.checkpoint import latest

    def make(name, *files):
        folder = tmp_path / name
        folder.mkdir()
        for f in files:
            (folder / f).write_text("{}")

    assert latest(tmp_path) is None
    make("step_000002", ".metadata", "trainer.json")
    make("step_000004", ".metadata", "trainer.json")
    make("step_000006.tmp", ".metadata", "trainer.json")  # not renamed
    make("step_000008")  # empty: not a checkpoint
    make("step_000010.tmp")
    assert latest(tmp_path).name == "step_000004"
    assert latest(tmp_path / "absent") is None


# The killed jobs, each against the clean run of its flags that the
# sweep of its world size trains again (AGAIN): (fault, step, the step
# the restart resumes from, the run of AGAIN).
FAULTS = {
    # DDP on 2 ranks: the last rank dies as step 3 begins; the restart
    # resumes from the checkpoint of step 2.
    "ddp": ("kill-at-step", 3, 2, ("compare", 0)),
    # FSDP x pp 2 x tp 2 on 4 ranks: rank 0 dies while saving step 2,
    # after DCP wrote the files but before the rename; the restart skips
    # the half-written step 2 and resumes from step 1.
    "pp2-tp2": ("kill-in-save", 2, 1, ("ranks4", 5)),
}


def fault_command(nproc, flags, out, checkpoints, fault):
    """torchrun with one restart, running tests/faults.py FAULT (a kind
    and a step) on the instrumented script's flags."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={nproc}",
        "--max-restarts=1",
        str(ROOT / "tests" / "faults.py"),
        *fault,
        *flags,
        "--checkpoint-every=1",
        f"--checkpoint-dir={checkpoints}",
        f"--json={out}",
    ]


def by_fault():
    """The layouts as parameters, each in its clean run's sweep group."""
    return [
        pytest.param(layout, marks=sweeps.group(results.LAUNCHES[name][1]))
        for layout, (*_, (name, _)) in FAULTS.items()
    ]


@pytest.mark.slow  # torchrun launches
@pytest.mark.parametrize("layout", by_fault())
def test_a_killed_job_restarts_and_ends_as_if_never_killed(
    tmp_path, tmp_path_factory, layout
):
    """The killed job, checkpointing every step, against the clean run of
    the same flags (without checkpoints) that the sweep trained, bit for
    bit: both ran on this machine, so equal weights are the claim
    itself."""
    kind, step, resumed, (name, index) = FAULTS[layout]
    nproc = results.LAUNCHES[name][1]
    clean = fresh(tmp_path_factory, nproc)[0][
        AGAIN[nproc].index((name, index))
    ]
    flags = results.run_flags(name)[index]
    out, checkpoints = tmp_path / "faulty.json", tmp_path / "faulty"
    command = fault_command(nproc, flags, out, checkpoints, (kind, str(step)))
    done = run_command(command, timeout=240)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    assert "killed (test)" in log, log[-4000:]
    [faulty] = report.load(out)
    saving = ("checkpoint_dir", "checkpoint_every")
    unsaved = replace(
        faulty.config, **{k: getattr(clean.config, k) for k in saving}
    )
    assert unsaved == clean.config
    assert faulty.resumed_from_step == resumed, log
    assert f"resumed from the checkpoint of step {resumed}" in log
    assert faulty.losses == clean.losses
    assert faulty.measured.weights_sha256 == clean.measured.weights_sha256
    names = sorted(p.name for p in checkpoints.iterdir())
    assert names == [f"step_{s:06d}" for s in range(1, clean.config.steps + 1)]


# --- the commands of the page and of the planner ----------------------------


def page_commands():
    """The shell commands of docs/torchrun.md (`\\` joins lines)."""
    page = (ROOT / "docs" / "torchrun.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", page, re.DOTALL):
        joined = re.sub(r"\\\n\s*", "", block)
        for line in joined.splitlines():
            line = line.split("  #")[0].strip()
            if line and not line.startswith(("#", "export ")):
                commands.append(line)
    return commands


def shell(command, cwd, nproc):
    """Start `command` as a reader would, with the venv's torchrun first
    on PATH, `nproc` processes and one step of a tiny model. Peers that
    never meet stop the launch within a minute, with the script's own
    message (--timeout), not the test's time limit."""
    command = re.sub(
        r"--nproc_per_node=\S+", f"--nproc_per_node={nproc}", command
    )
    return subprocess.Popen(
        f"{command} {' '.join(SMALL)} --steps=1 --timeout=60",
        shell=True,
        cwd=cwd,
        env=dict(ENV, PATH=f"{Path(sys.executable).parent}:{ENV['PATH']}"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(processes):
    try:
        logs = [p.communicate(timeout=150)[0] for p in processes]
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)
    return [p.returncode for p in processes], "\n".join(logs)


@pytest.mark.slow  # torchrun launches
def test_the_page_commands_run(tmp_path):
    """The page's one-node commands as pasted, one step of a tiny model;
    `gpu` becomes as many CPU processes as the layout needs."""
    commands = [c for c in page_commands() if "--standalone" in c]
    assert len(commands) >= 3, "the page's single-node torchrun commands"
    # `gpu` becomes 2 processes: the CPU command again
    commands = sorted({c.replace("=gpu", "=2") for c in commands})
    for i, command in enumerate(commands):
        assert command.startswith("torchrun "), command
        wanted = re.search(r"--nproc_per_node=(\d+)", command)
        nproc = int(wanted[1]) if wanted else 2
        if "--tp" in command or "--pp" in command:
            nproc = max(nproc, 4)
        cwd = tmp_path / str(i)
        cwd.mkdir()
        codes, log = finish([shell(command, cwd, nproc)])
        assert codes == [0], f"{command}\n{log[-3000:]}"


@pytest.mark.slow  # torchrun launches
def test_two_nodes_meet_at_a_c10d_rendezvous(tmp_path, store):
    """The page's multi-node command, as two agents (`--nnodes=2`, one
    process each) meeting at a c10d rendezvous on 127.0.0.1.

    On one machine both agents match the endpoint's host name, so each
    would try to host the rendezvous store and the later one would
    race the earlier; here the test hosts it and both agents join it
    as clients (`is_host=false`)."""
    [command] = [c for c in page_commands() if "--rdzv-endpoint" in c]
    assert "--nnodes=2" in command and "--rdzv-backend=c10d" in command
    command = command.replace(
        "--rdzv-endpoint=$HEAD_NODE:29500",
        f"--rdzv-endpoint=127.0.0.1:{store.port} --rdzv-conf=is_host=false",
    )
    assert f":{store.port} " in command, command
    agents = [shell(command, tmp_path, nproc=1) for _ in range(2)]
    codes, log = finish(agents)
    assert codes == [0, 0], log[-3000:]
    assert "on 2 rank(s)" in log and "step    1  loss" in log, log[-3000:]
    assert len(set(CLEAN_EXIT.findall(log))) == 2, log[-3000:]


@pytest.mark.slow  # torchrun launches
def test_a_stress_launch_exits_cleanly():
    """The short form of `make stress`: a launch with --check and
    checkpoints exits 0 with a clean exit on every rank. (The launches
    above check the clean exits of every layout they train.)"""
    assert launch("fsdp") is None


@pytest.mark.slow  # a torchrun launch
def test_a_failed_launch_shows_the_first_error(tmp_path):
    """What a failing test prints of a launch: the error of the rank that
    failed first, which torchrun's long report would push out of the
    tail, and the report's root cause."""
    script = tmp_path / "fails.py"
    script.write_text(
        "import os, sys, time\n"
        "if os.environ['RANK'] == '1':\n"
        "    raise RuntimeError('rank 1 failed first')\n"
        "time.sleep(30)\n"
    )
    launcher = [sys.executable, "-m", "torch.distributed.run"]
    two = ["--standalone", "--nproc_per_node=2"]
    done = run_command([*launcher, *two, str(script)], timeout=60)
    assert done.returncode == 1
    shown = what_failed(done.stderr, keep=300)
    assert "RuntimeError: rank 1 failed first" in shown, shown
    assert shown.endswith("=" * 60 + "\n") and "rank      : 1" in shown
    assert "rank 1 failed first" not in done.stderr[-1000:]


# The planner's job for this model on one node of 8: dp 2 x tp 2 x pp 2,
# FSDP (ZeRO-3), 8 sequences of 16 tokens per micro-batch, 4 of them.
PLANNED = (
    dict(
        layers=4,
        hidden=32,
        heads=4,
        kv_heads=4,
        ffn=64,
        vocab=64,
        seq_len=16,
        gated=False,
    ),
    {**CPU, "gpus_per_node": 8, "nodes": 1},
    {"global_batch_tokens": 8 * 4 * 16, "micro_batch": 4},
    dict(dp=2, tp=2, pp=2, zero=3, recompute="none"),
)


@sweeps.group(8)
@pytest.mark.slow  # torchrun launches
def test_the_planners_3d_command_is_the_8_rank_run(tmp_path_factory):
    """The command the planner prints for a tiny model on 8 ranks, run
    (with three steps, --check and --trace) on 8 CPU processes: it is
    the recorded dp 2 x tp 2 x pp 2 run, and trains as it did."""
    runnable, text = launch_command_of_the_planner(*PLANNED)
    assert runnable, text
    words = shlex.split(text.replace("\\\n", " "))
    split = words.index("-m")
    assert words[:split] == ["torchrun", "--standalone", "--nproc_per_node=8"]
    assert words[split + 1] == "snippets.torchrun.train"
    measuring = ["--steps=3", "--log-every=3", "--check", "--trace"]
    cfg, flags = measured.parse(
        words[split + 2 :] + measuring, {"WORLD_SIZE": "8"}
    )
    run = fresh(tmp_path_factory, 8)[0][0]
    assert cfg == run.config
    assert flags | {"json": None} == run.measuring | {"json": None}

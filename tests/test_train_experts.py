"""The mixture of experts of snippets/torchrun/ (experts.py), against
the experts lab (snippets/experts/) and the recorded launches experts1,
experts2 and experts8 (course/instruments/results.py).

The router's seats and drops are route()'s, sequence by sequence; the
all-to-alls carry the buffers the lab's formula sizes; every layout
trains the losses of one process. The launches that start processes
are marked slow, as in tests/test_train.py; they are made again here
and must give the recorded integers exactly.
"""

import math
import shutil
from dataclasses import replace

import pytest
import torch

from course.instruments import results
from course.tools.stress import CLEAN_EXIT, launch_command, what_failed
from course.tools.stress import run as run_command
from snippets.experts.routing import load_balancing_loss, route
from snippets.measured import experts, report
from snippets.torchrun.config import ModelConfig
from snippets.torchrun.experts import MoE, balancing_loss
from tests import sweeps

PARITY_RTOL = 1e-5  # fp32 losses of one seed and batch, any layout
RECORD_RTOL = 1e-5  # a record made on another CPU (tests/test_train.py)
CONFIG = ModelConfig(
    seq_len=16, d_model=32, d_ff=64, experts=4, top_k=2, capacity_factor=1.0
)


def moe_layer(**changes):
    torch.manual_seed(0)
    return MoE(replace(CONFIG, **changes))


# --- the layer against the lab ---------------------------------------------


@pytest.mark.parametrize("cf", [1.0, 1.25, 2.0])
def test_the_router_seats_and_drops_as_the_lab_routes(cf):
    moe = moe_layer(capacity_factor=cf)
    x = torch.randn(3, 16, 32)
    probs, chosen, _, seat, c = moe.route(x)
    moe(x)
    routed, kept = moe.counts.tolist()
    lab_routed, lab_kept = [0] * 4, [0] * 4
    for i in range(3):
        lab = route(probs[i].tolist(), 2, cf)
        assert lab["capacity"] == c == math.ceil(cf * 2 * 16 / 4)
        mine = chosen[i].flatten().tolist()
        assert lab["demand"] == [mine.count(e) for e in range(4)]
        assert lab["dropped"] == (seat[i] >= c).sum().item()
        lab_routed = [
            a + b for a, b in zip(lab_routed, lab["demand"], strict=True)
        ]
        lab_kept = [a + b for a, b in zip(lab_kept, lab["load"], strict=True)]
    assert (routed, kept) == (lab_routed, lab_kept)


def test_the_balancing_loss_is_the_labs_per_sequence():
    moe = moe_layer()
    probs, chosen, *_ = moe.route(torch.randn(3, 16, 32))
    lab = [load_balancing_loss(p.tolist(), alpha=1.0) for p in probs]
    assert balancing_loss(probs, chosen).item() == pytest.approx(
        sum(lab) / 3, rel=1e-6
    )


def test_the_balancing_loss_reaches_the_router_with_its_weight():
    """The layer's output is unchanged by the loss; the router's
    gradient gains aux_weight x d(loss)/d(router)."""
    x = torch.randn(2, 16, 32)
    grads = {}
    for weight in (0.0, 0.5):
        moe = moe_layer()
        moe.aux_weight = weight
        moe(x).sum().backward()
        grads[weight] = moe.router.weight.grad
    moe = moe_layer()
    probs, chosen, *_ = moe.route(x)
    balancing_loss(probs, chosen).backward()
    expected = 0.5 * moe.router.weight.grad
    torch.testing.assert_close(grads[0.5] - grads[0.0], expected)


def test_a_dropped_assignment_leaves_only_the_residual():
    """At a capacity of one seat, a sequence keeps one token per expert:
    the others' outputs lose that expert's term, and a token no expert
    took gets zero (the block adds its residual)."""
    moe = moe_layer(capacity_factor=0.01)  # C = ceil(0.08) = 1
    x = torch.randn(1, 16, 32)
    _, _, _, seat, c = moe.route(x)
    assert c == 1
    took = (seat[0] < c).any(dim=0)  # per token: kept somewhere
    y = moe(x)[0]
    assert torch.all(y[~took] == 0) and not torch.all(y[took] == 0)


# --- the records ------------------------------------------------------------


def ep_runs():
    return results.runs("experts2")


def test_the_runs_are_the_capacity_factors_of_the_page():
    cfs = [r.config.model.capacity_factor for r in ep_runs()]
    assert cfs == list(results.CAPACITY_FACTORS)
    for r in ep_runs():
        assert (r.world_size, r.config.ep, r.config.model.experts) == (2, 2, 4)


@pytest.mark.parametrize("index", range(3))
def test_an_alltoall_carries_the_formulas_buffer(index):
    """Four all-to-alls per layer and micro-batch (dispatch, combine,
    and both again in backward), each the E x C seats of every sequence;
    at capacity factor 1, exactly the lab's k b s h values."""
    run = ep_runs()[index]
    calls, size = experts.alltoalls(run)
    formula = experts.alltoall_formula(run)
    assert calls == 4
    assert size == formula["seats"]
    m = run.config.model  # seats E C per sequence, k s tokens' vectors
    assert size * m.top_k * m.seq_len == (
        formula["lab"] * m.experts * experts.capacity(run)
    )
    if m.capacity_factor == 1.0:
        assert size == formula["lab"]


def test_every_assignment_is_routed_and_the_excess_dropped():
    by_cf = {}
    for run in ep_runs():
        per_layer = experts.routed_per_layer(run)
        c, b = experts.capacity(run), run.config.micro_batch
        micro = experts.micro_batches(run)
        for layers in run.measured.routing:
            for sent_to, took in layers.values():
                assert sum(sent_to) == per_layer
                for s, t in zip(sent_to, took, strict=True):
                    assert t <= min(s, c * b * micro)
        by_cf[run.config.model.capacity_factor] = experts.dropped(run)[1]
    assert by_cf[1.0] > by_cf[1.25] > by_cf[2.0] == 0
    # at 2.0 an expert has a seat for every token of a sequence (C = s)
    last = ep_runs()[2]
    assert experts.capacity(last) == last.config.model.seq_len


def test_each_rank_computes_what_the_others_sent_its_experts():
    for run in ep_runs():
        [group] = experts.ep_groups(run)
        loads = experts.load_per_rank(run, group)
        for layer, load in loads.items():
            kept = sum(sum(r[layer][1]) for r in run.measured.routing)
            assert sum(load) == kept
            assert max(load) <= experts.seats_per_rank(run)


def test_every_expert_layout_trains_the_losses_of_one_process():
    [solo] = results.runs("experts1")
    assert solo.world_size == 1 and solo.measured.grad_check.ok
    layouts = [ep_runs()[0], *results.runs("experts8")]
    shapes = [(r.world_size, r.config.pp, r.config.ep) for r in layouts]
    assert shapes == [
        (2, 1, 2),
        (8, 2, 2),
        (8, 2, 2),
    ]
    for r in layouts:
        assert r.config.model == solo.config.model
        assert r.losses == pytest.approx(solo.losses, rel=PARITY_RTOL)
    for r in [*layouts, *ep_runs()]:
        assert r.measured.grad_check.ok, r.measured.grad_check


# --- made again -------------------------------------------------------------


# The runs of experts2, trained again in the sweep on 2 ranks
# (tests/sweeps.py), and the first of them stopped after two steps with
# a checkpoint each, for a launch that resumes it.
for _i, _flags in enumerate(results.run_flags("experts2")):
    sweeps.add(f"experts2-{_i}", 2, _flags)
FIRST = results.run_flags("experts2")[0]
SAVED = ("--checkpoint-dir={tmp}/experts", "--checkpoint-every=1")
sweeps.add("experts/first-two-steps", 2, (*FIRST, *SAVED, "--steps=2"))


def fresh(tmp_path_factory):
    """The runs of experts2 made again, in order."""
    sweep = sweeps.made(tmp_path_factory, 2)
    assert len(set(CLEAN_EXIT.findall(sweep.log))) == 2, sweep.log
    return [sweep.runs[f"experts2-{i}"] for i in range(len(ep_runs()))]


def exact(run):
    m = run.measured
    return m.ep_step, m.routing, m.state, m.grad_check.ok


@sweeps.group(2)
@pytest.mark.slow  # torchrun launches
def test_runs_made_again_give_the_recorded_figures(tmp_path_factory):
    for a, b in zip(fresh(tmp_path_factory), ep_runs(), strict=True):
        assert a.config == b.config
        assert exact(a) == exact(b)
        assert a.losses == pytest.approx(b.losses, rel=RECORD_RTOL)


@sweeps.group(2)
@pytest.mark.slow  # torchrun launches
def test_a_resumed_run_ends_as_if_never_stopped(tmp_path, tmp_path_factory):
    """Two steps with a checkpoint each (in the sweep), then a launch
    that resumes from the second: the weights of the run made in one
    go, bit for bit (both made on this machine, in this test run)."""
    whole = fresh(tmp_path_factory)[0]
    sweep = sweeps.made(tmp_path_factory, 2)
    assert sweep.runs["experts/first-two-steps"].losses == whole.losses[:2]
    saved = tmp_path / "ckpt"  # a copy: the sweep's stays as made
    shutil.copytree(sweep.folder / "experts", saved)
    saving = (f"--checkpoint-dir={saved}", "--checkpoint-every=1")
    out = tmp_path / "3.json"
    command = launch_command("train", 2, (*FIRST, *saving, "--steps=3"), out)
    done = run_command(command, timeout=300)
    assert done.returncode == 0, what_failed(done.stderr)
    [resumed] = report.load(out)
    assert resumed.resumed_from_step == 2
    assert resumed.losses == whole.losses
    assert resumed.measured.weights_sha256 == whole.measured.weights_sha256

"""The planner's command, run small: for each kind of layout the
script runs (DDP, ZeRO-3, HSDP, TP, PP and their products), the command
the planner prints for a tiny model is run on CPU ranks (fp32, gloo,
two steps), and what each rank holds and what each data-parallel
collective moves is set against the planner's prediction for the same
model and layout: within 10%. Each run joins the sweep of its world
size (tests/sweeps.py), whose start-up it shares with the other launching
tests' runs of that size, on one worker (an xdist_group per world size)."""

import json
import shlex

import pytest

from snippets.planner.command import launch_command as planners_command
from snippets.planner.cost import collective_bytes, estimate
from snippets.planner.layouts import check_layout
from tests import sweeps
from tests.cpu_cluster import CPU

pytestmark = pytest.mark.slow  # torchrun launches

MODEL = dict(
    layers=8,
    hidden=32,
    heads=4,
    kv_heads=4,
    ffn=64,
    vocab=32,
    seq_len=16,
    gated=False,
)
MICRO = 2
# name: (world size, nodes, layout, micro-batches per step)
LAYOUTS = {
    "ddp": (2, 1, dict(dp=2, tp=1, pp=1, zero=0), 2),
    "fsdp": (2, 1, dict(dp=2, tp=1, pp=1, zero=3), 2),
    "tp2": (2, 1, dict(dp=1, tp=2, pp=1, zero=0), 2),
    "pp2": (2, 1, dict(dp=1, tp=1, pp=2, zero=0), 4),
    "hsdp": (4, 2, dict(dp=4, tp=1, pp=1, zero="hsdp"), 2),
    "dp2-tp2": (4, 1, dict(dp=2, tp=2, pp=1, zero=3), 2),
    "dp2-pp2": (4, 1, dict(dp=2, tp=1, pp=2, zero=3), 4),
    "tp2-pp2": (4, 1, dict(dp=1, tp=2, pp=2, zero=0), 4),
    "dp2-tp2-pp2": (8, 1, dict(dp=2, tp=2, pp=2, zero=3), 4),
}
TOLERANCE = 0.10
# DDP with tp or pp is FSDP2's replicate(), whose all-reduces the
# instruments do not count (course/instruments/probes.py count_traffic).
UNCOUNTED = ("tp2", "pp2", "tp2-pp2")


def job(name):
    """(model, cluster, training, layout) of a layout, as the planner
    takes them: fp32 on the CPU cluster."""
    world, nodes, layout, micro = LAYOUTS[name]
    cluster = {**CPU, "gpus_per_node": world // nodes, "nodes": nodes}
    tokens = MODEL["seq_len"] * MICRO * layout["dp"] * micro
    training = dict(
        global_batch_tokens=tokens, micro_batch=MICRO, precision="fp32"
    )
    return MODEL, cluster, training, layout | dict(recompute="none")


def flags(name):
    """The planner's command as flags of the instruments: its launcher
    dropped (the sweep starts --standalone ranks), two steps."""
    runnable, text = planners_command(*job(name))
    assert runnable, text
    words = shlex.split(text.replace("\\\n", " "))
    split = words.index("-m")
    assert words[split + 1] == "snippets.torchrun.train"
    return [*words[split + 2 :], "--steps=2", "--log-every=2"]


for _name, (_world, *_) in LAYOUTS.items():
    sweeps.add(f"small-scale/{_name}", _world, flags(_name))


def by_world(names):
    """The layouts as parameters, each in its world size's group."""
    return [pytest.param(n, marks=sweeps.group(LAYOUTS[n][0])) for n in names]


def measured(tmp_path_factory, name):
    """The layout's run, from the sweep of its world size."""
    sweep = sweeps.made(tmp_path_factory, LAYOUTS[name][0])
    return sweep.runs[f"small-scale/{name}"]


def agree(measured, predicted):
    return abs(measured - predicted) <= TOLERANCE * predicted


@pytest.mark.parametrize("name", by_world(LAYOUTS))
def test_the_planner_predicts_what_each_rank_holds(tmp_path_factory, name):
    model, cluster, training, layout = job(name)
    planned = check_layout(layout, model, cluster, training)
    memory = estimate(planned)["memory_per_gpu_GB"]
    state = measured(tmp_path_factory, name).measured.state
    found = {
        "parameters": max(s.params for s in state),
        "gradients": max(s.grads for s in state),
        "optimizer": max(s.optim for s in state),
    }
    expected = {k: memory[k] * 1e9 for k in found}
    report = json.dumps({"measured": found, "planned": expected})
    for kind, value in found.items():
        assert agree(value, expected[kind]), f"{name} {kind}: {report}"


@pytest.mark.parametrize(
    "name", by_world(n for n in LAYOUTS if n not in UNCOUNTED)
)
def test_the_planner_predicts_the_data_parallel_traffic(
    tmp_path_factory, name
):
    model, cluster, training, layout = job(name)
    planned = check_layout(layout, model, cluster, training)
    expected = collective_bytes(planned, stage=0)
    found = measured(tmp_path_factory, name).measured.traffic
    report = json.dumps({"measured": found, "planned": expected})
    for kind, value in found.items():
        assert agree(value, expected[kind]), f"{name} {kind}: {report}"

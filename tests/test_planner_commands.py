"""The torchrun commands the planner writes run: DDP, FSDP and HSDP on
a tiny model, on the CPU with gloo. Three launches, a few seconds each.
A multi-node command is run on one machine by swapping its launcher
for --standalone with as many processes as it would start in all."""

import shlex
import subprocess
import sys

import pytest

from course.stress import ROOT, environment
from snippets.planner.command import launch_command

TINY = dict(
    layers=2,
    hidden=32,
    heads=2,
    kv_heads=2,
    ffn=64,
    vocab=64,
    seq_len=16,
    gated=False,
)
CPU = dict(
    gpu_memory_GB=80,
    peak_TFLOPs=1,
    nvlink_GBps=1,
    nics_per_node=1,
    nic_GBps=1,
)


def argv(text, processes):
    """The command as a list for subprocess, on one machine."""
    words = shlex.split(text.replace("\\\n", " "))
    assert words[0] == "torchrun"
    split = words.index("-m")
    launcher = words[1:split]
    if "--standalone" not in launcher:
        launcher = ["--standalone", f"--nproc_per_node={processes}"]
    run = [sys.executable, "-m", "torch.distributed.run", *launcher]
    return run + words[split:] + ["--steps=1"]


@pytest.mark.parametrize(
    ("zero", "nodes", "strategy"),
    [(0, 1, "ddp"), (3, 1, "fsdp"), ("hsdp", 2, "hsdp")],
)
def test_the_emitted_command_trains(zero, nodes, strategy):
    gpus = 2 * nodes
    cluster = {**CPU, "gpus_per_node": 2, "nodes": nodes}
    training = {"global_batch_tokens": 16 * 2 * gpus, "micro_batch": 2}
    layout = dict(dp=gpus, tp=1, pp=1, zero=zero, recompute="none")
    runnable, text = launch_command(TINY, cluster, training, layout)
    assert runnable and f"--strategy {strategy}" in text
    if nodes == 1:
        assert "--standalone --nproc_per_node=2" in text
    else:
        assert "--rdzv-endpoint=$HEAD_NODE:29500" in text
        assert "--shard-size 2" in text
    done = subprocess.run(
        argv(text, gpus),
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert done.returncode == 0, done.stderr[-3000:]

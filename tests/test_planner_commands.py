"""The torchrun commands the planner writes: their text for every kind
of layout the training script runs (DP, FSDP or HSDP, times TP and PP)
and the mesh outline for the rest; and DDP, FSDP and HSDP commands run
on a tiny model, on the CPU with gloo (three launches, a few seconds
each). A multi-node command is run on one machine by swapping its
launcher for --standalone with as many processes as it would start."""

import shlex
import subprocess
import sys

import pytest

from course import ROOT
from course.tools.stress import environment, what_failed
from snippets.planner.command import launch_command
from snippets.planner.report import plan
from tests.cpu_cluster import CPU

pytestmark = pytest.mark.slow  # torchrun launches

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
    assert done.returncode == 0, what_failed(done.stderr)


EIGHT = {**CPU, "gpus_per_node": 8, "nodes": 1}
TINY8 = {**TINY, "layers": 8, "heads": 4, "kv_heads": 4}
JOB = {"global_batch_tokens": 16 * 2 * 8, "micro_batch": 2}
ONE = "torchrun --standalone --nproc_per_node=8 -m snippets.torchrun.train"
TWO = (
    "torchrun --nnodes=2 --nproc_per_node=4 --rdzv-backend=c10d "
    "--rdzv-endpoint=$HEAD_NODE:29500 --rdzv-id=job -m snippets.torchrun.train"
)


@pytest.mark.parametrize(
    ("nodes", "layout", "flags"),
    [
        (
            1,
            dict(dp=2, tp=2, pp=2, zero=3, recompute="none"),
            f"{ONE} --strategy fsdp --tp 2 --pp 2 --pp-schedule 1f1b "
            "--pp-microbatches 4 --pp-chunks 1 --micro-batch 2 "
            "--accum-steps 1",
        ),
        (
            1,
            dict(dp=2, tp=2, pp=2, zero=0, recompute="full")
            | dict(schedule="interleaved", chunks=2),
            f"{ONE} --strategy ddp --tp 2 --pp 2 --pp-schedule interleaved "
            "--pp-microbatches 4 --pp-chunks 2 --recompute full "
            "--micro-batch 2 --accum-steps 1",
        ),
        (
            2,
            dict(dp=4, tp=2, pp=1, zero="hsdp", recompute="none"),
            f"{TWO} --strategy hsdp --shard-size 2 --tp 2 --micro-batch 2 "
            "--accum-steps 2",
        ),
        (
            1,
            dict(dp=4, tp=2, pp=1, zero=3, recompute="none")
            | dict(gradient_sync="every"),
            f"{ONE} --strategy fsdp --tp 2 --micro-batch 2 --accum-steps 2 "
            "--accum-sync every",
        ),
        (
            1,
            dict(dp=1, tp=1, pp=8, zero=0, recompute="none")
            | dict(schedule="gpipe"),
            f"{ONE} --strategy ddp --pp 8 --pp-schedule gpipe "
            "--pp-microbatches 8 --pp-chunks 1 --micro-batch 2 "
            "--accum-steps 1",
        ),
    ],
)
def test_3d_layouts_get_the_scripts_flags(nodes, layout, flags):
    """With a pipeline, a step runs the schedule over all the
    micro-batches of a data-parallel rank: --accum-steps 1."""
    cluster = {**CPU, "gpus_per_node": 8 // nodes, "nodes": nodes}
    runnable, text = launch_command(TINY8, cluster, JOB, layout)
    assert runnable
    assert " ".join(text.replace("\\\n", " ").split()) == (
        f"{flags} --vocab 64 --seq-len 16 --d-model 32 --n-heads 4 "
        "--n-layers 8 --d-ff 64"
    )


@pytest.mark.parametrize(
    ("layout", "reason"),
    [
        (dict(dp=4, tp=2, pp=1, zero=1, recompute="none"), "ZeRO-1"),
        (dict(dp=2, tp=2, pp=2, zero=2, recompute="none"), "ZeRO-2"),
        (dict(dp=2, cp=2, tp=2, pp=1, zero=3, recompute="none"), "context"),
        (
            dict(dp=2, tp=1, pp=4, zero=0, recompute="none")
            | dict(embedding_slots=True),
            "stages of unequal size",
        ),
    ],
)
def test_what_the_script_cannot_run_gets_the_mesh(layout, reason):
    runnable, text = launch_command(TINY8, EIGHT, JOB, layout)
    assert not runnable
    first = text.splitlines()[0]
    assert first.startswith("This course's training script runs DDP, FSDP")
    assert reason in first and "init_device_mesh('cuda'" in text


def test_the_answer_launches_the_best_layout_the_script_runs():
    """Llama 3 70B on 64 H100: the launch is the first fitting layout
    the script runs, with no flag it would not know."""
    result = plan(preset="llama3-70b", nodes=8)
    launch = result["launch"]
    assert launch["command"].startswith("torchrun --nnodes=8 ")
    for flag in ("--rdzv-backend=c10d", "--tp ", "--pp ", "--accum-steps 1"):
        assert flag in launch["command"]
    assert launch["notes"] == []
    fp8 = plan(preset="llama3-70b", nodes=8, precision="fp8")["launch"]
    assert fp8["notes"] == [
        "The script trains in bf16: it has no FP8 matmuls."
    ]

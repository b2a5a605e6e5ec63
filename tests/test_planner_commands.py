"""The torchrun commands the planner writes: their text for every kind
of layout the training script runs (DP, FSDP or HSDP, times TP and PP)
and the mesh outline for the rest; and DDP, FSDP and HSDP commands read
by torchrun's own parser and the script's. That such commands train,
and hold and move what the planner predicts, the planner's small-scale
runs show: tests/test_planner_small_scale.py runs its flags for every
kind of layout on CPU ranks."""

import shlex

import pytest
from torch.distributed import run as torchrun

from snippets.planner.command import launch_command
from snippets.planner.report import plan
from snippets.torchrun import config
from tests.cpu_cluster import CPU

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


@pytest.mark.parametrize(
    ("zero", "nodes", "strategy"),
    [(0, 1, "ddp"), (3, 1, "fsdp"), ("hsdp", 2, "hsdp")],
)
def test_the_emitted_command_is_read_by_torchrun_and_the_script(
    zero, nodes, strategy
):
    gpus = 2 * nodes
    cluster = {**CPU, "gpus_per_node": 2, "nodes": nodes}
    training = {"global_batch_tokens": 16 * 2 * gpus, "micro_batch": 2}
    layout = dict(dp=gpus, tp=1, pp=1, zero=zero, recompute="none")
    runnable, text = launch_command(TINY, cluster, training, layout)
    assert runnable and f"--strategy {strategy}" in text
    words = shlex.split(text.replace("\\\n", " "))
    assert words[0] == "torchrun"
    launch = torchrun.parse_args(words[1:])
    assert launch.module and launch.nproc_per_node == "2"
    assert launch.training_script == "snippets.torchrun.train"
    if nodes == 1:
        assert launch.standalone
    else:
        assert (launch.nnodes, launch.rdzv_backend) == ("2", "c10d")
        assert launch.rdzv_endpoint == "$HEAD_NODE:29500"
    world = {"WORLD_SIZE": str(gpus)}
    cfg = config.parse(launch.training_script_args, world)
    assert (cfg.strategy, cfg.micro_batch) == (strategy, 2)
    assert cfg.shard_size == (2 if strategy == "hsdp" else None)
    assert (cfg.model.n_layers, cfg.model.d_model) == (2, 32)


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

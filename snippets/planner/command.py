"""The command that launches a layout with this course's training
script, or, where the script cannot run it, the shape of the mesh."""

# --8<-- [start:model]
from dataclasses import asdict

from snippets.planner.cost import estimate
from snippets.planner.layouts import Layout, check_layout, name
from snippets.planner.model import check_training, checked

STRATEGY = {0: "ddp", 3: "fsdp", "hsdp": "hsdp"}


def unrunnable(lay):
    """Why the training script cannot run the layout (a dict or a
    Layout), or None. It runs DDP, FSDP (ZeRO-3) or HSDP over dp, times
    tp and pp, with stages of equal size."""
    lay = checked(Layout, "layout", lay)
    if lay.zero not in STRATEGY:
        return f"ZeRO-{lay.zero} (the script shards all or nothing)"
    if lay.cp > 1:
        return "context parallelism"
    if lay.ep > 1:
        return (
            "expert parallelism with the experts whole on ep of a "
            "stage's GPUs (MoE parallel folding)"
        )
    if lay.schedule == "zb-h1":
        return (
            "the ZB-H1 schedule (torch.pipelining's "
            "ScheduleInterleavedZeroBubble with one stage per rank; the "
            "script's interleaved-zb holds two chunks or more)"
        )
    if lay.recompute == "per-op":
        return "per-op selective recomputation (torchtitan's)"
    if lay.embedding_slots:
        return "stages of unequal size (embedding slots)"
    script = lay.pp == 1  # it reshards after forward without a pipeline
    if lay.zero in (3, "hsdp") and lay.reshard_after_forward not in (
        None,
        script,
    ):
        return (
            f"reshard_after_forward={lay.reshard_after_forward} (the "
            f"script passes {script} with pp={lay.pp})"
        )
    return None


def launch_notes(training, lay):
    """What the command changes about the layout, said beside it."""
    notes = []
    if checked(Layout, "layout", lay).recompute == "selective":
        notes.append(
            "The script has no selective recomputation; it recomputes "
            "nothing, the nearest, since its attention (PyTorch's "
            "scaled_dot_product_attention) keeps no s x s scores."
        )
    if check_training(training).precision == "fp8":
        notes.append("The script trains in bf16: it has no FP8 matmuls.")
    return notes


def launch_command(model, cluster, training, layout):
    """(runnable, text): a torchrun command for snippets.torchrun.train
    when it can run the layout (DDP, FSDP or HSDP over dp, times tp and
    pp) and the layout fits, else an outline of the DeviceMesh the job
    needs, or why it does not fit."""
    job = check_layout(layout, model, cluster, check_training(training))
    need = estimate(job)["memory_per_gpu_GB"]["total"]
    card = job.cluster.gpu_memory_GB
    if need > card:
        return False, (
            f"No command: {name(asdict(job.layout))} needs {need:.1f} GB "
            f"per GPU, {need - card:.1f} GB more than the {card:g} GB "
            "card, as the script runs it."
        )
    if job.model.experts > 1:
        return False, (
            "No command: the planner's commands are for dense models; "
            "the script's --experts layer is on Mixture of experts."
        )
    if unrunnable(job.layout) is None:
        return True, torchrun(job)
    return False, mesh_outline(job)


def torchrun(job):
    """The torchrun command line of a runnable Job."""
    m, c, lay = job.model, job.cluster, job.layout
    launcher = f"--standalone --nproc_per_node={c.gpus_per_node}"
    if c.nodes > 1:
        launcher = (
            f"--nnodes={c.nodes} --nproc_per_node={c.gpus_per_node} \\\n  "
            "--rdzv-backend=c10d --rdzv-endpoint=$HEAD_NODE:29500 "
            "--rdzv-id=job"
        )
    flags = [f"--strategy {STRATEGY[lay.zero]}"]
    if lay.zero == "hsdp":
        flags.append(f"--shard-size {job.shard}")
    if lay.tp > 1:
        flags.append(f"--tp {lay.tp}")
    if lay.pp > 1:
        flags += [
            f"--pp {lay.pp} --pp-schedule {lay.schedule}",
            f"--pp-microbatches {job.microbatches} --pp-chunks {lay.chunks}",
        ]
    if lay.recompute == "full":  # the script's default is none
        flags.append("--recompute full")
    flags += [
        f"--micro-batch {job.training.micro_batch}",
        f"--accum-steps {1 if lay.pp > 1 else job.microbatches}",
    ]
    if lay.gradient_sync == "every":  # the script's default is "last"
        flags.append("--accum-sync every")
    flags += [
        f"--vocab {m.vocab} --seq-len {m.seq_len}",
        f"--d-model {m.hidden} --n-heads {m.heads}",
        f"--n-layers {m.layers} --d-ff {m.ffn}",
    ]
    command = f"torchrun {launcher} \\\n  -m snippets.torchrun.train "
    return command + " \\\n  ".join(flags)


SHARDING = {
    0: "replicate the weights over 'dp' (DDP)",
    1: "shard the optimizer state over 'dp' (ZeRO-1)",
    2: "shard optimizer state and gradients over 'dp' (ZeRO-2)",
    3: "fully_shard each block over 'dp' (ZeRO-3)",
    "hsdp": "fully_shard within a node, replicate across nodes",
}


def mesh_outline(job):
    """The DeviceMesh a Job needs, outermost dimension first, and what
    each dimension does."""
    lay = job.layout
    dims = [("pp", lay.pp), ("dp", lay.dp), ("cp", lay.cp), ("tp", lay.tp)]
    dims = [(n, d) for n, d in dims if d > 1] or [("dp", 1)]
    shape = tuple(d for _, d in dims)
    names = tuple(n for n, _ in dims)
    lines = [
        "This course's training script runs DDP, FSDP and HSDP times "
        f"TP and PP; this layout has {unrunnable(lay)}, which needs "
        "Megatron-Core, torchtitan or DeepSpeed. The device mesh, "
        "outermost dimension first:",
        f"  mesh = init_device_mesh('cuda', {shape}, mesh_dim_names={names})",
        f"  - {SHARDING[lay.zero]}",
    ]
    if lay.zero in (3, "hsdp"):
        lines.append(
            "    fully_shard(block, reshard_after_forward="
            f"{lay.reshard_after_forward})"
        )
    if lay.gradient_sync == "every":
        lines.append(
            "    reduce in every micro-batch: no "
            "set_requires_gradient_sync(False)"
        )
    if lay.cp > 1:
        lines.append(
            f"  - 'cp' = {lay.cp}: split each sequence, gather keys "
            "and values (context parallel)"
        )
    if lay.tp > 1:
        where = "across nodes" if lay.tp > job.cluster.gpus_per_node else ""
        lines.append(
            f"  - 'tp' = {lay.tp}: split each layer's matrices "
            f"{where or 'inside a node'} (parallelize_module); sequence "
            f"parallel {'on' if lay.sequence_parallel else 'off'}"
        )
    if lay.pp > 1:
        split = f"{job.stages[0]} layers per stage"
        if len(set(job.stages)) > 1:
            split = "layers per stage " + ", ".join(map(str, job.stages))
        schedule = {"gpipe": "GPipe", "1f1b": "1F1B", "zb-h1": "ZB-H1"}.get(
            lay.schedule
        )
        if schedule is None:
            schedule = f"interleaved 1F1B, {lay.chunks} chunks per GPU,"
        lines.append(
            f"  - 'pp' = {lay.pp}: {split}; {schedule} over "
            f"{job.microbatches} micro-batches"
        )
    lines.append(f"  - activation recomputation: {lay.recompute}")
    return "\n".join(lines)


# --8<-- [end:model]

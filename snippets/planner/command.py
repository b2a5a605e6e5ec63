"""The command that launches a layout with this course's training
script, or, where the script cannot run it, the shape of the mesh."""

# --8<-- [start:model]
from snippets.planner.layouts import check_layout, microbatches
from snippets.planner.model import (
    check_cluster,
    check_model,
    check_training,
)

STRATEGY = {0: "ddp", 3: "fsdp", "hsdp": "hsdp"}


def launch_command(model, cluster, training, layout):
    """(runnable, text): a torchrun command for snippets.torchrun.train
    when it can run the layout (pure data parallelism as DDP, FSDP or
    HSDP), else an outline of the FSDP2 DeviceMesh the job needs."""
    m, c = check_model(model), check_cluster(cluster)
    t = check_training(training)
    lay = check_layout(layout, m, c)
    g, nodes = c["gpus_per_node"], c["nodes"]
    if lay["tp"] == 1 and lay["pp"] == 1 and lay["zero"] in STRATEGY:
        if nodes == 1:
            launcher = f"--standalone --nproc_per_node={g}"
        else:
            launcher = (
                f"--nnodes={nodes} --nproc_per_node={g} \\\n  "
                "--rdzv-backend=c10d --rdzv-endpoint=$HEAD_NODE:29500 "
                "--rdzv-id=job"
            )
        flags = [f"--strategy {STRATEGY[lay['zero']]}"]
        if lay["zero"] == "hsdp":
            flags.append(f"--shard-size {g}")
        flags += [
            f"--micro-batch {t['micro_batch']}",
            f"--accum-steps {microbatches(m, t, lay['dp'])}",
            f"--vocab {m['vocab']} --seq-len {m['seq_len']}",
            f"--d-model {m['hidden']} --n-heads {m['heads']}",
            f"--n-layers {m['layers']} --d-ff {m['ffn']}",
        ]
        command = f"torchrun {launcher} \\\n  -m snippets.torchrun.train "
        return True, command + " \\\n  ".join(flags)
    dims = [("pp", lay["pp"]), ("dp", lay["dp"]), ("tp", lay["tp"])]
    dims = [(n, d) for n, d in dims if d > 1] or [("dp", 1)]
    shape = tuple(d for _, d in dims)
    names = tuple(n for n, _ in dims)
    zero = lay["zero"]
    sharding = {
        0: "replicate the weights over 'dp' (DDP)",
        1: "shard the optimizer state over 'dp' (ZeRO-1)",
        2: "shard optimizer state and gradients over 'dp' (ZeRO-2)",
        3: "fully_shard each block over 'dp' (ZeRO-3)",
        "hsdp": "fully_shard within a node, replicate across nodes",
    }[zero]
    lines = [
        "This course's training script runs DDP, FSDP and HSDP only: "
        "this layout needs Megatron-Core, torchtitan or DeepSpeed. "
        "The device mesh, outermost dimension first:",
        f"  mesh = init_device_mesh('cuda', {shape}, mesh_dim_names={names})",
        f"  - {sharding}",
    ]
    if lay["tp"] > 1:
        where = "across nodes" if lay["tp"] > g else "inside a node"
        lines.append(
            f"  - 'tp' = {lay['tp']}: split each layer's matrices {where}"
            f" (parallelize_module); sequence parallel "
            f"{'on' if lay['sequence_parallel'] else 'off'}"
        )
    if lay["pp"] > 1:
        lines.append(
            f"  - 'pp' = {lay['pp']}: {m['layers'] // lay['pp']} layers "
            f"per stage, 1F1B over "
            f"{microbatches(m, t, lay['dp'])} micro-batches"
        )
    lines.append(f"  - activation recomputation: {lay['recompute']}")
    return False, "\n".join(lines)


# --8<-- [end:model]

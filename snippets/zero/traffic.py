"""Bytes each rank sends per training step under DDP and ZeRO."""

# --8<-- [start:model]
from snippets.checks import choice, count, number
from snippets.units import GB
from snippets.zero.memory import ALIASES, DEFAULT_SYNC, SYNCS

# Collectives per step over a buffer the size of all parameters
# (ZeRO paper, section 7). Each one moves (N - 1) / N of it per rank.
COLLECTIVES = {
    "ddp": ("reduce-scatter", "all-gather"),  # one ring all-reduce
    "zero1": ("reduce-scatter", "all-gather"),
    "zero2": ("reduce-scatter", "all-gather"),
    "zero3": ("all-gather", "all-gather", "reduce-scatter"),
}
# Of those, the ones that reduce the gradients, and the ones that
# gather the parameters for a forward or a backward pass.
REDUCE = {"ddp": 2, "zero1": 1, "zero2": 1, "zero3": 1}
GATHER = {"ddp": 0, "zero1": 0, "zero2": 0, "zero3": 2}


def comm_bytes(
    strategy,
    params,
    world_size,
    bytes_per_value=2,
    accum_steps=1,
    sync=None,
):
    """GB each rank sends per optimizer step for the model state.

    ZeRO-1 and ZeRO-2 reduce-scatter the gradients and all-gather the
    updated parameters: with one micro-batch per step, the same traffic
    as DDP's all-reduce. ZeRO-3 also gathers the parameters again for
    the backward pass, and gathers them anew for every micro-batch.
    sync says when the gradients are reduced over accum_steps
    micro-batches: once per "step" (DDP's no_sync, FSDP2's
    set_requires_gradient_sync(False)) or after every "micro-batch"
    (DeepSpeed's ZeRO-2 and ZeRO-3, FSDP2's default). None picks what
    the stage keeps anyway: whole gradients (DDP, ZeRO-1) wait for the
    step, sharded ones (ZeRO-2, ZeRO-3) are reduced every micro-batch.
    """
    choice("strategy", strategy, [*COLLECTIVES, *ALIASES])
    number("params", params)
    count("world_size", world_size)
    number("bytes_per_value", bytes_per_value)
    a = count("accum_steps", accum_steps)
    stage = ALIASES.get(strategy, strategy)
    sync = DEFAULT_SYNC[stage] if sync is None else choice("sync", sync, SYNCS)
    reductions = 1 if sync == "step" else a
    collectives = len(COLLECTIVES[stage]) - REDUCE[stage] - GATHER[stage]
    collectives += REDUCE[stage] * reductions + GATHER[stage] * a
    per_collective = params * bytes_per_value * (world_size - 1) / world_size
    return collectives * per_collective / GB


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.zero.memory import memory_per_gpu

    P, N, A = 7_000_000_000, 64, 8
    EVERY, ONCE = "micro-batch", "step"
    ddp = comm_bytes("ddp", P, N)
    print(
        f"| 7B on {N} GPUs | sent, 1 micro-batch | {A} micro-batches:"
        " reduced each | reduced once | state held: reduced each"
        " | reduced once |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for s in COLLECTIVES:
        sent = comm_bytes(s, P, N)
        cells = [f"{sent:.4f} GB, {sent / ddp:.1f}x"]
        for when in (EVERY, ONCE):
            step = comm_bytes(s, P, N, accum_steps=A, sync=when)
            cells.append(f"{step / ddp:.1f}x")
        for when in (EVERY, ONCE):
            cells.append(f"{memory_per_gpu(s, P, N, sync=when):.2f} GB")
        print(f"| {s} | " + " | ".join(cells) + " |")
    # The torchrun page's run: 2 ranks, 2 micro-batches, FSDP2 syncing
    # only on the last one.
    run = comm_bytes("fsdp", P, 2, accum_steps=2, sync=ONCE)
    print(
        f"\nFSDP, 2 ranks, 2 micro-batches, reduced once:"
        f" {run / comm_bytes('ddp', P, 2):.1f}x DDP"
    )
    # --8<-- [end:demo]

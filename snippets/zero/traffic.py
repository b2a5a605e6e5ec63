"""Bytes each rank sends per training step under DDP and ZeRO."""

# --8<-- [start:model]
from snippets.checks import choice, count, number
from snippets.units import GB
from snippets.zero.memory import ALIASES

# Collectives per step over a buffer the size of all parameters
# (ZeRO paper, section 7). Each one moves (N - 1) / N of it per rank.
COLLECTIVES = {
    "ddp": ("reduce-scatter", "all-gather"),  # one ring all-reduce
    "zero1": ("reduce-scatter", "all-gather"),
    "zero2": ("reduce-scatter", "all-gather"),
    "zero3": ("all-gather", "all-gather", "reduce-scatter"),
}
# How many of those run again for every micro-batch of the step. A
# rank that keeps only its shard of the gradients (ZeRO-2, ZeRO-3)
# must reduce them after each backward pass; ZeRO-3 also gathers the
# parameters again for each forward and backward pass.
PER_MICROBATCH = {"ddp": 0, "zero1": 0, "zero2": 1, "zero3": 3}


def comm_bytes(strategy, params, world_size, bytes_per_value=2, accum_steps=1):
    """GB each rank sends per optimizer step for the model state.

    ZeRO-1 and ZeRO-2 reduce-scatter the gradients and all-gather the
    updated parameters: with one micro-batch per step, the same traffic
    as DDP's all-reduce. ZeRO-3 also gathers the parameters again for
    the backward pass. With accum_steps micro-batches per step, DDP and
    ZeRO-1 still reduce once; ZeRO-2 reduce-scatters every micro-batch
    and ZeRO-3 repeats all three collectives.
    """
    choice("strategy", strategy, [*COLLECTIVES, *ALIASES])
    number("params", params)
    count("world_size", world_size)
    number("bytes_per_value", bytes_per_value)
    count("accum_steps", accum_steps)
    stage = ALIASES.get(strategy, strategy)
    again = PER_MICROBATCH[stage]
    collectives = len(COLLECTIVES[stage]) - again + again * accum_steps
    per_collective = params * bytes_per_value * (world_size - 1) / world_size
    return collectives * per_collective / GB


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    ddp = comm_bytes("ddp", 7_000_000_000, 64)
    print(
        "| stage | sent per rank per step | against DDP"
        " | 8 micro-batches, against DDP |"
    )
    print("| --- | ---: | ---: | ---: |")
    for strategy in COLLECTIVES:
        sent = comm_bytes(strategy, 7_000_000_000, 64)
        eight = comm_bytes(strategy, 7_000_000_000, 64, accum_steps=8)
        print(
            f"| {strategy} | {sent:.4f} GB | {sent / ddp:.1f}x"
            f" | {eight / ddp:.1f}x |"
        )
    # --8<-- [end:demo]

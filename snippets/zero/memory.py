"""Model-state memory per GPU under DDP and the three ZeRO stages."""

# --8<-- [start:model]
from snippets.checks import choice, count, number
from snippets.units import GB

# Which of the three kinds of state each strategy splits across ranks.
SHARDED = {
    "ddp": (),
    "zero1": ("optim",),
    "zero2": ("optim", "grad"),
    "zero3": ("optim", "grad", "param"),
}
ALIASES = {"fsdp": "zero3"}  # FSDP's full sharding is ZeRO stage 3
# Bytes per parameter as (weight, gradient, optimizer state): the
# ZeRO paper's mixed precision, 16-bit weights and gradients with fp32
# master weights, momentum and variance (section 3.1); and fp32
# weights and gradients with Adam's two fp32 moments, as the torchrun
# page's script keeps them (FSDP2's fp32 shards are the master copy).
RECIPES = {"bf16 + fp32 master": (2, 2, 12), "fp32": (4, 4, 8)}
# When the gradients are reduced under gradient accumulation: once per
# optimizer "step", or after every "micro-batch". By default a stage
# does what costs it no memory: DDP and ZeRO-1 keep whole gradients
# and reduce once; ZeRO-2 and ZeRO-3 keep a shard, so they reduce
# every micro-batch (DeepSpeed always does; FSDP2 unless told not to).
SYNCS = ("step", "micro-batch")
DEFAULT_SYNC = {"ddp": "step", "zero1": "step"}
DEFAULT_SYNC |= {"zero2": "micro-batch", "zero3": "micro-batch"}


def memory_per_gpu(
    strategy,
    params,
    world_size,
    bytes_param=2,
    bytes_grad=2,
    bytes_optim=12,
    sync=None,
):
    """GB of parameters + gradients + optimizer state held by each rank.

    Activations are not counted. The defaults are mixed-precision Adam:
    bf16 parameters and gradients, and K = 12 bytes of fp32 master
    weights, momentum and variance (ZeRO paper, section 3.1). With
    sync="step" the gradients wait, whole, for the last micro-batch
    (FSDP2's set_requires_gradient_sync(False)): ZeRO-2 and ZeRO-3 then
    hold every gradient until it is reduced.
    """
    choice("strategy", strategy, [*SHARDED, *ALIASES])
    number("params", params)
    count("world_size", world_size)
    number("bytes_param", bytes_param)
    number("bytes_grad", bytes_grad)
    number("bytes_optim", bytes_optim, allow_minimum=True)  # 0: plain SGD
    stage = ALIASES.get(strategy, strategy)
    sharded = SHARDED[stage]
    if sync is not None and choice("sync", sync, SYNCS) == "step":
        sharded = tuple(kind for kind in sharded if kind != "grad")
    state = {"param": bytes_param, "grad": bytes_grad, "optim": bytes_optim}
    per_param = sum(
        size / world_size if kind in sharded else size
        for kind, size in state.items()
    )
    return params * per_param / GB


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    print("GB per GPU of model state, for 7B parameters at 16 bytes each:")
    print()
    print("| GPUs (N) | DDP | ZeRO-1 | ZeRO-2 | ZeRO-3 |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for n in (1, 8, 64):
        row = [memory_per_gpu(s, 7_000_000_000, n) for s in SHARDED]
        print(f"| {n} | " + " | ".join(f"{gb:.2f}" for gb in row) + " |")
    # --8<-- [end:demo]

    # --8<-- [start:paper]
    # ZeRO paper, Figure 1: 7.5B parameters, N = 64, K = 12.
    for s in SHARDED:
        print(f"{s:>5}: {memory_per_gpu(s, 7_500_000_000, 64):6.1f} GB")
    # --8<-- [end:paper]

    # --8<-- [start:limits]
    # How many times less than DDP each stage stores, as N grows, for
    # each recipe of bytes per parameter (weight, gradient, optimizer),
    # and the limit: what a stage can never shard stays on every GPU.
    for recipe, (bp, bg, bo) in RECIPES.items():
        print(f"{recipe}, {bp} + {bg} + {bo} bytes:")
        print(f"{'N':>6} {'zero1':>6} {'zero2':>6} {'zero3':>6}")
        for n in (8, 64, 1024):
            ddp = memory_per_gpu("ddp", 1, n, bp, bg, bo)
            cuts = [
                ddp / memory_per_gpu(s, 1, n, bp, bg, bo)
                for s in ("zero1", "zero2", "zero3")
            ]
            print(f"{n:>6} " + " ".join(f"{c:6.2f}" for c in cuts))
        total = bp + bg + bo
        print(
            f"{'limit':>6} {total / (bp + bg):6.2f} {total / bp:6.2f}      N"
        )
    # --8<-- [end:limits]

"""Pick a strategy from the memory numbers instead of yes/no answers."""

# --8<-- [start:model]
from snippets.checks import number
from snippets.zero.memory import SHARDED, memory_per_gpu


def plan(params, world_size, gpu_GB, usable=0.8, **bytes_per_param):
    """The lowest rung whose model state fits the usable GPU memory.

    `usable` keeps the rest of the card for activations and buffers.
    Returns the chosen strategy ("ddp", "zero1", "zero2", "zero3", or
    "tensor/pipeline" when no data-parallel rung fits) and the GB per
    GPU of every rung, so the choice can be checked.
    """
    number("gpu_GB", gpu_GB)
    number("usable", usable)
    if usable > 1:
        raise ValueError(f"usable must be <= 1, got {usable!r}")
    budget = gpu_GB * usable
    table = {
        s: memory_per_gpu(s, params, world_size, **bytes_per_param)
        for s in SHARDED
    }
    fits = [s for s, gb in table.items() if gb <= budget]
    return {
        "strategy": fits[0] if fits else "tensor/pipeline",
        "budget_GB": budget,
        "per_gpu_GB": table,
    }


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    for billions, gpus in ((1, 8), (7, 8), (13, 64), (70, 64), (400, 64)):
        p = plan(billions * 1_000_000_000, gpus, gpu_GB=80)
        need = p["per_gpu_GB"]
        print(
            f"{billions:>3}B on {gpus:>2} GPUs: {p['strategy']:<15}"
            f" (ddp {need['ddp']:.0f} GB, zero3 {need['zero3']:.1f} GB,"
            f" budget {p['budget_GB']:.0f} GB)"
        )
    # --8<-- [end:demo]

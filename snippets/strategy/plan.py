"""Pick a strategy from the memory numbers instead of yes/no answers."""

# --8<-- [start:model]
from snippets.activations.memory import activation_bytes_per_gpu
from snippets.checks import count, number
from snippets.strategy.ceiling import batch_ceiling
from snippets.units import GB
from snippets.zero.fsdp2 import working_set_GB
from snippets.zero.memory import SHARDED, memory_per_gpu

HEAD_DIM = 128  # hidden size per attention head
ASPECT = 128  # hidden size per layer: h = 128 L


def shape_from_params(params):
    """(layers, hidden, heads) of a decoder with about `params` weights.

    A layer holds 12 h^2 weights (4 h^2 in attention, 8 h^2 in the
    MLP), and many published models keep h close to 128 L with heads of
    128 (LLaMA-13B: L = 40, h = 5120; GPT-3 175B: L = 96, h = 12288).
    So P = 12 L (128 L)^2, solved for L and rounded.
    """
    number("params", params)
    layers = max(1, round((params / (12 * ASPECT**2)) ** (1 / 3)))
    hidden = ASPECT * layers
    return layers, hidden, hidden // HEAD_DIM


def plan(
    params,
    world_size,
    gpu_GB,
    usable=1.0,
    *,
    seq_len=4096,
    micro_batch=1,
    recompute="none",
    flash_attention=True,
    layers=None,
    hidden=None,
    heads=None,
    batch_tokens=None,
    **bytes_per_param,
):
    """The lowest rung whose model state and activations fit the card.

    Activations come from the activation lab: one micro-batch of
    `micro_batch` sequences of `seq_len` tokens in flight, with the
    given recomputation and attention kernel, at their peak (with
    recomputation, the layer being rebuilt is counted whole). The
    model's shape is layers, hidden and heads; left out, it comes from
    shape_from_params. `usable` is the share of the card the job may
    fill; lower it to keep room for what neither count holds (CUDA
    context, communication buffers, fragmentation). With batch_tokens,
    the global batch in tokens, a job whose GPUs outnumber its
    micro-batches cannot be data parallel at all (batch_ceiling): it
    goes to "tensor/pipeline" whatever its memory.
    Returns the chosen strategy ("ddp", "zero1", "zero2", "zero3", or
    "tensor/pipeline" when no data-parallel rung fits), the model state
    per GPU of every rung (ZeRO-3's with FSDP's working set), the
    activations and what they assume.
    """
    number("gpu_GB", gpu_GB)
    number("usable", usable)
    if usable > 1:
        raise ValueError(f"usable must be <= 1, got {usable!r}")
    shape = (layers, hidden, heads)
    if shape.count(None) not in (0, 3):
        raise ValueError(
            "layers, hidden and heads must be given together or not at "
            f"all, got layers={layers!r}, hidden={hidden!r}, heads={heads!r}"
        )
    if layers is None:
        layers, hidden, heads = shape_from_params(params)
    count("layers", layers)
    assumes = {
        "seq_len": seq_len,
        "micro_batch": micro_batch,
        "recompute": recompute,
        "flash_attention": flash_attention,
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
    }
    # With recomputation, the layer being rebuilt holds its share too.
    activations = activation_bytes_per_gpu(**assumes, rebuilt_layer=True)
    activations /= GB
    budget = gpu_GB * usable
    table = {
        s: memory_per_gpu(s, params, world_size, **bytes_per_param)
        for s in SHARDED
    }
    # ZeRO-3 also holds what FSDP gathers: two layers of 12 h^2 weights
    # and one layer's gradient.
    table["zero3"] += working_set_GB(12 * hidden**2)
    fits = [s for s, gb in table.items() if gb + activations <= budget]
    if batch_tokens is not None:
        ceiling = batch_ceiling(world_size, batch_tokens, seq_len, micro_batch)
        if ceiling["min_model_parallel"] > 1:
            fits = []  # fewer micro-batches than GPUs
    return {
        "strategy": fits[0] if fits else "tensor/pipeline",
        "budget_GB": budget,
        "per_gpu_GB": table,
        "activations_GB": activations,
        "assumes": assumes,
    }


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    CASES = (
        (1, 8, "none"),
        (7, 8, "none"),
        (13, 64, "none"),
        (70, 64, "none"),
        (70, 64, "full"),
        (400, 64, "full"),
        (7, 2048, "none"),
    )
    BATCH = 2**22  # tokens per step: 1,024 sequences of 4,096
    plans = [
        (
            billions,
            gpus,
            plan(
                billions * 10**9,
                gpus,
                gpu_GB=80,
                recompute=r,
                batch_tokens=BATCH,
            ),
        )
        for billions, gpus, r in CASES
    ]
    print("80 GB cards, one 4096-token sequence per GPU, FlashAttention;")
    print(f"a global batch of {BATCH:,} tokens.")
    print()
    print("Model state per GPU, in GB, at each rung:")
    print()
    print("| model | GPUs | DDP | ZeRO-1 | ZeRO-2 | ZeRO-3 |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    seen = set()  # the model state does not depend on recomputation
    for billions, gpus, p in plans:
        if (billions, gpus) not in seen:
            seen.add((billions, gpus))
            state = "".join(f" {gb:.1f} |" for gb in p["per_gpu_GB"].values())
            print(f"| {billions}B | {gpus} |{state}")
    print()
    print("The plan, with the activations of one micro-batch:")
    print()
    print(
        "| model | GPUs | shape L/h/a | recompute"
        " | activations per GPU | plan |"
    )
    print("| ---: | ---: | ---: | --- | ---: | --- |")
    for billions, gpus, p in plans:
        a = p["assumes"]
        print(
            f"| {billions}B | {gpus}"
            f" | {a['layers']}/{a['hidden']}/{a['heads']}"
            f" | {a['recompute']} | {p['activations_GB']:.1f} GB"
            f" | {p['strategy']} |"
        )
    # --8<-- [end:demo]

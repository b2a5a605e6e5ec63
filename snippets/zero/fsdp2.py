"""FSDP2 at its peak: the sharded state, and the units it gathers."""

# --8<-- [start:model]
from snippets.checks import count, flag, number
from snippets.units import GB


def working_set_GB(unit_params, prefetch=1, bytes_gathered=2):
    """GB a rank holds beyond its shards while a unit runs: that unit
    and `prefetch` more gathered, and the unit's unsharded gradient."""
    number("unit_params", unit_params)
    count("prefetch", prefetch, minimum=0)
    number("bytes_gathered", bytes_gathered)
    return (2 + prefetch) * unit_params * bytes_gathered / GB


def fsdp2_peak_GB(
    params,
    world_size,
    unit_params,
    reshard_after_forward=True,
    prefetch=1,
    cpu_offload=False,
    bytes_state=16,
    bytes_gathered=2,
):
    """GB one rank holds at its peak, with fully_shard on every unit
    (usually a transformer block), activations left out.

    The sharded state is bytes_state per parameter over world_size: 16
    with MixedPrecisionPolicy, fp32 shards that serve as the master
    copy, their fp32 gradients and Adam's two fp32 moments. With
    cpu_offload (CPUOffloadPolicy) it lives in host memory instead.
    The working set: the running unit and `prefetch` more gathered in
    bytes_gathered each (bf16), and the running unit's unsharded
    gradient. reshard_after_forward=False keeps every unit gathered
    from its forward to its backward, so all of them are at the turn;
    an int r reshards each unit over r ranks after its forward, keeping
    a 1/r shard of every unit so that the backward gathers among r.
    """
    number("params", params)
    n = count("world_size", world_size)
    number("unit_params", unit_params)
    count("prefetch", prefetch, minimum=0)
    flag("cpu_offload", cpu_offload)
    number("bytes_state", bytes_state)
    number("bytes_gathered", bytes_gathered)
    if unit_params > params:
        raise ValueError(
            f"unit_params must be <= params, got {unit_params!r} > {params!r}"
        )
    working = working_set_GB(unit_params, prefetch, bytes_gathered) * GB
    gradient = unit_params * bytes_gathered  # the running unit's
    if isinstance(reshard_after_forward, bool):
        if not reshard_after_forward:  # every unit whole at the turn
            working = max(working, params * bytes_gathered + gradient)
    else:
        r = count("reshard_after_forward", reshard_after_forward, minimum=2)
        if n % r or r >= n:
            raise ValueError(
                "reshard_after_forward must be True, False or a divisor of"
                f" world_size={n} other than 1 and itself, got {r!r}"
            )
        working += params * bytes_gathered / r  # a 1/r shard of each
    sharded = 0 if cpu_offload else params * bytes_state / n
    return (sharded + working) / GB


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    # Layers of 12 h^2 weights: a 7B model (h = 4096, 32 layers) and a
    # 70B one (h = 8192, 80 layers), each on 64 GPUs, 8 per node.
    MODELS = {"7B": (7e9, 12 * 4096**2), "70B": (70e9, 12 * 8192**2)}
    OPTIONS = (
        ("reshard after forward (default)", {}),
        ("prefetch 2 units ahead", {"prefetch": 2}),
        ("reshard_after_forward=False", {"reshard_after_forward": False}),
        ("reshard_after_forward=8, a node", {"reshard_after_forward": 8}),
        ("CPUOffloadPolicy", {"cpu_offload": True}),
    )
    print("| GB per GPU at the peak, 64 GPUs | 7B | 70B |")
    print("| --- | ---: | ---: |")
    print(
        "| sharded state only, 16 bytes per parameter | "
        + " | ".join(f"{p * 16 / 64 / 1e9:.2f}" for p, _ in MODELS.values())
        + " |"
    )
    for label, option in OPTIONS:
        cells = [
            f"{fsdp2_peak_GB(p, 64, unit, **option):.2f}"
            for p, unit in MODELS.values()
        ]
        print(f"| {label} | " + " | ".join(cells) + " |")
    # The largest unit may be the embedding: Llama 3 8B (config.json).
    h, kv, ffn, vocab = 4096, 1024, 14336, 128_256
    layer = 2 * h * h + 2 * h * kv + 3 * h * ffn + 2 * h
    print(
        f"\nLlama 3 8B: a layer {layer:,} weights, the embedding"
        f" {vocab:,} x {h:,} = {vocab * h:,}"
    )
    # --8<-- [end:demo]

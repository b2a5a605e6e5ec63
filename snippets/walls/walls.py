"""The two walls: training state against GPU memory, FLOPs against time."""

# --8<-- [start:model]
from snippets.checks import count, number
from snippets.units import GB

SECONDS_PER_DAY = 86_400

# Bytes per parameter of mixed-precision Adam (ZeRO paper, section 3.1).
MIXED_ADAM = {
    "weight used in forward and backward (bf16)": 2,
    "gradient (bf16)": 2,
    "master copy of the weight (fp32)": 4,
    "Adam first moment, momentum (fp32)": 4,
    "Adam second moment, variance (fp32)": 4,
}
BYTES_MIXED_ADAM = sum(MIXED_ADAM.values())
# FLOPs per parameter per token: a multiply-add forward, twice that back.
FLOPS_PER_PARAM_TOKEN = {"forward": 2, "backward": 4}


def state_GB(params, bytes_per_param=BYTES_MIXED_ADAM):
    """Weights, gradients and optimizer state; activations come on top."""
    number("params", params)
    number("bytes_per_param", bytes_per_param)
    return params * bytes_per_param / GB


def training_days(params, tokens, world_size, peak_tflops, mfu):
    """Days of training at sum(FLOPS_PER_PARAM_TOKEN) = 6 FLOPs per
    parameter per token (Kaplan et al. 2020, section 2.1)."""
    number("params", params)
    number("tokens", tokens)
    count("world_size", world_size)
    number("peak_tflops", peak_tflops)
    number("mfu", mfu)
    if mfu > 1:
        raise ValueError(f"mfu must be <= 1, got {mfu!r}")
    flops = sum(FLOPS_PER_PARAM_TOKEN.values()) * params * tokens
    seconds = flops / (world_size * peak_tflops * 1e12 * mfu)
    return seconds / SECONDS_PER_DAY


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:table]
    print("| what is stored | bytes per parameter |")
    print("| --- | --- |")
    for what, size in MIXED_ADAM.items():
        print(f"| {what} | {size} |")
    print(f"| **total** | **{sum(MIXED_ADAM.values())}** |")
    # --8<-- [end:table]

    # --8<-- [start:demo]
    P, TOKENS = 7_000_000_000, 2_000_000_000_000  # a 7B model, 2T tokens
    H100_GB, H100_PEAK_TFLOPS, MFU = 80, 989, 0.40
    print(f"training state: {state_GB(P):.0f} GB; one H100 holds {H100_GB} GB")
    for gpus in (1, 64, 1024):
        days = training_days(P, TOKENS, gpus, H100_PEAK_TFLOPS, MFU)
        print(f"{gpus:>5} H100s at {MFU:.0%} MFU: {days:8.1f} days")
    # --8<-- [end:demo]

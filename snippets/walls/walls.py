"""The two walls: training state against GPU memory, FLOPs against time."""

# --8<-- [start:model]
from snippets.checks import count, number

GB = 1e9
SECONDS_PER_DAY = 86_400


def state_GB(params, bytes_per_param=16):
    """Weights, gradients and Adam state: 2 + 2 + 12 bytes per parameter
    in mixed precision (ZeRO paper, section 3.1). Activations come on top."""
    number("params", params)
    number("bytes_per_param", bytes_per_param)
    return params * bytes_per_param / GB


def training_days(params, tokens, gpus, peak_tflops, mfu):
    """Days to train with about 6 FLOPs per parameter per token
    (forward + backward; Kaplan et al. 2020, section 2.1)."""
    number("params", params)
    number("tokens", tokens)
    count("gpus", gpus)
    number("peak_tflops", peak_tflops)
    number("mfu", mfu)
    if mfu > 1:
        raise ValueError(f"mfu must be <= 1, got {mfu!r}")
    flops = 6 * params * tokens
    seconds = flops / (gpus * peak_tflops * 1e12 * mfu)
    return seconds / SECONDS_PER_DAY


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    P, TOKENS = 7_000_000_000, 2_000_000_000_000  # a 7B model, 2T tokens
    H100_GB, H100_PEAK_TFLOPS, MFU = 80, 989, 0.40
    print(f"training state: {state_GB(P):.0f} GB; one H100 holds {H100_GB} GB")
    for gpus in (1, 64, 1024):
        days = training_days(P, TOKENS, gpus, H100_PEAK_TFLOPS, MFU)
        print(f"{gpus:>5} H100s at {MFU:.0%} MFU: {days:8.1f} days")
    # --8<-- [end:demo]

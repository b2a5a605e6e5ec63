"""Why FP8 matrix multiplies at twice the rate do not make a training
step twice as fast, and which peak an FP8 run's MFU uses."""

# --8<-- [start:model]
from snippets.checks import number


def fp8_speedup(gemm_share, gemm_speedup=2.0, overhead_share=0.0):
    """Speed-up of a whole step when only its matrix multiplies get
    faster: gemm_share of the bf16 step runs gemm_speedup times faster,
    the rest (attention's softmax, norms, the optimizer, communication
    not hidden) does not, and FP8 adds its casts and scales, a share
    overhead_share of the bf16 step: 1 / ((1 - g) + g / s + o)."""
    g = number("gemm_share", gemm_share, allow_minimum=True)
    if g > 1:
        raise ValueError(f"gemm_share must be <= 1, got {g!r}")
    s = number("gemm_speedup", gemm_speedup)
    o = number("overhead_share", overhead_share, allow_minimum=True)
    return 1 / ((1 - g) + g / s + o)


def gemm_share_for(speedup, gemm_speedup=2.0):
    """The share of the bf16 step in matrix multiplies that a measured
    speed-up implies, if they ran exactly gemm_speedup times faster and
    FP8 cost nothing else: the inverse of fp8_speedup."""
    measured = number("speedup", speedup, minimum=1, allow_minimum=True)
    s = number("gemm_speedup", gemm_speedup, minimum=1)
    if measured > s * (1 + 1e-12):  # beyond the last bit of rounding
        raise ValueError(
            f"speedup must be <= gemm_speedup ({s}): only the matrix "
            f"multiplies get faster; got {measured!r}"
        )
    return (1 - 1 / measured) / (1 - 1 / s)


def mfu(tokens_per_s, flops_per_token, peak_tflops):
    """Model FLOPs utilisation of one GPU: the model's FLOPs per second
    over a peak. Which peak (bf16's or FP8's) is the caller's choice,
    and must be said."""
    t = number("tokens_per_s", tokens_per_s)
    f = number("flops_per_token", flops_per_token)
    return t * f / (number("peak_tflops", peak_tflops) * 1e12)


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    print("share of the step in matmuls -> step speed-up, matmuls 2x")
    for g in (0.5, 0.7, 0.9, 1.0):
        plain, taxed = fp8_speedup(g), fp8_speedup(g, overhead_share=0.05)
        print(f"  {g:.0%}: {plain:.2f}x, with casts costing 5%: {taxed:.2f}x")
    # torchtitan, Llama 3.1 8B, FSDP on 8 H100s, torch.compile: TPS/GPU
    BF16, FP8 = 6667, 8532
    print(
        f"torchtitan 8B: {FP8 / BF16:.2f}x, as if matmuls were"
        f" {gemm_share_for(FP8 / BF16):.0%} of the step"
    )
    N = 8.03e9  # Llama 3.1 8B parameters; 6N FLOPs per token
    for name, tps in (("bf16", BF16), ("fp8", FP8)):
        print(
            f"  {name}: MFU {mfu(tps, 6 * N, 989):.1%} of the bf16 peak,"
            f" {mfu(tps, 6 * N, 1979):.1%} of the FP8 peak"
        )
    # --8<-- [end:demo]

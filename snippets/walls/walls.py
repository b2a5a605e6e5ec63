"""The two walls: training state against GPU memory, FLOPs against time."""

# --8<-- [start:model]
from snippets.checks import count, number
from snippets.units import GB, MiB

SECONDS_PER_DAY = 86_400
# An "80 GB" H100 SXM, as nvidia-smi reports it: binary mebibytes.
H100_MiB = 81_559

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


# --8<-- [start:share]
def megatron_model_share(layers, hidden, seq_len, vocab):
    """Share of Megatron-LM's counted FLOPs that the model needs.

    With full recomputation Megatron-LM counts 96 B s l h^2 (1 + s/6h
    + V/16lh) FLOPs per step (arXiv 2104.04473, section 5.1): the
    layers' forward pass twice, 96 where the model needs 72, and the
    logits, which are not recomputed, once.
    """
    attention = count("seq_len", seq_len) / (6 * count("hidden", hidden))
    logits = count("vocab", vocab) / (16 * count("layers", layers) * hidden)
    return (72 * (1 + attention) + 96 * logits) / (
        96 * (1 + attention + logits)
    )


# --8<-- [end:share]


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
    print(
        f"training state: {state_GB(P):.0f} GB; one H100 holds"
        f" {H100_MiB:,} MiB = {H100_MiB * MiB / GB:.1f} GB,"
        f" budgeted as {H100_GB} GB"
    )
    for gpus in (1, 64, 1024):
        days = training_days(P, TOKENS, gpus, H100_PEAK_TFLOPS, MFU)
        print(f"{gpus:>5} H100s at {MFU:.0%} MFU: {days:8.1f} days")
    # --8<-- [end:demo]

    # --8<-- [start:measured]
    # Share of the dense 16-bit peak that large runs report, and what
    # it counts. Megatron-LM 2021, Table 1 (TFLOP/s per A100, peak
    # 312, full recomputation, GPT with V = 51200, s = 2048); PaLM,
    # Table 3 (both figures its own); Llama 3, Table 4 (BF16 MFU).
    MEGATRON = (  # model, GPUs, layers, hidden, TFLOP/s per GPU
        ("1.7B", 32, 24, 2304, 137),
        ("18.4B", 256, 40, 6144, 135),
        ("1T", 3072, 128, 25600, 163),
    )
    print("| run | GPUs | reported | counts recomputed work | as MFU |")
    print("| --- | ---: | ---: | --- | ---: |")
    for model, gpus, layers, hidden, tflops in MEGATRON:
        share = megatron_model_share(layers, hidden, 2048, 51200)
        print(
            f"| Megatron-LM, GPT {model} | {gpus:,} A100 | {tflops / 312:.0%}"
            f" | yes | {tflops * share / 312:.0%} |"
        )
    print("| PaLM 540B | 6,144 TPU v4 | 57.8% | yes | 46.2% |")
    for gpus, mfu in ((8192, 0.43), (16384, 0.41)):
        print(f"| Llama 3 405B | {gpus:,} H100 | {mfu:.0%} | no | {mfu:.0%} |")
    # --8<-- [end:measured]

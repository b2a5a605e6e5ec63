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


def flops_per_token(params, layers=None, hidden=None, seq_len=None):
    """Training FLOPs per token: 6 per parameter (forward and backward
    through every weight), plus, given the shape, attention's own
    products, 12 x layers x hidden x seq_len (PaLM, Appendix B: the
    count behind the MFUs that Llama 3 and PaLM publish)."""
    number("params", params)
    shape = (layers, hidden, seq_len)
    if shape.count(None) not in (0, 3):
        raise ValueError(
            "layers, hidden and seq_len must be given together or not at "
            f"all, got layers={layers!r}, hidden={hidden!r}, "
            f"seq_len={seq_len!r}"
        )
    attention = 0
    if layers is not None:
        attention = 12 * count("layers", layers) * count("hidden", hidden)
        attention *= count("seq_len", seq_len)
    return sum(FLOPS_PER_PARAM_TOKEN.values()) * params + attention


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

    # --8<-- [start:attention]
    from snippets.walls.walls import flops_per_token

    # A 7B model as a shape: 32 layers of width 4096.
    for seq in (2048, 4096, 32768, 131072):
        full = flops_per_token(7e9, layers=32, hidden=4096, seq_len=seq)
        print(
            f"s = {seq:>7,}: {full / 1e9:6.1f} GFLOPs per token,"
            f" attention adds {full / flops_per_token(7e9) - 1:6.1%} to 6P"
        )
    # --8<-- [end:attention]

    # --8<-- [start:one_card]
    # Bytes per parameter kept on the GPU, and the 7B model's total.
    ONE_CARD = {
        "mixed-precision Adam": BYTES_MIXED_ADAM,
        "8-bit Adam, bf16 weights and gradients, no fp32 master": 2 + 2 + 2,
        "Adam state and fp32 master offloaded to the CPU": 2 + 2,
    }
    for recipe, size in ONE_CARD.items():
        print(f"{recipe:<56} {size:>2} B: {state_GB(P, size):5.0f} GB")
    # --8<-- [end:one_card]

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
    # Korthikanti et al. 2022: GPT 530B with selective recomputation
    # and sequence parallelism, reported as MFU.
    print(
        "| MT-NLG 530B, selective recomputation | 2,240 A100 | 54.2% | no"
        " | 54.2% |"
    )
    for gpus, seq, mfu in (
        (8192, 8, 0.43),
        (16384, 8, 0.41),
        (16384, 128, 0.38),
    ):
        print(
            f"| Llama 3 405B, {seq}K tokens | {gpus:,} H100 | {mfu:.0%} | no"
            f" | {mfu:.0%} |"
        )
    # --8<-- [end:measured]

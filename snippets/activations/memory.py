"""Activation memory of a transformer layer, and of one pipeline stage."""

# --8<-- [start:model]
from snippets.checks import choice, count, flag
from snippets.units import GB

RECOMPUTE = ("none", "selective", "full")
SCHEDULES = ("gpipe", "1f1b")


def activation_bytes_per_layer(
    seq_len,
    micro_batch,
    hidden,
    heads,
    tp=1,
    sequence_parallel=False,
    recompute="none",
    flash_attention=False,
    kv_heads=None,
    ffn=None,
    gated=False,
    dropout=True,
):
    """Bytes one transformer layer keeps for its backward pass, per GPU.

    Korthikanti et al. 2022, Table 2: activations in 16 bits, dropout
    masks in 1 byte, s = seq_len, b = micro_batch, h = hidden, a = heads,
    t = tp. The 5as/h term is the attention matrix (the softmax output,
    its dropout mask and the dropout's output); a FlashAttention kernel never
    stores it, and selective recomputation recomputes it instead.
    The defaults are the paper's GPT layer (every head its own keys and
    values, a GeLU MLP of 4h, dropout). kv_heads, ffn, gated (SwiGLU's
    three MLP tensors) and dropout=False describe a Llama layer: without
    dropout the 34 of 34sbh and the 5 of 5as/h become smaller.
    """
    s = count("seq_len", seq_len)
    b = count("micro_batch", micro_batch)
    h = count("hidden", hidden)
    a = count("heads", heads)
    t = count("tp", tp)
    sp = flag("sequence_parallel", sequence_parallel)
    choice("recompute", recompute, RECOMPUTE)
    flag("flash_attention", flash_attention)
    if h % a:
        raise ValueError(f"hidden must be a multiple of heads, got {h}, {a}")
    if a % t:
        raise ValueError(f"heads must be a multiple of tp, got {a}, {t}")
    kv = a if kv_heads is None else count("kv_heads", kv_heads)
    f = 4 * h if ffn is None else count("ffn", ffn)
    flag("gated", gated)
    mask = 1 if flag("dropout", dropout) else 0  # 1-byte dropout masks
    if a % kv:
        raise ValueError(
            f"heads must be a multiple of kv_heads, got {a}, {kv}"
        )
    sbh = s * b * h
    if recompute == "full":  # only each layer's input is kept
        return 2 * sbh / (t if sp else 1)
    # Per token, in units of h: the two norms' inputs, the attention's
    # and the MLP's inputs and the dropout masks stay whole on each
    # tensor-parallel rank (10 for GPT); queries, keys and values, the
    # attention output and the MLP's wide tensors are split (24 for GPT).
    whole = 2 * 2 + 2 + 2 + 2 * mask
    split = 2 + 4 * kv / a + 2 + (3 if gated else 2) * 2 * f / h
    keeps_scores = recompute == "none" and not flash_attention
    scores = (2 + 3 * mask) * a * s / h if keeps_scores else 0
    if sp:  # layer norms and dropouts split along the sequence too
        return sbh * (whole + split + scores) / t
    return sbh * (whole + (split + scores) / t)


def logit_bytes(seq_len, micro_batch, vocab, tp=1):
    """Bytes the output layer and the loss keep for the backward pass,
    on the last pipeline stage: per token, the bf16 logits (2 bytes per
    vocabulary entry) and their fp32 log-softmax (4), split over the tp
    ranks of a vocabulary-parallel output layer. The loss's backward
    adds an fp32 gradient of the logits for a moment on top."""
    tokens = count("seq_len", seq_len) * count("micro_batch", micro_batch)
    return tokens * count("vocab", vocab) * (2 + 4) / count("tp", tp)


def activation_bytes_per_gpu(
    layers,
    stages=1,
    microbatches=1,
    schedule="1f1b",
    rebuilt_layer=False,
    full_every=None,
    **layer,
):
    """Bytes of activations on the first pipeline stage at its peak.

    The stage runs layers / stages layers. GPipe keeps all m
    micro-batches alive until the backward passes start; 1F1B keeps at
    most p = stages. `layer` holds activation_bytes_per_layer's
    arguments. rebuilt_layer=True also counts what recomputation
    brings back: while the backward pass reruns a layer's forward pass,
    that one layer holds everything it dropped (with recompute="full",
    all of its activations) on top of what the others keep.
    full_every=k recomputes every k-th layer in full and keeps what
    `layer` says in the others, as torchtitan's layer-selective
    checkpointing does.
    """
    count("layers", layers)
    count("stages", stages)
    count("microbatches", microbatches)
    choice("schedule", schedule, SCHEDULES)
    flag("rebuilt_layer", rebuilt_layer)
    if layers % stages:
        raise ValueError(
            f"layers must be a multiple of stages, got {layers}, {stages}"
        )
    in_flight = microbatches
    if schedule == "1f1b":
        in_flight = min(stages, microbatches)
    n = layers // stages
    per_layer = activation_bytes_per_layer(**layer)
    kept = n * per_layer
    if full_every is not None:
        k = count("full_every", full_every)
        full = activation_bytes_per_layer(**{**layer, "recompute": "full"})
        kept += (n // k) * (full - per_layer)
        per_layer = full  # what the layer being rebuilt had dropped
    total = in_flight * kept
    if rebuilt_layer:  # one layer at a time, as if nothing were dropped
        whole = activation_bytes_per_layer(**{**layer, "recompute": "none"})
        total += whole - per_layer
    return total


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.walls.walls import state_GB

    # A 7B model (h = 4096, a = 32, L = 32), one 4096-token sequence.
    SEVEN_B = {"seq_len": 4096, "micro_batch": 1, "hidden": 4096}
    FLASH = {"flash_attention": True}
    print("| 7B, s = 4096, b = 1 | GB for 32 layers |")
    print("| --- | --- |")
    for label, extra in (
        ("all stored, attention scores too", {}),
        ("FlashAttention (no scores)", FLASH),
        ("selective recomputation", {"recompute": "selective"}),
        ("full recomputation, layer inputs", {"recompute": "full"}),
        (
            "full recomputation, at its peak",
            {"recompute": "full", "rebuilt_layer": True},
        ),
        (
            "full recomputation, at its peak, FlashAttention",
            {"recompute": "full", "rebuilt_layer": True, **FLASH},
        ),
        (
            "every 2nd layer in full, at its peak, FlashAttention",
            {"full_every": 2, "rebuilt_layer": True, **FLASH},
        ),
        (
            "TP 8 + SP, FlashAttention",
            {"tp": 8, "sequence_parallel": True, "flash_attention": True},
        ),
    ):
        gb = activation_bytes_per_gpu(32, heads=32, **SEVEN_B, **extra) / GB
        print(f"| {label} | {gb:.2f} |")
    two = activation_bytes_per_gpu(
        32, heads=32, **{**SEVEN_B, "micro_batch": 2}
    )
    print(f"\nTwo sequences, all stored: {two / GB:.2f} GB, against the")
    state = state_GB(7_000_000_000)  # 16 bytes per parameter
    print(f"{state:.0f} GB of weights, gradients and Adam state.")
    # --8<-- [end:demo]

    # --8<-- [start:llama]
    from snippets.activations.memory import (
        activation_bytes_per_layer,
        logit_bytes,
    )

    # One 4096-token sequence through 32 layers of width 4096: GPT's
    # layer (the lab's defaults), LLaMA 7B's (SwiGLU MLP of 11008, no
    # dropout) and Llama 3 8B's (8 key-value heads, MLP of 14336).
    LAYERS = {
        "GPT-style, h 4096": {},
        "LLaMA 7B": {"ffn": 11008, "gated": True, "dropout": False},
        "Llama 3 8B": {
            "kv_heads": 8,
            "ffn": 14336,
            "gated": True,
            "dropout": False,
        },
    }
    ONE = {"seq_len": 4096, "micro_batch": 1, "hidden": 4096, "heads": 32}
    print("| 32 layers, s = 4096 | all stored, GB | FlashAttention, GB |")
    print("| --- | ---: | ---: |")
    for name, shape in LAYERS.items():
        cells = [
            32 * activation_bytes_per_layer(**ONE, **shape, **extra) / GB
            for extra in ({}, {"flash_attention": True})
        ]
        print(f"| {name} | {cells[0]:.2f} | {cells[1]:.2f} |")
    for name, vocab in (("LLaMA 7B", 32_000), ("Llama 3 8B", 128_256)):
        gb = logit_bytes(4096, 1, vocab) / GB
        print(f"| {name}: logits and loss, last stage | {gb:.2f} | {gb:.2f} |")
    # --8<-- [end:llama]

    # --8<-- [start:table2]
    # Korthikanti et al. 2022, Table 2, on GPT-3 175B's layer:
    # h = 12288, a = 96, s = 2048, b = 1, tensor-parallel size 8.
    GPT3 = {"seq_len": 2048, "micro_batch": 1, "hidden": 12288, "heads": 96}
    sbh = 2048 * 1 * 12288
    for label, extra in (
        ("no parallelism", {}),
        ("tensor parallel", {"tp": 8}),
        ("tensor + sequence parallel", {"tp": 8, "sequence_parallel": True}),
        ("tensor parallel + selective", {"tp": 8, "recompute": "selective"}),
        (
            "tensor + sequence + selective",
            {"tp": 8, "sequence_parallel": True, "recompute": "selective"},
        ),
        ("full recomputation", {"tp": 8, "recompute": "full"}),
    ):
        per_layer = activation_bytes_per_layer(**GPT3, **extra)
        print(
            f"{label:<30} {per_layer / sbh:7.3f} sbh {per_layer / GB:6.3f} GB"
        )
    # --8<-- [end:table2]

    # --8<-- [start:pipeline]
    # GPT-3 175B: 96 layers on 8 stages of 12, t = 8 with SP and
    # selective recomputation, 64 micro-batches per step.
    best = {"tp": 8, "sequence_parallel": True, "recompute": "selective"}
    for schedule in SCHEDULES:
        gb = (
            activation_bytes_per_gpu(
                96,
                stages=8,
                microbatches=64,
                schedule=schedule,
                **GPT3,
                **best,
            )
            / GB
        )
        print(f"{schedule:>5}: first stage holds {gb:6.2f} GB")
    whole = 96 * activation_bytes_per_layer(**GPT3, **best) / GB
    print(f"all 96 layers, one micro-batch: {whole:.2f} GB")
    # --8<-- [end:pipeline]

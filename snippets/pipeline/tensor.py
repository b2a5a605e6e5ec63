"""What Megatron tensor parallelism sends per layer, against its compute."""

# --8<-- [start:model]
from snippets.checks import choice, count, number
from snippets.units import GB, MB

RECOMPUTE = ("none", "full")


def tp_bytes_per_layer(
    seq_len, micro_batch, hidden, tp, bytes_per_value=2, recompute="none"
):
    """Bytes each rank sends per layer and micro-batch, forward and
    backward together.

    Each layer all-reduces its b x s x h output twice in the forward
    pass (after attention, after the MLP) and twice in the backward
    pass; in each ring all-reduce a rank sends 2 (t - 1) / t of it.
    Full recomputation runs the forward pass again inside the backward
    pass, its two all-reduces included: six per layer, not four.
    """
    values = count("seq_len", seq_len) * count("micro_batch", micro_batch)
    values *= count("hidden", hidden)
    t = count("tp", tp)
    number("bytes_per_value", bytes_per_value)
    passes = 6 if choice("recompute", recompute, RECOMPUTE) == "full" else 4
    return passes * 2 * (t - 1) / t * values * bytes_per_value


def tp_layer_seconds(
    seq_len,
    micro_batch,
    hidden,
    tp,
    tflops_per_gpu,
    link_GBps,
    recompute="none",
):
    """(compute, communication) seconds per layer and micro-batch.

    Compute uses the 6 P T rule with P = 12 h^2 weights per layer
    (4 h^2 in attention, 8 h^2 in the MLP), T = s x b tokens, split
    over t ranks, 8 instead of 6 with full recomputation; it leaves
    out the attention scores' own FLOPs.
    """
    number("tflops_per_gpu", tflops_per_gpu)
    number("link_GBps", link_GBps)
    sent = tp_bytes_per_layer(
        seq_len, micro_batch, hidden, tp, recompute=recompute
    )
    per_token = 8 if recompute == "full" else 6
    flops = per_token * 12 * hidden**2 * seq_len * micro_batch / tp
    return flops / (tflops_per_gpu * 1e12), sent / (link_GBps * GB)


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.comms.links import REACHED_GBps as R

    TFLOPS = 989 * 0.40  # an H100 at 40% of its dense bf16 peak
    # At what NCCL reaches on each (snippets/comms/links.py).
    LINKS = {
        "NVLink 4, inside a node": R["nvlink4"],
        "one NDR NIC per GPU": R["ndr"],
    }
    print(
        "| layer, t = 8, s = 4096, b = 1 | MB sent | link | compute, ms"
        " | all-reduces, ms |"
    )
    print("| --- | --- | --- | --- | --- |")
    for h in (4096, 12288):
        sent = tp_bytes_per_layer(4096, 1, h, 8) / MB
        for link, bw in LINKS.items():
            compute, comms = tp_layer_seconds(4096, 1, h, 8, TFLOPS, bw)
            print(
                f"| h = {h} | {sent:.1f} | {link}, {bw:g} GB/s"
                f" | {compute * 1e3:.2f}"
                f" | {comms * 1e3:.2f} |"
            )
    full = tp_bytes_per_layer(4096, 1, 4096, 8, recompute="full") / MB
    print(
        f"\nh = 4096 with full recomputation: {full:.1f} MB, six all-reduces"
    )
    # --8<-- [end:demo]

"""What Megatron tensor parallelism sends per layer, against its compute."""

# --8<-- [start:model]
from snippets.checks import count, number
from snippets.units import GB, MB


def tp_bytes_per_layer(seq_len, micro_batch, hidden, tp, bytes_per_value=2):
    """Bytes each rank sends per layer and micro-batch, forward and
    backward together.

    Each layer all-reduces its b x s x h output twice in the forward
    pass (after attention, after the MLP) and twice in the backward
    pass; in each ring all-reduce a rank sends 2 (t - 1) / t of it.
    """
    values = count("seq_len", seq_len) * count("micro_batch", micro_batch)
    values *= count("hidden", hidden)
    t = count("tp", tp)
    number("bytes_per_value", bytes_per_value)
    return 4 * 2 * (t - 1) / t * values * bytes_per_value


def tp_layer_seconds(
    seq_len, micro_batch, hidden, tp, tflops_per_gpu, link_GBps
):
    """(compute, communication) seconds per layer and micro-batch.

    Compute uses the 6 P T rule with P = 12 h^2 weights per layer
    (4 h^2 in attention, 8 h^2 in the MLP), T = s x b tokens, split
    over t ranks; it leaves out the attention scores' own FLOPs.
    """
    number("tflops_per_gpu", tflops_per_gpu)
    number("link_GBps", link_GBps)
    sent = tp_bytes_per_layer(seq_len, micro_batch, hidden, tp)
    flops = 6 * 12 * hidden**2 * seq_len * micro_batch / tp
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
    # --8<-- [end:demo]

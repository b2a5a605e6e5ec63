"""Practice ladder: pick the context-parallel degree and scheme for a
long sequence."""

# --8<-- [start:model]
from snippets.checks import count, number
from snippets.context.cost import _shape, overlap_crossover_tokens


def choose_cp(
    seq_len,
    hidden,
    heads,
    kv_heads,
    max_tokens_per_rank,
    tflops_per_gpu,
    link_GBps,
):
    """The smallest power-of-two cp that leaves each rank at most
    max_tokens_per_rank tokens (in 2 cp equal chunks, for zig-zag);
    whether a causal ring hides its K/V transfers there; whether
    Ulysses could run it (cp must divide the KV heads)."""
    _shape(1, seq_len, hidden, heads, kv_heads, 1)
    limit = count("max_tokens_per_rank", max_tokens_per_rank)
    number("tflops_per_gpu", tflops_per_gpu)
    number("link_GBps", link_GBps)
    cp = 1
    while seq_len // cp > limit or seq_len % (2 * cp):
        cp *= 2
        if 2 * cp > seq_len:
            raise ValueError(
                f"max_tokens_per_rank ({limit}) cannot be met: seq_len "
                f"({seq_len}) splits into 2 cp equal chunks at most"
            )
    crossover = overlap_crossover_tokens(
        hidden, heads, kv_heads, tflops_per_gpu, link_GBps
    )
    return {
        "cp": cp,
        "tokens_per_rank": seq_len // cp,
        "ring_hides_transfers": seq_len // cp >= crossover,
        "crossover_tokens": crossover,
        "ulysses_possible": kv_heads % cp == 0,
    }


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.comms.links import REACHED_GBps

    F = 989 * 0.40  # TFLOP/s: an H100 at 40% of its dense bf16 peak
    NVLINK, NIC = REACHED_GBps["nvlink4"], REACHED_GBps["ndr"]  # GB/s
    JOBS = {  # seq_len, hidden, heads, kv_heads, tokens per rank, GB/s
        "Llama 3 405B, 128K, IB": (131072, 16384, 128, 8, 8192, NIC),
        "Llama 3 70B, 32K, NVLink": (32768, 8192, 64, 8, 4096, NVLINK),
        "no GQA, 1M, IB": (1048576, 8192, 64, 64, 32768, NIC),
        "no GQA, 1M, IB, 16K": (1048576, 8192, 64, 64, 16384, NIC),
    }
    for job, (s, h, a, g, limit, bw) in JOBS.items():
        r = choose_cp(s, h, a, g, limit, F, bw)
        print(
            f"{job}: cp {r['cp']}, {r['tokens_per_rank']} tokens each;"
            f" ring hides transfers: {r['ring_hides_transfers']}"
            f" (needs {r['crossover_tokens']:,.0f});"
            f" Ulysses: {r['ulysses_possible']}"
        )
    # --8<-- [end:demo]

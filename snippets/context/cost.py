"""Bytes each context-parallel rank sends per layer, and when a ring
hides them behind attention."""

# --8<-- [start:model]
from snippets.checks import choice, count, flag, number
from snippets.units import GB

SCHEMES = ("ring", "allgather", "ulysses")


def _shape(micro_batch, seq_len, hidden, heads, kv_heads, cp):
    b, s = count("micro_batch", micro_batch), count("seq_len", seq_len)
    h, a = count("hidden", hidden), count("heads", heads)
    g, n = count("kv_heads", kv_heads), count("cp", cp)
    if h % a or a % g:
        raise ValueError(
            f"hidden ({h}) must be a multiple of heads ({a}), and heads of "
            f"kv_heads; got kv_heads {kv_heads!r}"
        )
    if s % n:
        raise ValueError(f"seq_len must be a multiple of cp ({n}), got {s!r}")
    return b, s, h, h // a * g, n  # h_kv: the width of K (and of V)


def cp_bytes_per_layer(
    scheme,
    micro_batch,
    seq_len,
    hidden,
    heads,
    kv_heads,
    cp,
    bytes_per_value=2,
):
    """Bytes one rank sends per layer in the forward pass.

    - ring: N - 1 times its K and V block, b (s/N) h_kv values each;
    - allgather: the same K and V once to every other rank, the same
      bytes (Llama 3 gathers them all before attention);
    - ulysses: all-to-alls of Q, K, V in and the output back; a rank
      keeps 1/N of its b (s/N) (2h + 2h_kv) values and sends the rest.
      Each rank then computes whole heads: cp must divide kv_heads.
    The backward pass sends about as much again (ring and all-gather
    also return the gradients of K and V).
    """
    choice("scheme", scheme, SCHEMES)
    b, s, h, h_kv, n = _shape(
        micro_batch, seq_len, hidden, heads, kv_heads, cp
    )
    number("bytes_per_value", bytes_per_value)
    if scheme == "ulysses":
        if kv_heads % n:
            raise ValueError(
                f"cp must divide kv_heads ({kv_heads}) for ulysses: each "
                f"rank computes whole heads; got cp {cp!r}"
            )
        values = (n - 1) / n * b * (s // n) * (2 * h + 2 * h_kv)
    else:
        values = (n - 1) * b * (s // n) * 2 * h_kv
    return values * bytes_per_value


def ring_step_seconds(
    micro_batch,
    seq_len,
    hidden,
    heads,
    kv_heads,
    cp,
    tflops_per_gpu,
    link_GBps,
    causal=True,
    bytes_per_value=2,
):
    """(compute, transfer) seconds of one ring step of one layer.

    Compute: the rank's s/N queries against one block of s/N keys,
    4 b (s/N)^2 h FLOPs forward (scores and weighted values); the
    causal mask leaves half of it on average, with zig-zag balance.
    Transfer: the next K and V block, 2 b (s/N) h_kv values.
    """
    b, s, h, h_kv, n = _shape(
        micro_batch, seq_len, hidden, heads, kv_heads, cp
    )
    number("tflops_per_gpu", tflops_per_gpu)
    number("link_GBps", link_GBps)
    flag("causal", causal)
    number("bytes_per_value", bytes_per_value)
    c = s // n
    flops = 4 * b * c * c * h / (2 if causal else 1)
    sent = 2 * b * c * h_kv * bytes_per_value
    return flops / (tflops_per_gpu * 1e12), sent / (link_GBps * GB)


def overlap_crossover_tokens(
    hidden,
    heads,
    kv_heads,
    tflops_per_gpu,
    link_GBps,
    causal=True,
    bytes_per_value=2,
):
    """Fewest tokens per rank (s/N) for which a ring step's attention
    lasts as long as its K/V transfer: compute grows with (s/N)^2 and
    the transfer with s/N. Without GQA or a mask, and with 2-byte
    values, it is F / W (Liu et al.'s condition)."""
    _shape(1, 1, hidden, heads, kv_heads, 1)
    number("tflops_per_gpu", tflops_per_gpu)
    number("link_GBps", link_GBps)
    flag("causal", causal)
    number("bytes_per_value", bytes_per_value)
    h_kv = hidden // heads * kv_heads
    ratio = tflops_per_gpu * 1e12 / (link_GBps * GB)  # FLOPs per byte
    return ratio * bytes_per_value * h_kv / (2 * hidden) * (2 if causal else 1)


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.comms.links import REACHED_GBps
    from snippets.units import MB

    F = 989 * 0.40  # TFLOP/s: an H100 at 40% of its dense bf16 peak
    NVLINK, NIC = REACHED_GBps["nvlink4"], REACHED_GBps["ndr"]  # reached
    LINKS = {f"NVLink ({NVLINK} GB/s)": NVLINK, f"one NDR NIC ({NIC})": NIC}
    MODELS = {  # hidden, heads, KV heads
        "no GQA (64 KV heads)": (8192, 64, 64),
        "Llama 3 70B (8 KV heads)": (8192, 64, 8),
    }
    print("tokens per rank above which the ring hides its transfers")
    print("(causal, zig-zag balanced, bf16)")
    for model, (h, a, g) in MODELS.items():
        cells = [
            f"{link} {overlap_crossover_tokens(h, a, g, F, bw):,.0f}"
            for link, bw in LINKS.items()
        ]
        print(f"  {model}: " + ", ".join(cells))
    print("Llama 3 405B, 131,072 tokens, per layer and rank, forward:")
    for scheme, cp in (("ring", 16), ("allgather", 16), ("ulysses", 8)):
        shape = (1, 131072, 16384, 128, 8, cp)
        sent = cp_bytes_per_layer(scheme, *shape) / MB
        print(f"  {scheme:>9}, CP {cp:>2}: {sent:6.1f} MB sent")
    try:
        cp_bytes_per_layer("ulysses", 1, 131072, 16384, 128, 8, 16)
    except ValueError as error:
        print(f"  ulysses, CP 16: ValueError: {error}")
    shape = (1, 131072, 16384, 128, 8, 16)
    compute, transfer = ring_step_seconds(*shape, F, NIC)
    print(
        f"  one ring step: attention {compute * 1e3:.2f} ms, "
        f"K/V transfer {transfer * 1e3:.2f} ms at {NIC} GB/s"
    )
    # --8<-- [end:demo]

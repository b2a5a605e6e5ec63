"""The batch ceiling: how far data parallelism alone can spread a job."""

# --8<-- [start:model]
from snippets.checks import count


def batch_ceiling(gpus, batch_tokens, seq_len, micro_batch=1, microbatches=1):
    """The most data-parallel replicas a global batch can feed, and the
    fewest GPUs each replica must then span.

    A replica needs at least one micro-batch of micro_batch sequences
    of seq_len tokens per step, and a pipeline of p stages wants
    microbatches >= p of them to keep its bubble small. So
    dp <= batch_tokens / (microbatches x micro_batch x seq_len), and the
    model is split over gpus / dp GPUs at least: tensor, pipeline or
    context parallelism, whatever each layer's size.
    """
    n = count("gpus", gpus)
    b = count("batch_tokens", batch_tokens)
    s = count("seq_len", seq_len)
    per_replica = s * count("micro_batch", micro_batch)
    per_replica *= count("microbatches", microbatches)
    if b % per_replica:
        raise ValueError(
            f"batch_tokens={b} must hold whole micro-batches of "
            f"microbatches x micro_batch x seq_len = {per_replica} tokens"
        )
    most = b // per_replica
    return {
        "tokens_per_gpu": b / n,
        "max_dp": most,
        "min_model_parallel": -(-n // most),  # ceiling division
    }


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    M16 = 2**24  # "16M tokens": 2,048 sequences of 8,192
    JOBS = (  # label, GPUs, batch tokens, sequence, pipeline stages
        ("Llama 3 405B, 8K", 8_192, M16, 8_192, 16),
        ("Llama 3 405B, 8K", 16_384, M16, 8_192, 16),
        ("Llama 3 405B, 128K", 16_384, M16, 131_072, 16),
        ("a 7B model, 4M tokens", 1_024, 2**22, 4_096, 1),
    )
    print(
        "| job | GPUs | tokens per GPU | most DP, 1 micro-batch each"
        " | GPUs per replica | most DP, p micro-batches each"
        " | GPUs per replica |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, gpus, batch, seq, stages in JOBS:
        one = batch_ceiling(gpus, batch, seq)
        pipe = batch_ceiling(gpus, batch, seq, microbatches=stages)
        print(
            f"| {label} | {gpus:,} | {one['tokens_per_gpu']:,.0f}"
            f" | {one['max_dp']:,} | {one['min_model_parallel']:,}"
            f" | {pipe['max_dp']:,} (p = {stages})"
            f" | {pipe['min_model_parallel']:,} |"
        )
    # One layer of Llama 3 405B (config.json): far from filling a GPU.
    h, kv, ffn = 16_384, 1_024, 53_248
    layer = 2 * h * h + 2 * h * kv + 3 * h * ffn
    print(
        f"\nOne layer of Llama 3 405B: {layer / 1e9:.2f}B weights,"
        f" {2 * layer / 1e9:.1f} GB in bf16"
    )
    # --8<-- [end:demo]

"""Layouts that papers report having trained, run through the planner."""

# --8<-- [start:model]
from snippets.planner.layouts import evaluate_layout
from snippets.planner.model import MODELS, cluster

SEQUENCES = 2048  # tokens per sequence in the Megatron-LM runs


def megatron(billions, heads, hidden, layers, pp, gpus, batch, tflops):
    """A row of Megatron-LM 2021, Table 1: GPT on A100 80 GB nodes,
    TP 8, full recomputation, one sequence per micro-batch (the table
    does not give the micro-batch; 1 is the smallest)."""
    model = dict(
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        ffn=4 * hidden,
        vocab=51200,
        seq_len=SEQUENCES,
        gated=False,
        tied_embeddings=True,
    )
    layout = dict(
        dp=gpus // (8 * pp),
        tp=8,
        pp=pp,
        zero=0,
        recompute="full",
        sequence_parallel=False,  # it came a year later (2205.05198)
    )
    training = dict(
        global_batch_tokens=batch * SEQUENCES,
        micro_batch=1,
        flash_attention=False,
    )
    return {
        "job": f"GPT {billions}B, Megatron-LM",
        "model": model,
        "cluster": cluster("a100-80gb", gpus // 8),
        "training": training,
        "layout": layout,
        # They count 96 B s l h^2 (...) FLOPs, recomputation included;
        # without the recomputed forward pass it is 72 of the 96.
        "published_mfu": tflops * 72 / 96 / 312,
        "published": f"{tflops} TFLOP/s per GPU, recomputation counted",
    }


def llama3(gpus, dp, batch_per_dp, tflops):
    """Llama 3 405B, Table 4 of its paper: H100 80 GB, TP 8, PP 16, no
    recomputation at 8K tokens, FSDP sharding optimizer state and
    gradients but not the weights during a step (ZeRO-2's memory).
    Meta gave the first and last stages one layer fewer, so that the
    embedding and the output layer each take a layer's place: 126
    layers in 16 stages of 8 slots (embedding_slots)."""
    model = MODELS["llama3-405b"]
    layout = dict(
        dp=dp, tp=8, pp=16, zero=2, recompute="none", embedding_slots=True
    )
    training = dict(
        global_batch_tokens=dp * batch_per_dp * 8192, micro_batch=1
    )
    return {
        "job": f"Llama 3 405B, {gpus:,} GPUs",
        "model": model,
        "cluster": cluster("h100-80gb", gpus // 8),
        "training": training,
        "layout": layout,
        "published_mfu": tflops / 989,
        "published": f"{tflops} TFLOP/s per GPU, model FLOPs",
    }


def zero_paper():
    """ZeRO (arXiv 1910.02054), section 1: a trillion parameters on
    1024 V100 32 GB, 16-way model parallelism inside each DGX-2 node
    and 64-way ZeRO-3 across nodes. The paper sizes the model states
    only; here the 1T GPT of Megatron-LM stands in for the model, with
    one sequence per GPU pass and full recomputation, and sequence
    parallelism for ZeRO-R's partitioned activation checkpoints."""
    row = megatron(1008.0, 160, 25600, 128, 1, 1024, 1024, 0)
    row["cluster"] = cluster("v100-32gb", 64)
    row["layout"] = dict(
        dp=64,
        tp=16,
        pp=1,
        zero=3,
        recompute="full",
        sequence_parallel=True,
    )
    row["job"] = "1T, ZeRO paper"
    row["published_mfu"], row["published"] = None, "memory only"
    return row


PUBLISHED = [
    megatron(145.6, 96, 12288, 80, 8, 1536, 2304, 148),
    megatron(310.1, 128, 16384, 96, 16, 1920, 2160, 155),
    megatron(529.6, 128, 20480, 105, 35, 2520, 2520, 163),
    megatron(1008.0, 160, 25600, 128, 64, 3072, 3072, 163),
    zero_paper(),
    llama3(8192, 64, 32, 430),
    llama3(16384, 128, 16, 400),
]


def check(row):
    """The planner's verdict on a published job."""
    return evaluate_layout(
        row["model"], row["cluster"], row["training"], row["layout"]
    )


# --8<-- [end:model]

if __name__ == "__main__":
    # --8<-- [start:demo]
    print(
        "| job | layout | GB per GPU | card, GB | fits | predicted MFU"
        " | published MFU | published figure |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in PUBLISHED:
        r = check(row)
        lay = row["layout"]
        gb = r["memory_per_gpu_GB"]["total"]
        theirs = row["published_mfu"]
        theirs = "-" if theirs is None else f"{theirs:.1%}"
        print(
            f"| {row['job']} | tp {lay['tp']}, pp {lay['pp']}, "
            f"dp {lay['dp']}, ZeRO-{lay['zero']} | {gb:.1f} | "
            f"{row['cluster']['gpu_memory_GB']} | "
            f"{'yes' if r['fits'] else 'no'} | {r['mfu']:.1%} | {theirs} | "
            f"{row['published']} |"
        )
    # --8<-- [end:demo]

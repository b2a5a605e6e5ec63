"""How much of DDP's all-reduce the backward pass can hide."""

# --8<-- [start:model]
from snippets.checks import number
from snippets.comms.cost import comms_cost
from snippets.units import MiB


def ddp_step_time(
    params,
    world_size,
    tflops_per_gpu,
    interconnect_GBps,
    tokens_per_gpu=8192,
    bytes_per_grad=2,
    bucket_MB=25,
    backward_share=2 / 3,
    embedding_params=0,
):
    """Seconds of one DDP step when buckets overlap the backward pass.

    A bucket is all-reduced once the backward pass has filled it, so
    the all-reduce can hide only behind the backward pass (4 of the
    6 FLOPs per parameter per token). The last bucket fills when the
    backward pass ends: its all-reduce is always exposed. The other
    buckets are exposed only for the part that outlasts the backward:
    exposed = last + max(0, comms - last - backward).
    bucket_MB is DDP's bucket_cap_mb (default 25, in MiB). The input
    embedding's gradient arrives last, and DDP cannot split one tensor
    across buckets: with embedding_params weights the last bucket holds
    at least their gradient.
    """
    r = comms_cost(
        params,
        world_size,
        tflops_per_gpu,
        interconnect_GBps,
        tokens_per_gpu=tokens_per_gpu,
        bytes_per_grad=bytes_per_grad,
    )
    number("bucket_MB", bucket_MB)
    number("backward_share", backward_share)
    number("embedding_params", embedding_params, allow_minimum=True)
    if backward_share > 1:
        raise ValueError(
            f"backward_share must be <= 1, got {backward_share!r}"
        )
    backward = r["compute_s"] * backward_share
    tail = max(bucket_MB * MiB, embedding_params * bytes_per_grad)
    last = r["comms_s"] * min(1, tail / (params * bytes_per_grad))
    exposed = last + max(0, r["comms_s"] - last - backward)
    return {
        "compute_s": r["compute_s"],
        "backward_s": backward,
        "comms_s": r["comms_s"],
        "last_bucket_s": last,
        "exposed_s": exposed,
        "step_s": r["compute_s"] + exposed,
    }


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.comms.cost import REACHED
    from snippets.comms.links import ring_bandwidth_GBps

    TFLOPS = 989 * 0.40
    EMBEDDING = 128_256 * 4_096  # a 128K vocabulary, Llama 3's, at h 4096
    LINKS = {"8 NDR NICs per node": ring_bandwidth_GBps(64, 8, 370, 8, 46)}
    LINKS |= {name: REACHED[name] for name in list(REACHED)[2:]}
    print(
        "| link | all-reduce | exposed, 25 MiB last | exposed, embedding"
        " last | step | no overlap |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for link, bw in LINKS.items():
        plain = ddp_step_time(7_000_000_000, 64, TFLOPS, bw)
        r = ddp_step_time(
            7_000_000_000, 64, TFLOPS, bw, embedding_params=EMBEDDING
        )
        cells = (
            r["comms_s"],
            plain["exposed_s"],
            r["exposed_s"],
            r["step_s"],
            r["compute_s"] + r["comms_s"],
        )
        print(f"| {link} | " + " | ".join(f"{c:.4f}" for c in cells) + " |")
    compute, backward = r["compute_s"], r["backward_s"]
    print(f"\nCompute {compute:.4f} s, of it backward {backward:.4f} s.")
    print(
        f"Embedding gradient {EMBEDDING * 2 / 1e6:,.0f} MB in bf16, against"
        f" a 25 MiB bucket ({25 * MiB / 1e6:.1f} MB)"
    )
    # --8<-- [end:demo]

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
):
    """Seconds of one DDP step when buckets overlap the backward pass.

    A bucket is all-reduced once the backward pass has filled it, so
    the all-reduce can hide only behind the backward pass (4 of the
    6 FLOPs per parameter per token). The last bucket fills when the
    backward pass ends: its all-reduce is always exposed. The other
    buckets are exposed only for the part that outlasts the backward:
    exposed = last + max(0, comms - last - backward).
    bucket_MB is DDP's bucket_cap_mb (default 25, in MiB).
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
    if backward_share > 1:
        raise ValueError(
            f"backward_share must be <= 1, got {backward_share!r}"
        )
    backward = r["compute_s"] * backward_share
    last = r["comms_s"] * min(1, bucket_MB * MiB / (params * bytes_per_grad))
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
    from snippets.comms.cost import LINKS_GBps

    TFLOPS = 989 * 0.40
    print("| link | all-reduce | last bucket | exposed | step | no overlap |")
    print("| --- | --- | --- | --- | --- | --- |")
    for link in list(LINKS_GBps)[2:]:  # the links between nodes
        r = ddp_step_time(7_000_000_000, 64, TFLOPS, LINKS_GBps[link])
        cells = (
            r["comms_s"],
            r["last_bucket_s"],
            r["exposed_s"],
            r["step_s"],
            r["compute_s"] + r["comms_s"],
        )
        print(f"| {link} | " + " | ".join(f"{c:.4f}" for c in cells) + " |")
    compute, backward = r["compute_s"], r["backward_s"]
    print(f"\nCompute {compute:.4f} s, of it backward {backward:.4f} s.")
    # --8<-- [end:demo]

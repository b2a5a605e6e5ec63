"""Exercise 6: a strategy for each scale, with a communication-risk flag."""

# --8<-- [start:model]
from snippets.checks import count
from snippets.comms.cost import LINKS_GBps, comms_cost
from snippets.strategy.plan import plan

GPUS_PER_NODE = 8
NVLINK = LINKS_GBps["NVLink 4 (H100, one node)"]  # one way, GB/s
NETWORK = LINKS_GBps["InfiniBand NDR, 400 Gb/s"]  # one way, GB/s
ZERO3_TRAFFIC = 1.5  # ZeRO-3 moves 3 params' worth to DDP's 2 (sec. 7)
H100_PEAK_TFLOPS = 989  # dense bf16, SXM
MFU = 0.40  # share of the peak the job sustains
USABLE = 0.8  # share of the card's memory kept for model state


def plan_at_scale(
    params, gpus, batch_tokens, gpu_GB=80, tflops=H100_PEAK_TFLOPS * MFU
):
    """Memory picks the rung; the comms/compute ratio flags the risk.

    The global batch of `batch_tokens` is split evenly over the GPUs.
    Risk: "low" when the all-reduce takes under half the compute time,
    "medium" when overlap can still hide it, "high" when it cannot.
    """
    count("gpus", gpus)
    count("batch_tokens", batch_tokens)
    if batch_tokens % gpus:
        raise ValueError(
            f"batch_tokens={batch_tokens} must split evenly over gpus={gpus}"
        )
    memory = plan(params, gpus, gpu_GB, usable=USABLE)
    rung = memory["strategy"]
    link = NVLINK if gpus <= GPUS_PER_NODE else NETWORK
    cost = comms_cost(params, gpus, tflops, link, batch_tokens // gpus)
    # No data-parallel rung fits: report full sharding, the closest one.
    sharded = rung not in ("ddp", "zero1", "zero2")
    comms_s = cost["comms_s"] * (ZERO3_TRAFFIC if sharded else 1)
    ratio = comms_s / cost["compute_s"]
    risk = "low" if ratio < 0.5 else "medium" if ratio <= 1 else "high"
    if rung == "tensor/pipeline":  # traffic depends on the 3D layout
        ratio, risk = None, "set by the 3D layout"
    return {
        "rung": rung,
        "per_gpu_GB": memory["per_gpu_GB"]["zero3" if sharded else rung],
        "comms_over_compute": ratio,
        "risk": risk,
    }


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    BATCH = 2**22  # global batch in tokens, split over the GPUs
    print(f"global batch {BATCH:,} tokens; memory in GB")
    print(
        "params  GPUs  tokens/GPU  rung           "
        "  GB/GPU  comms/compute  risk"
    )
    CASES = ((1, 8), (7, 8), (13, 32), (70, 128), (400, 1024), (1000, 64))
    for billions, gpus in CASES:
        p = plan_at_scale(billions * 10**9, gpus, BATCH)
        r = p["comms_over_compute"]
        ratio = "-" if r is None else f"{r:.3f}"
        print(
            f"{billions:>5}B {gpus:>5}  {BATCH // gpus:>10,}  {p['rung']:<15} "
            f"{p['per_gpu_GB']:7.2f} {ratio:>14}"
            f"  {p['risk']}"
        )
    # --8<-- [end:demo]

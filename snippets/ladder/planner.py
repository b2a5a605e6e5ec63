"""Exercise 6: a strategy for each scale, with a communication-risk flag."""

# --8<-- [start:model]
from snippets.checks import count
from snippets.comms.cost import comms_cost
from snippets.comms.links import REACHED_GBps as R
from snippets.comms.links import ring_bandwidth_GBps, ring_latency_s
from snippets.strategy.plan import plan
from snippets.zero.traffic import comm_bytes

NVLINK_GBps = R["nvlink4"]  # what NCCL's ring reaches on an H100 node
H100_PEAK_TFLOPS = 989  # dense bf16, SXM
MFU = 0.40  # share of the peak the job sustains
# FLOPs per parameter per token: 6, plus a second forward pass (2)
# when every layer is recomputed.
FLOPS = {"none": 6, "full": 8}


def plan_at_scale(
    params,
    world_size,
    batch_tokens,
    nics_per_node=8,
    nic_GBps=R["ndr"],
    gpus_per_node=8,
    gpu_GB=80,
    tflops_per_gpu=H100_PEAK_TFLOPS * MFU,
    seq_len=4096,
):
    """Memory picks the rung and the recomputation; the communication
    against the compute flags the risk.

    The global batch of `batch_tokens` is split evenly over the GPUs,
    in micro-batches of one seq_len-token sequence. Activations are
    stored in full if a rung fits that way, else recomputed in full
    (which adds a forward pass to the compute). The traffic is the
    rung's over all the micro-batches of a step (comm_bytes): DDP and
    ZeRO-1 reduce once, ZeRO-2 after every micro-batch, ZeRO-3 gathers
    and reduces for every micro-batch, and ZeRO-3's 3 collectives per
    layer and micro-batch each pay the ring's latency. It is priced
    twice, on nodes of gpus_per_node GPUs (NVLink 4) with nics_per_node
    NICs of nic_GBps each: on a flat ring that has each node's NICs to
    itself, the bound, and as if each GPU crossed the network on its
    own share of them, what the published ZeRO-3 runs at scale reached.
    Risk: "low" when the communication takes under half the compute,
    "medium" when overlap can still hide it (for DDP and ZeRO-1 the
    last micro-batch's backward pass, for ZeRO-2 every backward pass,
    for ZeRO-3, which prefetches in both passes, the whole step), "high"
    when it cannot; a range when the two pricings disagree.
    """
    n = count("world_size", world_size)
    count("batch_tokens", batch_tokens)
    count("seq_len", seq_len)
    if batch_tokens % (n * seq_len):
        raise ValueError(
            f"batch_tokens={batch_tokens} must split into whole sequences"
            f" of seq_len={seq_len} over world_size={n}"
        )
    node = (gpus_per_node, NVLINK_GBps, nics_per_node, nic_GBps)
    flat = ring_bandwidth_GBps(n, *node)
    own = (
        ring_bandwidth_GBps(n, *node, per_node=1)
        if n > gpus_per_node
        else flat
    )
    for recompute in FLOPS:
        memory = plan(params, n, gpu_GB, seq_len=seq_len, recompute=recompute)
        if memory["strategy"] != "tensor/pipeline":
            break
    rung = memory["strategy"]
    # No data-parallel rung fits: report full sharding, the closest one.
    sharded = rung not in ("ddp", "zero1", "zero2")
    flops = FLOPS[recompute]
    compute = comms_cost(
        params,
        n,
        tflops_per_gpu,
        flat,
        tokens_per_gpu=batch_tokens // n,
        flops_per_token_per_param=flops,
    )["compute_s"]
    micro = batch_tokens // (n * seq_len)  # micro-batches per step
    sent = comm_bytes("zero3" if sharded else rung, params, n, 2, micro)
    latency = 0.0
    if sharded and n > 1:  # 3 collectives per layer and micro-batch
        k = min(n, gpus_per_node)
        collectives = 3 * memory["assumes"]["layers"] * micro
        latency = collectives * ring_latency_s("all_gather", n, k)
    backward = (flops - 2) / flops  # of each micro-batch's compute
    hideable = {"ddp": backward / micro, "zero1": backward / micro}
    hideable = hideable.get(rung, backward if rung == "zero2" else 1)

    def risk(ratio):
        return (
            "low" if ratio < 0.5 else "medium" if ratio <= hideable else "high"
        )

    ratios = [(sent / bw + latency) / compute for bw in (flat, own)]
    risks = [risk(r) for r in ratios]
    flag = risks[0] if risks[0] == risks[1] else " to ".join(risks)
    if rung == "tensor/pipeline":  # traffic depends on the 3D layout
        ratios, flag = [None, None], "set by the 3D layout"
    return {
        "rung": rung,
        "recompute": recompute,
        "per_gpu_GB": memory["per_gpu_GB"]["zero3" if sharded else rung],
        "activations_GB": memory["activations_GB"],
        "interconnect_GBps": flat,
        "own_nic_GBps": own,
        "comms_over_compute": ratios[0],
        "comms_over_compute_own_nic": ratios[1],
        "risk": flag,
    }


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    BATCH = 2**22  # global batch in tokens, split over the GPUs
    print(f"global batch {BATCH:,} tokens in 4096-token sequences")
    print("H100 nodes of 8 GPUs; memory in GB, ring bandwidth in GB/s")
    print("comms/compute on a flat ring, and with each GPU on its own NIC")
    print(
        "params  GPUs  tokens/GPU  rung     recompute  state   act  NICs"
        "  ring  own   flat    own  risk"
    )
    CASES = ((1, 8), (7, 8), (13, 32), (70, 128), (400, 1024), (1000, 64))
    for billions, gpus in CASES:
        for nics in (8, 1):
            if gpus <= 8 and nics == 1:
                continue  # one node: NVLink only, the NICs do not matter
            p = plan_at_scale(billions * 10**9, gpus, BATCH, nics)
            ratios = [
                "-" if r is None else f"{r:.3f}"
                for r in (
                    p["comms_over_compute"],
                    p["comms_over_compute_own_nic"],
                )
            ]
            rung = "3D" if p["rung"] == "tensor/pipeline" else p["rung"]
            print(
                f"{billions:>5}B {gpus:>5}  {BATCH // gpus:>10,}"
                f"  {rung:<8} {p['recompute']:<9}"
                f" {p['per_gpu_GB']:6.2f} {p['activations_GB']:5.1f}"
                f"  {nics:>4} {p['interconnect_GBps']:5g}"
                f" {p['own_nic_GBps']:4g} {ratios[0]:>6} {ratios[1]:>6}"
                f"  {p['risk']}"
            )
    # --8<-- [end:demo]

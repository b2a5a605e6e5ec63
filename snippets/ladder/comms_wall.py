"""Exercise 5: the world size at which the all-reduce outlasts compute."""

# --8<-- [start:model]
from snippets.checks import count, number
from snippets.ddp.allreduce import allreduce_bytes


def step_times(params, world_size, batch_tokens, tflops, link_GBps):
    """Seconds of compute and of all-reduce per step on each rank.

    The global batch of `batch_tokens` is fixed: the 6 * params FLOPs
    per token (Kaplan et al. 2020) are shared by `world_size` GPUs that
    each sustain `tflops`; the bf16 gradients cross a one-way link of
    `link_GBps` per GPU. Overlap is ignored: the worst case.
    """
    count("batch_tokens", batch_tokens)
    number("tflops", tflops)
    number("link_GBps", link_GBps)
    work_s = 6 * params * batch_tokens / (tflops * 1e12)
    sent = allreduce_bytes(params, 2, world_size)["sent_per_rank_GB"]
    return work_s / world_size, sent / link_GBps


def first_comms_bound(params, batch_tokens, tflops, link_GBps, max_gpus):
    """The first power of two N <= max_gpus with comms > compute."""
    count("max_gpus", max_gpus)
    g = 1
    while g <= max_gpus:
        compute, comms = step_times(params, g, batch_tokens, tflops, link_GBps)
        if comms > compute:
            return g
        g *= 2
    return None


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.comms.cost import REACHED

    P, TOKENS, SEQ = 7_000_000_000, 2**18, 4096  # 64 sequences
    CEILING = TOKENS // SEQ  # data parallelism: one sequence per GPU
    TFLOPS = 989 * 0.40  # H100 dense bf16 peak x 40% utilisation
    IB = REACHED["InfiniBand NDR, 400 Gb/s"]  # what NCCL reaches
    print(
        f"global batch {TOKENS:,} tokens, {CEILING} sequences;"
        f" ring at {IB} GB/s one way"
    )
    print("seconds per step:")
    print("   N  compute    comms  compute+comms  speed-up")
    alone = step_times(P, 1, TOKENS, TFLOPS, IB)[0]
    for e in range(9):
        g = 2**e
        if g > CEILING:
            print(
                f"{g:>4}  past the batch ceiling: {TOKENS // g:,} tokens"
                " per GPU, less than one sequence"
            )
            continue
        compute, comms = step_times(P, g, TOKENS, TFLOPS, IB)
        mark = "  <- comms > compute" if comms > compute else ""
        step = compute + comms
        print(
            f"{g:>4} {compute:8.3f} {comms:8.3f} {step:14.3f}"
            f" {alone / step:9.1f}{mark}"
        )
    from snippets.comms.links import ring_bandwidth_GBps

    NVLINK = REACHED["NVLink 4 (H100, one node)"]
    RINGS = {  # one-way GB/s a ring gets on nodes of 8 GPUs
        "NDR IB, 1 NIC per node": IB,
        "100 GbE, 1 NIC per node": REACHED["Ethernet, 100 Gb/s"],
        "10 GbE, 1 NIC per node": REACHED["Ethernet, 10 Gb/s"],
        "NDR IB, 1 NIC per GPU": ring_bandwidth_GBps(64, 8, NVLINK, 8, IB),
    }
    for link, bw in RINGS.items():
        g = first_comms_bound(P, TOKENS, TFLOPS, bw, CEILING)
        where = f"N = {g}" if g else f"none up to the ceiling, {CEILING}"
        print(f"{link:<25} {bw:>5g} GB/s: first comms-bound {where}")
    # --8<-- [end:demo]

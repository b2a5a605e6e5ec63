"""Is a data-parallel step bound by compute or by the all-reduce?"""

# --8<-- [start:model]
from snippets.checks import count, number
from snippets.comms.links import REACHED_GBps as R
from snippets.ddp.allreduce import allreduce_bytes
from snippets.units import GB

# One-way bandwidth per GPU in GB/s. NVLink is sold as a two-way total
# (A100: 600 GB/s, H100: 900 GB/s); network links are quoted one way.
# A network entry is one NIC: what a ring across nodes gets when each
# node has one (snippets/comms/links.py counts several).
LINKS_GBps = {
    "NVLink 4 (H100, one node)": 450,
    "NVLink 3 (A100, one node)": 300,
    "InfiniBand NDR, 400 Gb/s": 50,
    "InfiniBand HDR, 200 Gb/s": 25,
    "Ethernet, 100 Gb/s": 12.5,
    "Ethernet, 10 Gb/s": 1.25,
}
# What NCCL reaches on each, measured (snippets/comms/links.py); no
# measurement of 10 Gb/s Ethernet is at hand, so its line rate stands.
REACHED = {
    "NVLink 4 (H100, one node)": R["nvlink4"],
    "NVLink 3 (A100, one node)": R["nvlink3"],
    "InfiniBand NDR, 400 Gb/s": R["ndr"],
    "InfiniBand HDR, 200 Gb/s": R["hdr"],
    "Ethernet, 100 Gb/s": R["100gbe"],
    "Ethernet, 10 Gb/s": 1.25,
}


def comms_cost(
    params,
    world_size,
    tflops_per_gpu,
    interconnect_GBps,
    tokens_per_gpu=8192,
    bytes_per_grad=2,
    flops_per_token_per_param=6,
    accum_steps=1,
):
    """Seconds of compute and of gradient all-reduce per optimizer step.

    tflops_per_gpu: sustained TFLOP/s, i.e. peak x utilisation.
    interconnect_GBps: one-way GB/s per rank on the slowest hop.
    tokens_per_gpu: tokens each rank processes per micro-batch.
    accum_steps: micro-batches per optimizer step; the all-reduce
    runs once per optimizer step, whatever the accumulation.
    """
    number("params", params)
    count("world_size", world_size)
    number("tflops_per_gpu", tflops_per_gpu)
    number("interconnect_GBps", interconnect_GBps)
    count("tokens_per_gpu", tokens_per_gpu)
    number("bytes_per_grad", bytes_per_grad)
    number("flops_per_token_per_param", flops_per_token_per_param)
    count("accum_steps", accum_steps)
    traffic = allreduce_bytes(params, bytes_per_grad, world_size)
    sent = traffic["sent_per_rank_GB"] * GB
    flops = flops_per_token_per_param * params * tokens_per_gpu
    compute_s = flops * accum_steps / (tflops_per_gpu * 1e12)
    comms_s = sent / (interconnect_GBps * GB)
    return {
        "compute_s": compute_s,
        "comms_s": comms_s,
        "verdict": "comms-bound" if comms_s > compute_s else "compute-bound",
        "crossover_GBps": sent / compute_s / GB,
    }


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    H100_PEAK_TFLOPS = 989  # dense bf16, SXM
    MFU = 0.40  # share of peak a well-tuned job sustains
    tflops = H100_PEAK_TFLOPS * MFU
    print("| link | GPUs (N) | compute per step | all-reduce | verdict |")
    print("| --- | ---: | ---: | ---: | --- |")
    for link, bw in REACHED.items():
        n = 8 if link.startswith("NVLink") else 64  # NVLink: one node
        r = comms_cost(7_000_000_000, n, tflops, bw, tokens_per_gpu=8192)
        print(
            f"| {link} | {n} | {r['compute_s']:.3f} s"
            f" | {r['comms_s']:.3f} s | {r['verdict']} |"
        )
    print()
    print("Each link at what NCCL reaches on it.")
    print("Network rows: 8 nodes of 8 GPUs, one NIC per node.")
    print(f"Crossover at N=64: {r['crossover_GBps']:.1f} GB/s one way.")
    # --8<-- [end:demo]

    # --8<-- [start:links]
    print(
        "| link | line rate, Gb/s one way | line rate, GB/s one way"
        " | NCCL reaches, GB/s |"
    )
    print("| --- | --- | --- | --- |")
    for link, bw in LINKS_GBps.items():
        reached = (
            "not measured" if REACHED[link] == bw else f"{REACHED[link]:g}"
        )
        print(f"| {link} | {bw * 8:g} | {bw:g} | {reached} |")
    # --8<-- [end:links]

    # --8<-- [start:mistakes]
    # Three inputs often seen in write-ups: 300 TFLOP/s sustained,
    # "600 GB/s" for NVLink and "12.5 GB/s" for 10 Gb/s Ethernet. 300 is
    # 96% of an A100's 312 TFLOP/s dense bf16 peak (Megatron-LM 2021,
    # Table 1: 137 to 163 TFLOP/s, 44% on 32 A100s to 52% on 3072,
    # counting the recomputed forward pass; 33 to 39% as MFU); 600 GB/s
    # is NVLink 3's two-way total; 12.5 GB/s is 100 Gb/s Ethernet.
    A100_PEAK_TFLOPS = 312
    print(f"300 TFLOP/s is {300 / A100_PEAK_TFLOPS:.0%} of the A100 peak")
    for label, bw in (
        ("600 (NVLink 3, two-way)", 600),
        ("300 (NVLink 3, one way)", 300),
        ("12.5 (100 GbE, not 10 GbE)", 12.5),
        ("1.25 (10 GbE)", 1.25),
    ):
        r = comms_cost(7_000_000_000, 64, 300, bw, tokens_per_gpu=8192)
        print(
            f"{label:<27} compute {r['compute_s']:.3f} s,"
            f" all-reduce {r['comms_s']:.3f} s"
        )
    print(
        f"NVLink 3 two-way / 100 GbE: {600 / 12.5:.0f}x;"
        f" / 10 GbE: {600 / 1.25:.0f}x"
    )
    # --8<-- [end:mistakes]

    # --8<-- [start:accum]
    for k in (1, 4, 16):
        r = comms_cost(
            7_000_000_000,
            64,
            tflops,
            REACHED["Ethernet, 100 Gb/s"],
            tokens_per_gpu=8192,
            accum_steps=k,
        )
        print(
            f"A={k:>2}: compute {r['compute_s']:6.3f} s, all-reduce"
            f" {r['comms_s']:.3f} s, {r['verdict']:<13}"
            f" crossover {r['crossover_GBps']:5.2f} GB/s"
        )
    # --8<-- [end:accum]

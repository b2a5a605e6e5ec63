"""ZeRO-3 at scale: its collectives' bytes and latency against runs."""

# --8<-- [start:model]
from snippets.checks import count, number
from snippets.comms.links import ring_bandwidth_GBps, ring_latency_s
from snippets.zero.traffic import comm_bytes


def zero3_seconds(
    params,
    layers,
    world_size,
    gpus_per_node,
    nvlink_GBps,
    nics_per_node,
    nic_GBps,
    microbatches=1,
    bytes_per_value=2,
    per_node=None,
):
    """Seconds ZeRO-3's collectives take per step on one flat ring over
    world_size GPUs, none of it hidden: the bytes (comm_bytes, every
    micro-batch gathering twice and reduce-scattering once) over the
    ring's bandwidth, and the ring's latency, paid by each of the
    3 x layers collectives of every micro-batch (one per layer and
    pass, as FSDP2 wrapping each layer issues them). per_node=1 prices
    the ring as if each GPU crossed the network alone, on its own share
    of the node's NICs (snippets/comms/links.py)."""
    n = count("world_size", world_size)
    count("layers", layers)
    m = count("microbatches", microbatches)
    number("params", params)
    bandwidth = ring_bandwidth_GBps(
        n, gpus_per_node, nvlink_GBps, nics_per_node, nic_GBps, per_node
    )
    sent = comm_bytes("zero3", params, n, bytes_per_value, accum_steps=m)
    per_node = min(n, gpus_per_node) if per_node is None else per_node
    latency = 3 * layers * m * ring_latency_s("all_gather", n, per_node)
    return {"bytes_s": sent / bandwidth, "latency_s": latency}


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.comms.links import REACHED_GBps as R

    # Megatron-LM 2021, Table 2: GPT-3 174.6B (96 layers, h 12288,
    # s 2048, V 51200) at a batch of 1536 on DGX A100 nodes (8 GPUs, 8
    # HDR NICs), TFLOP/s per GPU counted as its Equation 3, DeepSpeed's
    # ZeRO-3 alone against PTD-P (TP 8 x PP 12) on as many GPUs.
    P, L, H, S, V, B = 174.6e9, 96, 12288, 2048, 51200, 1536
    ROWS = ((384, 4, 144, 153), (768, 2, 88, 149), (1536, 1, 44, 141))
    flops = 96 * B * S * L * H**2 * (1 + S / (6 * H) + V / (16 * L * H))
    print(
        "| GPUs | micro-batch | ZeRO-3 step, s | at PTD-P's rate, s"
        " | exposed, s | flat ring: bytes + latency, s"
        " | each GPU its own NIC: bytes + latency, s |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for gpus, mbs, zero3, ptdp in ROWS:
        step, compute = (flops / gpus / (t * 1e12) for t in (zero3, ptdp))
        flat = zero3_seconds(P, L, gpus, 8, R["nvlink3"], 8, R["hdr"])
        alone = zero3_seconds(
            P, L, gpus, 8, R["nvlink3"], 8, R["hdr"], per_node=1
        )
        print(
            f"| {gpus:,} | {mbs} | {step:.1f} | {compute:.1f}"
            f" | {step - compute:.1f}"
            f" | {flat['bytes_s']:.1f} + {flat['latency_s']:.2f}"
            f" | {alone['bytes_s']:.1f} + {alone['latency_s']:.2f} |"
        )
    # --8<-- [end:demo]

    # --8<-- [start:ladder]
    # 400B (127 layers of h = 16256, as shape_from_params gives it) on
    # 1,024 H100s in nodes of 8 NDR NICs, one micro-batch per step.
    r = zero3_seconds(400e9, 127, 1024, 8, R["nvlink4"], 8, R["ndr"])
    print(
        f"400B on 1,024 GPUs, {3 * 127} collectives: bytes"
        f" {r['bytes_s']:.2f} s, latency {r['latency_s']:.2f} s per step"
    )
    # --8<-- [end:ladder]

"""The bandwidth a ring all-reduce gets per GPU, in one node or many."""

# --8<-- [start:model]
from snippets.checks import count, number


def ring_bandwidth_GBps(
    world_size, gpus_per_node, nvlink_GBps, nics_per_node, nic_GBps
):
    """One-way GB/s per GPU that a ring all-reduce runs at (the bus
    bandwidth nccl-tests reports).

    Inside one node every hop is NVLink. Across nodes, each ring visits
    the GPUs of a node over NVLink and leaves the node once, through one
    NIC; NCCL runs one ring per NIC, side by side. So the rings together
    move as much as all the node's NICs, up to what NVLink carries.
    """
    count("world_size", world_size)
    count("gpus_per_node", gpus_per_node)
    number("nvlink_GBps", nvlink_GBps)
    count("nics_per_node", nics_per_node)
    number("nic_GBps", nic_GBps)
    if world_size <= gpus_per_node:
        return nvlink_GBps
    return min(nvlink_GBps, nics_per_node * nic_GBps)


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.ddp.allreduce import allreduce_bytes

    NODES = {  # GPUs per node, NVLink one way, NICs per node, GB/s each
        "H100, 8 NDR NICs (DGX/HGX)": (8, 450, 8, 50),
        "H100, 8 NDR NICs, measured": (8, 450, 8, 48),
        "H100, 1 NDR NIC": (8, 450, 1, 50),
        "A100, 8 HDR NICs (DGX)": (8, 300, 8, 25),
        "H100, 1 x 100 Gb/s Ethernet": (8, 450, 1, 12.5),
    }
    print(
        "| node | one node, N = 8: GB/s | 7B all-reduce, s"
        " | 8 nodes, N = 64: GB/s | 7B all-reduce, s |"
    )
    print("| --- | --- | --- | --- | --- |")
    for node, (gpus, nvlink, nics, nic) in NODES.items():
        cells = []
        for n in (8, 64):  # one node, then 8 nodes
            bw = ring_bandwidth_GBps(n, gpus, nvlink, nics, nic)
            sent = allreduce_bytes(7_000_000_000, 2, n)["sent_per_rank_GB"]
            cells += [f"{bw:g}", f"{sent / bw:.3f}"]
        print(f"| {node} | " + " | ".join(cells) + " |")
    # --8<-- [end:demo]

"""The bandwidth and latency a ring gets per GPU, in one node or many."""

# --8<-- [start:model]
from snippets.checks import count, number
from snippets.comms.alphabeta import ring_terms

# What NCCL reaches, GB/s one way per GPU, against the line rate: a
# ring on one node's NVLink (nccl-tests #212: 370 of 450 on an H100;
# #149: 230 of 300 on an A100) and one NIC across nodes (#290: 46 to 48
# of 50 for NDR; #119: 24 of 25 for HDR, 12 of 12.5 for 100 Gb/s).
REACHED_GBps = {"nvlink4": 370, "nvlink3": 230, "ndr": 46, "hdr": 24}
REACHED_GBps["100gbe"] = 12
# Latency of one step of a ring, in microseconds, over NVLink and from
# node to node: NCCL's tuning model (src/graph/tuning.cc, hwLat, ring,
# Simple protocol).
NVLINK_HOP_US, NETWORK_HOP_US = 3.4, 9.6


def ring_bandwidth_GBps(
    world_size,
    gpus_per_node,
    nvlink_GBps,
    nics_per_node,
    nic_GBps,
    per_node=None,
):
    """One-way GB/s per GPU that a ring collective runs at (the bus
    bandwidth nccl-tests reports).

    Inside one node every hop is NVLink. Across nodes, each ring visits
    its GPUs of a node over NVLink and leaves the node once, through
    one NIC; NCCL runs one ring per NIC, side by side. per_node is how
    many of this group's GPUs each node holds: all it can (None), as in
    a flat ring over every GPU, which then has the node's NICs to
    itself; or fewer, as for the data-parallel groups of a job whose
    tensor parallelism fills the rest of the node: gpus_per_node /
    per_node groups then cross the network at once and share its NICs.
    Either way no more than NVLink carries.
    """
    n = count("world_size", world_size)
    g = count("gpus_per_node", gpus_per_node)
    number("nvlink_GBps", nvlink_GBps)
    count("nics_per_node", nics_per_node)
    number("nic_GBps", nic_GBps)
    k = min(n, g) if per_node is None else count("per_node", per_node)
    if k > g or g % k or k > n:
        raise ValueError(
            f"per_node must divide gpus_per_node={g} and be <= world_size="
            f"{n}, got {per_node!r}"
        )
    if n <= k:  # the whole group inside one node
        return nvlink_GBps
    return min(nvlink_GBps, nics_per_node * nic_GBps * k / g)


def ring_latency_s(kind, world_size, per_node):
    """Seconds of latency of one ring collective: each step pays a hop,
    NVLink's inside a node and the network's from node to node."""
    n = count("world_size", world_size, minimum=2)
    steps, _ = ring_terms(kind, n)
    k = count("per_node", per_node)
    nodes = -(-n // k)
    across = (2 if kind == "all_reduce" else 1) * (nodes - 1)
    return (across * NETWORK_HOP_US + (steps - across) * NVLINK_HOP_US) / 1e6


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.ddp.allreduce import allreduce_bytes

    R = REACHED_GBps
    NODES = {  # GPUs per node, NVLink one way, NICs per node, GB/s each
        "H100, 8 NDR NICs (DGX/HGX), line rates": (8, 450, 8, 50),
        "H100, 8 NDR NICs, what NCCL reaches": (8, R["nvlink4"], 8, R["ndr"]),
        "H100, 1 NDR NIC": (8, R["nvlink4"], 1, R["ndr"]),
        "A100, 8 HDR NICs (DGX)": (8, R["nvlink3"], 8, R["hdr"]),
        "H100, 1 x 100 Gb/s Ethernet": (8, R["nvlink4"], 1, R["100gbe"]),
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

    # --8<-- [start:groups]
    # 64 H100s in 8 nodes of 8 NDR NICs, what NCCL reaches: a flat ring
    # over all 64, against 8 data-parallel rings of 8 GPUs, one GPU per
    # node (tensor parallelism 8 fills each node).
    H100 = (8, R["nvlink4"], 8, R["ndr"])
    flat = ring_bandwidth_GBps(64, *H100)
    groups = ring_bandwidth_GBps(8, *H100, per_node=1)
    print(f"flat ring over 64 GPUs:          {flat:g} GB/s per GPU")
    print(f"8 rings of 8, one GPU per node:  {groups:g} GB/s per GPU")
    for n in (64, 1024, 16384):
        ms = ring_latency_s("all_gather", n, 8) * 1e3
        print(f"ring all-gather over {n:>6,} GPUs: {ms:6.2f} ms of latency")
    # --8<-- [end:groups]

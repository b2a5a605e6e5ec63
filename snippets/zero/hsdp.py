"""HSDP: ZeRO-3 inside each node, plain replicas across nodes."""

# --8<-- [start:model]
from snippets.checks import count, number
from snippets.units import GB
from snippets.zero.memory import memory_per_gpu
from snippets.zero.traffic import comm_bytes


def hsdp(params, gpus_per_node, nodes, bytes_per_grad=2, **bytes_per_param):
    """State per GPU and bytes each GPU sends per step, split by link.

    Inside a node of G GPUs the state is sharded as in ZeRO-3: 16 P / G
    bytes per GPU with mixed-precision Adam, and three collectives over
    the node's NVLink. Across the n nodes, each GPU all-reduces only its
    own gradient shard, bytes_per_grad x P / G, with the GPUs holding
    the same shard on the other nodes.
    """
    g = count("gpus_per_node", gpus_per_node)
    n = count("nodes", nodes)
    number("bytes_per_grad", bytes_per_grad)
    state = memory_per_gpu(
        "zero3", params, g, bytes_grad=bytes_per_grad, **bytes_per_param
    )
    shard = params * bytes_per_grad / g
    return {
        "state_GB": state,
        "intra_node_GB": comm_bytes("zero3", params, g, bytes_per_grad),
        "inter_node_GB": 2 * (n - 1) / n * shard / GB,
    }


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.comms.links import ring_bandwidth_GBps

    P, G, NODES = 7_000_000_000, 8, 8  # 7B on 64 GPUs
    h = hsdp(P, G, NODES)
    z3 = comm_bytes("zero3", P, G * NODES)
    print(
        "| 7B, 8 nodes of 8 GPUs | state per GPU, GB | sent on in-node"
        " rings, GB | sent on rings across nodes, GB |"
    )
    print("| --- | --- | --- | --- |")
    print(
        f"| ZeRO-3 over all 64 | {memory_per_gpu('zero3', P, 64):.2f} |"
        f" 0 | {z3:.4f} |"
    )
    print(
        f"| HSDP | {h['state_GB']:.2f} | {h['intra_node_GB']:.4f} |"
        f" {h['inter_node_GB']:.4f} |"
    )
    print(
        "\n| H100 nodes | ZeRO-3, s per step | HSDP, links in turn"
        " | HSDP, links at once |"
    )
    print("| --- | --- | --- | --- |")
    for nics, label in ((8, "8 NDR NICs"), (1, "1 NDR NIC")):
        flat = z3 / ring_bandwidth_GBps(64, G, 450, nics, 50)
        # HSDP runs G rings across the nodes at once, one per shard:
        # they share the node's NICs. The rest stays on NVLink, a
        # different link: FSDP2 can run both at the same time.
        per_gpu = min(450, nics * 50 / G)
        inside = h["intra_node_GB"] / 450
        across = h["inter_node_GB"] / per_gpu
        print(
            f"| {label} per node | {flat:.3f} | {inside + across:.3f}"
            f" | {max(inside, across):.3f} |"
        )
    # --8<-- [end:demo]

"""HSDP: ZeRO-3 inside each node, plain replicas across nodes."""

# --8<-- [start:model]
from snippets.checks import choice, count, number
from snippets.units import GB
from snippets.zero.memory import SYNCS, memory_per_gpu


def hsdp(
    params,
    gpus_per_node,
    nodes,
    bytes_per_grad=2,
    bytes_reduce=None,
    accum_steps=1,
    all_reduce="micro-batch",
    **bytes_per_param,
):
    """State per GPU and GB each GPU sends per step, split by link.

    Inside a node of G GPUs the state is sharded as in ZeRO-3: 16 P / G
    bytes per GPU with mixed-precision Adam. Over the node's NVLink,
    each micro-batch all-gathers the parameters twice (in bytes_param,
    2 by default) and reduce-scatters the gradients (in bytes_reduce,
    the gradients' own size unless the policy reduces in another dtype:
    FSDP2's MixedPrecisionPolicy(reduce_dtype=float32) sends 4). Across
    the n nodes, each GPU all-reduces only its own gradient shard,
    bytes_reduce x P / G, with the GPUs holding the same shard on the
    other nodes: after every micro-batch, FSDP2's default, or once per
    step with set_requires_all_reduce(False) until the last one.
    """
    g = count("gpus_per_node", gpus_per_node)
    n = count("nodes", nodes)
    number("bytes_per_grad", bytes_per_grad)
    reduce = bytes_per_grad
    if bytes_reduce is not None:
        reduce = number("bytes_reduce", bytes_reduce)
    a = count("accum_steps", accum_steps)
    choice("all_reduce", all_reduce, SYNCS)
    state = memory_per_gpu(
        "zero3", params, g, bytes_grad=bytes_per_grad, **bytes_per_param
    )
    gather = bytes_per_param.get("bytes_param", 2)
    ring = (g - 1) / g  # of the buffer, per gather or reduce-scatter
    inside = a * (2 * gather + reduce) * params * ring
    shard = params * reduce / g
    across = (
        2 * (n - 1) / n * shard * (a if all_reduce == "micro-batch" else 1)
    )
    return {
        "state_GB": state,
        "intra_node_GB": inside / GB,
        "inter_node_GB": across / GB,
    }


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.comms.links import REACHED_GBps as R
    from snippets.comms.links import ring_bandwidth_GBps

    P, G, NODES = 7_000_000_000, 8, 8  # 7B on 64 GPUs
    FP32 = {"bytes_reduce": 4}  # MixedPrecisionPolicy(reduce_dtype=fp32)
    # ZeRO-3 over all 64 GPUs is HSDP with a single "node" of 64.
    rows = {
        "ZeRO-3 over all 64, bf16 reduce": hsdp(P, G * NODES, 1),
        "ZeRO-3 over all 64, fp32 reduce": hsdp(P, G * NODES, 1, **FP32),
        "HSDP, bf16 reduce": hsdp(P, G, NODES),
        "HSDP, fp32 reduce": hsdp(P, G, NODES, **FP32),
    }
    print(
        "| 7B, 8 nodes of 8 GPUs | state per GPU, GB | sent on in-node"
        " rings, GB | sent on rings across nodes, GB |"
    )
    print("| --- | --- | --- | --- |")
    for label, h in rows.items():
        inside, across = h["intra_node_GB"], h["inter_node_GB"]
        if label.startswith("ZeRO-3"):  # one ring over every GPU
            inside, across = 0, h["intra_node_GB"]
        print(
            f"| {label} | {h['state_GB']:.2f} | {inside:.4f} | {across:.4f} |"
        )
    print(
        "\n| H100 nodes, fp32 reduce | ZeRO-3, s per step"
        " | HSDP, links in turn | HSDP, links at once |"
    )
    print("| --- | --- | --- | --- |")
    z3 = rows["ZeRO-3 over all 64, fp32 reduce"]["intra_node_GB"]
    h = rows["HSDP, fp32 reduce"]
    for nics, label in ((8, "8 NDR NICs"), (1, "1 NDR NIC")):
        # ZeRO-3: one flat ring over all 64. HSDP: 8 rings across the
        # nodes at once, one GPU per node each (the GPUs that hold the
        # same shard), sharing the NICs; the rest on NVLink, a
        # different link: FSDP2 can run both at the same time.
        node = (G, R["nvlink4"], nics, R["ndr"])
        flat = z3 / ring_bandwidth_GBps(G * NODES, *node)
        inside = h["intra_node_GB"] / ring_bandwidth_GBps(G, *node)
        across = h["inter_node_GB"] / ring_bandwidth_GBps(
            NODES, *node, per_node=1
        )
        print(
            f"| {label} per node | {flat:.3f} | {inside + across:.3f}"
            f" | {max(inside, across):.3f} |"
        )
    steps = {
        when: hsdp(P, G, NODES, accum_steps=8, all_reduce=when, **FP32)
        for when in SYNCS
    }
    print(
        "\n8 micro-batches, fp32 reduce: in-node"
        f" {steps['step']['intra_node_GB']:.1f} GB; across nodes"
        f" {steps['step']['inter_node_GB']:.3f} GB with"
        " set_requires_all_reduce(False) until the last,"
        f" {steps['micro-batch']['inter_node_GB']:.3f} GB without"
    )
    # --8<-- [end:demo]

"""What expert parallelism sends, and how node-limited routing caps the
traffic between nodes."""

# --8<-- [start:model]
import random

from snippets.checks import count, number


def moe_alltoall_bytes(
    micro_batch, seq_len, hidden, top_k, ep, bytes_per_value=2
):
    """Bytes one rank's all-to-alls move per MoE layer and micro-batch.

    The rank's b x s tokens go to top_k experts each: the dispatch
    all-to-all carries k b s vectors of h values out, the combine
    all-to-all brings as many back, and the backward pass repeats both
    with gradients: four all-to-alls of k b s h values. With the
    experts spread evenly over ep ranks, 1/ep of each stays on the
    rank; the rest crosses a link.
    """
    tokens = count("micro_batch", micro_batch) * count("seq_len", seq_len)
    h, k, n = count("hidden", hidden), count("top_k", top_k), count("ep", ep)
    number("bytes_per_value", bytes_per_value)
    one = k * tokens * h * bytes_per_value  # one all-to-all, local part too
    return {
        "per_alltoall": one,
        "sent_per_alltoall": one * (n - 1) / n,
        "sent_per_step": 4 * one * (n - 1) / n,
    }


def ep_layout(world_size, ep, experts):
    """How expert parallelism carves its groups out of data parallelism:
    world_size data-parallel ranks, split into groups of ep ranks that
    each hold all the experts, experts / ep per rank. The attention and
    other dense weights stay replicated (or FSDP-sharded) over all
    world_size ranks; each expert's weights are copied world_size / ep
    times, and its gradients averaged over those copies."""
    w, n, e = (
        count("world_size", world_size),
        count("ep", ep),
        count("experts", experts),
    )
    if w % n or e % n:
        raise ValueError(
            f"ep must divide world_size ({w}) and experts ({e}), got {n!r}"
        )
    return {"experts_per_rank": e // n, "expert_copies": w // n}


def node_limited_topk(scores, top_k, nodes, max_nodes):
    """DeepSeek-V3's choice of experts for one token: keep the
    max_nodes nodes whose best two scores add up highest, then the
    top_k experts among theirs (their gate does this with groups of
    experts; each group lives on one node). Returns expert indices."""
    if not isinstance(scores, list) or not scores:
        raise TypeError(f"scores must be a non-empty list, got {scores!r:.40}")
    for x in scores:
        number("scores", x, allow_minimum=True)
    k, g, m = (
        count("top_k", top_k),
        count("nodes", nodes),
        count("max_nodes", max_nodes),
    )
    e = len(scores)
    if e % g or m > g:
        raise ValueError(
            f"nodes must divide len(scores) ({e}, one per expert) and "
            f"max_nodes must be <= nodes; got nodes {g!r}, max_nodes {m!r}"
        )
    per = e // g
    if k > m * per:
        raise ValueError(
            f"top_k must be <= max_nodes x experts per node ({m * per}), "
            f"got {k!r}"
        )

    def node_score(node):
        mine = sorted(scores[node * per : (node + 1) * per], reverse=True)
        return sum(mine[:2])

    keep = sorted(range(g), key=lambda n: -node_score(n))[:m]
    allowed = [x for x in range(e) if x // per in keep]
    return sorted(allowed, key=lambda x: -scores[x])[:k]


def nodes_per_token(tokens, experts, top_k, nodes, max_nodes, seed=0):
    """Mean number of nodes a token's experts sit on, for seeded random
    affinities (the sigmoid scores of DeepSeek-V3's router): each node
    reached costs one copy of the token over the network."""
    t = count("tokens", tokens)
    rng = random.Random(count("seed", seed, minimum=0))
    e, g = count("experts", experts), count("nodes", nodes)
    if e % g:
        raise ValueError(f"nodes must divide experts ({e}), got {g!r}")
    per = e // g
    reached = 0
    for _ in range(t):
        scores = [rng.random() for _ in range(experts)]
        chosen = node_limited_topk(scores, top_k, nodes, max_nodes)
        reached += len({x // per for x in chosen})
    return reached / t


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.units import MB

    # a Mixtral-sized layer: h 4096, top-2 of 8 experts, 4096 tokens
    print("per MoE layer and micro-batch (b 1, s 4096, h 4096, bf16):")
    for ep in (2, 8):
        r = moe_alltoall_bytes(1, 4096, 4096, 2, ep)
        print(
            f"  top-2, EP {ep}: {r['per_alltoall'] / MB:.1f} MB per"
            f" all-to-all, {r['sent_per_alltoall'] / MB:.1f} MB leave the"
            f" rank; {r['sent_per_step'] / MB:.1f} MB per step (4 of them)"
        )
    layout = ep_layout(world_size=64, ep=8, experts=64)
    print(f"64 GPUs, EP 8, 64 experts: {layout}")
    # DeepSeek-V3's router: 256 experts in 8 groups (one per node), top-8
    print("DeepSeek-V3 routing, 256 experts on 8 nodes, top-8:")
    for limit in (8, 4):
        mean = nodes_per_token(2000, 256, 8, 8, limit)
        print(f"  at most {limit} nodes: {mean:.2f} nodes per token")
    # --8<-- [end:demo]

"""What an expert-parallel run measured, in the experts lab's terms (no
torch): the all-to-alls against `moe_alltoall_bytes`
(snippets/experts/alltoall.py), the assignments each capacity dropped,
and the load of each rank's experts.

A run's `routing` holds, for every rank, each MoE layer it ran in the
first step: the assignments its router sent to each expert, and those
the experts kept (the rest found their buffer full).
"""

import math

from snippets.experts.alltoall import moe_alltoall_bytes


def micro_batches(run):
    c = run.config
    return max(c.accum_steps, c.pp_microbatches)


def capacity(run):
    """Seats per expert and sequence, as route() counts them."""
    m = run.config.model
    return math.ceil(m.capacity_factor * m.top_k * m.seq_len / m.experts)


def value_bytes(run):
    return 2 if run.compute_dtype == "bf16" else 4


def alltoall_formula(run):
    """Bytes of one all-to-all's buffer on a rank: the lab's k b s h
    values, for the tokens a rank routes, and the padded buffer the
    script sends, E x C seats of h values per sequence."""
    m, b = run.config.model, run.config.micro_batch
    v = value_bytes(run)
    lab = moe_alltoall_bytes(
        b, m.seq_len, m.d_model, m.top_k, run.config.ep, v
    )
    seats = m.experts * b * capacity(run) * m.d_model * v
    return {"lab": lab["per_alltoall"], "seats": seats}


def alltoalls(run):
    """The first step's all-to-alls on rank 0, per MoE layer and
    micro-batch: (calls, bytes of each buffer)."""
    x = run.measured
    sizes = [size for kind, _, size in x.ep_step if kind == "all_to_all"]
    layers = len(x.routing[0])
    calls, rest = divmod(len(sizes), layers * micro_batches(run))
    if rest or len(set(sizes)) != 1:
        raise ValueError(f"all-to-alls of unequal sizes or counts: {sizes}")
    return calls, sizes[0]


def sent(run, size):
    """Bytes of one all-to-all buffer that leave the rank: (ep - 1) / ep."""
    ep = run.config.ep
    return size * (ep - 1) // ep


def dropped(run):
    """(assignments routed, dropped) over every rank and layer."""
    routed = kept = 0
    for layers in run.measured.routing:
        for sent_to, took in layers.values():
            routed += sum(sent_to)
            kept += sum(took)
    return routed, routed - kept


def routed_per_layer(run):
    """What each rank routes per layer in a step: k x b x s x micro."""
    m, b = run.config.model, run.config.micro_batch
    return m.top_k * b * m.seq_len * micro_batches(run)


def ep_groups(run):
    """The global ranks of each expert-parallel group, in ep order: the
    mesh (dp / ep, ep, pp, tp) numbered row-major."""
    pp, tp, ep = run.config.pp, run.config.tp, run.config.ep
    dp = run.world_size // (pp * tp)
    return [
        [(copy * ep + i) * pp * tp + stage * tp for i in range(ep)]
        for copy in range(dp // ep)
        for stage in range(pp)
    ]


def load_per_rank(run, group):
    """{layer: assignments each rank of `group` computed}: what every
    rank of the group sent to that rank's experts, kept."""
    ep, routing = run.config.ep, run.measured.routing
    per = run.config.model.experts // ep
    found = {}
    for layer in routing[group[0]]:
        took = [routing[r][layer][1] for r in group]
        found[layer] = [
            sum(t[x] for t in took for x in range(j * per, (j + 1) * per))
            for j in range(ep)
        ]
    return found


def seats_per_rank(run):
    """Seats each rank's experts compute per layer in a step: its E / ep
    experts, C seats per sequence of every rank of its group."""
    e, ep = run.config.model.experts, run.config.ep
    b, micro = run.config.micro_batch, micro_batches(run)
    return e // ep * capacity(run) * b * ep * micro

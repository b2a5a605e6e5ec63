"""What the ring of a context-parallel run did, in the lesson's terms
(no torch): the K/V bytes a rank sends per layer against
`cp_bytes_per_layer` (snippets/context/cost.py), and the query-key
pairs each rank scored at each ring step against `ring_step_scores`
(snippets/context/balance.py).

A run's `ring` holds, per rank, totals over every attention call of the
run: bytes sent by phase, the calls, and per ring step the visible
pairs (per sequence and head) and the CPU seconds of the forward
scoring.
"""

from snippets.context.balance import ring_step_scores
from snippets.context.cost import cp_bytes_per_layer

LAYOUT = {"none": "contiguous", "zigzag": "zigzag"}  # the lab's names
BYTES = {"fp32": 4, "bf16": 2}


def shape(run):
    """(micro-batch, sequence, width and heads each rank's attention
    holds, cp): tensor parallelism leaves 1/tp of the heads per rank."""
    c = run.config
    m = c.model
    return (
        c.micro_batch,
        m.seq_len,
        m.d_model // c.tp,
        m.n_heads // c.tp,
        c.cp,
    )


def sent_per_layer(run):
    """Bytes each rank sent per attention call (one layer, one
    micro-batch), by phase: K/V forward, K/V backward, gradients."""
    return [
        {phase: n // rank["calls"] for phase, n in rank["sent"].items()}
        for rank in run.measured.ring
    ]


def predicted_sent(run):
    """The same, from the lab: the forward ring sends cp - 1 K/V blocks
    (cp_bytes_per_layer); the backward sends them again and the blocks'
    gradients cp times, in fp32, so that they come home."""
    b, s, h, heads, cp = shape(run)
    kv = cp_bytes_per_layer(
        "ring", b, s, h, heads, heads, cp, BYTES[run.compute_dtype]
    )
    grads = cp * 2 * b * (s // cp) * h * BYTES["fp32"]
    return {"forward": kv, "backward": kv, "gradients": grads}


def pairs(run):
    """pairs[t][r]: query-key pairs rank r scored at ring step t, per
    sequence, head and call, as the lab's ring_step_scores lays them."""
    group = [run.measured.ring[r] for r in cp_ranks(run)]
    per_rank = [[n // rank["calls"] for n in rank["pairs"]] for rank in group]
    return [list(step) for step in zip(*per_rank, strict=True)]


def predicted_pairs(run):
    c = run.config
    return ring_step_scores(c.model.seq_len, c.cp, LAYOUT[c.cp_balance])


def seconds(run):
    """CPU seconds each rank of the first cp group spent scoring,
    forward, over the whole run."""
    return [sum(run.measured.ring[r]["seconds"]) for r in cp_ranks(run)]


def cp_ranks(run):
    """The ranks of the first cp group (dp rank 0, tp rank 0): the mesh
    numbers ranks (dp, cp, tp), row-major."""
    return [r * run.config.tp for r in range(run.config.cp)]

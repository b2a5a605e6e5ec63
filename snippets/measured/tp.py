"""The collectives a tensor-parallel run issued, in the lesson's terms
(no torch): what one layer sends per micro-batch, against
`tp_bytes_per_layer` (snippets/pipeline/tensor.py), and what else
PyTorch sends in a step.

A rank of a ring all-gather or reduce-scatter of an S-byte buffer over
t ranks sends (t - 1) / t x S; of an all-reduce, 2 (t - 1) / t x S.
"""

from collections import Counter

SHARE = {"all_gather": 1, "reduce_scatter": 1, "all_reduce": 2}


def sent(calls, tp):
    """Bytes one rank sends for `calls`: (collective, shape, bytes)."""
    return sum(SHARE[kind] * (tp - 1) / tp * size for kind, _, size in calls)


def layer_calls(run):
    """One block's collectives for one micro-batch, forward then
    backward: [(phase, collective, bytes)]."""
    return [
        (phase, kind, size)
        for phase in ("forward", "backward")
        for kind, _, size in run.measured.tp_block[phase]
    ]


def sent_per_layer(run):
    """Bytes a rank sends for one block and one micro-batch, measured."""
    calls = [(kind, None, size) for _, kind, size in layer_calls(run)]
    return sent(calls, run.config.tp)


def others(run):
    """The collectives of this rank's first step that are not its
    blocks': a Counter of (collective, bytes). The blocks it holds x
    micro-batches x one block's calls are taken out of the step's."""
    step = Counter((kind, size) for kind, _, size in run.measured.tp_step)
    blocks = run.config.model.n_layers // run.config.pp
    micro = max(run.config.accum_steps, run.config.pp_microbatches)
    for (_, kind, size), n in Counter(layer_calls(run)).items():
        step[(kind, size)] -= n * blocks * micro
    if any(n < 0 for n in step.values()):
        raise ValueError(f"the step holds fewer calls than its blocks: {step}")
    return +step

"""The planner's cost model: the seconds of one training step of a
layout and the memory each GPU needs, from the model's shape, the
cluster and five parameters fitted to measured runs
(snippets/planner/fit.py).

`estimate` takes the checked dicts of snippets/planner/model.py and a
layout checked by snippets/planner/layouts.py; it checks nothing again,
so that the search can call it thousands of times.
"""

# --8<-- [start:model]
from dataclasses import dataclass

from snippets.pipeline.bubble import bubble_fraction, megatron_ratio
from snippets.planner.runs import LINKS
from snippets.zero.memory import SHARDED


@dataclass(frozen=True)
class Fit:
    """The cost model's free parameters, each a physical quantity."""

    # Share of the peak dense FLOP/s that the matrix multiplies of a
    # layer's weights sustain, on each kind of GPU the table measured.
    a100_gemm_share: float
    h100_gemm_share: float
    # Share of the 16-bit peak that attention's own products, QK^T and
    # AV with their head-sized inner dimension, sustain.
    attention_share: float
    # Bytes the element-wise kernels (norms, activation functions,
    # softmax, dropout) move through HBM per byte of activations the
    # layer stores for its backward pass.
    hbm_passes: float
    # Share of each GPU's own network bandwidth (its node's NICs over
    # its GPUs) that a collective crossing nodes reaches.
    network_share: float
    # Share of the communication that a schedule lets run beside
    # compute which it really hides: kernels that overlap slow each
    # other down.
    overlap: float


# Share of NVLink's line rate a ring collective inside a node reaches,
# as nccl-tests measures it (snippets/planner/runs.py LINKS): 230 of
# 300 GB/s on an A100 node, 370 of 450 on an H100 node's ring.
# Measured, not fitted.
NVLINK_SHARE = {
    gpu: link.low_GBps / link.line_GBps
    for gpu, label in (
        ("a100-80gb", "a100-nvlink-allreduce"),
        ("h100-80gb", "h100-nvlink-ring"),
    )
    for link in LINKS
    if link.label == label
}
# Latency of one step of a ring, in microseconds, inside a node (over
# NVLink) and from node to node: NCCL's own tuning model
# (src/graph/tuning.cc, hwLat, ring, Simple protocol). The measured
# runs move messages too large to tell these apart from zero.
NVLINK_HOP_US = 3.4
NETWORK_HOP_US = 9.6
# HBM bytes per parameter of the Adam step: it reads the fp32 master
# weight, momentum, variance and gradient and writes the first three
# and the bf16 weight.
OPTIMIZER_BYTES = 4 * 4 + 3 * 4 + 2
# Per logit, the bf16 logits and their fp32 log-softmax, kept for the
# loss's backward pass.
LOGIT_BYTES = 2 + 4
# DDP's bucket: the last bucket's reduction has no compute left to
# hide behind.
BUCKET_BYTES = 25 * 2**20

# The fit's result on the measured runs (snippets/planner/fit.py); a
# test checks that these are what the fit returns.
FIT = Fit(
    a100_gemm_share=0.714,
    h100_gemm_share=0.489,
    attention_share=0.203,
    hbm_passes=1.54,
    network_share=0.922,
    overlap=0.574,
)


def layer_shape(m):
    """Weights of one layer's matrices, its parameters, and the bytes
    per token its activations keep for the backward pass, in units of
    the hidden size h (Korthikanti et al. 2022, section 4, with
    grouped KV heads and gated MLPs): `replicated` stays whole on each
    tensor-parallel rank unless sequence parallelism splits it too,
    `split` is divided among the ranks, and `scores` is per key of the
    attention matrix, which a flash-attention kernel never stores."""
    h, f = m["hidden"], m["ffn"]
    kv = m["kv_heads"] * (h // m["heads"])
    mlp = 3 if m["gated"] else 2  # matrices, and tensors it keeps of f
    weights = 2 * h * h + 2 * h * kv + mlp * h * f
    mask = 1 if m["dropout"] else 0  # 1-byte dropout masks
    return {
        "weights": weights,
        "params": weights + 2 * h,  # and two norms
        # two norms, QKV and output projections, the MLP's matrices
        "modules": 2 + 2 + mlp,
        # the largest of them: the MLP's matrix or the fused QKV
        "module": max(h * f, h * (h + 2 * kv)),
        # norm inputs, attention input, MLP input, dropout masks
        "replicated": 2 * 2 + 2 + 2 + 2 * mask,
        # queries, keys and values, attention output, MLP tensors
        "split": 2 + 4 * kv / h + 2 + mlp * 2 * f / h,
        # softmax output, with dropout its mask and output too
        "scores": (2 + 3 * mask) * m["heads"] / h,
    }


def stage_layers(layers, stages, embedding_slots):
    """Layers on each pipeline stage, first to last. With
    `embedding_slots` the embedding and the output layer each take a
    layer's place on the first and the last stage, as in Llama 3."""
    slots = layers + (2 if embedding_slots else 0)
    base, extra = divmod(slots, stages)
    counts = [base] * stages
    start = (stages - extra) // 2  # the fuller stages in the middle
    for i in range(start, start + extra):
        counts[i] += 1
    if embedding_slots:
        counts[0] -= 1
        counts[-1] -= 1
    return counts


def ring_s(kind, size, ranks, link, fit):
    """Seconds of a ring collective over `size` bytes (the whole
    buffer) on `ranks` GPUs of `link` = (GB/s per GPU, nodes it
    spans): n - 1 steps, in each of which a rank sends 1/n of the
    buffer; twice that for an all-reduce (a reduce-scatter, then an
    all-gather). As in NCCL's tuning model, the steps that cross from
    node to node pay the network's latency, the others NVLink's."""
    if ranks == 1:
        return 0.0
    GBps, nodes = link
    rounds = 2 if kind == "all-reduce" else 1
    across = rounds * (nodes - 1)
    inside = rounds * (ranks - 1) - across
    latency = across * NETWORK_HOP_US + inside * NVLINK_HOP_US
    return latency * 1e-6 + rounds * (ranks - 1) / ranks * size / (GBps * 1e9)


def exposed(comm, window, fit):
    """Seconds of `comm` left over when it may overlap `window`
    seconds of compute."""
    return comm - fit.overlap * min(comm, window)


def estimate(m, c, t, lay, fit=FIT):
    """Seconds per step, by part, and GB per GPU of one layout."""
    shape = layer_shape(m)
    return {
        "step_s": step_seconds(m, c, t, lay, fit, shape),
        "memory_per_gpu_GB": memory_GB(m, t, lay, shape),
    }


def stored_bytes(m, t, lay, shape):
    """Bytes one layer keeps for one micro-batch, nothing recomputed."""
    h, s = m["hidden"], m["seq_len"]
    scores = 0 if t["flash_attention"] else shape["scores"] * s
    stored = shape["replicated"] / (
        lay["tp"] if lay["sequence_parallel"] else 1
    )
    stored += (shape["split"] + scores) / lay["tp"]
    return stored * t["micro_batch"] * s / lay["cp"] * h


def step_seconds(m, c, t, lay, fit, shape):
    """Seconds of one step, by part."""
    h, s, vocab = m["hidden"], m["seq_len"], m["vocab"]
    tp, pp, cp, v = lay["tp"], lay["pp"], lay["cp"], lay["chunks"]
    dp, zero, micro = lay["dp"], lay["zero"], lay["microbatches"]
    sp, full = lay["sequence_parallel"], lay["recompute"] == "full"
    g, hbm = c["gpus_per_node"], c["hbm_GBps"] * 1e9
    tokens = t["micro_batch"] * s / cp  # one micro-batch, on one GPU

    # Links. Inside a node, NVLink; across nodes, each GPU's share of
    # its node's NICs. The GPUs of a group sit `inner` apart (the
    # degrees inside it, in the order tp, cp, dp, pp): a node holds
    # g / inner of them, and the group spans size / that many nodes.
    nvlink = c["nvlink_GBps"] * NVLINK_SHARE[c["gpu"]]
    network = c["nics_per_node"] * c["nic_GBps"] / g * fit.network_share

    def link(inner, size):
        nodes = -(-size // max(1, min(size, g // inner)))
        return (nvlink if nodes == 1 else min(nvlink, network), nodes)

    # One layer, one micro-batch, forward: the weights' matrix
    # multiplies (FP8 ones at twice the 16-bit rate), attention's QK^T
    # and AV, 4 s h FLOPs per query (a causal flash kernel skips the
    # masked half, a plain one computes all of it), and the
    # element-wise kernels at HBM speed.
    flash = t["flash_attention"]
    peak = c["peak_TFLOPs"] * 1e12
    share = (
        fit.h100_gemm_share if c["gpu"] == "h100-80gb" else fit.a100_gemm_share
    )
    rate = peak * share * (2 if t["precision"] == "fp8" else 1)
    matmuls = 2 * shape["weights"] * tokens / tp / rate
    attention = 4 * s * h * tokens / tp * (0.5 if flash else 1)
    attention /= peak * fit.attention_share
    elementwise = fit.hbm_passes * stored_bytes(m, t, lay, shape) / hbm
    # Tensor parallelism, per pass: two all-reduces of the b x s x h
    # output (with sequence parallelism, two all-gathers and two
    # reduce-scatters: the same bytes and hops); not overlapped.
    tp_pass = 2 * ring_s("all-reduce", 2 * tokens * h, tp, link(1, tp), fit)
    # Context parallelism, per pass: the keys and values all-gathered
    # (the backward pass also reduce-scatters their gradients).
    kv = 2 * 2 * tokens * cp * m["kv_heads"] * (h // m["heads"]) / tp
    cp_pass = ring_s("all-gather", kv, cp, link(tp, cp), fit)
    compute = matmuls + attention + elementwise
    # Backward: twice the forward's work, but a flash kernel computes
    # the scores again (five products to the forward's two); full
    # recomputation runs the forward again, all-reduces included.
    backward = 2 * compute + (0.5 * attention if flash else 0)
    tp_forward, tp_backward = tp_pass + cp_pass, tp_pass + 2 * cp_pass
    if full:
        backward += compute
        tp_backward += tp_forward
    elif lay["recompute"] == "selective" and not flash:
        # the attention core again: its products and its softmax
        scores = shape["scores"] * s * tokens * h / tp
        backward += attention + fit.hbm_passes * scores / hbm

    # ZeRO-3 (and HSDP, inside its node): each layer's weights are
    # gathered for its forward and its backward pass, its gradients
    # reduce-scattered after, while the layer before it computes; in
    # one collective each (FSDP2 wraps each layer), or one per module.
    dp_link = link(tp * cp, dp)
    gather = reduce = 0.0
    if zero in (3, "hsdp"):
        weights = 2 * shape["params"] / tp  # bf16 bytes of one layer
        over = (nvlink, 1) if zero == "hsdp" else dp_link
        n = 1 if t["fsdp_unit"] == "layer" else shape["modules"]
        gather = n * ring_s("all-gather", weights / n, lay["shard"], over, fit)
        reduce = n * ring_s(
            "reduce-scatter", weights / n, lay["shard"], over, fit
        )
    sharded = exposed(gather, compute + tp_forward, fit)
    sharded += exposed(gather + reduce, backward + tp_backward, fit)
    tp_cp = tp_forward + tp_backward
    per_layer = compute + backward + tp_cp + sharded

    # The output layer and the loss, on the last stage.
    head = 2 * h * vocab * tokens / tp / (peak * share)
    head += fit.hbm_passes * LOGIT_BYTES * vocab * tokens / tp / hbm
    head *= 3  # forward and backward

    # The pipeline: each stage runs its layers and sends activations on
    # and gradients back (v times with v chunks). The fullest stage
    # sets the pace; filling and draining add (p - 1)/v of its time.
    layers = lay["stages"]
    send = 0.0
    if pp > 1:
        size = 2 * tokens * h / (tp if sp else 1)
        GBps, nodes = link(tp * cp * dp, pp)
        latency = NETWORK_HOP_US if nodes > 1 else NVLINK_HOP_US
        send = 2 * v * (latency * 1e-6 + size / (GBps * 1e9))
    stage = [n * per_layer + send for n in layers]
    stage[-1] += head
    slowest = max(range(pp), key=stage.__getitem__)
    n = layers[slowest]
    # The bubble as Megatron-LM measures it: (p - 1)/(v m) of the work.
    idle = bubble_fraction(pp, micro, lay["schedule"], v) if pp > 1 else 0.0
    bubble = megatron_ratio(idle) * micro * stage[slowest]

    # Data parallelism: the gradients of the fullest stage, reduced
    # while its last micro-batch runs backward, except the last bucket,
    # which holds the embedding's gradient.
    embedding = vocab * h / tp
    params = max(layers) * shape["params"] / tp + embedding
    if pp == 1 and not m["tied_embeddings"]:
        params += embedding  # the output layer, apart
    grads = 2 * params
    window = max(layers) * (backward + tp_backward)
    last = min(1.0, max(BUCKET_BYTES, 2 * embedding) / grads)
    ranks = dp * cp  # the GPUs that hold the same weights

    def reduced(kind, ranks_, over):
        comm = ring_s(kind, grads, ranks_, over, fit)
        return comm * last + exposed(comm * (1 - last), window, fit)

    tail = 0.0
    if zero == 0:
        tail = reduced("all-reduce", ranks, dp_link)
    elif zero in (1, 2):
        if zero == 2 and pp == 1 and micro > 1:
            # DeepSpeed's ZeRO-2 reduces every micro-batch's gradients,
            # each behind that micro-batch's backward pass.
            rs = ring_s("reduce-scatter", grads, ranks, dp_link, fit)
            tail = micro * exposed(rs, window, fit)
        else:  # reduced once, after the last micro-batch
            tail = reduced("reduce-scatter", ranks, dp_link)
        # and the updated weights gathered after the optimizer step
        tail += ring_s("all-gather", grads, ranks, dp_link, fit)
    elif zero == "hsdp":  # each GPU's shard, with its replicas
        grads /= lay["shard"]
        tail = reduced("all-reduce", ranks // lay["shard"], dp_link)
        grads *= lay["shard"]
    shards = {0: 1, "hsdp": lay["shard"]}.get(zero, ranks)
    optimizer = OPTIMIZER_BYTES * params / shards / hbm

    last_head = head if slowest == pp - 1 else 0.0
    parts = {
        "compute": micro * (n * (compute + backward) + last_head),
        "tensor_context_parallel": micro * n * tp_cp,
        # the first layer's gather, with nothing before it, each time
        "data_parallel": micro * (n * sharded + gather) + tail,
        "pipeline_sends": micro * send,
        "bubble": bubble,
        "optimizer": optimizer,
    }
    parts["total"] = sum(parts.values())
    return parts


def memory_GB(m, t, lay, shape):
    """GB on the GPU that needs the most: the first stage holds the
    most micro-batches in flight, the last also holds the logits."""
    tp, pp, v, micro = lay["tp"], lay["pp"], lay["chunks"], lay["microbatches"]
    h, vocab, sp = m["hidden"], m["vocab"], lay["sequence_parallel"]
    tokens = t["micro_batch"] * m["seq_len"] / lay["cp"]
    embedding = vocab * h / tp
    full = lay["recompute"] == "full"
    stored = stored_bytes(m, t, lay, shape)
    keep = 2 * tokens * h / (tp if sp else 1) if full else stored

    def in_flight(i):
        """Micro-batches whose activations stage i holds at its peak."""
        if lay["schedule"] == "gpipe":
            return micro
        if v == 1:  # 1F1B: stage i holds pp - i micro-batches
            return min(pp - i, micro)
        # interleaved: more warm-up, counted in chunks of 1/v
        return min(micro * v, 2 * (pp - i - 1) + (v - 1) * pp + 1) / v

    ranks = lay["dp"] * lay["cp"]
    worst = None
    # In-flight micro-batches fall from stage to stage, so the GPU that
    # needs the most is the first, the last or the first of the fullest.
    stages = lay["stages"]
    for i in sorted({0, pp - 1, stages.index(max(stages))}):
        n = stages[i]
        weights = n * shape["params"] / tp
        if i == 0:
            weights += embedding
        if i == pp - 1 and not (pp == 1 and m["tied_embeddings"]):
            weights += embedding  # the output layer
        gb = state_bytes(weights, lay["zero"], ranks, lay["shard"], pp)
        acts = in_flight(i) * n * keep
        if full:  # the layer being recomputed holds it all
            acts += stored
        if i == pp - 1:
            acts += LOGIT_BYTES * vocab * tokens / tp
        gb["activations"] = acts
        # FSDP's working set: this unit's weights and the next one's,
        # gathered, and this unit's unsharded gradients.
        gb["gathered"] = 0.0
        if lay["zero"] in (3, "hsdp"):
            unit = shape["params" if t["fsdp_unit"] == "layer" else "module"]
            gb["gathered"] = 3 * 2 * max(unit / tp, embedding)
        gb = {k: x / 1e9 for k, x in gb.items()}
        if worst is None or sum(gb.values()) > sum(worst.values()):
            worst = gb
    worst["reserve"] = t["reserve_GB"]
    worst["total"] = sum(worst.values())
    return worst


def state_bytes(weights, zero, ranks, shard, pp):
    """Bytes of bf16 weights and gradients and fp32 Adam state for
    `weights` parameters on a GPU, split as each ZeRO stage splits them
    (snippets/zero/memory.py) over `ranks`, HSDP over its `shard`."""
    strategy = {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}.get(zero)
    over = ranks
    if zero == "hsdp":
        strategy, over = "zero3", shard
    # With a pipeline, ZeRO-2 keeps whole gradients until the last
    # micro-batch (FSDP2 without sync); DeepSpeed refuses the pair.
    if zero == 2 and pp > 1:
        strategy = "zero1"
    sharded = SHARDED[strategy]
    return {
        name: weights * size / (over if kind in sharded else 1)
        for name, kind, size in (
            ("parameters", "param", 2),
            ("gradients", "grad", 2),
            ("optimizer", "optim", 12),
        )
    }


# --8<-- [end:model]

"""The planner's cost model: the seconds of one training step of a
layout and the memory each GPU needs, from the model's shape, the
cluster and five parameters fitted to measured runs
(snippets/planner/fit.py).

`estimate` takes a Job, a layout checked by snippets/planner/layouts.py
against the model, cluster and training of snippets/planner/model.py;
it checks nothing again, so that the search can call it thousands of
times.
"""

# --8<-- [start:model]
from dataclasses import dataclass

from snippets.context.cost import overlap_crossover_tokens
from snippets.experts.alltoall import moe_alltoall_bytes
from snippets.pipeline.bubble import bubble_fraction, megatron_ratio
from snippets.pipeline.zero_bubble import published_bubble
from snippets.planner.runs import LINKS
from snippets.zero.memory import RECIPES, SHARDED


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
    # How much faster a fused software stack (Megatron's and NeMo's
    # kernels) runs the same compute than PyTorch-native code, on an
    # H100 (stack_speedup).
    fused_speedup: float
    # How much faster an FP8 matrix multiply runs than a 16-bit one:
    # Hopper's datasheet says 2, but the casts and scales around it and
    # the shapes keep it below.
    fp8_speedup: float
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
# Share of a NIC's line rate a ring across nodes reaches per NIC, as
# nccl-tests measures it (LINKS): 24 of 25 GB/s on HDR, 46 of 50 on
# NDR. Measured, not fitted.
NETWORK_SHARE = {
    gpu: link.low_GBps / link.line_GBps
    for gpu, label in (("a100-80gb", "hdr-nic"), ("h100-80gb", "ndr-nic"))
    for link in LINKS
    if link.label == label
}
# Latency of one step of a ring, in microseconds, inside a node (over
# NVLink) and from node to node: NCCL's own tuning model
# (src/graph/tuning.cc, hwLat, ring, Simple protocol). The measured
# runs move messages too large to tell these apart from zero.
NVLINK_HOP_US = 3.4
NETWORK_HOP_US = 9.6
# How many times the bytes of torch.compile's element-wise kernels
# eager PyTorch's move in a layer's forward and backward pass, counted
# on real PyTorch by snippets/torchrun/eager.py (a test counts again):
# torchtitan's Llama layer, its RMSNorm, rotary embeddings and SwiGLU
# one operator at a time, for gated models; the course's GPT block,
# whose LayerNorm and GELU are single kernels either way, for the rest.
EAGER_BYTES = {"llama": 2.73, "gpt": 1.0}
# HBM bytes per parameter of the Adam step: it reads the fp32 master
# weight, momentum, variance and gradient and writes the first three
# and the bf16 weight.
OPTIMIZER_BYTES = 4 * 4 + 3 * 4 + 2
# Per logit, the bf16 logits and their fp32 log-softmax, kept for the
# loss's backward pass.
LOGIT_BYTES = 2 + 4
# Bytes per gradient element a data-parallel reduction moves, by the
# training's reduce dtype: FSDP2 under the course's policy (and
# torchtitan's) reduces in fp32, fp16 runs of Megatron and DeepSpeed in
# 16 bits.
REDUCE_BYTES = {"fp32": 4, "bf16": 2}
# DDP's bucket: the last bucket's reduction has no compute left to
# hide behind.
BUCKET_BYTES = 25 * 2**20


def gathered_bytes(training):
    """Bytes per weight FSDP2 gathers: its param_dtype, bf16 (fp8 and
    fp16 runs gather 16 bits too), or fp32 with no policy."""
    return 4 if training.precision == "fp32" else 2


# The fit's result on the measured runs (snippets/planner/fit.py); a
# test checks that these are what the fit returns.
FIT = Fit(
    a100_gemm_share=0.648,
    h100_gemm_share=0.556,
    attention_share=0.229,
    hbm_passes=1.3,
    fused_speedup=1.28,
    fp8_speedup=1.7,
    overlap=0.502,
)


@dataclass(frozen=True)
class LayerShape:
    """One layer's matrices and what its activations keep, in units of
    the hidden size h (Korthikanti et al. 2022, section 4, with grouped
    KV heads and gated MLPs)."""

    weights: int  # of the matrices a token goes through (top_k experts)
    params: int  # of all its matrices (every expert) and two norms
    expert_params: int  # of those, the experts'
    modules: int  # two norms, QKV and output projections, the MLP's
    module: int  # the largest: the MLP's matrix or the fused QKV
    # bytes per token: `replicated` stays whole on each tensor-parallel
    # rank unless sequence parallelism splits it too, `split` is divided
    # among the ranks, and `scores` is per key of the attention matrix,
    # which a flash-attention kernel never stores.
    replicated: float
    split: float
    scores: float
    # torchtitan's per-op selective recomputation ("per-op"): the weights
    # of the matrix multiplies it runs again, and what it keeps per token
    # beside the layer's input: `op_split` divided among the
    # tensor-parallel ranks, `op_whole` (a row-parallel output before
    # its reduction) not.
    op_recomputed: int
    op_split: float
    op_whole: float


def layer_shape(m):
    """The LayerShape of one layer of the model `m`."""
    h, f, kv, q = m.hidden, m.ffn, m.kv_width, m.q_width
    k, e = m.top_k, m.experts
    mlp = 3 if m.gated else 2  # matrices, and tensors it keeps of f
    router = h * e if e > 1 else 0
    attention = 2 * h * q + 2 * h * kv
    mask = 1 if m.dropout else 0  # 1-byte dropout masks
    return LayerShape(
        weights=attention + k * mlp * h * f + router,
        params=attention + e * mlp * h * f + router + 2 * h,
        expert_params=e * mlp * h * f if e > 1 else 0,
        modules=2 + 2 + mlp,
        module=max(h * f, h * (q + 2 * kv)),
        # norm inputs, attention input, MLP input, dropout masks
        replicated=2 * 2 + 2 + 2 + 2 * mask,
        # queries, keys and values, attention output, and the MLP's
        # tensors (with experts, a copy of the input and the tensors of
        # each of the top_k experts a token goes to)
        split=2 * q / h
        + 4 * kv / h
        + 2 * q / h
        + k * mlp * 2 * f / h
        + (2 * k if e > 1 else 0),
        # softmax output, with dropout its mask and output too
        scores=(2 + 3 * mask) * m.heads / h,
        # In forward order the layer multiplies by wq, wk, wv, wo, w1,
        # (w3,) w2; the policy keeps the 1st, 3rd, 5th and 7th outputs
        # and runs wk, wo and the MLP's 6th again. Both shapes recompute
        # h x kv, h x h and h x f weights; both keep the queries, the
        # values, w1's output and attention's output, and the gated MLP
        # also w2's.
        op_recomputed=h * kv + h * q + k * h * f,
        op_split=2 * q / h + 2 * kv / h + k * 2 * f / h + 2 * q / h,
        op_whole=2 if m.gated else 0,
    )


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


@dataclass(frozen=True)
class Links:
    """Inside a node, NVLink at what a ring reaches; across nodes, each
    GPU's share of its node's NICs, at what NCCL reaches on one."""

    nvlink: float  # GB/s
    network: float  # GB/s
    gpus_per_node: int

    @classmethod
    def of(cls, c, fit):
        nvlink = c.nvlink_GBps * NVLINK_SHARE[c.gpu]
        per_gpu = c.nics_per_node * c.nic_GBps / c.gpus_per_node
        return cls(nvlink, per_gpu * NETWORK_SHARE[c.gpu], c.gpus_per_node)

    def group(self, inner, size, pooled=False):
        """(GB/s, nodes) of a group of `size` GPUs that sit `inner`
        apart (the degrees inside it, in the order tp, cp, dp, pp): a
        node holds g / inner of them, and the group spans size / that
        many nodes. Across nodes the group's ring gets one GPU's NIC;
        `pooled`, the NICs of all its GPUs in a node, since NCCL runs
        one ring per NIC side by side (capped by NVLink, which every
        byte still crosses)."""
        g = self.gpus_per_node
        here = max(1, min(size, g // inner))  # the group's GPUs per node
        nodes = -(-size // here)
        nics = here if pooled else 1
        fast = min(self.nvlink, nics * self.network)
        return (self.nvlink if nodes == 1 else fast, nodes)


def estimate(job, fit=FIT):
    """Seconds per step, by part, and GB per GPU of one layout."""
    shape = layer_shape(job.model)
    return {
        "step_s": step_seconds(job, fit, shape),
        "memory_per_gpu_GB": memory_GB(job, shape),
    }


def stored_bytes(m, shape, *, micro_batch, tp, cp, sp, flash):
    """Bytes one layer keeps for one micro-batch, nothing recomputed,
    on each of `tp` ranks, `sp` with sequence parallelism."""
    h, s = m.hidden, m.seq_len
    scores = 0 if flash else shape.scores * s
    stored = shape.replicated / (tp if sp else 1)
    stored += (shape.split + scores) / tp
    return stored * micro_batch * s / cp * h


def op_kept_bytes(job, shape):
    """Bytes one layer keeps for one micro-batch under torchtitan's
    per-op selective recomputation (its _save_list, with every second
    matrix multiply left out): the layer's input, which the checkpoint
    keeps, the outputs of the multiplies and the attention kernel it
    saves, and, with sequence parallelism, the reduce-scatters'
    outputs."""
    m, lay = job.model, job.layout
    tp, sp = lay.tp, lay.sequence_parallel
    tokens = job.training.micro_batch * m.seq_len / lay.cp
    per_token = 2 / (tp if sp else 1) + shape.op_split / tp + shape.op_whole
    if sp and tp > 1:
        per_token += 2 * 2 / tp
    return per_token * tokens * m.hidden


def job_stored_bytes(job, shape):
    """stored_bytes for the job's micro-batch and layout."""
    lay, t = job.layout, job.training
    return stored_bytes(
        job.model,
        shape,
        micro_batch=t.micro_batch,
        tp=lay.tp,
        cp=lay.cp,
        sp=lay.sequence_parallel,
        flash=t.flash_attention,
    )


@dataclass(frozen=True)
class LayerSeconds:
    """One layer, one micro-batch: the forward's compute, the backward's
    (recomputation included), the tensor- and context-parallel
    collectives of each pass, and ZeRO-3's gather and reduce-scatter of
    the layer's weights, before any overlap."""

    forward: float
    backward: float
    tp_forward: float
    tp_backward: float
    gather: float
    reduce: float
    weight_grad: float  # the backward's W half: the weights' gradients
    alltoall: float = 0.0  # expert parallelism's, both passes


def layer_seconds(job, fit, shape, links):
    """LayerSeconds of the job's layers. The weights' matrix multiplies
    (FP8 ones at the fitted speed-up over 16 bits); attention's QK^T and
    AV, 4 s h FLOPs per query (a causal flash kernel skips the masked
    half, a plain one computes all of it); the element-wise kernels at
    HBM speed."""
    m, c, t, lay = job.model, job.cluster, job.training, job.layout
    h, s, tp, cp = m.hidden, m.seq_len, lay.tp, lay.cp
    hbm = c.hbm_GBps * 1e9
    tokens = t.micro_batch * s / cp  # one micro-batch, on one GPU
    flash = t.flash_attention
    peak = c.peak_TFLOPs * 1e12
    rate = peak * gemm_share(c, fit)
    rate *= fit.fp8_speedup if t.precision == "fp8" else 1
    matmuls = 2 * shape.weights * tokens / tp / rate
    attention = 4 * s * m.q_width * tokens / tp * (0.5 if flash else 1)
    attention /= peak * fit.attention_share
    elementwise = fit.hbm_passes * job_stored_bytes(job, shape) / hbm
    if t.stack == "eager":  # one kernel per operator
        elementwise *= EAGER_BYTES["llama" if m.gated else "gpt"]
    # Tensor parallelism, per pass: two all-reduces of the b x s x h
    # output (with sequence parallelism, two all-gathers and two
    # reduce-scatters: the same bytes and hops); not overlapped.
    blocks = 1 if lay.ep > 1 else 2  # experts run whole: no MLP's
    tp_pass = blocks * ring_s(
        "all-reduce", 2 * tokens * h, tp, links.group(1, tp), fit
    )
    stack = stack_speedup(t, c, fit)
    matmuls, attention, elementwise = (
        x / stack for x in (matmuls, attention, elementwise)
    )
    cp_pass, cp_back = ring_attention_seconds(job, fit, links)
    compute = matmuls + attention + elementwise
    # Backward: twice the forward's work, but a flash kernel computes
    # the scores again (five products to the forward's two); full
    # recomputation runs the forward again, all-reduces included.
    backward = 2 * compute + (0.5 * attention if flash else 0)
    tp_back = tp_pass
    if t.tp_overlap:  # hidden behind the matrix multiplies they feed
        tp_pass, tp_back = (
            exposed(tp_pass, matmuls, fit),
            exposed(tp_pass, 2 * matmuls, fit),
        )
    tp_forward, tp_backward = tp_pass + cp_pass, tp_back + cp_back
    if lay.recompute == "full":
        backward += compute
        tp_backward += tp_forward
        if t.distribute_saved_activations and not lay.sequence_parallel:
            # the layer's input gathered from its pieces first
            link = links.group(1, tp)
            tp_backward += ring_s("all-gather", 2 * tokens * h, tp, link, fit)
    elif lay.recompute == "selective" and not flash:
        # the attention core again: its products and its softmax
        scores = shape.scores * s * tokens * h / tp
        backward += attention + fit.hbm_passes * scores / hbm
    elif lay.recompute == "per-op":
        # every second matrix multiply and every element-wise kernel
        # again (and attention, if no flash kernel saved its output);
        # the tensor-parallel collectives too, as with full
        backward += matmuls * shape.op_recomputed / shape.weights
        backward += elementwise + (0 if flash else attention)
        tp_backward += tp_forward
    gather, reduce = sharded_seconds(job, fit, shape, links)
    calls = 6 if lay.recompute in ("full", "per-op") else 4
    return LayerSeconds(
        compute,
        backward,
        tp_forward,
        tp_backward,
        gather,
        reduce,
        matmuls,
        calls * alltoall_seconds(job, links),
    )


def alltoall_seconds(job, links):
    """Seconds of one of expert parallelism's all-to-alls (dispatch or
    combine; a step runs two per layer forward and two backward, and
    two more where recomputation runs the forward again), not
    overlapped. Each GPU sends each of its tokens (b s / (cp tp) with
    sequence parallelism) to top_k experts: moe_alltoall_bytes
    (snippets/experts/alltoall.py), of which (ep - 1)/ep leaves the
    GPU. The ep GPUs sit next to each other: what goes to GPUs of the
    same node crosses NVLink, the rest the network, at the same time."""
    m, lay = job.model, job.layout
    ep = lay.ep
    if ep == 1:
        return 0.0
    split = lay.cp * (lay.tp if lay.sequence_parallel else 1)
    tokens = job.training.micro_batch * m.seq_len // split
    one = moe_alltoall_bytes(1, tokens, m.hidden, m.top_k, ep)
    one = one["per_alltoall"]
    _, nodes = links.group(1, ep)
    local = ep // nodes  # GPUs of the group on one node
    inside = one * (local - 1) / ep / (links.nvlink * 1e9)
    across = one * (ep - local) / ep / (links.network * 1e9)
    hop = NETWORK_HOP_US if nodes > 1 else NVLINK_HOP_US
    return hop * 1e-6 + max(inside, across)


def ring_attention_seconds(job, fit, links):
    """(forward, backward) seconds of context parallelism's exchange of
    keys and values that attention does not hide, for one layer and
    micro-batch.

    A rank holds s/cp tokens and a block of their keys and values,
    2 b (s/cp) values of each K/V head's width (the queries' width
    with kv_repeated), over tp. With zig-zag balance each of the cp
    steps runs 1/cp of the rank's attention on one block. That hides a
    transfer when the rank's s/cp tokens reach overlap_crossover_tokens
    (snippets/context/cost.py) at the fitted attention rate: attention
    grows with their square, the transfer with their number, so a
    step's attention is its transfer times s/cp over that crossover.
    The backward pass runs 2.5 times the forward's attention with a
    flash kernel, which computes the scores again.

    - ring: each of the cp - 1 steps sends the next block behind the
      step's attention; the backward pass sends the blocks again with
      their gradients, twice the bytes. Llama 3 all-gathers the blocks
      before attention: the same bytes (cp_bytes_per_layer), costed
      here as the ring's.
    - allgather (PyTorch's context_parallel): each pass all-gathers
      the blocks behind the first step's attention only; the backward
      pass then sends the gradients of K and V, in fp32 (twice a
      block's bytes), to the next rank after each of its cp steps, each
      behind the next step's attention, the last behind none."""
    m, c, t, lay = job.model, job.cluster, job.training, job.layout
    cp = lay.cp
    if cp == 1:
        return 0.0, 0.0
    flash = t.flash_attention
    GBps, nodes = links.group(lay.tp, cp)
    # bytes of a block in bf16, K and V at the KV heads' width
    gqa = 2 * 2 * t.micro_batch * m.seq_len / cp * m.kv_width / lay.tp
    latency = (NETWORK_HOP_US if nodes > 1 else NVLINK_HOP_US) * 1e-6
    rate = c.peak_TFLOPs * fit.attention_share * stack_speedup(t, c, fit)
    crossover = overlap_crossover_tokens(
        m.q_width, m.heads, m.kv_heads, rate, GBps, causal=flash
    )
    window = gqa / (GBps * 1e9) * (m.seq_len / cp) / crossover  # 1/cp
    block = gqa * (m.heads / m.kv_heads if t.kv_repeated else 1)
    transfer = block / (GBps * 1e9)
    back = 2.5 if flash else 2.0
    if t.cp_exchange == "ring":
        forward = latency + exposed(transfer, window, fit)
        backward = latency + exposed(2 * transfer, back * window, fit)
        return (cp - 1) * forward, (cp - 1) * backward
    gather = ring_s("all-gather", cp * block, cp, (GBps, nodes), fit)
    grads = latency + 2 * transfer  # fp32: 4 bytes a value
    backward = exposed(gather, back * window, fit) + grads
    backward += (cp - 1) * exposed(grads, back * window, fit)
    return exposed(gather, window, fit), backward


def gemm_share(c, fit):
    """The fitted share of the peak for the cluster's kind of GPU."""
    if c.gpu == "h100-80gb":
        return fit.h100_gemm_share
    return fit.a100_gemm_share


def sharded_seconds(job, fit, shape, links):
    """ZeRO-3 (and HSDP, inside its node): one all-gather of a layer's
    bf16 weights, and one reduce-scatter of its gradients in the
    training's reduce dtype; in one collective each (FSDP2 wraps each
    layer), or one per module. How many of each a step runs is
    fsdp_collectives' business."""
    lay = job.layout
    if lay.zero not in (3, "hsdp"):
        return 0.0, 0.0
    params = layer_params(shape, lay)
    dp_link = links.group(lay.tp * lay.cp, lay.dp, job.training.pooled_nics)
    over = (links.nvlink, 1) if lay.zero == "hsdp" else dp_link
    n = 1 if job.training.fsdp_unit == "layer" else shape.modules
    grad = REDUCE_BYTES[job.training.reduce_dtype]
    size = gathered_bytes(job.training) * params / n
    gather = n * ring_s("all-gather", size, job.shard, over, fit)
    reduce = n * ring_s(
        "reduce-scatter", grad * params / n, job.shard, over, fit
    )
    return gather, reduce


def fsdp_collectives(job):
    """(forward gathers, backward gathers, reduce-scatters, whether the
    reduce-scatters wait for the end of the step) of each layer in one
    step of ZeRO-3 or HSDP, as FSDP2 and torch.pipelining run them.

    Without a pipeline, every forward gathers the layer; every backward
    gathers it again unless reshard_after_forward=False kept it; the
    gradients are reduce-scattered in every backward (gradient_sync
    "every") or only in the last micro-batch's ("deferred",
    set_requires_gradient_sync(False) before). With a pipeline, the
    stage turns resharding after backward and the sync off until its
    last micro-batch (torch 2.13, pipelining/stage.py): the weights
    stay gathered after each backward, so a forward gathers only before
    the first backward, and the gradients are reduced once, after the
    whole schedule, with no compute left to hide behind."""
    lay, micro = job.layout, job.microbatches
    if lay.zero not in (3, "hsdp"):
        return 0, 0, 0, False
    keep = not lay.reshard_after_forward
    if lay.pp == 1:
        reduces = micro if lay.gradient_sync == "every" else 1
        return micro, 0 if keep else micro, reduces, False
    if keep:  # gathered once, kept to the end of the step
        return 1, 0, 1, True
    # resharded after each forward: the warm-up's forwards gather, and
    # every backward gathers what its forward resharded
    return min(micro, lay.pp), micro, 1, True


def layer_params(shape, lay):
    """A layer's parameters on one GPU. Without expert parallelism
    every matrix is split among the tp ranks; with it, each of the ep
    ranks holds experts / ep experts whole (Megatron-Core's MoE
    parallel folding, expert tensor parallelism 1)."""
    if lay.ep == 1:
        return shape.params / lay.tp
    dense = shape.params - shape.expert_params
    return dense / lay.tp + shape.expert_params / lay.ep


def expert_weights(job, shape, i):
    """The experts' parameters on a GPU of stage i under expert
    parallelism (0 without): their copies are spread over the
    tp x cp x dp / ep GPUs of the stage that hold the same experts."""
    if job.layout.ep == 1:
        return 0.0
    return job.stages[i] * shape.expert_params / job.layout.ep


def stage_weights(job, shape, i):
    """Parameters on each GPU of pipeline stage i: its layers, and the
    embedding on the first stage, the output layer on the last."""
    m, lay = job.model, job.layout
    embedding = m.vocab * m.hidden / lay.tp
    weights = job.stages[i] * layer_params(shape, lay)
    if i == 0:
        weights += embedding
    if i == lay.pp - 1 and not (lay.pp == 1 and m.tied_embeddings):
        weights += embedding  # the output layer
    return weights


def collective_bytes(job, stage=0):
    """Bytes the data-parallel collectives of one step move on a GPU of
    pipeline `stage`, by kind, counted as FSDP2 and DDP hand them over:
    an all-gather's whole output, a reduce-scatter's whole input, an
    all-reduce's buffer. DDP all-reduces its gradients once; ZeRO-3 and
    HSDP gather and reduce-scatter each unit (the layers, the embedding
    and the output layer) as often as fsdp_collectives says, and HSDP
    all-reduces each reduced shard with its replicas once. The
    step's time (step_seconds) charges the layers' collectives only."""
    lay, t = job.layout, job.training
    weights = stage_weights(job, layer_shape(job.model), stage)
    grad = REDUCE_BYTES[t.reduce_dtype] * weights
    moved = dict(all_reduce=0.0, all_gather=0.0, reduce_scatter=0.0)
    if lay.zero == 0:
        moved["all_reduce"] = grad
    elif lay.zero in (1, 2):
        every = lay.zero == 2 and lay.gradient_sync == "every"
        moved["reduce_scatter"] = grad * (job.microbatches if every else 1)
        moved["all_gather"] = 2 * weights
    else:
        forward, backward, reduces, _ = fsdp_collectives(job)
        size = gathered_bytes(t) * weights
        moved["all_gather"] = (forward + backward) * size
        moved["reduce_scatter"] = reduces * grad
        if lay.zero == "hsdp":
            moved["all_reduce"] = grad / job.shard
    return moved


def head_seconds(job, fit):
    """The output layer and the loss, forward and backward, on the
    last stage."""
    m, c, t, lay = job.model, job.cluster, job.training, job.layout
    tokens = t.micro_batch * m.seq_len / lay.cp
    rate = c.peak_TFLOPs * 1e12 * gemm_share(c, fit)
    hbm = c.hbm_GBps * 1e9
    head = 2 * m.hidden * m.vocab * tokens / lay.tp / rate
    head += fit.hbm_passes * LOGIT_BYTES * m.vocab * tokens / lay.tp / hbm
    return head * 3 / stack_speedup(t, c, fit)


def stack_speedup(training, c, fit):
    """How much faster a fused software stack (Megatron-LM, NeMo and
    the DeepSpeed stacks built on them: fused element-wise kernels,
    Transformer Engine) runs a layer's compute than PyTorch-native
    code (FSDP2 and torch.compile, as in torchtitan and the course's
    script), on an H100. On an A100 the planner takes the two to run
    alike: every fitted A100 row ran a fused stack, so the rows cannot
    tell, and PyTorch's FSDP on A100s (MosaicML's runs, in no fit)
    reached a higher MFU than any fused A100 run."""
    fused = training.stack == "fused" and c.gpu == "h100-80gb"
    return fit.fused_speedup if fused else 1.0


def send_seconds(job, links):
    """A stage's sends per micro-batch: activations on and gradients
    back, v times with v chunks."""
    m, lay, t = job.model, job.layout, job.training
    if lay.pp == 1:
        return 0.0
    tokens = t.micro_batch * m.seq_len / lay.cp
    size = 2 * tokens * m.hidden
    gather = 0.0
    if lay.sequence_parallel:
        size /= lay.tp
    elif t.scatter_gather_sends and lay.tp > 1:
        # a piece each, gathered over NVLink on the other side
        gather = ring_s(
            "all-gather", size, lay.tp, links.group(1, lay.tp), None
        )
        size /= lay.tp
    GBps, nodes = links.group(lay.tp * lay.cp * lay.dp, lay.pp)
    latency = NETWORK_HOP_US if nodes > 1 else NVLINK_HOP_US
    one = latency * 1e-6 + size / (GBps * 1e9) + gather
    return 2 * lay.chunks * one


def step_seconds(job, fit, shape):
    """Seconds of one step, by part: the pipeline's fullest stage sets
    the pace; filling and draining add (p - 1)/v of its time."""
    lay, micro = job.layout, job.microbatches
    links = Links.of(job.cluster, fit)
    one = layer_seconds(job, fit, shape, links)
    sharded, first, last = sharded_step_seconds(job, fit, one)
    tp_cp = one.tp_forward + one.tp_backward
    per_layer = one.forward + one.backward + tp_cp + sharded / micro
    per_layer += one.alltoall
    head = head_seconds(job, fit)
    send = send_seconds(job, links)
    stage = [n * per_layer + send for n in job.stages]
    stage[-1] += head
    slowest = max(range(lay.pp), key=stage.__getitem__)
    n = job.stages[slowest]
    # The bubble as Megatron-LM measures it: (p - 1)/(v m) of the work.
    idle, share = 0.0, 1.0
    if lay.pp > 1:
        plain = "1f1b" if lay.schedule == "zb-h1" else lay.schedule
        idle = bubble_fraction(lay.pp, micro, plain, lay.chunks)
    if lay.schedule == "zb-h1":
        # Qi et al. 2023: (p - 1)(F + B - 2W) idle per device, with B the
        # whole backward pass and W its weight half, against 1F1B's
        # (p - 1)(F + B) (snippets/pipeline/zero_bubble.py)
        f, b = one.forward + one.tp_forward, one.backward + one.tp_backward
        times = (f, b, one.weight_grad)
        share = published_bubble(lay.pp, "zb1p", *times)
        share /= published_bubble(lay.pp, "1f1b", *times)
    last_head = head if slowest == lay.pp - 1 else 0.0
    tail, optimizer = data_parallel_seconds(job, fit, shape, links, one)
    parts = {
        "compute": micro * (n * (one.forward + one.backward) + last_head),
        "tensor_context_parallel": micro * n * tp_cp,
        "expert_parallel": micro * n * one.alltoall,
        # the first layer's gather, with nothing before it, each time;
        # under a pipeline, the stage's reduce-scatters at the end
        "data_parallel": n * (sharded + last) + first + tail,
        "pipeline_sends": micro * send,
        "bubble": share * megatron_ratio(idle) * micro * stage[slowest],
        "optimizer": optimizer,
    }
    parts["total"] = sum(parts.values())
    return parts


def sharded_step_seconds(job, fit, one):
    """(seconds of one layer's ZeRO-3 collectives in a step not hidden
    behind its compute, of the first layer's gathers, which have no
    compute before them, of one layer's reduce-scatter left for the end
    of the step) for the collectives fsdp_collectives counts."""
    forward, backward, reduces, at_end = fsdp_collectives(job)
    if not forward:
        return 0.0, 0.0, 0.0
    f = one.forward + one.tp_forward
    b = one.backward + one.tp_backward
    g = one.gather
    seconds = forward * exposed(g, f, fit)
    if at_end:
        return seconds + backward * exposed(g, b, fit), forward * g, one.reduce
    both = min(reduces, backward)  # backward passes that gather and reduce
    seconds += both * exposed(g + one.reduce, b, fit)
    seconds += (backward - both) * exposed(g, b, fit)
    seconds += (reduces - both) * exposed(one.reduce, b, fit)
    return seconds, forward * g, 0.0


def data_parallel_seconds(job, fit, shape, links, one):
    """(seconds of the gradient reduction not hidden, of the optimizer
    step). The gradients of the fullest stage are reduced while its
    last micro-batch runs backward, except the last bucket, which holds
    the embedding's gradient."""
    m, lay, micro = job.model, job.layout, job.microbatches
    embedding = m.vocab * m.hidden / lay.tp
    params = max(job.stages) * layer_params(shape, lay) + embedding
    if lay.pp == 1 and not m.tied_embeddings:
        params += embedding  # the output layer, apart
    grads = REDUCE_BYTES[job.training.reduce_dtype] * params
    window = max(job.stages) * (one.backward + one.tp_backward)
    last = min(1.0, max(BUCKET_BYTES, 2 * embedding) / grads)
    ranks = lay.dp * lay.cp  # the GPUs that hold the same weights
    dp_link = links.group(lay.tp * lay.cp, lay.dp, job.training.pooled_nics)
    if lay.zero == "hsdp":  # one GPU of each node per ring of replicas
        dp_link = links.group(lay.tp * lay.cp * job.shard, ranks // job.shard)

    def reduced(kind, ranks_, size):
        comm = ring_s(kind, size, ranks_, dp_link, fit)
        return comm * last + exposed(comm * (1 - last), window, fit)

    tail = 0.0
    if lay.zero == 0:
        tail = reduced("all-reduce", ranks, grads)
    elif lay.zero in (1, 2):
        if lay.zero == 2 and lay.gradient_sync == "every" and micro > 1:
            # ZeRO-2 that keeps only its shard (DeepSpeed's) reduces
            # every micro-batch's gradients, each behind that
            # micro-batch's backward pass.
            rs = ring_s("reduce-scatter", grads, ranks, dp_link, fit)
            tail = micro * exposed(rs, window, fit)
        else:  # reduced once, after the last micro-batch
            tail = reduced("reduce-scatter", ranks, grads)
        # and the updated bf16 weights gathered after the optimizer step
        tail += ring_s("all-gather", 2 * params, ranks, dp_link, fit)
    elif lay.zero == "hsdp":  # each GPU's shard, with its replicas
        tail = reduced("all-reduce", ranks // job.shard, grads / job.shard)
    shards = {0: 1, "hsdp": job.shard}.get(lay.zero, ranks)
    hbm = job.cluster.hbm_GBps * 1e9
    return tail, OPTIMIZER_BYTES * params / shards / hbm


def memory_GB(job, shape):
    """GB on the GPU that needs the most: the first stage holds the
    most micro-batches in flight, the last also holds the logits."""
    m, t, lay = job.model, job.training, job.layout
    tp, pp = lay.tp, lay.pp
    tokens = t.micro_batch * m.seq_len / lay.cp
    full = lay.recompute == "full"
    stored = job_stored_bytes(job, shape)
    if lay.recompute == "selective":
        # the attention core is recomputed: its s x s scores, softmax
        # and dropout are not kept (Korthikanti et al. 2022, Table 2)
        stored = stored_bytes(
            m,
            shape,
            micro_batch=t.micro_batch,
            tp=tp,
            cp=lay.cp,
            sp=lay.sequence_parallel,
            flash=True,
        )
    keep = stored
    if full:
        split = lay.sequence_parallel or t.distribute_saved_activations
        keep = 2 * tokens * m.hidden / (tp if split else 1)
    if lay.recompute == "per-op":
        keep = op_kept_bytes(job, shape)
    worst = None
    # In-flight micro-batches fall from stage to stage, so the GPU that
    # needs the most is the first, the last or the first of the fullest.
    stages = job.stages
    for i in sorted({0, pp - 1, stages.index(max(stages))}):
        n = stages[i]
        weights = stage_weights(job, shape, i)
        experts = expert_weights(job, shape, i)
        gb = state_bytes(
            weights - experts,
            lay.zero,
            lay.dp * lay.cp,
            job.shard,
            whole_grads(job),
        )
        if experts:  # sharded over the copies of the GPU's experts
            copies = lay.tp * lay.cp * lay.dp // lay.ep
            more = state_bytes(
                experts, lay.zero, copies, copies, whole_grads(job)
            )
            gb = {k: gb[k] + more[k] for k in gb}
        acts = in_flight(job, i) * n * keep
        if lay.recompute in ("full", "per-op"):
            acts += stored  # the layer being recomputed holds it all
        if i == pp - 1:
            acts += LOGIT_BYTES * m.vocab * tokens / tp
        gb["activations"] = acts
        gb["gathered"], gb["unsharded"] = unsharded_bytes(job, shape, weights)
        gb = {k: x / 1e9 for k, x in gb.items()}
        if worst is None or sum(gb.values()) > sum(worst.values()):
            worst = gb
    worst["reserve"] = t.reserve_GB
    worst["total"] = sum(worst.values())
    return worst


def in_flight(job, i):
    """Micro-batches whose activations stage i holds at its peak."""
    lay, micro = job.layout, job.microbatches
    pp, v = lay.pp, lay.chunks
    if lay.schedule == "gpipe":
        return micro
    if lay.schedule == "zb-h1":  # W passes held back: pp on every stage
        return min(pp, micro)
    if v == 1:  # 1F1B: stage i holds pp - i micro-batches
        return min(pp - i, micro)
    # interleaved: more warm-up, counted in chunks of 1/v
    return min(micro * v, 2 * (pp - i - 1) + (v - 1) * pp + 1) / v


def whole_grads(job):
    """Whether ZeRO-2, ZeRO-3 or HSDP holds every gradient of the GPU's
    weights whole until the step's last backward: with the sync
    deferred, over several micro-batches or under a pipeline (which
    always defers it)."""
    lay = job.layout
    deferred = lay.gradient_sync == "deferred" or lay.pp > 1
    return deferred and (lay.pp > 1 or job.microbatches > 1)


def unsharded_bytes(job, shape, weights):
    """(FSDP's working set, what it holds whole beyond it) in bytes, on
    a GPU with `weights` parameters, for ZeRO-3 and HSDP. The working
    set: this unit's bf16 weights and the next one's, gathered, and
    this unit's bf16 gradients. Beyond it: every weight, gathered, when
    none is resharded between forward and backward (a pipeline's stage,
    or reshard_after_forward=False); every gradient, in the reduce
    dtype, when whole_grads."""
    lay, t, m = job.layout, job.training, job.model
    if lay.zero not in (3, "hsdp"):
        return 0.0, 0.0
    unit = layer_params(shape, lay)
    unit = unit if t.fsdp_unit == "layer" else shape.module / lay.tp
    unit = max(unit, m.vocab * m.hidden / lay.tp)
    size = gathered_bytes(t)
    held = 0.0
    if lay.pp > 1 or not lay.reshard_after_forward:
        held += max(0.0, size * weights - 2 * size * unit)
    if whole_grads(job):
        grad = REDUCE_BYTES[t.reduce_dtype]
        held += max(0.0, grad * weights - size * unit)
    return 3 * size * unit, held


def state_bytes(weights, zero, ranks, shard, whole_grads=False):
    """Bytes of weights, gradients and Adam state for `weights`
    parameters on a GPU, split as each ZeRO stage splits them
    (snippets/zero/memory.py) over `ranks`, HSDP over its `shard`. 16
    bytes a parameter either way: ZeRO-1 and ZeRO-2 in the ZeRO paper's
    recipe (bf16 weights and gradients, fp32 master weights and Adam
    moments), FSDP2 (ZeRO-3, HSDP) in its own (fp32 shards that are the
    master weights, fp32 gradients, the moments) and DDP as the script
    runs it (fp32 weights and gradients under bf16 autocast). With
    `whole_grads`, ZeRO-2 holds its gradients whole, as ZeRO-1 does
    (FSDP2's whole gradients are counted by unsharded_bytes)."""
    strategy = {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}.get(zero)
    over = ranks
    if zero == "hsdp":
        strategy, over = "zero3", shard
    if zero == 2 and whole_grads:
        strategy = "zero1"
    # DDP keeps fp32 weights under autocast, as the script does
    fp32 = strategy in ("zero3", "ddp")
    recipe = RECIPES["fp32" if fp32 else "bf16 + fp32 master"]
    sharded = SHARDED[strategy]
    return {
        name: weights * size / (over if kind in sharded else 1)
        for name, kind, size in zip(
            ("parameters", "gradients", "optimizer"),
            ("param", "grad", "optim"),
            recipe,
            strict=True,
        )
    }


# --8<-- [end:model]

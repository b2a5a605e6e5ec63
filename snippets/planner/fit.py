"""The cost model's parameters, fitted to the measured runs of
snippets/planner/runs.py: on every row for the planner's defaults, and
on every source but one to predict that source's rows
(snippets/planner/accuracy.py, by_source).

The fit is a compass search, written out: from a stated start, try
each parameter a step up and a step down, keep the first move that
lowers the error, and halve every step when none does. It stops when
the steps are a thousandth of each parameter's range. The error is the
mean of the squared logarithms of predicted over measured tokens per
second per GPU, so a row predicted twice too fast costs as much as one
predicted twice too slow. Nothing is random: the same table always
gives the same parameters.
"""

# --8<-- [start:job]
import functools
import math
from dataclasses import asdict, fields

from snippets.planner import runs
from snippets.planner.cost import FIT, Fit, layer_shape, step_seconds
from snippets.planner.layouts import check_layout, evaluate_layout
from snippets.planner.model import GPUS, cluster

PRECISION = {"fp8-linear": "fp8"}  # Float8 matmuls; fp16 runs as bf16
# Frameworks with Megatron's fused kernels: Megatron-LM, NeMo, the
# DeepSpeed runs on Megatron's model code (BLOOM, MT-NLG, Megatron-LM's
# own ZeRO-3 comparison) and metaseq (OPT), which builds Megatron's
# model-parallel layers and fused softmax kernels into its own. The
# others, torchtitan and Meta's Llama 3 stack, count as PyTorch-native,
# compiled unless the row says eager.
FUSED = ("Megatron", "NeMo", "DeepSpeed", "metaseq")


def job(run):
    """The planner's model, cluster, training and layouts for a run:
    one layout, or one per chunk count where the run's sources do not
    give it (the run counts as the fastest of them)."""
    model = runs.planner_model(run)
    # GPT-style models train with dropout (1-byte masks); Llama has none.
    model["dropout"] = not run.gated
    card = GPUS[run.gpu]["gpu_memory_GB"] * run.gpu_memory_GB / 80
    network = {}
    if run.nics_per_node is not None:
        network = dict(
            nics_per_node=run.nics_per_node, nic_GBps=run.nic_Gbps / 8
        )
    nodes = cluster(
        run.gpu,
        run.nodes,
        gpus_per_node=run.gpus_per_node,
        gpu_memory_GB=round(card, 1),
        peak_TFLOPs=run.peak_TFLOPs,
        hbm_GBps=run.hbm_GBps,
        **network,
    )
    training = dict(
        global_batch_tokens=run.global_batch_tokens,
        micro_batch=run.micro_batch or 1,  # not published: the smallest
        flash_attention=run.flash_attention is not False,
        precision=PRECISION.get(run.precision, run.precision),
        # fp16 runs reduce in 16 bits; bf16 ones in fp32 (FSDP2's
        # policy, Megatron-LM's main gradients under bf16), unless the
        # row says otherwise.
        reduce_dtype=run.reduce_dtype
        or ("bf16" if run.precision == "fp16" else "fp32"),
        stack="fused"
        if run.framework.startswith(FUSED)
        else "eager"
        if "eager" in run.framework
        else "native",
        # DeepSpeed's ZeRO-3 gathers module by module, FSDP by layer.
        fsdp_unit="module"
        if run.framework.startswith("DeepSpeed")
        else "layer",
        distribute_saved_activations=run.distribute_saved_activations,
        # Megatron-LM's runs send activations in pieces (section 4.1)
        scatter_gather_sends=run.framework == "Megatron-LM",
        # NeMo's recipes overlap TP (tp_comm_overlap with Transformer
        # Engine's userbuffers); torchtitan's async TP rows say so
        tp_overlap=run.framework.startswith("NeMo")
        or "async TP" in run.framework,
        # torchtitan at the benchmark's commit: PyTorch's
        # context_parallel with its default all-gather rotater, and
        # repeat_kv before attention (models/llama/model.py)
        cp_exchange="allgather"
        if run.framework.startswith("torchtitan")
        else "ring",
        kv_repeated=run.framework.startswith("torchtitan"),
        # DeepSpeed's ZeRO-3 of Megatron-LM's Table 2 sustained one NIC's
        # worth per GPU (the page's worked case); PyTorch's rings over
        # whole nodes get the node's NICs (MosaicML's FSDP runs).
        pooled_nics=not run.framework.startswith("DeepSpeed"),
    )
    layout = dict(
        dp=run.dp,
        tp=run.tp,
        pp=run.pp,
        cp=run.cp,
        ep=run.ep,
        zero=run.zero,
        recompute=run.recompute,
        sequence_parallel=run.sequence_parallel,
        embedding_slots=run.embedding_slots,
        schedule="1f1b" if run.schedule == "none" else run.schedule,
        chunks=run.chunks or 1,
    )
    # DeepSpeed and Megatron-FSDP (NeMo's FSDP) reduce ZeRO-2 and ZeRO-3
    # gradients every micro-batch: MegatronFSDP delays the reduction
    # only for its "no_shard" and "optim" strategies.
    if training["stack"] == "fused" and run.zero in (2, 3):
        layout["gradient_sync"] = "every"
    if run.gradient_sync is not None:  # the framework's own rule
        layout["gradient_sync"] = run.gradient_sync
    layouts = [layout]
    if run.chunks is None:  # one rule for every such row
        layouts = [
            {**layout, "chunks": unpublished_chunks(layout, model, nodes)}
        ]
    return model, nodes, training, layouts


def unpublished_chunks(layout, model, nodes, most=8):
    """Chunks per GPU where a source does not publish them: the most,
    up to `most`, that divide the layers of every stage (deep
    interleaving, as Megatron-LM's and Llama 3's runs use)."""
    for chunks in range(most, 1, -1):
        try:
            check_layout({**layout, "chunks": chunks}, model, nodes)
        except ValueError:
            continue
        return chunks
    raise ValueError(f"no chunk count divides the stages of {layout}")


def predict(run, fit=FIT):
    """The planner's evaluate_layout for the run."""
    model, nodes, training, [layout] = job(run)
    return evaluate_layout(model, nodes, training, layout, fit)


# --8<-- [end:job]

# --8<-- [start:fit]
FITTED = runs.RUNS  # every row; by_source holds each source out
# Where the search starts, and the range each parameter may take.
START = Fit(
    a100_gemm_share=0.7,
    h100_gemm_share=0.7,
    attention_share=0.4,
    hbm_passes=4.0,
    fused_speedup=1.0,
    fp8_speedup=2.0,
    overlap=0.5,
)
BOUNDS = dict(
    a100_gemm_share=(0.3, 1.0),
    h100_gemm_share=(0.3, 1.0),
    attention_share=(0.05, 1.0),
    hbm_passes=(0.0, 20.0),
    fused_speedup=(0.5, 2.0),
    fp8_speedup=(1.0, 2.0),
    overlap=(0.0, 1.0),
)


def _prepared(rows):
    """Each row's checked inputs, measured tokens/s per GPU and GPUs:
    checked once, so that the search only does arithmetic."""
    out = []
    for run in rows:
        model, nodes, training, layouts = job(run)
        jobs = [check_layout(lay, model, nodes, training) for lay in layouts]
        measured = runs.tokens_per_s_per_gpu(run)
        shape = layer_shape(jobs[0].model)
        out.append((jobs, shape, measured, run.gpus))
    return out


def error(fit, prepared):
    """Mean squared log of predicted over measured tokens/s per GPU."""
    total = 0.0
    for jobs, shape, measured, gpus in prepared:
        step = min(step_seconds(j, fit, shape)["total"] for j in jobs)
        predicted = jobs[0].training.global_batch_tokens / step / gpus
        total += math.log(predicted / measured) ** 2
    return total / len(prepared)


def fit(rows=FITTED, start=START):
    """(parameters, error, evaluations): the compass search's result.
    A process searches once for the same rows from the same start: the
    planner-accuracy page's labs each run the blocks before them again,
    and with them the same fits (the rows are frozen dataclasses, so a
    tuple of them is a key)."""
    return _search(tuple(rows), start)


@functools.cache
def _search(rows, start):
    prepared = _prepared(rows)
    x = asdict(start)
    step = {k: (hi - lo) / 4 for k, (lo, hi) in BOUNDS.items()}
    best, evaluations = error(start, prepared), 1
    while any(step[k] > (hi - lo) / 1000 for k, (lo, hi) in BOUNDS.items()):
        moved = False
        for key, (lo, hi) in BOUNDS.items():
            for sign in (1, -1):
                y = {**x, key: min(hi, max(lo, x[key] + sign * step[key]))}
                value = error(Fit(**y), prepared)
                evaluations += 1
                if value < best:
                    best, x, moved = value, y, True
                    break
        if not moved:  # take smaller steps
            step = {k: s / 2 for k, s in step.items()}
    return Fit(**x), best, evaluations


def rounded(parameters, digits=3):
    """The parameters to `digits` significant figures, as FIT keeps
    them."""
    return Fit(
        **{
            f.name: float(f"{getattr(parameters, f.name):.{digits}g}")
            for f in fields(Fit)
        }
    )


# --8<-- [end:fit]

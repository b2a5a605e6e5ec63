"""How one parallel layout of a job does on a cluster, and the search
over every layout the cluster allows."""

# --8<-- [start:model]
from snippets.activations.memory import (
    activation_bytes_per_gpu,
    activation_bytes_per_layer,
)
from snippets.checks import choice, count, flag
from snippets.comms.links import ring_bandwidth_GBps
from snippets.comms.overlap import MiB
from snippets.pipeline.bubble import bubble_fraction, megatron_ratio
from snippets.pipeline.tensor import tp_bytes_per_layer
from snippets.planner.model import (
    as_dict,
    check_cluster,
    check_model,
    check_training,
    parameter_count,
)
from snippets.units import GB
from snippets.zero.hsdp import hsdp
from snippets.zero.memory import SHARDED
from snippets.zero.traffic import comm_bytes

ZERO = (0, 1, 2, 3, "hsdp")
STAGES = ("ddp", "zero1", "zero2", "zero3")  # ZeRO stage 0 is DDP
RECOMPUTE = ("none", "selective", "full")
BYTES = {"param": 2, "grad": 2, "optim": 12}  # mixed-precision Adam
BUCKET_MB = 25  # DDP's bucket: the last one is never hidden


def check_layout(layout, model, cluster):
    """The layout as a dict, refused unless it can run on the cluster."""
    lay = as_dict(
        "layout",
        layout,
        ("dp", "tp", "pp", "zero", "recompute"),
        {"sequence_parallel": None, "embedding_slots": False},
    )
    dp, tp, pp = (count(f"layout.{k}", lay[k]) for k in ("dp", "tp", "pp"))
    zero = lay["zero"]
    if isinstance(zero, bool) or zero not in ZERO:
        raise ValueError(
            f"layout.zero must be one of 0, 1, 2, 3, 'hsdp'; got {zero!r}"
        )
    choice("layout.recompute", lay["recompute"], RECOMPUTE)
    if lay["sequence_parallel"] is None:  # free whenever tp > 1
        lay["sequence_parallel"] = tp > 1
    flag("layout.sequence_parallel", lay["sequence_parallel"])
    g, gpus = cluster["gpus_per_node"], cluster["gpus_per_node"]
    gpus *= cluster["nodes"]
    if dp * tp * pp != gpus:
        raise ValueError(
            f"layout dp x tp x pp must equal the cluster's {gpus} GPUs, "
            f"got {dp} x {tp} x {pp} = {dp * tp * pp}"
        )
    if model["heads"] % tp or model["kv_heads"] % tp:
        raise ValueError(
            f"layout.tp must divide model.heads ({model['heads']}) and "
            f"model.kv_heads ({model['kv_heads']}), got {tp}"
        )
    if g % tp and tp % g:
        raise ValueError(
            f"layout.tp must divide gpus_per_node ({g}) or, to span "
            f"nodes, be a multiple of it; got {tp}"
        )
    # Llama 3's split: the embedding and the output layer each take a
    # layer's place, so the first and last stages hold one layer fewer.
    if flag("layout.embedding_slots", lay["embedding_slots"]):
        if pp < 2 or (model["layers"] + 2) % pp:
            raise ValueError(
                "layout.embedding_slots needs pp >= 2 dividing model.layers"
                f" + 2 ({model['layers'] + 2}), got pp={pp}"
            )
    elif model["layers"] % pp:
        raise ValueError(
            f"layout.pp must divide model.layers ({model['layers']}), got {pp}"
        )
    if zero == "hsdp":
        local = g // (tp * pp) if g % (tp * pp) == 0 else 0
        if local < 2 or dp <= local or dp % local:
            raise ValueError(
                "layout.zero='hsdp' shards over the data-parallel ranks "
                "of one node and replicates across nodes: it needs "
                "tp x pp to leave 2 or more of them on a node and dp to "
                f"be a larger multiple of that; got dp={dp}, tp={tp}, "
                f"pp={pp} on {g} GPUs per node"
            )
    return lay


def microbatches(model, training, dp):
    """Micro-batches each pipeline runs per step."""
    per_pass = model["seq_len"] * training["micro_batch"] * dp
    if training["global_batch_tokens"] % per_pass:
        raise ValueError(
            f"training.global_batch_tokens ("
            f"{training['global_batch_tokens']}) must be a multiple of "
            f"seq_len x micro_batch x dp = {model['seq_len']} x "
            f"{training['micro_batch']} x {dp} = {per_pass}"
        )
    return training["global_batch_tokens"] // per_pass


def evaluate_layout(model, cluster, training, layout):
    """Memory per GPU, step time, tokens/s and MFU of one layout."""
    m, c = check_model(model), check_cluster(cluster)
    t = check_training(training)
    lay = check_layout(layout, m, c)
    dp, tp, pp, zero = lay["dp"], lay["tp"], lay["pp"], lay["zero"]
    recompute, g = lay["recompute"], c["gpus_per_node"]
    micro = microbatches(m, t, dp)
    params = parameter_count(m)
    local = params / (tp * pp)  # weights on each GPU of one replica

    # Memory: states split by ZeRO over dp (HSDP: over one node).
    shard = g // (tp * pp) if zero == "hsdp" else dp
    sharded = SHARDED["zero3" if zero == "hsdp" else STAGES[zero]]
    state = {
        kind: local * size / (shard if kind in sharded else 1) / GB
        for kind, size in BYTES.items()
    }
    layer = dict(
        seq_len=m["seq_len"],
        micro_batch=t["micro_batch"],
        hidden=m["hidden"],
        heads=m["heads"],
        tp=tp,
        sequence_parallel=lay["sequence_parallel"],
        recompute=recompute,
        flash_attention=t["flash_attention"],
    )
    # Layers on the first stage (the most loaded under 1F1B), and on
    # the fullest stage, which sets the pipeline's pace.
    fullest = m["layers"] // pp
    first = fullest
    if lay["embedding_slots"]:
        fullest = (m["layers"] + 2) // pp
        first = fullest - 1
    acts = activation_bytes_per_gpu(
        first * pp, stages=pp, microbatches=micro, **layer
    )
    if recompute == "full":  # the layer being rebuilt holds it all
        acts += activation_bytes_per_layer(**{**layer, "recompute": "none"})
    memory = {
        "parameters": state["param"],
        "gradients": state["grad"],
        "optimizer": state["optim"],
        "activations": acts / GB,
    }
    memory["total"] = sum(memory.values())

    # Compute: 6 P T, or 8 P T when every layer's forward runs twice.
    factor = 8 if recompute == "full" else 6
    flops_per_s = c["peak_TFLOPs"] * 1e12 * t["compute_efficiency"]
    compute = factor * local * t["global_batch_tokens"] / dp / flops_per_s

    # Tensor parallelism: 4 all-reduces per layer and micro-batch, 6
    # when the forward pass is recomputed; not overlapped.
    link = c["nvlink_GBps"]
    if tp > g:
        link = ring_bandwidth_GBps(
            tp, g, link, c["nics_per_node"], c["nic_GBps"]
        )
    sent = tp_bytes_per_layer(m["seq_len"], t["micro_batch"], m["hidden"], tp)
    sent *= (1.5 if recompute == "full" else 1) * fullest
    sent *= micro
    tp_s = sent / (link * GB)

    # Data parallelism, over the GPUs that hold the same weights.
    nics = c["nics_per_node"] * c["nic_GBps"]  # one node's NICs
    if zero == "hsdp":
        bytes_ = hsdp(local, shard, dp // shard)
        dp_s = bytes_["intra_node_GB"] * micro / c["nvlink_GBps"]
        dp_s += bytes_["inter_node_GB"] / min(c["nvlink_GBps"], nics / g)
    else:
        sent = comm_bytes(STAGES[zero], local, dp)
        if zero == 3:  # parameters gathered again for every micro-batch
            sent *= micro
        mates = max(1, g // (tp * pp))  # this group's GPUs on one node
        bandwidth = ring_bandwidth_GBps(
            dp, mates, c["nvlink_GBps"], 1, nics * mates / g
        )
        dp_s = sent / bandwidth
    # Overlap (snippets/comms/overlap.py): gradients are reduced during
    # the last micro-batch's backward pass; ZeRO-3 and HSDP prefetch
    # their gathers behind all the compute. The last bucket shows.
    window = compute * (factor - 2) / factor / micro
    if zero in (3, "hsdp"):
        window = compute
    last = dp_s * min(1, BUCKET_MB * MiB / (local * BYTES["grad"]))
    exposed = last + max(0, dp_s - last - window)

    # Pipeline bubble, relative to the work: (p - 1) / m.
    bubble = megatron_ratio(bubble_fraction(pp, micro, "1f1b"))
    bubble *= compute + tp_s
    step = compute + tp_s + exposed + bubble
    gpus = dp * tp * pp
    useful = 6 * params * t["global_batch_tokens"]
    return {
        "layout": lay,
        "params": params,
        "microbatches": micro,
        "memory_per_gpu_GB": memory,
        "fits": memory["total"] <= c["gpu_memory_GB"],
        "step_s": {
            "compute": compute,
            "exposed_communication": tp_s + exposed,
            "bubble": bubble,
            "total": step,
        },
        "communication_s": {
            "tensor_parallel": tp_s,
            "data_parallel": dp_s,
            "data_parallel_exposed": exposed,
        },
        "tp_spans_nodes": tp > g,
        "tokens_per_s": t["global_batch_tokens"] / step,
        "mfu": useful / (step * c["peak_TFLOPs"] * 1e12 * gpus),
    }


# --8<-- [end:model]


# --8<-- [start:search]
def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def candidate_layouts(model, cluster, training):
    """Every layout the checks accept: tp inside a node, pp a divisor
    of the layers, dp the rest, and each ZeRO stage and recomputation."""
    m, c = check_model(model), check_cluster(cluster)
    t = check_training(training)
    gpus = c["gpus_per_node"] * c["nodes"]
    for tp in divisors(c["gpus_per_node"]):
        if m["heads"] % tp or m["kv_heads"] % tp:
            continue
        for pp in divisors(gpus // tp):
            dp = gpus // (tp * pp)
            if m["layers"] % pp:
                continue
            if t["global_batch_tokens"] % (
                m["seq_len"] * t["micro_batch"] * dp
            ):
                continue
            for zero in ZERO:
                if zero != 0 and dp == 1:
                    continue
                for recompute in RECOMPUTE:
                    if recompute == "selective" and t["flash_attention"]:
                        continue  # the same as "none" without scores
                    layout = dict(
                        dp=dp, tp=tp, pp=pp, zero=zero, recompute=recompute
                    )
                    try:
                        yield check_layout(layout, m, c)
                    except ValueError:  # HSDP that this shape cannot do
                        continue


def name(layout):
    zero = layout["zero"]
    sharding = "HSDP" if zero == "hsdp" else f"ZeRO-{zero}"
    return (
        f"dp {layout['dp']}, tp {layout['tp']}, pp {layout['pp']}, "
        f"{sharding}, recompute {layout['recompute']}"
    )


def plan_layouts(model, cluster, training):
    """Every layout, ranked: those that fit first, fastest first; then
    the rest, smallest memory first. `answer` says what to do."""
    results = [
        evaluate_layout(model, cluster, training, layout)
        for layout in candidate_layouts(model, cluster, training)
    ]
    if not results:
        raise ValueError(
            "no layout splits training.global_batch_tokens evenly over "
            "the data-parallel ranks: make it a multiple of seq_len x "
            "micro_batch x the number of GPUs"
        )
    # Fitting layouts fastest first, ties to the smaller footprint;
    # the rest by how much memory they need.
    results.sort(
        key=lambda r: (
            not r["fits"],
            -r["tokens_per_s"] if r["fits"] else 0,
            r["memory_per_gpu_GB"]["total"],
        )
    )
    best = results[0]
    card = check_cluster(cluster)["gpu_memory_GB"]
    need = best["memory_per_gpu_GB"]["total"]
    fitting = sum(r["fits"] for r in results)
    if best["fits"]:
        answer = (
            f"{fitting} of {len(results)} layouts fit; the fastest is "
            f"{name(best['layout'])}: {best['tokens_per_s']:,.0f} tokens/s"
            f" at {best['mfu']:.1%} MFU, {need:.1f} GB per GPU."
        )
    else:
        answer = (
            f"Nothing fits. The best layout ({name(best['layout'])}) "
            f"needs {need:.1f} GB per GPU, {need - card:.1f} GB more "
            f"than the {card:g} GB card."
        )
    return {"fits": best["fits"], "answer": answer, "ranked": results}


# --8<-- [end:search]

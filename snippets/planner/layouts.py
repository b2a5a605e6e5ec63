"""How one parallel layout of a job does on a cluster, and the search
over every layout the cluster allows."""

# --8<-- [start:model]
from snippets.checks import choice, count, flag
from snippets.planner.cost import (
    FIT,
    Fit,
    estimate,
    layer_shape,
    stage_layers,
)
from snippets.planner.model import (
    as_dict,
    check_cluster,
    check_model,
    check_training,
)

ZERO = (0, 1, 2, 3, "hsdp")
RECOMPUTE = ("none", "selective", "full")
SCHEDULES = ("gpipe", "1f1b", "interleaved")
LAYOUT_KEYS = ("dp", "tp", "pp", "zero", "recompute")
LAYOUT_DEFAULTS = {
    "cp": 1,  # context parallelism: each sequence split over cp GPUs
    "sequence_parallel": None,  # None: on whenever tp > 1
    "embedding_slots": False,
    "schedule": "1f1b",
    "chunks": 1,  # model chunks per GPU: 2 or more when interleaved
}


def check_layout(layout, model, cluster, training=None):
    """The layout as a dict, refused unless it can run on the cluster;
    with `training`, also its micro-batches and stages."""
    lay = as_dict("layout", layout, LAYOUT_KEYS, LAYOUT_DEFAULTS)
    dp, tp, pp, cp = (
        count(f"layout.{k}", lay[k]) for k in ("dp", "tp", "pp", "cp")
    )
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
    if dp * cp * tp * pp != gpus:
        raise ValueError(
            f"layout dp x cp x tp x pp must equal the cluster's {gpus} "
            f"GPUs, got {dp} x {cp} x {tp} x {pp} = {dp * cp * tp * pp}"
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
    if model["seq_len"] % cp:
        raise ValueError(
            f"layout.cp must divide model.seq_len ({model['seq_len']}), "
            f"got {cp}"
        )
    # Llama 3's split: the embedding and the output layer each take a
    # layer's place, so the first and last stages hold one layer fewer.
    layers = model["layers"]
    if flag("layout.embedding_slots", lay["embedding_slots"]):
        if pp < 2 or pp > layers // 2:
            raise ValueError(
                "layout.embedding_slots needs 2 <= pp <= model.layers / 2"
                f" ({layers // 2}), so that every stage keeps a layer; "
                f"got pp={pp}"
            )
    elif layers % pp:
        raise ValueError(
            f"layout.pp must divide model.layers ({layers}), got {pp}; "
            "with embedding_slots=True the stages may differ by a layer"
        )
    stages = stage_layers(layers, pp, lay["embedding_slots"])
    choice("layout.schedule", lay["schedule"], SCHEDULES)
    v = count("layout.chunks", lay["chunks"])
    if lay["schedule"] == "interleaved":
        slots = (
            stage_layers(layers, pp, False)
            if not lay["embedding_slots"]
            else [n + (i in (0, pp - 1)) for i, n in enumerate(stages)]
        )
        if pp < 2 or v < 2 or any(n % v for n in slots):
            raise ValueError(
                "layout.chunks must be 2 or more and divide the layers "
                f"of every stage ({sorted(set(slots))}) for the "
                f"interleaved schedule, on pp >= 2; got chunks={v}, "
                f"pp={pp}"
            )
    elif v != 1:
        raise ValueError(
            f"layout.chunks must be 1 for schedule "
            f"{lay['schedule']!r}, got {v}"
        )
    lay["stages"] = stages
    shard = dp
    if zero == "hsdp":
        local = g // (tp * cp) if g % (tp * cp) == 0 else 0
        if local < 2 or dp <= local or dp % local:
            raise ValueError(
                "layout.zero='hsdp' shards over the data-parallel ranks "
                "of one node and replicates across nodes: it needs "
                "tp x cp to leave 2 or more of them on a node and dp to "
                f"be a larger multiple of that; got dp={dp}, tp={tp}, "
                f"cp={cp} on {g} GPUs per node"
            )
        shard = local
    lay["shard"] = shard * (1 if zero == "hsdp" else cp)
    if training is not None:
        lay["microbatches"] = microbatches(model, training, dp)
        if lay["schedule"] == "interleaved" and lay["microbatches"] % pp:
            raise ValueError(
                "the interleaved schedule runs micro-batches in groups "
                f"of pp ({pp}): training.global_batch_tokens must give a "
                f"multiple of {pp} per pipeline, got "
                f"{lay['microbatches']}"
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


def model_flops_per_token(model):
    """Useful FLOPs per token, forward and backward, as PaLM counts
    them (6 N + 12 L h s): 6 per weight of every matrix a token goes
    through, the output layer once, and attention's two s x s products
    whole. Recomputation is not useful work."""
    m = check_model(model)
    weights = m["layers"] * layer_shape(m)["weights"]
    weights += m["vocab"] * m["hidden"]
    return 6 * weights + 12 * m["layers"] * m["hidden"] * m["seq_len"]


def evaluate_layout(model, cluster, training, layout, fit=FIT):
    """Memory per GPU, step time, tokens/s and MFU of one layout."""
    m, c = check_model(model), check_cluster(cluster)
    t = check_training(training)
    lay = check_layout(layout, m, c, t)
    if not isinstance(fit, Fit):
        raise TypeError(f"fit must be a Fit, got {type(fit).__name__}")
    return _result(m, c, t, lay, fit)


def _result(m, c, t, lay, fit, flops=None):
    r = estimate(m, c, t, lay, fit)
    gpus = c["gpus_per_node"] * c["nodes"]
    tokens = t["global_batch_tokens"] / r["step_s"]["total"]
    flops = flops or model_flops_per_token(m)
    return {
        "layout": {k: lay[k] for k in (*LAYOUT_KEYS, *LAYOUT_DEFAULTS)},
        "microbatches": lay["microbatches"],
        "stages": lay["stages"],
        **r,
        "fits": r["memory_per_gpu_GB"]["total"] <= c["gpu_memory_GB"],
        "tokens_per_s": tokens,
        "tokens_per_s_per_gpu": tokens / gpus,
        "mfu": tokens * flops / (gpus * c["peak_TFLOPs"] * 1e12),
    }


# --8<-- [end:model]


# --8<-- [start:search]
from snippets.planner.cost import FIT  # noqa: E402


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def splits(layers, pp):
    """The ways to put `layers` on `pp` stages: evenly when pp divides
    them; with the embedding and output layer in slots of their own
    (Llama 3's split) when it does not, or when that balances better."""
    if pp == 1:
        return [False]
    ways = [False] if layers % pp == 0 else []
    balanced = (layers + 2) % pp == 0 and pp > 2  # and not the same
    if 2 <= pp <= layers // 2 and (layers % pp or balanced):
        ways.append(True)
    return ways


def schedules(stage_slots, pp, micro):
    """(schedule, chunks) to try: 1F1B, and the interleaved schedule
    with each chunk count that divides every stage's layers."""
    if pp == 1:
        return [("1f1b", 1)]
    found = [("1f1b", 1)]
    if micro % pp == 0:
        for v in (2, 3, 4, 6, 8):
            if all(n % v == 0 for n in stage_slots):
                found.append(("interleaved", v))
    return found


def context_sizes(seq_len):
    """Context-parallel sizes worth trying: the sequence split in two,
    four, ... while each GPU keeps at least 4,096 of its tokens. Below
    that, tensor parallelism and recomputation shrink the activations
    for less communication."""
    sizes, cp = [1], 2
    while seq_len % cp == 0 and seq_len // cp >= 4096:
        sizes.append(cp)
        cp *= 2
    return sizes


def check_only(only):
    """`only`, the layout fields a search keeps fixed, as a dict."""
    only = {} if only is None else only
    if not isinstance(only, dict):
        raise TypeError(f"only must be a dict, got {type(only).__name__}")
    known = (*LAYOUT_KEYS, *LAYOUT_DEFAULTS)
    unknown = sorted(set(only) - set(known))
    if unknown:
        raise ValueError(
            f"only has unknown keys {', '.join(unknown)}; it accepts "
            f"{', '.join(known)}"
        )
    return only


def candidate_layouts(model, cluster, training, only=None):
    """Every layout the checks accept: tp inside a node, cp for long
    sequences, pp with even or Llama-style stages and each schedule,
    dp the rest, each ZeRO stage and recomputation; with `only`, those
    whose fields have the values it gives."""
    m, c = check_model(model), check_cluster(cluster)
    t = check_training(training)
    only = check_only(only)
    g = c["gpus_per_node"]
    gpus = g * c["nodes"]
    recomputes = ["none", "full"]
    if not t["flash_attention"]:
        recomputes.insert(1, "selective")
    for tp in divisors(g):
        if m["heads"] % tp or m["kv_heads"] % tp:
            continue
        for cp in context_sizes(m["seq_len"]):
            if (gpus // tp) % cp:
                continue
            for pp in divisors(gpus // (tp * cp)):
                dp = gpus // (tp * cp * pp)
                per_pass = m["seq_len"] * t["micro_batch"] * dp
                if t["global_batch_tokens"] % per_pass:
                    continue
                micro = t["global_batch_tokens"] // per_pass
                for slots in splits(m["layers"], pp):
                    counts = stage_layers(m["layers"], pp, slots)
                    if slots:
                        counts[0] += 1
                        counts[-1] += 1
                    for schedule, chunks in schedules(counts, pp, micro):
                        base = dict(
                            dp=dp,
                            tp=tp,
                            pp=pp,
                            cp=cp,
                            embedding_slots=slots,
                            schedule=schedule,
                            chunks=chunks,
                            sequence_parallel=only.get("sequence_parallel"),
                        )
                        for lay in _stages(m, c, t, recomputes, base, only):
                            if all(lay[k] == v for k, v in only.items()):
                                yield lay


def _stages(m, c, t, recomputes, base, only):
    """The base layout with each ZeRO stage and recomputation."""
    for zero in [only["zero"]] if "zero" in only else ZERO:
        if zero != 0 and base["dp"] * base["cp"] == 1:
            continue
        if zero == 2 and base["pp"] > 1 and "zero" not in only:
            continue  # it keeps whole gradients there: ZeRO-1
        for recompute in (
            [only.get("recompute")] if "recompute" in only else recomputes
        ):
            layout = dict(base, zero=zero, recompute=recompute)
            try:
                yield check_layout(layout, m, c, t)
            except ValueError:  # HSDP that this shape cannot do
                continue


def name(layout):
    """A layout in a few words: dp 16, tp 4, pp 1, ZeRO-3, ..."""
    zero = layout["zero"]
    sharding = "HSDP" if zero == "hsdp" else f"ZeRO-{zero}"
    words = [f"dp {layout['dp']}"]
    if layout.get("cp", 1) > 1:
        words.append(f"cp {layout['cp']}")
    words += [f"tp {layout['tp']}", f"pp {layout['pp']}", sharding]
    if layout.get("schedule") == "interleaved":
        words.append(f"interleaved x{layout['chunks']}")
    if layout.get("embedding_slots"):
        words.append("embedding slots")
    words.append(f"recompute {layout['recompute']}")
    return ", ".join(words)


def rank(results):
    """Fitting layouts fastest first, ties to the smaller footprint;
    the rest by how much memory they need."""
    return sorted(
        results,
        key=lambda r: (
            not r["fits"],
            -r["tokens_per_s"] if r["fits"] else 0,
            r["memory_per_gpu_GB"]["total"],
        ),
    )


def plan_layouts(model, cluster, training, fit=FIT, only=None):
    """Every layout (with `only`, those whose fields it fixes), ranked:
    those that fit first, fastest first; then the rest, smallest
    memory first. `answer` says what to do."""
    m, c = check_model(model), check_cluster(cluster)
    t = check_training(training)
    flops = model_flops_per_token(m)
    results = rank(
        _result(m, c, t, lay, fit, flops)
        for lay in candidate_layouts(m, c, t, only)
    )
    if not results:
        raise ValueError(
            "no layout splits training.global_batch_tokens evenly over "
            "the data-parallel ranks: make it a multiple of seq_len x "
            "micro_batch x the number of GPUs"
        )
    best = results[0]
    card = c["gpu_memory_GB"]
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

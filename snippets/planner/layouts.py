"""How one parallel layout of a job does on a cluster, and the search
over every layout the cluster allows."""

# --8<-- [start:model]
from dataclasses import asdict, dataclass, fields, replace

from snippets.checks import choice, count, flag
from snippets.planner.cost import (
    FIT,
    Fit,
    estimate,
    layer_shape,
    stage_layers,
)
from snippets.planner.model import (
    Cluster,
    Model,
    Training,
    check_cluster,
    check_model,
    check_training,
    checked,
)

ZERO = (0, 1, 2, 3, "hsdp")
# "selective": Megatron-LM's (Korthikanti et al. 2022), the attention
# core; "per-op": torchtitan's policy, every second matrix multiply and
# every element-wise kernel (snippets/planner/cost.py, op_kept_bytes).
RECOMPUTE = ("none", "selective", "per-op", "full")
# "zb-h1": Qi et al. 2023's ZB-H1, 1F1B with each backward split into
# its input half (B) and its weight half (W), the W passes moved into
# the bubble (torch 2.13's ScheduleInterleavedZeroBubble, one stage a
# rank).
SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1")
# When ZeRO-2, ZeRO-3 and HSDP reduce the gradients under accumulation:
# once, in the last micro-batch ("deferred": FSDP2's
# set_requires_gradient_sync(False) before it, as the course's script
# and torch.pipelining do), holding them whole until then; or in every
# micro-batch ("every": FSDP2's default, and what DeepSpeed always
# does), keeping only a shard.
GRADIENT_SYNCS = ("deferred", "every")
# Interleaving depths the search tries: every chunk count that divides
# a stage's layers, up to 12 (published runs use 2 to 12).
MAX_CHUNKS = 12


@dataclass(frozen=True, kw_only=True)
class Layout:
    """How a job is split: dp data-parallel replicas (sharded as `zero`
    says), cp context-parallel ranks that split each sequence, tp
    tensor-parallel ranks per layer, pp pipeline stages run under
    `schedule` with `chunks` model chunks per GPU. sequence_parallel
    None means on whenever tp > 1; embedding_slots gives the embedding
    and the output layer a layer's place each (Llama 3's split).
    FSDP2's choices for ZeRO-3 and HSDP: reshard_after_forward (None:
    what the course's script does, True without a pipeline, False with
    one) and gradient_sync (GRADIENT_SYNCS). ep: expert parallelism
    for a mixture of experts, each layer's experts spread whole over ep
    of the tp x cp x dp GPUs of a stage (Megatron-Core's MoE parallel
    folding), their tokens sent there and back by all-to-alls."""

    dp: int
    tp: int
    pp: int
    zero: int | str
    recompute: str
    cp: int = 1
    sequence_parallel: bool | None = None
    embedding_slots: bool = False
    schedule: str = "1f1b"
    chunks: int = 1
    reshard_after_forward: bool | None = None
    gradient_sync: str = "deferred"
    ep: int = 1

    def __post_init__(self):
        for name in ("dp", "tp", "pp", "cp", "ep"):
            count(f"layout.{name}", getattr(self, name))
        if isinstance(self.zero, bool) or self.zero not in ZERO:
            raise ValueError(
                "layout.zero must be one of 0, 1, 2, 3, 'hsdp'; "
                f"got {self.zero!r}"
            )
        choice("layout.recompute", self.recompute, RECOMPUTE)
        if self.sequence_parallel is not None:
            flag("layout.sequence_parallel", self.sequence_parallel)
        flag("layout.embedding_slots", self.embedding_slots)
        choice("layout.schedule", self.schedule, SCHEDULES)
        count("layout.chunks", self.chunks)
        if self.reshard_after_forward is not None:
            flag("layout.reshard_after_forward", self.reshard_after_forward)
        choice("layout.gradient_sync", self.gradient_sync, GRADIENT_SYNCS)
        if self.gradient_sync == "every" and self.pp > 1:
            raise ValueError(
                "layout.gradient_sync must be 'deferred' with a pipeline "
                "(pp > 1): torch.pipelining defers the sync of an FSDP2 "
                f"stage to its last micro-batch; got pp={self.pp}"
            )
        if self.gradient_sync == "every" and self.zero not in (2, 3, "hsdp"):
            raise ValueError(
                "layout.gradient_sync='every' is for zero 2, 3 or 'hsdp' "
                "(DDP and ZeRO-1 keep whole gradients and reduce once); "
                f"got zero={self.zero!r}"
            )


LAYOUT_KEYS = tuple(f.name for f in fields(Layout))


@dataclass(frozen=True)
class Job:
    """A layout checked against its model and cluster, with what
    follows from them: the layers on each stage, the ranks each shard
    of the training state is split over, and (given the training) the
    micro-batches each pipeline runs per step."""

    model: Model
    cluster: Cluster
    training: Training | None
    layout: Layout
    stages: tuple[int, ...]
    shard: int
    microbatches: int | None


def check_layout(layout, model, cluster, training=None):
    """The layout as a Job, refused unless it can run on the cluster;
    with `training`, also its micro-batches."""
    m, c = check_model(model), check_cluster(cluster)
    lay = checked(Layout, "layout", layout)
    if lay.sequence_parallel is None:  # free whenever tp > 1
        lay = replace(lay, sequence_parallel=lay.tp > 1)
    if lay.reshard_after_forward is None:  # as the script does
        lay = replace(lay, reshard_after_forward=lay.pp == 1)
    g, (dp, tp, pp, cp) = c.gpus_per_node, (lay.dp, lay.tp, lay.pp, lay.cp)
    if dp * cp * tp * pp != c.gpus:
        raise ValueError(
            f"layout dp x cp x tp x pp must equal the cluster's {c.gpus} "
            f"GPUs, got {dp} x {cp} x {tp} x {pp} = {dp * cp * tp * pp}"
        )
    if m.heads % tp or m.kv_heads % tp:
        raise ValueError(
            f"layout.tp must divide model.heads ({m.heads}) and "
            f"model.kv_heads ({m.kv_heads}), got {tp}"
        )
    if g % tp and tp % g:
        raise ValueError(
            f"layout.tp must divide gpus_per_node ({g}) or, to span "
            f"nodes, be a multiple of it; got {tp}"
        )
    if m.seq_len % cp:
        raise ValueError(
            f"layout.cp must divide model.seq_len ({m.seq_len}), got {cp}"
        )
    if lay.ep > 1 and (m.experts % lay.ep or (dp * cp * tp) % lay.ep):
        raise ValueError(
            f"layout.ep must divide model.experts ({m.experts}) and the "
            f"dp x cp x tp = {dp * cp * tp} GPUs of a stage; got {lay.ep}"
        )
    if lay.ep > 1 and lay.zero == "hsdp":
        raise ValueError(
            "layout.ep > 1 runs with zero 0, 1, 2 or 3, not 'hsdp'; "
            f"got ep={lay.ep}"
        )
    stages = _stages_of(lay, m.layers)
    shard = dp if lay.zero != "hsdp" else _hsdp_shard(lay, g)
    shard *= 1 if lay.zero == "hsdp" else cp
    t = micro = None
    if training is not None:
        t = check_training(training)
        micro = microbatches(m, t, dp)
        if lay.schedule == "interleaved" and micro % max(1, micro // pp):
            rounds = max(1, micro // pp)
            raise ValueError(
                "the interleaved schedule (torch 2.13) runs the "
                f"micro-batches in max(1, m // pp) = {rounds} rounds: "
                "training.global_batch_tokens must give a multiple of "
                f"{rounds} micro-batches per pipeline, got {micro}"
            )
    return Job(m, c, t, lay, tuple(stages), shard, micro)


def _stages_of(lay, layers):
    """Layers on each stage; refused unless the schedule's chunks
    divide them. Llama 3's split: the embedding and the output layer
    each take a layer's place, so the first and last stages hold one
    layer fewer."""
    pp, v = lay.pp, lay.chunks
    if lay.embedding_slots:
        # the first and last stages hold (layers + 2) // pp - 1
        if pp < 2 or pp > (layers + 2) // 2:
            raise ValueError(
                "layout.embedding_slots needs 2 <= pp <= (model.layers + 2)"
                f" / 2 ({(layers + 2) // 2}), so that every stage keeps a "
                f"layer; got pp={pp}"
            )
    elif layers % pp:
        raise ValueError(
            f"layout.pp must divide model.layers ({layers}), got {pp}; "
            "with embedding_slots=True the stages may differ by a layer"
        )
    stages = stage_layers(layers, pp, lay.embedding_slots)
    if lay.schedule == "interleaved":
        slots = stage_layers(layers, pp, False)
        if lay.embedding_slots:
            slots = [n + (i in (0, pp - 1)) for i, n in enumerate(stages)]
        if pp < 2 or v < 2 or any(n % v for n in slots):
            raise ValueError(
                "layout.chunks must be 2 or more and divide the layers "
                f"of every stage ({sorted(set(slots))}) for the "
                f"interleaved schedule, on pp >= 2; got chunks={v}, "
                f"pp={pp}"
            )
    elif v != 1:
        raise ValueError(
            f"layout.chunks must be 1 for schedule {lay.schedule!r}, got {v}"
        )
    return stages


def _hsdp_shard(lay, g):
    """HSDP's shard group: the data-parallel ranks of one node."""
    local = g // (lay.tp * lay.cp) if g % (lay.tp * lay.cp) == 0 else 0
    if local < 2 or lay.dp <= local or lay.dp % local:
        raise ValueError(
            "layout.zero='hsdp' shards over the data-parallel ranks "
            "of one node and replicates across nodes: it needs "
            "tp x cp to leave 2 or more of them on a node and dp to "
            f"be a larger multiple of that; got dp={lay.dp}, "
            f"tp={lay.tp}, cp={lay.cp} on {g} GPUs per node"
        )
    return local


def microbatches(model, training, dp):
    """Micro-batches each pipeline runs per step."""
    per_pass = model.seq_len * training.micro_batch * dp
    if training.global_batch_tokens % per_pass:
        raise ValueError(
            f"training.global_batch_tokens ("
            f"{training.global_batch_tokens}) must be a multiple of "
            f"seq_len x micro_batch x dp = {model.seq_len} x "
            f"{training.micro_batch} x {dp} = {per_pass}"
        )
    return training.global_batch_tokens // per_pass


def model_flops_per_token(model):
    """Useful FLOPs per token, forward and backward, as PaLM counts
    them (6 N + 12 L h s): 6 per weight of every matrix a token goes
    through, the output layer once, and attention's two s x s products
    whole. Recomputation is not useful work."""
    m = check_model(model)
    weights = m.layers * layer_shape(m).weights
    weights += m.vocab * m.hidden
    return 6 * weights + 12 * m.layers * m.q_width * m.seq_len


def evaluate_layout(model, cluster, training, layout, fit=FIT):
    """Memory per GPU, step time, tokens/s and MFU of one layout."""
    job = check_layout(layout, model, cluster, check_training(training))
    if not isinstance(fit, Fit):
        raise TypeError(f"fit must be a Fit, got {type(fit).__name__}")
    return _result(job, fit)


def _result(job, fit, flops=None):
    r = estimate(job, fit)
    c, t = job.cluster, job.training
    tokens = t.global_batch_tokens / r["step_s"]["total"]
    flops = flops or model_flops_per_token(job.model)
    return {
        "layout": asdict(job.layout),
        "moe": job.model.experts > 1,
        "microbatches": job.microbatches,
        "stages": list(job.stages),
        **r,
        "fits": r["memory_per_gpu_GB"]["total"] <= c.gpu_memory_GB,
        "tokens_per_s": tokens,
        "tokens_per_s_per_gpu": tokens / c.gpus,
        "mfu": tokens * flops / (c.gpus * c.peak_TFLOPs * 1e12),
    }


# --8<-- [end:model]


# --8<-- [start:search]
from snippets.context.cost import overlap_crossover_tokens  # noqa: E402
from snippets.planner.cost import FIT, Links  # noqa: E402


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
    found = [("1f1b", 1), ("zb-h1", 1)]
    if micro % max(1, micro // pp) == 0:
        for v in range(2, MAX_CHUNKS + 1):
            if all(n % v == 0 for n in stage_slots):
                found.append(("interleaved", v))
    return found


# The fewest tokens of a sequence that a published run leaves on a GPU
# under context parallelism: NeMo's Llama 3.1 405B, CP 2 at 8K.
LEAST_CP_TOKENS = 4096


def context_sizes(model, cluster, fit=FIT):
    """Context-parallel sizes worth trying: the sequence split in two,
    four, ... while each GPU keeps LEAST_CP_TOKENS of it, and enough
    for a ring step's attention to outlast the transfer of its keys
    and values (overlap_crossover_tokens, snippets/context/cost.py) at
    the fit's attention rate and the slower of NVLink and the network,
    wherever the ring's GPUs sit. Past that, each halving of the tokens
    halves a step's attention but not its transfer."""
    m, c = check_model(model), check_cluster(cluster)
    links = Links.of(c, fit)
    rate = c.peak_TFLOPs * fit.attention_share
    slow = min(links.nvlink, links.network)
    least = overlap_crossover_tokens(
        m.q_width, m.heads, m.kv_heads, rate, slow
    )
    least = max(least, LEAST_CP_TOKENS)
    sizes, cp = [1], 2
    while m.seq_len % cp == 0 and m.seq_len // cp >= least:
        sizes.append(cp)
        cp *= 2
    return sizes


def expert_sizes(model, gpus):
    """Expert-parallel sizes to try for a stage of `gpus` GPUs: 1, and
    for a mixture of experts each power of two that divides the
    experts and the GPUs."""
    sizes, ep = [1], 2
    while model.experts % ep == 0 and gpus % ep == 0:
        sizes.append(ep)
        ep *= 2
    return sizes


def check_only(only):
    """`only`, the layout fields a search keeps fixed, as a dict."""
    only = {} if only is None else only
    if not isinstance(only, dict):
        raise TypeError(f"only must be a dict, got {type(only).__name__}")
    unknown = sorted(set(only) - set(LAYOUT_KEYS))
    if unknown:
        raise ValueError(
            f"only has unknown keys {', '.join(unknown)}; it accepts "
            f"{', '.join(LAYOUT_KEYS)}"
        )
    return only


def candidate_layouts(model, cluster, training, only=None, fit=FIT):
    """Every layout the checks accept, as a Job: tp inside a node, cp
    for long sequences, pp with even or Llama-style stages and each
    schedule, dp the rest, each ZeRO stage and recomputation; with
    `only`, those whose fields have the values it gives."""
    m, c = check_model(model), check_cluster(cluster)
    t = check_training(training)
    only = check_only(only)
    g = c.gpus_per_node
    recomputes = ["none", "full"]
    if not t.flash_attention:
        recomputes.insert(1, "selective")
    for tp in divisors(g):
        if m.heads % tp or m.kv_heads % tp:
            continue
        for cp in context_sizes(m, c, fit):
            if (c.gpus // tp) % cp:
                continue
            for pp in divisors(c.gpus // (tp * cp)):
                dp = c.gpus // (tp * cp * pp)
                per_pass = m.seq_len * t.micro_batch * dp
                if t.global_batch_tokens % per_pass:
                    continue
                micro = t.global_batch_tokens // per_pass
                for slots in splits(m.layers, pp):
                    counts = stage_layers(m.layers, pp, slots)
                    if slots:
                        counts[0] += 1
                        counts[-1] += 1
                    for schedule, chunks in schedules(counts, pp, micro):
                        base = dict(
                            dp=dp,
                            tp=tp,
                            pp=pp,
                            cp=cp,
                            ep=1,
                            embedding_slots=slots,
                            schedule=schedule,
                            chunks=chunks,
                            sequence_parallel=only.get("sequence_parallel"),
                        )
                        for ep in expert_sizes(m, dp * cp * tp):
                            base["ep"] = ep
                            yield from (
                                job
                                for job in _stages(
                                    m, c, t, recomputes, dict(base), only
                                )
                                if all(
                                    getattr(job.layout, k) == v
                                    for k, v in only.items()
                                )
                            )


def fsdp_options(zero, pp, micro, only):
    """(reshard_after_forward, gradient_sync) pairs to try: FSDP2's
    choices where they change something, else what the script does.
    Under a pipeline the stage keeps its weights gathered after each
    backward either way, so resharding after forward costs gathers and
    saves nothing at the peak: the search leaves it to `only`."""
    reshards = [pp == 1]
    if zero in (3, "hsdp") and pp == 1:
        reshards = [True, False]
    syncs = ["deferred"]
    if zero in (3, "hsdp") and pp == 1 and micro > 1:
        syncs.append("every")
    if zero == 2 and pp == 1 and micro > 1:
        syncs = ["every"]  # deferred, it holds what ZeRO-1 holds
    if "reshard_after_forward" in only:
        reshards = [only["reshard_after_forward"]]
    if "gradient_sync" in only:
        syncs = [only["gradient_sync"]]
    return [(r, g) for r in reshards for g in syncs]


def _stages(m, c, t, recomputes, base, only):
    """The base layout with each ZeRO stage, FSDP2 option and
    recomputation."""
    micro = microbatches(m, t, base["dp"])
    for zero in [only["zero"]] if "zero" in only else ZERO:
        if zero != 0 and base["dp"] * base["cp"] == 1:
            continue
        if zero == 2 and base["pp"] > 1 and "zero" not in only:
            continue  # it keeps whole gradients there: ZeRO-1
        for reshard, sync in fsdp_options(zero, base["pp"], micro, only):
            for recompute in (
                [only.get("recompute")] if "recompute" in only else recomputes
            ):
                layout = dict(base, zero=zero, recompute=recompute)
                layout |= dict(
                    reshard_after_forward=reshard, gradient_sync=sync
                )
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
    words += [f"tp {layout['tp']}", f"pp {layout['pp']}"]
    if layout.get("ep", 1) > 1:
        words.append(f"ep {layout['ep']}")
    words.append(sharding)
    if layout.get("schedule") == "interleaved":
        words.append(f"interleaved x{layout['chunks']}")
    if layout.get("schedule") == "zb-h1":
        words.append("ZB-H1")
    if layout.get("embedding_slots"):
        words.append("embedding slots")
    kept = layout.get("reshard_after_forward") is False
    if zero in (3, "hsdp") and layout.get("pp") == 1 and kept:
        words.append("kept gathered")
    if layout.get("gradient_sync") == "every":
        words.append("sync every micro-batch")
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
        _result(job, fit, flops)
        for job in candidate_layouts(m, c, t, only, fit)
    )
    if not results:
        raise ValueError(
            "no layout splits training.global_batch_tokens evenly over "
            "the data-parallel ranks: make it a multiple of seq_len x "
            "micro_batch x the number of GPUs"
        )
    best = results[0]
    card = c.gpu_memory_GB
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

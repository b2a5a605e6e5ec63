"""How good is the planner: its cost model against every measured run
of snippets/planner/runs.py, the layouts papers compared on one
cluster, and the layouts their authors chose."""

# --8<-- [start:model]
import statistics

from snippets.planner import runs
from snippets.planner.cost import FIT
from snippets.planner.fit import START, fit, job, predict
from snippets.planner.layouts import evaluate_layout, name, plan_layouts

SAME = ("dp", "tp", "pp", "cp", "ep", "zero", "recompute")
SAME += ("sequence_parallel",)
SAME += ("embedding_slots", "schedule", "chunks")


def source(run):
    """The publication or benchmark suite a row comes from."""
    return run.source.split(",")[0]


def held_out_fits(rows=runs.RUNS):
    """{source: the parameters fitted on every other source's rows}:
    each source's rows are then predicted by a model that never saw
    them, nor anything else its authors measured."""
    sources = sorted({source(run) for run in rows})
    return {
        name: fit([r for r in rows if source(r) != name], start=START)[0]
        for name in sources
    }


def compared(run, fit=FIT, held=None):
    """The run's measured and predicted tokens/s per GPU, and more;
    with `held` (held_out_fits' result), also its prediction by the
    fit that held its source out."""
    r = predict(run, fit)
    measured = runs.tokens_per_s_per_gpu(run)
    out = None
    if held is not None:
        out = predict(run, held[source(run)])["tokens_per_s_per_gpu"]
        out = out / measured - 1
    return {
        "run": run,
        "measured": measured,
        "predicted": r["tokens_per_s_per_gpu"],
        "error": r["tokens_per_s_per_gpu"] / measured - 1,
        "held_out_error": out,
        "result": r,
    }


def summary(rows):
    """Median and worst relative error, fitted on every row and with
    each row's source held out (where compared was given `held`)."""
    errors = [abs(r["error"]) for r in rows]
    if any(r["held_out_error"] is None for r in rows):
        raise ValueError("summary needs rows compared with held=")
    held = [abs(r["held_out_error"]) for r in rows]
    worst = max(rows, key=lambda r: abs(r["error"]))
    held_worst = max(rows, key=lambda r: abs(r["held_out_error"]))
    return {
        "median": statistics.median(errors),
        "worst": worst,
        "held_median": statistics.median(held),
        "held_worst": held_worst,
        "within_20": sum(e <= 0.2 for e in held),
    }


def best_mfu(rows):
    """{(card, stack): {recomputation: (MFU, label)}}: the best 16-bit
    MFU each kind of software stack reached on each kind of card, with
    no recomputation and with full, from the runs' published
    throughput."""
    best = {}
    for run in rows:
        if run.precision in ("bf16", "fp16") and run.recompute in (
            "none",
            "full",
        ):
            key = (run.gpu_published.split()[0], job(run)[2]["stack"])
            cell = best.setdefault(key, {}).get(run.recompute, (0, ""))
            best[key][run.recompute] = max(cell, (runs.mfu(run), run.label))
    return best


def same_cluster(rows):
    """Groups of rows that compare layouts of one job on one cluster:
    the same model, GPUs, sequence and batch, different layouts."""
    groups = {}
    for r in rows:
        run = r["run"]
        key = (run.model, run.gpus, run.seq_len, run.global_batch_tokens)
        key += (run.precision,)
        groups.setdefault(key, []).append(r)
    found = []
    for group in groups.values():
        layouts = {
            tuple(g["result"]["layout"][k] for k in SAME) for g in group
        }
        if len(layouts) > 1:
            found.append(group)
    return found


def plain(layout):
    """A layout as the search names it: with a pipeline, ZeRO-2 keeps
    whole gradients, which is what ZeRO-1 does."""
    layout = {k: layout[k] for k in SAME}
    if layout["zero"] == 2 and layout["pp"] > 1:
        layout["zero"] = 1
    return layout


def authors_choice(run, fit=FIT):
    """The planner's top layout for the run's job, among those with
    the authors' recomputation, sequence parallelism and sharding (what
    their framework offered), next to the authors' own layout."""
    model, nodes, training, layouts = job(run)
    mine = plain(layouts[0])
    only = {k: mine[k] for k in ("recompute", "sequence_parallel", "zero")}
    ranked = plan_layouts(model, nodes, training, fit, only)["ranked"]
    wanted = [plain(lay) for lay in layouts]
    theirs = [r for r in ranked if plain(r["layout"]) in wanted]
    theirs = max(theirs, key=lambda r: r["tokens_per_s"]) if theirs else None
    return {
        "run": run,
        "top": ranked[0],
        "theirs": theirs,
        "ratio": theirs and theirs["tokens_per_s"] / ranked[0]["tokens_per_s"],
    }


# What each fitted parameter means, for the page's table.
MEANINGS = {
    "a100_gemm_share": "share of an A100's 312 TFLOP/s the layers' "
    "matrix multiplies sustain",
    "h100_gemm_share": "share of an H100's peak (989 TFLOP/s on an SXM "
    "card, 912 taken for torchtitan's 500 W cards) the layers' matrix "
    "multiplies sustain",
    "attention_share": "share of the 16-bit peak attention's QK^T and AV "
    "sustain",
    "hbm_passes": "HBM bytes the element-wise kernels move per byte of "
    "activations a layer stores",
    "fused_speedup": "how much faster a fused stack (Megatron-LM, NeMo) "
    "runs a layer's compute than PyTorch-native code",
    "fp8_speedup": "an FP8 matrix multiply's speed over a 16-bit one "
    "(Hopper's datasheet: 2; NVIDIA's DGX Cloud recipes run one stack "
    "in both precisions)",
    "overlap": "share of the hideable communication that hides",
}

# The four jobs of the issue, as the planner takes them, and what was
# published for each: (preset, GPU, nodes, training, published rows).
JOBS = (
    (
        "llama3-8b",
        "h100-80gb",
        8,
        {"global_batch_tokens": 4 * 2**20, "micro_batch": 1},
        ("torchtitan-8b-fsdp-128",),
    ),
    (
        "llama3-70b",
        "h100-80gb",
        64,
        {"global_batch_tokens": 4 * 2**20, "micro_batch": 1},
        ("torchtitan-70b-2d-256",),
    ),
    (
        "gpt3-175b",
        "a100-80gb",
        192,
        {
            "global_batch_tokens": 1536 * 2048,
            "micro_batch": 1,
            "flash_attention": False,
        },
        ("megatron-t2-175b-ptdp-1536", "megatron-t2-175b-zero3-1536"),
    ),
    (
        "llama3-405b",
        "h100-80gb",
        2048,
        {"global_batch_tokens": 2048 * 8192, "micro_batch": 1},
        ("llama3-405b-8k-16384",),
    ),
)


# --8<-- [end:model]

if __name__ == "__main__":
    # --8<-- [start:table]
    held = held_out_fits()
    rows = [compared(run, held=held) for run in runs.RUNS]
    print(
        "| run | layout | measured | predicted, source held out | error "
        "| fit on all | error |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        run, e = r["run"], r["held_out_error"]
        print(
            f"| {run.label} | {name(r['result']['layout'])}"
            f" | {r['measured']:,.1f} | {r['measured'] * (1 + e):,.1f} | "
            f"{e:+.1%} | {r['predicted']:,.1f} | {r['error']:+.1%} |"
        )
    s = summary(rows)
    print(
        f"\nEach source held out, its rows predicted by a fit to the "
        f"others: median error {s['held_median']:.1%} over {len(rows)} "
        f"runs from {len(held)} sources, worst "
        f"{s['held_worst']['held_out_error']:+.1%} "
        f"({s['held_worst']['run'].label}); {s['within_20']} of "
        f"{len(rows)} within 20%. Fitted on every row: median "
        f"{s['median']:.1%}, worst {s['worst']['error']:+.1%} "
        f"({s['worst']['run'].label})."
    )
    print("\n| source held out | runs | median error | worst |")
    print("| --- | ---: | ---: | ---: |")
    for name_ in held:
        errors = [
            r["held_out_error"] for r in rows if source(r["run"]) == name_
        ]
        print(
            f"| {name_} | {len(errors)} | "
            f"{statistics.median(abs(e) for e in errors):.1%} | "
            f"{max(errors, key=abs):+.1%} |"
        )
    # NVIDIA's two sources are one fused stack: hold them out together
    nvidia = [n for n in held if n.startswith("NVIDIA")]
    others = [r for r in runs.RUNS if source(r) not in nvidia]
    both = dict(held, **dict.fromkeys(nvidia, fit(others, start=START)[0]))
    rows = [compared(run, held=both) for run in runs.RUNS]
    s = summary(rows)
    worst = s["held_worst"]
    theirs = [r["held_out_error"] for r in rows if source(r["run"]) in nvidia]
    print(
        f"\nNVIDIA's {len(nvidia)} sources held out together: median error "
        f"{s['held_median']:.1%}, worst {worst['held_out_error']:+.1%} "
        f"({worst['run'].label}); {s['within_20']} of {len(rows)} within 20%;"
        f" their {len(theirs)} runs: median "
        f"{statistics.median(abs(e) for e in theirs):.1%}, worst "
        f"{max(theirs, key=abs):+.1%}."
    )
    # --8<-- [end:table]

    # --8<-- [start:fit]
    from snippets.planner.fit import FITTED, fit, rounded

    found, error, evaluations = fit()
    print("| parameter | fitted | what it is |")
    print("| --- | ---: | --- |")
    for key, meaning in MEANINGS.items():
        print(f"| `{key}` | {getattr(found, key):.3g} | {meaning} |")
    from snippets.planner.runs import LINKS

    for link in LINKS:
        if link.label in ("a100-nvlink-allreduce", "h100-nvlink-ring"):
            print(
                f"| NVLink, {link.label.split('-')[0].upper()} (measured) | "
                f"{link.low_GBps / link.line_GBps:.3g} | "
                f"{link.low_GBps:g} of {link.line_GBps:g} GB/s, nccl-tests |"
            )
        if link.label in ("hdr-nic", "ndr-nic"):
            print(
                f"| NIC, {link.label.split('-')[0].upper()} (measured) | "
                f"{link.low_GBps / link.line_GBps:.3g} | "
                f"{link.low_GBps:g} of {link.line_GBps:g} GB/s per NIC "
                "across nodes, nccl-tests |"
            )
    from snippets.planner.cost import EAGER_BYTES

    for kind, layer in (("llama", "torchtitan's Llama"), ("gpt", "a GPT")):
        print(
            f"| eager PyTorch, {kind} (counted) | {EAGER_BYTES[kind]:.3g} | "
            f"element-wise bytes of {layer} layer in eager PyTorch, per "
            "byte under torch.compile, counted on real PyTorch |"
        )
    print(
        f"\nFitted on {len(FITTED)} runs in {evaluations} evaluations "
        f"(mean squared log error {error:.4f}); the planner's defaults "
        f"are these to three figures: {rounded(found) == FIT}."
    )
    # --8<-- [end:fit]

    # --8<-- [start:worked]
    from snippets.planner.cost import NETWORK_SHARE, NVLINK_SHARE
    from snippets.planner.model import GPUS

    run = runs.by_label("megatron-t2-175b-zero3-1536")
    r = compared(run)
    params = runs.matmul_weights(run)  # the weights, near enough
    moved = 3 * 2 * params * (run.gpus - 1) / run.gpus  # AG, AG, RS
    step = run.global_batch_tokens / (r["measured"] * run.gpus)
    compute = r["result"]["step_s"]["compute"]
    print(f"ZeRO-3 moves {moved / 1e12:.2f} TB per GPU per step.")
    print(f"The model's compute alone: {compute:.1f} s per step.")
    print(
        f"Measured step: {step:.1f} s. Sustained: {moved / step / 1e9:.1f}"
        f" GB/s if all of it overlapped, {moved / (step - compute) / 1e9:.1f}"
        " GB/s if none did."
    )
    a100 = GPUS["a100-80gb"]
    own = a100["nics_per_node"] * a100["nic_GBps"] / a100["gpus_per_node"]
    node = a100["nvlink_GBps"] * NVLINK_SHARE["a100-80gb"]
    node = min(node, a100["nics_per_node"] * a100["nic_GBps"])
    print(
        f"The model: each GPU's own NIC, {own:g} GB/s x "
        f"{NETWORK_SHARE['a100-80gb']:.3g} = "
        f"{own * NETWORK_SHARE['a100-80gb']:.1f} GB/s, "
        f"{FIT.overlap:.0%} of the hideable time hidden: a "
        f"{r['result']['step_s']['total']:.1f} s step, of which "
        f"{r['result']['step_s']['data_parallel']:.1f} s of exposed gathers."
    )
    print(
        f"A ring through all eight GPUs of a node would get its eight "
        f"NICs, {node:g} GB/s: the gathers would take "
        f"{moved / node / 1e9:.1f} s, and ZeRO-3 would not collapse."
    )
    # --8<-- [end:worked]

    # --8<-- [start:order]
    print("| cluster | measured, fastest first | predicted, fastest first |")
    print("| --- | --- | --- |")
    for group in same_cluster(rows):
        run = group[0]["run"]
        where = f"{run.model}, {run.gpus:,} {run.gpu_published.split(',')[0]}"

        def order(key, group=group):
            ranked = sorted(group, key=lambda g: -g[key])
            return " > ".join(
                f"{name(g['result']['layout'])}: {g[key]:,.1f}" for g in ranked
            )

        print(f"| {where} | {order('measured')} | {order('predicted')} |")
    # --8<-- [end:order]

    # --8<-- [start:choices]
    print(
        "| run | the authors' layout | the planner's first, same "
        "toolbox | authors' / first |"
    )
    print("| --- | --- | --- | ---: |")
    choices = [authors_choice(run) for run in runs.RUNS if run.chosen]
    for c in choices:
        print(
            f"| {c['run'].label} | {name(c['theirs']['layout'])} | "
            f"{name(c['top']['layout'])} | {c['ratio']:.0%} |"
        )
    close = [c for c in choices if c["ratio"] >= 0.85]
    print(
        f"\n{len(close)} of {len(choices)} chosen layouts are rated within "
        "15% of the planner's first; the others:",
        ", ".join(c["run"].label for c in choices if c not in close),
    )
    # --8<-- [end:choices]

    # --8<-- [start:memory]
    from snippets.planner.fit import job as inputs

    tight = []
    for r in rows:
        card = inputs(r["run"])[1]["gpu_memory_GB"]
        gb = r["result"]["memory_per_gpu_GB"]
        tight.append((gb["total"] / card, r["run"].label, gb, card))
    fitting = [t for t in tight if t[0] <= 1]
    print(f"{len(fitting)} of {len(rows)} published layouts fit.")
    for share, label, gb, card in sorted(tight, reverse=True)[:4]:
        print(
            f"{label}: {gb['total']:.1f} GB of {card:g} ({share:.0%}), "
            f"activations {gb['activations']:.1f} GB"
        )
    # --8<-- [end:memory]

    # --8<-- [start:unseen]
    from snippets.planner.cost import Links
    from snippets.planner.model import check_cluster

    print(
        "| model | GPUs | micro-batch x steps | recompute | measured | "
        "predicted | error | GB per GPU |"
    )
    print("| --- | --- | --- | --- | ---: | ---: | ---: | --- |")
    unseen = [compared(run) for run in runs.FOUNDRY_RUNS]
    for r in unseen:
        run = r["run"]
        steps = run.global_batch // (run.micro_batch * run.dp)
        gb = r["result"]["memory_per_gpu_GB"]["total"]
        gpus = (
            f"{run.gpus} {run.gpu_published.split()[0]} {run.gpu_memory_GB} GB"
        )
        print(
            f"| {run.model} | {gpus} | {run.micro_batch} x {steps} | "
            f"{run.recompute} | {r['measured']:,.0f} | {r['predicted']:,.0f}"
            f" | {r['error']:+.1%} | {gb:.1f} |"
        )
    print()
    for _, published, memory in runs.FOUNDRY_TABLES.values():
        these = [
            r
            for r in unseen
            if (r["run"].gpu_published, r["run"].gpu_memory_GB)
            == (published, memory)
        ]
        errors = [r["error"] for r in these]
        print(
            f"{published} ({memory} GB): {len(these)} runs, median error "
            f"{statistics.median(abs(e) for e in errors):.1%}, from "
            f"{min(errors):+.1%} to {max(errors):+.1%}."
        )
    # every run of this page, fitted or not
    best = best_mfu(runs.RUNS + runs.FOUNDRY_RUNS)
    print(
        "\n| card | stack | best MFU, no recomputation | best MFU, full "
        "recomputation |"
    )
    print("| --- | --- | --- | --- |")
    stacks = {"fused": "fused (Megatron's kernels)", "native": "PyTorch"}
    stacks["eager"] = "PyTorch, eager"
    for (card, stack), cells in sorted(best.items()):
        stack = stacks[stack]
        shown = (
            f"{cells[k][0]:.1%} ({cells[k][1]})" if k in cells else "none ran"
            for k in ("none", "full")
        )
        print(f"| {card} | {stack} | " + " | ".join(shown) + " |")
    print()
    errors = [abs(r["error"]) for r in unseen]
    fitting = [r for r in unseen if r["result"]["fits"]]
    print(
        f"All {len(unseen)}: median error {statistics.median(errors):.1%}, "
        f"{sum(e <= 0.2 for e in errors)} within 20%; {len(fitting)} of "
        f"{len(unseen)} layouts predicted to fit."
    )
    # with the fitted sources' rows, each predicted with its source out
    every = errors + [
        abs(compared(run, held=held)["held_out_error"]) for run in runs.RUNS
    ]
    print(
        f"Every published run on this page, none predicted by a fit that "
        f"saw its source: {len(every)} runs, median error "
        f"{statistics.median(every):.1%}, {sum(e <= 0.2 for e in every)} "
        f"within 20%."
    )
    r = next(r for r in unseen if r["run"].label == "mpt-13b-h100-64")
    run, parts = r["run"], r["result"]["step_s"]
    step = run.global_batch_tokens / (r["measured"] * run.gpus)
    # each micro-batch gathers the bf16 weights twice and
    # reduce-scatters fp32 gradients (mixed precision DEFAULT)
    moved = (2 + 2 + 4) * runs.matmul_weights(run) * (run.gpus - 1) / run.gpus
    model, nodes, training, [layout] = inputs(run)
    own, _ = Links.of(check_cluster(nodes), FIT).group(1, run.gpus)
    print(
        f"\n{run.model} on {run.gpus} H100s: measured step {step:.2f} s; "
        f"the planner's compute "
        f"{parts['compute']:.2f} s and exposed gathers and reduce-scatters "
        f"{parts['data_parallel']:.2f} s. Each GPU moves "
        f"{moved / 1e9:.0f} GB a step: {moved / step / 1e9:.0f} GB/s if "
        f"all of it hid behind the measured step, where each GPU's own "
        f"NIC reaches {own:.1f} GB/s."
    )
    one_nic = evaluate_layout(
        model, nodes, {**training, "pooled_nics": False}, layout, FIT
    )["tokens_per_s_per_gpu"]
    print(
        f"With one NIC per GPU for every ring: {one_nic:,.0f} tokens/s per "
        f"GPU predicted, {one_nic / r['measured']:.0%} of the measured."
    )
    pooled = next(k for k in runs.LINKS if k.label == "hgx-h100-8-ndr-4-nodes")
    print(
        f"A ring over four whole HGX H100 nodes, measured by nccl-tests: "
        f"{pooled.low_GBps:g} GB/s of bus bandwidth, of "
        f"{pooled.line_GBps:g} GB/s of NICs per node."
    )
    # --8<-- [end:unseen]

    # --8<-- [start:jobs]
    from snippets.planner.model import MODELS, cluster

    def published(label):
        """A published run: who, its layout, GPUs and tokens/s/GPU."""
        r = compared(runs.by_label(label))
        return (
            f"{r['run'].framework}: {name(r['result']['layout'])} on "
            f"{r['run'].gpus:,} GPUs, {r['measured']:,.0f}"
        )

    print("| job | the planner's first two | tokens/s per GPU | published |")
    print("| --- | --- | ---: | --- |")
    for preset, gpu, nodes, training, labels in JOBS:
        title = f"{preset} on {nodes * 8:,} {gpu}"
        theirs = "; ".join(published(label) for label in labels)
        nodes_ = cluster(gpu, nodes)
        ranked = plan_layouts(MODELS[preset], nodes_, training)["ranked"]
        for r in ranked[:2]:
            print(
                f"| {title} | {name(r['layout'])} | "
                f"{r['tokens_per_s_per_gpu']:,.0f} | {theirs} |"
            )
            title = theirs = ""
    # --8<-- [end:jobs]

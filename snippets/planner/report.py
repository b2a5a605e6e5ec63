"""The planner's answer as text: a ranked table and a launch command."""

# --8<-- [start:model]
from snippets.checks import choice, count
from snippets.planner.command import launch_command
from snippets.planner.layouts import name, plan_layouts
from snippets.planner.model import MODELS, cluster, from_hf_config


def table(ranked, top=5):
    """A Markdown table of the first `top` layouts."""
    lines = [
        "| # | layout | GB per GPU: states + activations | fits | step, s"
        " | of which exposed comms + bubble, s | tokens/s | MFU |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for i, r in enumerate(ranked[:top], start=1):
        gb, s = r["memory_per_gpu_GB"], r["step_s"]
        states = gb["parameters"] + gb["gradients"] + gb["optimizer"]
        lines.append(
            f"| {i} | {name(r['layout'])} | {states:.1f} + "
            f"{gb['activations']:.1f} = {gb['total']:.1f} | "
            f"{'yes' if r['fits'] else 'no'} | {s['total']:.2f} | "
            f"{s['exposed_communication']:.2f} + {s['bubble']:.2f} | "
            f"{r['tokens_per_s']:,.0f} | {r['mfu']:.1%} |"
        )
    return "\n".join(lines)


def sections(model, cluster, training, top=5):
    """The answer, the table, and how to launch the best layout that
    this course's script can run (or the mesh the best layout needs),
    as (kind, text) pairs; kind is "text", "table" or "code"."""
    plan = plan_layouts(model, cluster, training)
    parts = [("text", plan["answer"]), ("table", table(plan["ranked"], top))]
    fitting = [r for r in plan["ranked"] if r["fits"]]
    runnable = [
        r
        for r in fitting
        if launch_command(model, cluster, training, r["layout"])[0]
    ]
    if runnable:
        best = runnable[0]
        rank = plan["ranked"].index(best) + 1
        parts += [
            (
                "text",
                f"Launch #{rank}, the best layout this course's script "
                "runs (it trains the course's GPT-style decoder at this "
                "size: no grouped-query attention, no gated MLP):",
            ),
            (
                "code",
                launch_command(model, cluster, training, best["layout"])[1],
            ),
        ]
    best_runnable = runnable[0] if runnable else None
    if fitting and fitting[0] is not best_runnable:
        mesh = launch_command(model, cluster, training, fitting[0]["layout"])
        parts += [
            ("text", "#1 needs tensor or pipeline parallelism, or ZeRO-1/2:"),
            ("code", mesh[1]),
        ]
    return parts


def as_text(parts):
    """Sections as one text, a blank line between two."""
    return "\n\n".join(text for _, text in parts)


def report(model, cluster, training, top=5):
    """The sections as the command line prints them."""
    return as_text(sections(model, cluster, training, top))


def plan(
    config=None,
    *,
    preset=None,
    seq_len=None,
    gpu="h100-80gb",
    nodes=1,
    global_batch_tokens=4 * 1024 * 1024,
    micro_batch=1,
    efficiency=0.5,
    top=5,
    **cluster_values,
):
    """The sections for the command line's inputs: `config` is the
    text of a config.json, or `preset` names one of MODELS. The cluster
    is `nodes` nodes of the `gpu` preset, with any of its values given
    in `cluster_values` (gpus_per_node=4, nic_GBps=25, ...; None keeps
    the preset's) in their place. The command line prints them; the
    planner's form on the page shows them."""
    if (config is None) == (preset is None):
        raise ValueError("give either config (config.json text) or preset")
    if preset is not None:
        choice("preset", preset, sorted(MODELS))
        model = dict(MODELS[preset])
        if seq_len is not None:
            model["seq_len"] = seq_len
    else:
        model = from_hf_config(config, seq_len=seq_len)
    training = {
        "global_batch_tokens": global_batch_tokens,
        "micro_batch": micro_batch,
        "compute_efficiency": efficiency,
    }
    count("top", top)
    nodes = cluster(gpu, nodes, **cluster_values)
    return sections(model, nodes, training, top)


# --8<-- [end:model]
